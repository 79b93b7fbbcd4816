#!/bin/bash
# Prepared in session 27 for session 28 (NOT RUN), ~5 min: ET = branch gemm-early-turn 22df22b
# against main faeaa04 (N). In the ping-pong GEMM a group handed the turn to the next only after
# its last wgmmas had finished (wg_wait<0>), and the next group then zeroed its 2 MI BN / 4
# accumulators (CS2R, 64 of them at 128x128) before its first wgmma: the tensor pipe drained at
# every turn. ET hands the turn over once the last slice's wgmmas are issued (CUTLASS's
# ping-pong does the same) and lets the tile's first k16 step overwrite the accumulators
# (scale-d 0; zeroed only for a split-K rank without K slices). SASS of the 128x128 ping-pong:
# CS2R 67 -> 3, BAR.ARV between the last slice's DEPBAR.LE 1 and 0, no wgmma serialised.
# Kernel tests first (linear*; a failing ET stops the run); gemms N / ET (f16, 4096 and 16384
# tokens); engine A/B, 3 rounds, one tuning for all (N's choices copied to ET: the same
# configurations, so the same plans, and the A/B measures the kernels).
# ET then needs `final.sh check` with its binaries (binS = binET) before it merges.
# Dev box: binN as in bn32.sh (main faeaa04); binET = kernels_cuda engine_cuda bench_kernels_cuda
#   bench_engine_cuda (build-next/bin0 at 22df22b), stripped;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binN binET et.sh final.sh | xz -T8 > .gpupack/s28b.tar.xz
# Device: carry [".gpupack/s28b.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s28b.tar.xz -C .gpucarry && bash .gpucarry/et.sh
# Its check after: mkdir -p .gpucarry && tar xJf .gpupack/s28b.tar.xz -C .gpucarry && ln -sfn binET .gpucarry/binS && bash .gpucarry/final.sh check
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
