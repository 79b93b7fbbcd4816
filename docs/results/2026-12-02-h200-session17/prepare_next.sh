#!/bin/bash
# Builds what session 18's first run needs (here, from the repository root) and packs it into
# .gpupack/gc.tar.xz for the device tool (carry [".gpupack"], command:
# mkdir -p .gpucarry && tar xJf .gpupack/gc.tar.xz -C .gpucarry && bash .gpucarry/next1.sh):
#   bin0  main's kernels_cuda, engine_cuda, bench_kernels_cuda, bench_engine_cuda
#   binR  branch relaxed-barrier's kernels_cuda, bench_engine_cuda (next3.sh)
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
build() { # name rev targets...: a worktree at rev (an earlier one moved there), built, copied
    local name=$1 rev=$2
    shift 2
    if [ -d "$work/$name" ]; then git -C "$work/$name" checkout -q -f --detach "$rev"; else
        git worktree add --detach "$work/$name" "$rev" >/dev/null; fi
    cmake -S "$work/$name" -B "$work/$name/build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON \
        -DEMBER_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 >"$work/$name.cmake.log"
    cmake --build "$work/$name/build" -j16 --target "$@" >"$work/$name.build.log"
    rm -rf ".gpucarry/$name" && mkdir -p ".gpucarry/$name"
    for t in "$@"; do
        cp "$(find "$work/$name/build" -name "$t" -type f -executable | head -1)" ".gpucarry/$name/"
    done
}
build bin0 main kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda
build binR relaxed-barrier kernels_cuda bench_engine_cuda
cp "$res/next1.sh" "$res/next3.sh" .gpucarry/
cp "$res/next2.sh" .gpucarry/
tar cf - -C .gpucarry bin0 binR lib next1.sh next3.sh | xz -T8 -6 >.gpupack/gc.tar.xz
tar cf - -C .gpucarry bin0/bench_engine_cuda lib real16 next2.sh | xz -T8 -6 >.gpupack/real.tar.xz
ls -la .gpupack/gc.tar.xz .gpupack/real.tar.xz
