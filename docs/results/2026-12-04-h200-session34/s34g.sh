#!/bin/bash
# Session 34, run 8: the transformers peer's energy (bench/gpu/nvml_energy.py: the ragged batch
# with its CUDA graph back to back for >= 1.5 s), to set beside ours (r5).
# Device (no pack): bash docs/results/2026-12-04-h200-session34/s34g.sh
R=$OUT/s34g
mkdir -p "$R"
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m >/dev/null 2>&1
for m in minilm:20 bert-base:10; do
    timeout 150 python3 bench/gpu/transformers_peer.py /tmp/m/${m%%:*} ${m%%:*} "$R/peer_${m%%:*}.json.txt" \
        ${m#*:} > "$R/peer_${m%%:*}.txt" 2>&1
    echo "== ${m%%:*} rc $? at $SECONDS s"
    grep -E "ragged|energy|Error|error" "$R/peer_${m%%:*}.txt" | tail -4
done
