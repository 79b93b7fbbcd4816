#!/bin/bash
# Prepared in session 25 for session 26 (NOT RUN): ONLY IF g6.sh shows gelu-staged faster. The
# whole engine on branch gelu-staged 80e53c9 (the GELU's input now rounded to 16 bits before it,
# as the unfused path does). `v4.sh check` (~4 min): engine_cuda (all) and check_engine.py
# against transformers fp32; `v4.sh minilm`, `v4.sh bert-base` (~4 min each): the bench of
# record against transformers in the same run.
# Dev box: binS = engine_cuda bench_engine_cuda (build-next/bin0 at 80e53c9);
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binS v4.sh | xz -T2 > .gpupack/s26v.tar.xz
# Device: carry [".gpupack/s26v.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s26v.tar.xz -C .gpucarry && bash .gpucarry/v4.sh check
C=$PWD/.gpucarry R=$OUT/v4_$1
mkdir -p $R
export LD_LIBRARY_PATH=$C/binS:$C/lib:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > $R/gpu.txt
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
if [ "$1" = check ]; then
( time EMBER_TUNE_CACHE=/tmp/tcv EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $C/binS/engine_cuda ) > $R/engine_cuda.log 2>&1
echo "== engine_cuda rc $?"; grep -E "CHECK failed|passed" $R/engine_cuda.log | tail -3
timeout 150 python3 bench/gpu/check_engine.py --bin $C/binS/bench_engine_cuda --models /tmp/m --out $R/check > $R/check_engine.log 2>&1
echo "== check rc $?"; sed -n '/== whole-engine/,$p' $R/check_engine.log | tail -8; rm -f $R/check/*.bin
else
  m=$1
  timeout 200 $C/binS/bench_engine_cuda bench /tmp/m/$m $m $R/bench_engine_$m.json 500 spin=5000 > $R/bench_engine_$m.log 2>&1
  echo "rc $? bench $m"; grep -iE "batch 1 x 128|ragged|tokens/s" $R/bench_engine_$m.log | head -8
  timeout 150 python3 bench/gpu/transformers_peer.py /tmp/m/$m $m $R/peer_$m.json 200 > $R/peer_$m.log 2>&1
  echo "rc $? peer $m"; tail -4 $R/peer_$m.log
fi
tar cf $OUT/v4_$1.tar -C $OUT v4_$1 && rm -rf $R
