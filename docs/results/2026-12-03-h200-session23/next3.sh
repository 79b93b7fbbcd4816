#!/bin/bash
# Prepared in session 23 for the next session (~2 min): tests/pool/test_pool_gpu.py of branch
# cuda-fault-tests (3da2370) on the GPU host: redis-server, ember-broker, a CPU ember-worker and a
# GPU ember-worker with device option fault=4 (its 4th chunk's pass queued behind a kernel that
# traps); the GPU worker must exit 3 and leave state=unhealthy in Redis, the request complete.
# Dev box (session 23, done): binC = ember-broker ember-worker ember libember.so.0 engine_cuda
#   built from 3da2370's code (build-next/bin0); gpudeps = ../shared/gpu-host/fetch-debs.sh
#   (Debian runtime .debs incl. redis-server); wheels = pyzmq, msgpack (cp312); tokenizer.json of
#   all-MiniLM-L6-v2 (for the random-weight model); test_pool_gpu.py from the branch;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binC gpudeps wheels tokenizer.json test_pool_gpu.py next2.sh next3.sh \
#     | xz -T2 > .gpupack/s24c.tar.xz     (holds next2.sh's engine_cuda too)
# Device: carry [".gpupack/s24c.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s24c.tar.xz -C .gpucarry && bash .gpucarry/next3.sh
C=$PWD/.gpucarry R=$OUT/next3
mkdir -p $R /opt/deps
for f in $C/gpudeps/*.deb; do dpkg -x $f /opt/deps; done
export LD_LIBRARY_PATH=$C/binC:$C/lib:/opt/deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
export PATH=/opt/deps/usr/bin:$PATH
python3 -c "import zmq, msgpack" 2>/dev/null ||
  { pip install --no-deps --target /tmp/pylib $C/wheels/*.whl > $R/pip.log 2>&1; export PYTHONPATH=/tmp/pylib; }
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
cp $C/tokenizer.json /tmp/m/minilm/
cp $C/test_pool_gpu.py tests/pool/
timeout 280 python3 tests/pool/test_pool_gpu.py --broker-bin $C/binC/ember-broker \
  --worker-bin $C/binC/ember-worker --ember $C/binC/ember --model /tmp/m/minilm > $R/pool_gpu.log 2>&1
echo "rc $?"; tail -25 $R/pool_gpu.log
tar cf $OUT/next3.tar -C $OUT next3 && rm -rf $R
