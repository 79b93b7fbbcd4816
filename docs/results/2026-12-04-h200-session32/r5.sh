#!/bin/bash
# Session 32, run 5: (a) the attention's fast-path check with a balanced packed max tree (branch
# attn-tree, binT: depth 4 instead of a chain of 8 VHMNMX; 127 registers) against main 44e7948
# (binS = run 1's build of the same code): kernels_cuda attention on T, bench_kernels_cuda S / T
# twice, alternating; (b) Nsight Compute's per-instruction stall sampling (source page, SASS) of
# main's MiniLM attention in one eager ragged pass, for the next session's work on it.
# Pack: tar cf - -C .gpucarry lib binS/bench_kernels_cuda binS/bench_engine_cuda binT/kernels_cuda binT/bench_kernels_cuda | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r5.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r5.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session32/r5.sh
. bench/gpu/variant_steps.sh
variant_setup r5
kernel_tests T 200 attention || { variant_finish r5; exit 1; }
for round in 0 1; do
    attention_bench S T
    for v in S T; do mv "$R/k_$v.txt" "$R/k_${v}_$round.txt"; done
done
b=$C/binS/bench_engine_cuda
export EMBER_TUNE_CACHE=$R/tune-minilm.txt
timeout 120 $b profile /tmp/m/minilm cuda:0 ragged 20 > $R/tune_run.txt 2>&1
timeout 240 ncu --clock-control none -k regex:k_attention_wgmma --launch-count 1 \
    --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    $b profile /tmp/m/minilm cuda:0,graphs=off ragged 1 > $R/ncu_source_minilm.csv 2> $R/ncu_source.err
echo "== source rc $? $(wc -l < $R/ncu_source_minilm.csv) lines"
head -3 $R/ncu_source_minilm.csv | cut -c1-400
xz -9 $R/ncu_source_minilm.csv
variant_finish r5
