#!/bin/bash
# Session 32, run 1: the wgmma attention's softmax with the row sums on the tensor cores (P x ones,
# 4 x wgmma m64n8k16 a key block beside PV) and a fast path that checks the packed 16-bit P
# against 2^8 instead of taking row maxima (the exact path only at a row's first key block or
# when some P passes 2^8), descriptors precomputed (branch attn-sum, binS), against main (binM);
# and 5 CTAs per SM at head dim 32 for both (binM5, binS5: 96 registers, ptxas serialises their
# wgmmas, C7512). Plus lanes=1 for M and S.
#   kernels_cuda attention on S and S5; bench_kernels_cuda on all four; one GEMM tuning shared;
#   engine A/B 1024 / 4096 / 8192 / ragged, 3 rounds.
# Pack: tar cf - -C .gpucarry lib binM binM5 binS binS5 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r1.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r1.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session32/r1.sh
. bench/gpu/variant_steps.sh
variant_setup r1
kernel_tests S 200 attention || { variant_finish r1; exit 1; }
kernel_tests S5 200 attention
attention_bench M S M5 S5
shared_tuning 1024,4096,8192,ragged M S M5 S5 M1 S1
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 1024,4096,8192,ragged 3 M="$C/binM" \
    S="$C/binS" M5="$C/binM5" S5="$C/binS5" M1="$C/binM,lanes=1" S1="$C/binS,lanes=1" \
    > "$R/ab_summary.txt" 2>&1
ab_summary "$R/ab_summary.txt"
variant_finish r1
