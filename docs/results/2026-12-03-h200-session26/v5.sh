#!/bin/bash
# The whole engine of the build in binS: in session 26 branch attn-loader-hd32 (the wgmma
# attention with the constant-trip tile loader, at head dims 32 and 64 from 512 tokens; pack
# .gpupack/s26w.tar.xz); packed again for session 27 with binS from attn-lazy-tma c0bc4fc
# (.gpupack/s27c.tar.xz). `v5.sh check` (~4.5 min): engine_cuda (all) and check_engine.py against
# transformers fp32; `v5.sh minilm bert-base` (~70 s in session 26): the benches of record
# against transformers in the same run.
# Dev box: binS = engine_cuda bench_engine_cuda (build-next/bin0 at the branch, stripped);
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binS v5.sh | xz -T6 > .gpupack/PACK.tar.xz
# Device: carry [".gpupack/PACK.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/PACK.tar.xz -C .gpucarry && bash .gpucarry/v5.sh check
C=$PWD/.gpucarry R=$OUT/v5_$1
mkdir -p $R
export LD_LIBRARY_PATH=$C/binS:$C/lib:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > $R/gpu.txt
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
if [ "$1" = check ]; then
( time EMBER_TUNE_CACHE=/tmp/tcv EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $C/binS/engine_cuda ) > $R/engine_cuda.log 2>&1
echo "== engine_cuda rc $?"; grep -E "CHECK failed|passed" $R/engine_cuda.log | tail -3
timeout 150 python3 bench/gpu/check_engine.py --bin $C/binS/bench_engine_cuda --models /tmp/m --out $R/check > $R/check_engine.log 2>&1
echo "== check rc $?"; sed -n '/== whole-engine/,$p' $R/check_engine.log | tail -8; rm -f $R/check/*.bin
else for m in "$@"; do
  timeout 200 $C/binS/bench_engine_cuda bench /tmp/m/$m $m $R/bench_engine_$m.json 500 spin=5000 > $R/bench_engine_$m.log 2>&1
  echo "rc $? bench $m"; grep -iE "batch 1 x 128|ragged|tokens/s" $R/bench_engine_$m.log | head -8
  timeout 150 python3 bench/gpu/transformers_peer.py /tmp/m/$m $m $R/peer_$m.json 200 > $R/peer_$m.log 2>&1
  echo "rc $? peer $m"; tail -4 $R/peer_$m.log
done; fi
tar cf $OUT/v5_$1.tar -C $OUT v5_$1 && rm -rf $R
