#!/bin/bash
# Session 28, ~4.5 min: the wgmma attention with 32-key blocks (fewer registers, more CTAs per
# SM; the kernel is latency-bound). BB = branch attn-bn32-both 15afef0 (re-made this session from
# session 27's description: the checkout had lost the branches): head dim 32 at 74 registers,
# 6 CTAs per SM, 6 K/V stages; head dim 64 at 90 registers, 41 KiB, 5 CTAs (were 106 / 122, 4 / 3).
# N = main da9d903 (engine code of faeaa04). N1 = N with lanes=1 (one chunk at a time: does
# BERT-base's ragged pass lose to the two lanes' contention?).
# Kernel tests first (a failing or hanging BB stops the run); bench_kernels_cuda N / BB; engine
# A/B, 3 rounds, one tuning for all (BB's GEMM code is main's: N's choices copied in).
# The pack (dev box): binLABEL = kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda built
#   in build-next/bin0 at the label's commit, stripped; lib/ = libopenblas.so.0 libjansson.so.4
#   libgfortran.so.5 libquadmath.so.0;
#   tar cf - -C .gpucarry lib binN binBB binET binSK bn32.sh et.sh sk8.sh final.sh \
#     | xz -T1 --lzma2=preset=6,dict=192MiB > .gpupack/s28.tar.xz   (~15 MB: one dictionary spans the
#   four near-identical builds)
# Device: carry [".gpupack/s28.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s28.tar.xz -C .gpucarry && bash .gpucarry/bn32.sh
. bench/gpu/variant_steps.sh
variant_setup bn32
kernel_tests BB 150 attention || { variant_finish bn32; exit 1; }
attention_bench N BB
shared_tuning b1_128,512,1024,ragged N N1 BB
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,512,1024,ragged 3 N=$C/binN \
  N1=$C/binN,lanes=1 BB=$C/binBB > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
variant_finish bn32
