#!/bin/bash
# Builds what the next GPU session's first runs need (run here, on the build machine, from the
# repository root) and packs it into .gpupack/gc.tar.xz for the device tool (carry [".gpupack"],
# command: mkdir -p .gpucarry && tar xJf .gpupack/gc.tar.xz -C .gpucarry && bash .gpucarry/rN.sh):
#   bin0  main's bench_engine_cuda                                   (A in r2.sh)
#   bin2  main + session 14's debug_noln.patch: bench_engine_cuda    (D in r2.sh)
#   bin3  main + session 14's attention_rescale_skip.patch: bench_engine_cuda, kernels_cuda (B)
#   bin7  fold-ln's bench_engine_cuda as bench_v0, its bench_kernels_cuda and kernels_cuda, and with
#         fold_diag.patch built with EMBER_FOLD_DIAG=1 / 2 as bench_v1 / bench_v2 (r7.sh)
# Needs .gpucarry/lib (libopenblas, libjansson, libgfortran, libquadmath: shared/GPU-HOST.md).
set -euo pipefail
repo=$(pwd)
res=$repo/docs/results/2026-12-01-h200-session15
s14=$repo/docs/results/2026-12-01-h200-session14
work=$repo/build-next
mkdir -p "$work" .gpucarry .gpupack
tree_at() { # name rev patch: a worktree at rev with patch applied (an earlier one moved there)
    local tree=$work/$1
    if [ -d "$tree" ]; then
        git -C "$tree" checkout -q -f --detach "$2"
    else
        git worktree add --detach "$tree" "$2" >/dev/null
    fi
    [ "$3" = - ] || git -C "$tree" apply "$3"
}
build() { # name build-dir cuda-flags werror targets...
    local name=$1 dir=$2 flags=$3 werror=$4
    shift 4
    cmake -S "$work/$name" -B "$work/$name/$dir" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON \
        -DEMBER_WERROR="$werror" -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_FLAGS="$flags" \
        >"$work/$name-$dir.cmake.log"
    cmake --build "$work/$name/$dir" -j16 --target "$@" >"$work/$name-$dir.build.log"
}
exe() { find "$work/$1/$2" -name "$3" -type f -executable | head -1; }
tree_at bin0 main - && build bin0 build "" ON bench_engine_cuda
tree_at bin2 main "$s14/debug_noln.patch" && build bin2 build "" ON bench_engine_cuda
tree_at bin3 main "$s14/attention_rescale_skip.patch" && build bin3 build "" ON bench_engine_cuda kernels_cuda
tree_at bin7 fold-ln - && build bin7 build "" ON bench_engine_cuda bench_kernels_cuda kernels_cuda
rm -rf .gpucarry/bin0 .gpucarry/bin2 .gpucarry/bin3 .gpucarry/bin7
mkdir -p .gpucarry/bin0 .gpucarry/bin2 .gpucarry/bin3 .gpucarry/bin7
cp "$(exe bin0 build bench_engine_cuda)" .gpucarry/bin0/
cp "$(exe bin2 build bench_engine_cuda)" .gpucarry/bin2/
cp "$(exe bin3 build bench_engine_cuda)" "$(exe bin3 build kernels_cuda)" .gpucarry/bin3/
cp "$(exe bin7 build bench_engine_cuda)" .gpucarry/bin7/bench_v0
cp "$(exe bin7 build bench_kernels_cuda)" "$(exe bin7 build kernels_cuda)" .gpucarry/bin7/
tree_at bin7 fold-ln "$res/fold_diag.patch" # diagnostic builds: no -Werror (unused operands)
for v in 1 2; do
    build bin7 "build-diag$v" "-DEMBER_FOLD_DIAG=$v" OFF bench_engine_cuda
    cp "$(exe bin7 "build-diag$v" bench_engine_cuda)" ".gpucarry/bin7/bench_v$v"
done
cp "$s14/r2.sh" "$res/r7.sh" .gpucarry/
tar cf - -C .gpucarry bin0 bin2 bin3 bin7 lib r2.sh r7.sh | xz -T8 -6 >.gpupack/gc.tar.xz
ls -la .gpupack/gc.tar.xz
