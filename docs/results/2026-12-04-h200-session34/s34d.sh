#!/bin/bash
# Session 34, run 5: the energy readout's second form (bench/bench_energy.h: the slope between
# the counter's first and last steps in the window; run 4's end-to-end difference read 812 W on
# a 700 W board for a 0.44 s window). The bench of both models (JSON), MiniLM's ragged batch at
# 200 / 600 runs a window, to compare with runs 2 and 4.
# Pack: tar cf - -C .gpucarry lib binE34 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s34d.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s34d.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session34/s34d.sh
. bench/gpu/variant_steps.sh
variant_setup s34d
B=$C/binE34
for m in minilm bert-base; do
    timeout 200 "$B/bench_engine_cuda" bench /tmp/m/$m $m "$R/bench_$m.json" 500 spin=5000 \
        > "$R/bench_$m.txt" 2>&1
    echo "== bench $m rc $? at $SECONDS s"
    grep -E "batch 1|one batch|in flight|energy" "$R/bench_$m.txt"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d['energy']))" \
        "$R/bench_$m.json"
    cp "$R/bench_$m.json" "$R/bench_$m.json.txt"
done
for n in 200 600 200 600; do
    EMBER_TUNE_CACHE=/tmp/tc_minilm timeout 100 "$B/bench_engine_cuda" profile /tmp/m/minilm \
        cuda:0 ragged $n spin=5000 2>&1 | grep -E "^profile .*seqs" | sed -E 's/.*wall median/wall median/' |
        tee -a "$R/ragged_windows.txt"
done
variant_finish s34d
