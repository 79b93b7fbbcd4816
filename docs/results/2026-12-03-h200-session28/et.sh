#!/bin/bash
# Session 28, ~5 min: ET = branch gemm-early-turn 58231fa (re-made this session) against main
# da9d903 (N). In the ping-pong GEMM a group handed the turn on only after its last wgmmas had
# finished (wg_wait<0>), and the next group then zeroed its accumulators before its first wgmma:
# the tensor pipe drained at every turn. ET hands the turn on once the last slice's wgmmas are
# issued (CUTLASS's order) and lets the tile's first k16 step overwrite the accumulators (scale-d
# 0; zeroed only for a split-K rank without K slices). ptxas: no wgmma serialised; the folded
# 128x128 / 128x192 tiles' spills 36-44 -> 0-4 bytes, the ping-pong folds' 20 / 160 -> 36 / 180,
# three-group 64x192 40 -> 56.
# Kernel tests first (linear*; a failing ET stops the run); gemms N / ET (f16, 4096 and 16384
# tokens); engine A/B, 3 rounds, one tuning for all (the same configurations: the A/B measures
# the kernels).
# The pack (dev box): binLABEL = kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda built
#   in build-next/bin0 at the label's commit, stripped; lib/ = libopenblas.so.0 libjansson.so.4
#   libgfortran.so.5 libquadmath.so.0;
#   tar cf - -C .gpucarry lib binN binBB binET binSK bn32.sh et.sh sk8.sh final.sh \
#     | xz -T1 --lzma2=preset=6,dict=192MiB > .gpupack/s28.tar.xz   (~15 MB: one dictionary spans the
#   four near-identical builds)
# Device: carry [".gpupack/s28.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s28.tar.xz -C .gpucarry && bash .gpucarry/et.sh
. bench/gpu/variant_steps.sh
variant_setup et
kernel_tests ET 150 linear linear_ln linear_fold linear_pdl || { variant_finish et; exit 1; }
for v in N ET; do
  timeout 120 $C/bin$v/bench_kernels_cuda gemms $R/g_$v.json 20 4096,16384 dtype=f16 > $R/g_$v.txt 2>&1
  echo "== gemms $v rc $?"; grep "best of" $R/g_$v.txt | grep -E "ffn1\+gelu|qkv |out |ffn2 " | cut -c1-110
  grep -E "16384 ffn1\+gelu.*pingpong f16" $R/g_$v.txt | cut -c1-90
done
shared_tuning b1_128,1024,ragged N ET
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 N=$C/binN ET=$C/binET > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
variant_finish et
