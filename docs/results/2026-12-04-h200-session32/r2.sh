#!/bin/bash
# Session 32, run 2: binE = binS (run 1's softmax: row sums on the tensor cores, packed-P lazy
# check) + a table tile's first K/V blocks issued by TMA before the Q tile and n_tokens are read
# (the entry has the key range), against binS and main (binM).
#   kernels_cuda attention on E; bench_kernels_cuda M / S / E; one GEMM tuning shared; engine A/B
#   1024 / 4096 / 8192 / ragged, 3 rounds, plus lanes=1 for S and E.
# Pack: tar cf - -C .gpucarry lib binM binS binE | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r2.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r2.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session32/r2.sh
. bench/gpu/variant_steps.sh
variant_setup r2
kernel_tests E 200 attention || { variant_finish r2; exit 1; }
attention_bench M S E
shared_tuning 1024,4096,8192,ragged M S E S1 E1
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 1024,4096,8192,ragged 3 M="$C/binM" \
    S="$C/binS" E="$C/binE" S1="$C/binS,lanes=1" E1="$C/binE,lanes=1" > "$R/ab_summary.txt" 2>&1
ab_summary "$R/ab_summary.txt"
variant_finish r2
