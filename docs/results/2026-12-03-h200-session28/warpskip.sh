#!/bin/bash
# Prepared in session 28 for session 29 (NOT RUN), ~4 min: WS = main + warpskip.patch (the wgmma
# attention decides per warp: a warp whose rows share one key range skips the mask in key blocks
# inside its range, and skips the whole softmax, P = 0, in blocks outside it: the other
# sequence's keys of a tile spanning two, or a warp of rows past n_tokens). Today every block of
# a tile that spans two sequences is masked for all four warps (40% of the blocks of the ragged
# bench, simulated); a cost model of that walk puts the softmax work at -14%. Registers 106 ->
# 112 (hd 32; still 4 CTAs per SM), 122 -> 124 (hd 64); no spills, no wgmma serialisation.
# Kernel tests first (attention: the NaN-poisoned rows past n_tokens and ragged batches check
# the skip); bench_kernels_cuda N / WS; engine A/B, 3 rounds, one tuning for all (same GEMMs).
# A winner then needs `OUT=$OUT/ws ops/gpu-check.sh --prebuilt .gpucarry/binWS --engine-only --steps 3,4`
# (binWS needs engine_cuda and bench_engine_cuda; lib/ copied in) before it merges.
# Dev box: git apply docs/results/2026-12-03-h200-session28/warpskip.patch on a branch off main;
#   binN = main, binWS = the branch (kernels_cuda engine_cuda bench_kernels_cuda
#   bench_engine_cuda, stripped, built in build-next/bin0); lib/ as in bn32.sh;
#   tar cf - -C .gpucarry lib binN binWS | xz -T1 --lzma2=preset=6,dict=192MiB > .gpupack/ws.tar.xz
# Device: carry [".gpupack/ws.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/ws.tar.xz -C .gpucarry && bash docs/results/2026-12-03-h200-session28/warpskip.sh
. bench/gpu/variant_steps.sh
variant_setup warpskip
kernel_tests WS 150 attention || { variant_finish warpskip; exit 1; }
attention_bench N WS
shared_tuning b1_128,512,1024,ragged N WS
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,512,1024,ragged 3 N=$C/binN \
  WS=$C/binWS > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
variant_finish warpskip
