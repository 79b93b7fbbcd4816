#!/usr/bin/env bash
# Session 21, dev box, repository root, from a fresh checkout of main (eabad13 or later): the two
# branches session 20 prepared but could not run (its device time ran out), their builds and packs.
#   fuse-attn  = 0001 (pool: CTA 0 keeps the pooled values in shared memory, 80 registers, 3 CTAs
#                per SM) + 0002 (kernels/qkv_attention: QKV + attention as one kernel at <= 128
#                tokens; engine fuse=auto|off)
#   ffn-fused  = ffn/0001 (kernels/ffn_fused: FFN-up + FFN-down as one kernel, clusters of 16)
# Packs: .gpupack/s21.tar.xz (bin0 = main, binF = fuse-attn, next1.sh), .gpupack/s21b.tar.xz
# (binX = ffn-fused's ffn_fused_cuda + ffn_time, next2.sh). ~10 min on 2 cores.
set -euo pipefail
here=docs/results/2026-12-02-h200-session20/next
[ -f "$here/prepare.sh" ] || { echo "prepare.sh: run from the repository root" >&2; exit 2; }
pkg-config --exists libzmq hiredis msgpack jansson openblas || ops/install-deps.sh >/dev/null
mkdir -p .git/info .gpucarry/lib .gpupack
grep -qx '/.gpucarry/' .git/info/exclude 2>/dev/null || printf '/.gpucarry/\n/.gpupack/\n' >>.git/info/exclude
mk() { # branch patches...
    local branch=$1 wt
    shift
    git rev-parse -q --verify "refs/heads/$branch" >/dev/null && return 0
    wt=$(mktemp -d)
    git worktree add -q -b "$branch" "$wt" main
    git -C "$wt" am -q "$@"
    git worktree remove "$wt"
    echo "branch $branch: $(git rev-parse --short "$branch")"
}
mk fuse-attn "$PWD/$here"/000*.patch
mk ffn-fused "$PWD/$here"/ffn/0001-*.patch
for lib in libopenblas.so.0 libjansson.so.4 libgfortran.so.5 libquadmath.so.0; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')" .gpucarry/lib/
done
build() { # name rev targets...
    local name=$1 rev=$2 dir=build-next/$1
    shift 2
    if [ -d "$dir" ]; then git -C "$dir" checkout -q -f --detach "$rev"
    else git worktree add -q --detach "$dir" "$rev"; fi
    cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_WERROR=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 >"$dir.cmake.log"
    cmake --build "$dir/build" -j"$(nproc)" --target "$@" >"$dir.build.log"
    rm -rf ".gpucarry/$name" && mkdir -p ".gpucarry/$name"
    for t in "$@"; do
        cp "$(find "$dir/build" -name "$t" -type f -executable | head -1)" ".gpucarry/$name/"
    done
    echo "$name: $(git -C "$dir" rev-parse --short HEAD) ($*)"
}
build bin0 main bench_engine_cuda
build binF fuse-attn kernels_cuda bench_kernels_cuda bench_engine_cuda engine_cuda
build binX ffn-fused ffn_fused_cuda
# the helper's timing harness (not part of the tree; C, linked like the tests): the fused FFN
# against the two folded GEMMs (built this way here, session 20)
d=build-next/binX
gcc -O2 -std=c11 -DEMBER_HAVE_CUDA=1 -I"$d" -I/usr/local/cuda/include "$here/ffn/ffn_time.c" \
    -o .gpucarry/binX/ffn_time "$d/build/kernels/libember_kernels_cuda.a" \
    "$d/build/kernels/libember_kernels_ref.a" "$d/build/common/libember_common.a" \
    -L/usr/local/cuda/lib64 -lcudart_static -lcublasLt -lcublas -lcuda -lopenblas -lstdc++ -lm \
    -lpthread -ldl -lrt
cp "$here"/next1.sh "$here"/next2.sh .gpucarry/
pack() { local out=.gpupack/$1; shift; tar cf - -C .gpucarry "$@" | xz -T"$(nproc)" -6 >"$out"; ls -la "$out"; }
pack s21.tar.xz lib bin0 binF next1.sh
pack s21b.tar.xz lib binX next2.sh
