#!/bin/bash
# Builds what session 18's runs need (here, from the repository root) and packs it into
# .gpupack/s18.tar.xz for the device tool (carry [".gpupack/s18.tar.xz"], command:
# mkdir -p .gpucarry && tar xJf .gpupack/s18.tar.xz -C .gpucarry && bash .gpucarry/rN.sh):
#   bin0  main's kernels_cuda, engine_cuda, bench_kernels_cuda, bench_engine_cuda
#   binS  branch own-smem's kernels_cuda, engine_cuda, bench_engine_cuda (runs 6-7)
#   binP  branch pdl-early's kernels_cuda, engine_cuda, bench_engine_cuda (run 8; bin0 then at
#         main 344e0b6)
#   graph_launch  the graph-launch latency harness (graph_launch.cu beside this script)
# Needs the four host libraries of shared/GPU-HOST.md in .gpucarry/lib (an earlier pack has them).
set -euo pipefail
repo=$(pwd)
res=$repo/docs/results/2026-12-02-h200-session18
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
# (binS of runs 6-7: build binS own-smem kernels_cuda engine_cuda bench_engine_cuda)
build binP pdl-early kernels_cuda engine_cuda bench_engine_cuda
nvcc -O2 -std=c++17 --generate-code=arch=compute_90a,code=sm_90a -o .gpucarry/graph_launch \
    "$res/graph_launch.cu" -lcuda
cp "$res"/r*.sh .gpucarry/
tar cf - -C .gpucarry bin0 binP lib graph_launch $(cd .gpucarry && ls r*.sh) |
    xz -T8 -6 >.gpupack/s18.tar.xz
ls -la .gpupack/s18.tar.xz
