#!/bin/bash
# Prepared in session 19 (not run): where the pooling kernel's 6.5 us go (MiniLM 1 x 128 in the
# graph, session 19's trace; BERT-base 7.4). pool-marks.patch beside this script is a diagnostic
# build, not for main: -DEMBER_POOL_MARKS makes the pooling kernel write %globaltimer at its
# phases (PDL wait's end, statistics staged, rows summed, columns summed, norm known, stores
# issued) and bench_engine_cuda profile print their medians.
# Dev box (repository root), once (or: bash docs/results/2026-12-02-h200-session19/next/prepare.sh,
# which makes every pack of next1-3.sh from a fresh checkout):
#   git worktree add -b pool-marks build-next/binD main && (cd build-next/binD &&
#     git am ../../docs/results/2026-12-02-h200-session19/next/pool-marks.patch &&
#     cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_WERROR=ON \
#       -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_FLAGS=-DEMBER_POOL_MARKS=1 \
#       -DCMAKE_C_FLAGS=-DEMBER_POOL_MARKS=1 && cmake --build build -j --target bench_engine_cuda)
#   mkdir -p .gpucarry/binD && cp build-next/binD/build/bench/bench_engine_cuda .gpucarry/binD/
#   tar cf - -C .gpucarry lib binD next3.sh | xz -T0 -6 > .gpupack/s20c.tar.xz  (next3.sh copied
#   into .gpucarry first)
# Device (~2 min): carry [".gpupack/s20c.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s20c.tar.xz -C .gpucarry && bash .gpucarry/next3.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
for m in minilm bert-base; do
    EMBER_TUNE_CACHE=/tmp/tcD_$m .gpucarry/binD/bench_engine_cuda profile /tmp/m/$m cuda:0 \
        b1_128,256,ragged 300 spin=5000 2>&1 | tee -a $OUT/pool_marks.txt
done
