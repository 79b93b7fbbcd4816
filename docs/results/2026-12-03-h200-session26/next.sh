#!/bin/bash
# Prepared in session 26 for session 27 (NOT RUN), ~5 min: changes to the wgmma attention
# against main (N = bbc91ce's kernels):
#   L  = branch attn-lazy ee077a8: the mma.sync kernel's lazy rescale and warp-shared column mask
#        (the first try, 910d4ff, hung: a2_first/, README);
#   LT = branch attn-lazy-tma c0bc4fc: L and branch attn-tma 53a7927 (K/V blocks by TMA from
#        thread 0 onto per-stage mbarriers, no per-block CTA barrier; V rows past n_tokens zeroed
#        in the block that holds them; the TMA and mbarrier wrappers moved from gemm_wgmma.cu to
#        kern_tma.cuh / kern_tma.cu). T alone did not fit the 64 MiB carry beside the others:
#        build it from attn-tma if LT fails and L does not. LT's kernels_cuda holds rows past
#        n_tokens at NaN in the attention test (dd39b9c), which the V zeroing must survive.
# Kernel tests first, each under a timeout (a variant that fails or hangs drops out of the rest):
# attention on L and LT, and LT's GEMM tests (the wrappers moved); bench_kernels_cuda attention
# rows N / LT; engine A/B of the survivors, 3 rounds, one tuning for all (N's choices copied in).
# The winner then needs v5.sh's check (engine_cuda, check_engine.py) before it merges.
# Dev box: binN = bench_kernels_cuda bench_engine_cuda (main bbc91ce); binL = kernels_cuda
#   bench_engine_cuda (attn-lazy ee077a8); binLT = kernels_cuda bench_kernels_cuda
#   bench_engine_cuda (attn-lazy-tma c0bc4fc); all stripped (strip --strip-unneeded);
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binN binL binLT next.sh | xz -T6 > .gpupack/s27a.tar.xz
# Device: carry [".gpupack/s27a.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s27a.tar.xz -C .gpucarry && bash .gpucarry/next.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
C=$PWD/.gpucarry R=$OUT/next
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
ok="N"
for v in L LT; do
  tests=attention; [ $v = LT ] && tests="attention linear linear_ln linear_fold linear_pdl"
  ( time timeout 150 $C/bin$v/kernels_cuda $tests ) > $R/kernels_$v.log 2>&1
  rc=$?; echo "rc $rc" >> $R/kernels_$v.log
  echo "== kernels $v rc $rc"; grep -E "CHECK failed|passed|real" $R/kernels_$v.log | tail -3
  [ $rc = 0 ] && ok="$ok $v"
done
for v in N LT; do
  case " $ok " in *" $v "*) ;; *) continue ;; esac
  timeout 120 $C/bin$v/bench_kernels_cuda $R/k_$v.json 50 > $R/k_$v.txt 2>&1
  echo "== bench $v rc $?"; grep -E "T=(4096|16384) attention wgmma" $R/k_$v.txt
done
for m in minilm bert-base; do
  EMBER_TUNE_CACHE=/tmp/tc_$m timeout 200 $C/binN/bench_engine_cuda profile /tmp/m/$m cuda:0 \
    b1_128,1024,ragged 20 spin=5000 > $R/tune_$m.txt 2>&1
  for v in $ok; do cp /tmp/tc_$m /tmp/engine_ab_tc_${m}_$v; done
done
args=""; for v in $ok; do args="$args $v=$C/bin$v"; done
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 $args > $R/ab_summary.txt 2>&1
grep -E "==|wall" $R/ab_summary.txt | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//'
rm -f $R/*.json
tar cf $OUT/next.tar -C $OUT next && rm -rf $R
