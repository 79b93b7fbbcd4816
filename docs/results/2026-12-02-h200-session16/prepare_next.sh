#!/bin/bash
# Builds what the next GPU session's runs need (here, from the repository root) and packs it into
# .gpupack/gc.tar.xz for the device tool (carry [".gpupack"], command:
# mkdir -p .gpucarry && tar xJf .gpupack/gc.tar.xz -C .gpucarry && bash .gpucarry/r9.sh):
#   bin0  main's bench_engine_cuda                                         (A in r4.sh)
#   binF  fold-ln's kernels_cuda, engine_cuda, bench_kernels_cuda, bench_engine_cuda  (F)
#   binI  fold-ln + fold_interleave.patch (folding tiles in the plain kernels' interleaved order):
#         bench_kernels_cuda, timing only (r9.sh)
#   binM  branch mlp-fused (the fused feed-forward kernel, device option mlp=on): kernels_cuda,
#         engine_cuda, bench_kernels_cuda, bench_engine_cuda (r10.sh)
# Needs the four host libraries of shared/GPU-HOST.md in .gpucarry/lib (or in an earlier pack).
set -euo pipefail
repo=$(pwd)
res=$repo/docs/results/2026-12-02-h200-session16
work=$repo/build-next
mkdir -p "$work" .gpucarry .gpupack
tree_at() { # name rev [patch]: a worktree at rev (an earlier one moved there), patch applied
    if [ -d "$work/$1" ]; then git -C "$work/$1" checkout -q -f --detach "$2"; else
        git worktree add --detach "$work/$1" "$2" >/dev/null; fi
    [ -z "${3:-}" ] || git -C "$work/$1" apply "$3"
}
build() { # name targets...
    local name=$1
    shift
    cmake -S "$work/$name" -B "$work/$name/build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON \
        -DEMBER_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 >"$work/$name.cmake.log"
    cmake --build "$work/$name/build" -j16 --target "$@" >"$work/$name.build.log"
}
exe() { find "$work/$1/build" -name "$2" -type f -executable | head -1; }
tree_at bin0 main && build bin0 bench_engine_cuda
tree_at binF fold-ln && build binF kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda
tree_at binI fold-ln "$res/fold_interleave.patch" && build binI bench_kernels_cuda
tree_at binM mlp-fused && build binM kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda
rm -rf .gpucarry/bin0 .gpucarry/binF .gpucarry/binI .gpucarry/binM
mkdir -p .gpucarry/bin0 .gpucarry/binF .gpucarry/binI .gpucarry/binM
cp "$(exe bin0 bench_engine_cuda)" .gpucarry/bin0/
for t in kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda; do cp "$(exe binF $t)" .gpucarry/binF/; done
cp "$(exe binI bench_kernels_cuda)" .gpucarry/binI/
for t in kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda; do cp "$(exe binM $t)" .gpucarry/binM/; done
cp "$res/r3.sh" "$res/r4.sh" "$res/r9.sh" "$res/r10.sh" .gpucarry/
tar cf - -C .gpucarry bin0 binF binI binM lib r3.sh r4.sh r9.sh r10.sh | xz -T8 -6 >.gpupack/gc.tar.xz
ls -la .gpupack/gc.tar.xz
