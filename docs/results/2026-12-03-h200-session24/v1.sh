#!/bin/bash
# Session 24, run v1 (~5 min): branch cuda-fault-tests merged with main (b518b20: the bias
# prefetch + the kept unhealthy record + cuBLAS errors naming the sticky CUDA error).
# Every test the merge touches on the GPU: engine_cuda (all), engine_cuda fault flags|event|graphs,
# tests/pool/test_pool_gpu.py, check_engine.py against transformers fp32.
# Dev box: binV = engine_cuda ember-worker ember-broker ember libember.so.0 bench_engine_cuda
#   (build-next/bin0 at b518b20); gpudeps/wheels/tokenizer.json as session 23's next3.sh;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binV gpudeps wheels tokenizer.json v1.sh v2.sh | xz -T2 > .gpupack/s24v.tar.xz
# Device: carry [".gpupack/s24v.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s24v.tar.xz -C .gpucarry && bash .gpucarry/v1.sh
C=$PWD/.gpucarry R=$OUT/v1
mkdir -p $R /opt/deps
export LD_LIBRARY_PATH=$C/binV:$C/lib:/usr/local/cuda/lib64
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time EMBER_TUNE_CACHE=/tmp/tcv EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $C/binV/engine_cuda ) > $R/engine_cuda.log 2>&1
echo "== engine_cuda rc $?"; grep -E "CHECK failed|passed" $R/engine_cuda.log | tail -3
for how in flags event graphs; do
  ( time EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 120 $C/binV/engine_cuda fault $how ) > $R/fault_$how.log 2>&1
  echo "== fault $how rc $?"; grep -E "CHECK failed|fault \(|passed" $R/fault_$how.log | tail -3
done
timeout 150 python3 bench/gpu/check_engine.py --bin $C/binV/bench_engine_cuda --models /tmp/m --out $R/check > $R/check_engine.log 2>&1
echo "== check rc $?"; sed -n '/== whole-engine/,$p' $R/check_engine.log | tail -8; rm -f $R/check/*.bin
for f in $C/gpudeps/*.deb; do dpkg -x $f /opt/deps; done
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/opt/deps/usr/lib/x86_64-linux-gnu PATH=/opt/deps/usr/bin:$PATH
python3 -c "import zmq, msgpack" 2>/dev/null ||
  { pip install --no-deps --target /tmp/pylib $C/wheels/*.whl > /dev/null 2>&1; export PYTHONPATH=/tmp/pylib; }
cp $C/tokenizer.json /tmp/m/minilm/
timeout 200 python3 tests/pool/test_pool_gpu.py --broker-bin $C/binV/ember-broker \
  --worker-bin $C/binV/ember-worker --ember $C/binV/ember --model /tmp/m/minilm > $R/pool_gpu.log 2>&1
echo "== pool_gpu rc $?"; grep -E "^(ok|FAIL)|passed|unusable" $R/pool_gpu.log | head -14
tar cf $OUT/v1.tar -C $OUT v1 && rm -rf $R
