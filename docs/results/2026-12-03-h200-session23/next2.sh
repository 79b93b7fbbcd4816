#!/bin/bash
# Prepared in session 23 for the next session (~1 min): branch cuda-fault-tests (3da2370), the
# CUDA engine's failure path with a real sticky error (device option fault=N: a kernel that
# waits 2 ms, then traps). Each mode is a process of its own (the context dies).
# Dev box (session 23, done): binC/engine_cuda built from 3da2370's code (build-next/bin0);
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binC/engine_cuda next2.sh | xz -T2 > .gpupack/s24b.tar.xz
# Device: carry [".gpupack/s24b.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s24b.tar.xz -C .gpucarry && bash .gpucarry/next2.sh
# Not covered here: tests/pool/test_pool_gpu.py (ctest pool_gpu) needs ember-broker, ember-worker
# and ember with their Debian runtime libraries (zmq, czmq, msgpack-c, hiredis), redis-server
# (shared/GPU-HOST.md: fetch-debs.sh) and pyzmq + msgpack for Python on the GPU host.
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/next2
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
for how in flags event graphs; do
  ( time EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 120 $C/binC/engine_cuda fault $how ) > $R/fault_$how.log 2>&1
  echo "== $how rc $?"; grep -E "CHECK failed|fault \(|passed" $R/fault_$how.log | tail -6
done
tar cf $OUT/next2.tar -C $OUT next2 && rm -rf $R
