#!/usr/bin/env bash
# bench/gpu/pack_builds.sh — builds revisions of the tree here (no GPU needed) and packs their
# binaries for the GPU machine, the way every A/B of two branches starts: for each NAME=REV:TARGETS
# a worktree build-next/NAME at REV (an existing one is moved there and rebuilt incrementally),
# Release with CUDA (sm_90) and warnings as errors, the TARGETS (comma-separated) copied to
# .gpucarry/NAME/; then .gpucarry/lib (the host libraries of shared/GPU-HOST.md, which must be
# there), those NAME folders and any EXTRA files (copied into .gpucarry first) go into PACK
# (tar.xz; the device tool carries at most 64 MiB).
#
# Usage (repository root): bench/gpu/pack_builds.sh PACK NAME=REV:TARGETS... [-- EXTRA...]
#   e.g. bench/gpu/pack_builds.sh .gpupack/ab.tar.xz \
#          bin0=main:kernels_cuda,bench_engine_cuda binB=my-branch:bench_engine_cuda -- r1.sh
# On the GPU machine: mkdir -p .gpucarry && tar xJf PACK -C .gpucarry
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,13p' "$0"; exit 2; }
pack=$1
shift
work=$(pwd)/build-next
mkdir -p "$work" .gpucarry "$(dirname "$pack")"
[ -d .gpucarry/lib ] || { echo "pack_builds: .gpucarry/lib missing (shared/GPU-HOST.md)" >&2; exit 1; }
names=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    name=${1%%=*} rest=${1#*=}
    rev=${rest%%:*} targets=${rest#*:}
    if [ -z "$name" ] || [ -z "$rev" ] || [ "$targets" = "$rest" ]; then
        echo "pack_builds: want NAME=REV:TARGETS, got '$1'" >&2
        exit 2
    fi
    if [ -d "$work/$name" ]; then git -C "$work/$name" checkout -q -f --detach "$rev"
    else git worktree add -q --detach "$work/$name" "$rev"; fi
    cmake -S "$work/$name" -B "$work/$name/build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON \
        -DEMBER_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 >"$work/$name.cmake.log"
    IFS=, read -r -a tlist <<<"$targets"
    cmake --build "$work/$name/build" -j"$(nproc)" --target "${tlist[@]}" >"$work/$name.build.log"
    rm -rf ".gpucarry/$name" && mkdir -p ".gpucarry/$name"
    for t in "${tlist[@]}"; do
        cp "$(find "$work/$name/build" -name "$t" -type f -executable | head -1)" ".gpucarry/$name/"
    done
    echo "$name: $(git -C "$work/$name" rev-parse --short HEAD) ($targets)"
    names+=("$name")
    shift
done
extras=()
if [ $# -gt 0 ]; then
    shift
    for f in "$@"; do cp "$f" .gpucarry/ && extras+=("$(basename "$f")"); done
fi
tar cf - -C .gpucarry lib "${names[@]}" "${extras[@]}" | xz -T"$(nproc)" -6 >"$pack"
ls -la "$pack"
