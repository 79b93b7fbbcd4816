#!/bin/bash
# Session 28: the whole engine in binS (a symlink to a bin set of the pack, or the merged main's).
# `final.sh check` (~4.5 min): engine_cuda (all) and check_engine.py against transformers fp32;
# `final.sh bench` (~70 s): the benches of record against transformers in the same run;
# `final.sh profile` (~3 min): bench/gpu/profile_engine.sh (per-kernel times, one eager run, ncu).
# The pack (dev box): binLABEL = kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda built
#   in build-next/bin0 at the label's commit, stripped; lib/ = libopenblas.so.0 libjansson.so.4
#   libgfortran.so.5 libquadmath.so.0;
#   tar cf - -C .gpucarry lib binN binBB binET binSK bn32.sh et.sh sk8.sh final.sh \
#     | xz -T1 --lzma2=preset=6,dict=192MiB > .gpupack/s28.tar.xz   (~15 MB: one dictionary spans the
#   four near-identical builds)
# Device: carry [".gpupack/s28.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s28.tar.xz -C .gpucarry && bash .gpucarry/final.sh
C=$PWD/.gpucarry
export LD_LIBRARY_PATH=$C/binS:$C/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
for what in "$@"; do
R=$OUT/final_$what; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > $R/gpu.txt
case $what in
check)
  ( time EMBER_TUNE_CACHE=/tmp/tcv EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $C/binS/engine_cuda ) > $R/engine_cuda.log 2>&1
  echo "== engine_cuda rc $?"; grep -E "CHECK failed|passed" $R/engine_cuda.log | tail -3
  timeout 150 python3 bench/gpu/check_engine.py --bin $C/binS/bench_engine_cuda --models /tmp/m --out $R/check > $R/check_engine.log 2>&1
  echo "== check rc $?"; sed -n '/== whole-engine/,$p' $R/check_engine.log | tail -8; rm -f $R/check/*.bin ;;
bench)
  for m in minilm bert-base; do
    timeout 200 $C/binS/bench_engine_cuda bench /tmp/m/$m $m $R/bench_engine_$m.json 500 spin=5000 > $R/bench_engine_$m.log 2>&1
    echo "rc $? bench $m"; grep -iE "batch 1 x 128|one batch|latency|start-up" $R/bench_engine_$m.log
    timeout 150 python3 bench/gpu/transformers_peer.py /tmp/m/$m $m $R/peer_$m.json 200 > $R/peer_$m.log 2>&1
    echo "rc $? peer $m"; grep -E "batch1_128|ragged100" $R/peer_$m.log
  done ;;
profile)
  timeout 400 bash bench/gpu/profile_engine.sh $C/binS/bench_engine_cuda /tmp/m $R > $R/run.log 2>&1
  echo "== profile rc $?"; grep -A40 "minilm ragged: kernels" $R/profile.txt | head -45
  grep -A30 "bert-base ragged: kernels" $R/profile.txt | head -32; rm -f $R/*.csv ;;
esac
tar cf $OUT/final_$what.tar -C $OUT final_$what && rm -rf $R
done
