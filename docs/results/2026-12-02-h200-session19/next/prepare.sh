#!/usr/bin/env bash
# Session 20, dev box, repository root, from a fresh checkout: everything next1.sh, next2.sh and
# next3.sh need (~15 min on 2 cores). Makes the branches embed-copy, fold-splitk8 and pool-marks
# from the patches beside this script (skipped when a branch exists), builds main and each
# branch in build-next/ worktrees, gathers the host libraries of shared/GPU-HOST.md into
# .gpucarry/lib and writes three packs:
#   .gpupack/s20.tar.xz   bin0 (main) + binE (embed-copy) + the CUPTI tracer, next1.sh
#   .gpupack/s20b.tar.xz  bin0 + binK (fold-splitk8), next2.sh
#   .gpupack/s20c.tar.xz  binD (pool-marks, built with -DEMBER_POOL_MARKS), next3.sh
# Each pack's command is in its script's header.
set -euo pipefail
here=docs/results/2026-12-02-h200-session19/next
[ -f "$here/prepare.sh" ] || { echo "prepare.sh: run from the repository root" >&2; exit 2; }
pkg-config --exists libzmq hiredis msgpack jansson openblas || ops/install-deps.sh >/dev/null
mkdir -p .git/info .gpucarry/lib .gpupack
grep -qx '/.gpucarry/' .git/info/exclude 2>/dev/null || printf '/.gpucarry/\n/.gpupack/\n' >>.git/info/exclude

for spec in embed-copy:embed-copy.patch fold-splitk8:fold-splitk.patch pool-marks:pool-marks.patch; do
    branch=${spec%%:*} patch=${spec#*:}
    git rev-parse -q --verify "refs/heads/$branch" >/dev/null && continue
    wt=$(mktemp -d)
    git worktree add -q -b "$branch" "$wt" main
    git -C "$wt" am -q "$PWD/$here/$patch"
    git worktree remove "$wt"
    echo "branch $branch: $(git rev-parse --short "$branch")"
done

# the host libraries the binaries need beyond the GPU host's own (shared/GPU-HOST.md), and CUPTI
for lib in libopenblas.so.0 libjansson.so.4 libgfortran.so.5 libquadmath.so.0; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')" .gpucarry/lib/
done
cp -L "$(ls /usr/local/cuda*/lib*/libcupti.so.13 /usr/local/cuda*/extras/CUPTI/lib64/libcupti.so.13 \
    2>/dev/null | head -1)" .gpucarry/lib/

build() { # name rev cmake-args... -- targets...
    local name=$1 rev=$2 dir=build-next/$1
    shift 2
    local args=()
    while [ "$1" != "--" ]; do args+=("$1"); shift; done
    shift
    if [ -d "$dir" ]; then git -C "$dir" checkout -q -f --detach "$rev"
    else git worktree add -q --detach "$dir" "$rev"; fi
    cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_WERROR=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 "${args[@]}" >"$dir.cmake.log"
    cmake --build "$dir/build" -j"$(nproc)" --target "$@" >"$dir.build.log"
    rm -rf ".gpucarry/$name" && mkdir -p ".gpucarry/$name"
    for t in "$@"; do
        [ "$t" = ember_kernel_trace ] && continue
        cp "$(find "$dir/build" -name "$t" -type f -executable | head -1)" ".gpucarry/$name/"
    done
    echo "$name: $(git -C "$dir" rev-parse --short HEAD) ($*)"
}
build bin0 main -- bench_engine_cuda bench_kernels_cuda ember_kernel_trace
cp build-next/bin0/build/bench/libember_kernel_trace.so .gpucarry/
build binE embed-copy -- bench_engine_cuda bench_kernels_cuda kernels_cuda engine_cuda
build binK fold-splitk8 -- bench_engine_cuda kernels_cuda bench_kernels_cuda
build binD pool-marks -DCMAKE_CUDA_FLAGS=-DEMBER_POOL_MARKS=1 -DCMAKE_C_FLAGS=-DEMBER_POOL_MARKS=1 \
    -- bench_engine_cuda
cp "$here"/next1.sh "$here"/next2.sh "$here"/next3.sh .gpucarry/
pack() { # name entries...
    local out=.gpupack/$1
    shift
    tar cf - -C .gpucarry "$@" | xz -T"$(nproc)" -6 >"$out"
    ls -la "$out"
}
pack s20.tar.xz lib bin0 binE libember_kernel_trace.so next1.sh
pack s20b.tar.xz lib bin0 binK next2.sh
pack s20c.tar.xz lib binD next3.sh
