#!/bin/bash
# Builds what session 18's first run needs (here, from the repository root) and packs it into
# .gpupack/gc.tar.xz for the device tool (carry [".gpupack"], command:
# mkdir -p .gpucarry && tar xJf .gpupack/gc.tar.xz -C .gpucarry && bash .gpucarry/next1.sh):
#   bin0  main's kernels_cuda, engine_cuda, bench_kernels_cuda, bench_engine_cuda
# and .gpupack/real.tar.xz (bin0's bench_engine_cuda, lib, .gpucarry/real16, next2.sh; carried
# alone: with gc.tar.xz it would pass the device tool's 64 MiB).
# Needs the four host libraries of shared/GPU-HOST.md in .gpucarry/lib (or in an earlier pack)
# and .gpucarry/real16 (python3 bench/gpu/pack_bf16_model.py models/all-MiniLM-L6-v2
# .gpucarry/real16 f16).
set -euo pipefail
repo=$(pwd)
res=$repo/docs/results/2026-12-02-h200-session17
work=$repo/build-next
mkdir -p "$work" .gpucarry .gpupack
if [ -d "$work/bin0" ]; then git -C "$work/bin0" checkout -q -f --detach main; else
    git worktree add --detach "$work/bin0" main >/dev/null; fi
cmake -S "$work/bin0" -B "$work/bin0/build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON \
    -DEMBER_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 >"$work/bin0.cmake.log"
cmake --build "$work/bin0/build" -j16 --target kernels_cuda engine_cuda bench_kernels_cuda \
    bench_engine_cuda >"$work/bin0.build.log"
rm -rf .gpucarry/bin0 && mkdir -p .gpucarry/bin0
for t in kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda; do
    cp "$(find "$work/bin0/build" -name $t -type f -executable | head -1)" .gpucarry/bin0/
done
cp "$res/next1.sh" .gpucarry/
cp "$res/next2.sh" .gpucarry/
tar cf - -C .gpucarry bin0 lib next1.sh | xz -T8 -6 >.gpupack/gc.tar.xz
tar cf - -C .gpucarry bin0/bench_engine_cuda lib real16 next2.sh | xz -T8 -6 >.gpupack/real.tar.xz
ls -la .gpupack/gc.tar.xz .gpupack/real.tar.xz
