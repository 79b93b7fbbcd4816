#!/bin/bash
# Session 38, prepared: what the pruned last layer (branch row-pool) saves, after s38p.sh found it
# correct: prune=off against prune=auto on the CLS twins of both random models (the same weights
# as minilm and bert-base, CLS pooling), ragged, 4096 and 16384 tokens, 2 rounds, one build
# (each variant tunes its own cache; the tail plans are the only difference).
# Pack and device command: as s38p.sh (.gpupack/s38.tar.xz), then bash docs/results/2026-12-04-h200-session38/s38q.sh
. bench/gpu/variant_steps.sh
variant_setup s38q
[ -d /tmp/m/minilm-cls ] || python3 bench/gpu/make_random_models.py /tmp/m >/dev/null 2>&1
AB_MODELS="minilm-cls bert-base-cls" AB_ITERS=400 timeout 500 bash bench/gpu/engine_ab.sh \
    "$R/ab.txt" /tmp/m ragged,4096,16384 2 off="$C/binP,prune=off" on="$C/binP" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
variant_finish s38q
