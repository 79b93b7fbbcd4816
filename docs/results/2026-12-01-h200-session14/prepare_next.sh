#!/bin/bash
# Builds what the next GPU session's first runs need (run here, on the build machine, from the
# repository root) and packs it into .gpupack/gc.tar.xz for the device tool (carry [".gpupack"],
# command: mkdir -p .gpucarry && tar xJf .gpupack/gc.tar.xz -C .gpucarry && bash .gpucarry/rN.sh):
#   bin0  main's bench_engine_cuda                             (A in r2.sh / r3.sh)
#   bin1  fold-ln's kernels_cuda, engine_cuda, bench_engine_cuda, bench_kernels_cuda (r3.sh)
#   bin2  main + debug_noln.patch: bench_engine_cuda           (D in r2.sh)
#   bin3  main + attention_rescale_skip.patch: bench_engine_cuda, kernels_cuda (B in r2.sh)
#   binp  phase_latency                                        (./binp/phase_latency 2000)
# r2.sh (A bin0, B bin3, D bin2) and r3.sh (A bin0, fold bin1) use this layout.
# Needs .gpucarry/lib (libopenblas, libjansson, libgfortran, libquadmath: shared/GPU-HOST.md).
set -euo pipefail
repo=$(pwd)
res=$repo/docs/results/2026-12-01-h200-session14
work=$repo/build-next
mkdir -p "$work" .gpucarry .gpupack
build() { # name rev patch targets...
    local name=$1 rev=$2 patch=$3
    shift 3
    local tree=$work/$name
    if [ -d "$tree" ]; then # a tree of an earlier run: to rev again, its patch undone
        git -C "$tree" checkout -q -f --detach "$rev"
    else
        git worktree add --detach "$tree" "$rev" >/dev/null
    fi
    [ "$patch" = - ] || git -C "$tree" apply "$res/$patch"
    cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON \
        -DEMBER_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 >"$work/$name.cmake.log"
    cmake --build "$tree/build" -j16 --target "$@" >"$work/$name.build.log"
    rm -rf ".gpucarry/$name" && mkdir -p ".gpucarry/$name"
    local t
    for t in "$@"; do cp "$(find "$tree/build" -name "$t" -type f -executable | head -1)" ".gpucarry/$name/"; done
}
build bin0 main - bench_engine_cuda
build bin1 fold-ln - kernels_cuda engine_cuda bench_engine_cuda bench_kernels_cuda
build bin2 main debug_noln.patch bench_engine_cuda
build bin3 main attention_rescale_skip.patch bench_engine_cuda kernels_cuda
mkdir -p .gpucarry/binp
nvcc -O3 -arch=sm_90 -std=c++17 -o .gpucarry/binp/phase_latency "$res/phase_latency.cu"
cp "$res"/r2.sh "$res"/r3.sh .gpucarry/
tar cf - -C .gpucarry bin0 bin1 bin2 bin3 binp lib $(cd .gpucarry && ls r*.sh) |
    xz -T8 -6 >.gpupack/gc.tar.xz
ls -la .gpupack/gc.tar.xz
