#!/bin/bash
# Prepared in session 27 for session 28 (NOT RUN), ~4.5 min: the wgmma attention with 32-key
# blocks (fewer registers, more CTAs per SM; the kernel is latency-bound). BB = branch
# attn-bn32-both a752834: head dim 32 at 74 registers, 6 CTAs per SM (was 106, 4), 6 K/V stages;
# head dim 64 at 90 registers and 43 KiB, 5 CTAs (was 122, 73 KiB: 3). Branch attn-bn32 24e0cdd
# is the head-dim-32 half alone (same hd32 code): keep it if only MiniLM gains.
# N = main faeaa04. N1 = N with lanes=1 (one chunk at a time: does BERT-base's ragged pass
# lose to the two lanes' contention? its kernels sum to ~8% under its wall time).
# Kernel tests first (a failing or hanging BB stops the run); bench_kernels_cuda N / BB; engine
# A/B, 3 rounds, one tuning for all (BB's GEMM code is main's: N's choices copied in).
# BB then needs `final.sh check` with its binaries (binS = binBB) before it merges.
# Dev box: binN = bench_engine_cuda bench_kernels_cuda (build-next/bin0 at faeaa04, stripped);
#   binBB = kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda (build-next/bin0 at
#   a752834), all stripped;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binN binBB bn32.sh final.sh | xz -T8 > .gpupack/s28a.tar.xz
# Device: carry [".gpupack/s28a.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s28a.tar.xz -C .gpucarry && bash .gpucarry/bn32.sh
# Its check after: mkdir -p .gpucarry && tar xJf .gpupack/s28a.tar.xz -C .gpucarry && ln -sfn binBB .gpucarry/binS && bash .gpucarry/final.sh check
. bench/gpu/variant_steps.sh
variant_setup bn32
kernel_tests BB 150 attention || { variant_finish bn32; exit 1; }
for v in N BB; do
  timeout 120 $C/bin$v/bench_kernels_cuda $R/k_$v.json 50 > $R/k_$v.txt 2>&1
  echo "== bench $v rc $?"; grep -E "T=(128|4096|16384) attention (mma|wgmma)" $R/k_$v.txt
done
shared_tuning b1_128,512,1024,ragged N N1 BB
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,512,1024,ragged 3 N=$C/binN \
  N1=$C/binN,lanes=1 BB=$C/binBB > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
variant_finish bn32
