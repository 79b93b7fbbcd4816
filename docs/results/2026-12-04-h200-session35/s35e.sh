#!/bin/bash
# Session 35, run 5: where MiniLM's ragged pass moves bytes (what a fused MLP or other fusion
# could save at the power cap): one eager pass of F under Nsight Compute, caches not flushed, per
# kernel time, DRAM read / write and L2 bytes (bench/gpu/ncu_summary.py), with run 3's tuning.
# Pack: the one of s35c.sh. Device: ... && bash docs/results/2026-12-04-h200-session35/s35e.sh
. bench/gpu/variant_steps.sh
variant_setup s35e
export EMBER_TUNE_CACHE=/tmp/engine_ab_tc_minilm_F
[ -f $EMBER_TUNE_CACHE ] || "$C/binF/bench_engine_cuda" profile /tmp/m/minilm cuda:0 ragged 20 > "$R/tune.txt" 2>&1
for m in minilm bert-base; do
    [ $m = bert-base ] && export EMBER_TUNE_CACHE=/tmp/engine_ab_tc_bert-base_F
    timeout 200 ncu --csv --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
        "$C/binF/bench_engine_cuda" profile /tmp/m/$m cuda:0,graphs=off ragged 1 > "$R/ncu_$m.csv" 2> "$R/ncu_$m.err"
    echo "== ncu $m rc $? at $SECONDS s"
    python3 bench/gpu/ncu_summary.py "$R/ncu_$m.csv" 2 "$R/ncu_$m.json" | tee "$R/ncu_$m.txt" | head -30
done
variant_finish s35e
