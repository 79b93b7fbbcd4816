#!/bin/bash
# Prepared in session 24 for the next session (NOT RUN), ~2 min: main a0c8c13 (kern_cublas_fail
# asks the context only where cuBLAS's status can mean a dead one, and not during a capture) on
# the failure path again: engine_cuda fault flags|event|graphs and tests/pool/test_pool_gpu.py,
# whose log check wants the CUDA error's name ("cudaError...").
# Dev box: binW = engine_cuda ember-worker ember-broker ember libember.so.0 (build-next/bin0 at
#   a0c8c13); gpudeps/wheels/tokenizer.json as v1.sh;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binW gpudeps wheels tokenizer.json v3.sh | xz -T2 > .gpupack/s25v.tar.xz
# Device: carry [".gpupack/s25v.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s25v.tar.xz -C .gpucarry && bash .gpucarry/v3.sh
C=$PWD/.gpucarry R=$OUT/v3
mkdir -p $R /opt/deps
export LD_LIBRARY_PATH=$C/binW:$C/lib:/usr/local/cuda/lib64
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
for how in flags event graphs; do
  ( time EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 120 $C/binW/engine_cuda fault $how ) > $R/fault_$how.log 2>&1
  echo "== fault $how rc $?"; grep -E "CHECK failed|fault \(|passed" $R/fault_$how.log | tail -3
done
for f in $C/gpudeps/*.deb; do dpkg -x $f /opt/deps; done
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/opt/deps/usr/lib/x86_64-linux-gnu PATH=/opt/deps/usr/bin:$PATH
python3 -c "import zmq, msgpack" 2>/dev/null ||
  { pip install --no-deps --target /tmp/pylib $C/wheels/*.whl > /dev/null 2>&1; export PYTHONPATH=/tmp/pylib; }
cp $C/tokenizer.json /tmp/m/minilm/
timeout 200 python3 tests/pool/test_pool_gpu.py --broker-bin $C/binW/ember-broker \
  --worker-bin $C/binW/ember-worker --ember $C/binW/ember --model /tmp/m/minilm > $R/pool_gpu.log 2>&1
echo "== pool_gpu rc $?"; grep -E "^(ok|FAIL)|passed|unusable" $R/pool_gpu.log | head -14
tar cf $OUT/v3.tar -C $OUT v3 && rm -rf $R
