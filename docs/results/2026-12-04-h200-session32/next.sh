#!/bin/bash
# Prepared in session 32 for the next one (not run): the kernel-test case of several (tile, head)
# items a CTA (many_items_test.patch: ~3000 ragged tokens in 30 sequences of 1-300 tokens, half
# under 41, 16 heads, GQA, both head dims, causal or not) ran only on the persistent attention's
# build (r6); run it on main's kernels before merging it.
# Build: git worktree add --detach build-next/bin0 main (or check it out there), git -C
#   build-next/bin0 apply ../../docs/results/2026-12-04-h200-session32/many_items_test.patch,
#   cmake --build build-next/bin0/build --target kernels_cuda, copy kernels_cuda into
#   .gpucarry/binNT and strip it.
# Pack: tar cf - -C .gpucarry lib binNT | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/next33.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/next33.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session32/next.sh
. bench/gpu/variant_steps.sh
variant_setup next33
kernel_tests NT 300 attention
grep -E "ragged hd|FAIL" "$R/kernels_NT.log" | head -20
variant_finish next33
