#!/bin/bash
# Session 35, run 7: main (fd8e63a) with the attention tests' small cases at 3 heads where they
# had 4 without GQA (an odd head count): the whole kernels_cuda suite.
# Pack: tar cf - -C .gpucarry lib binK | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s35g.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s35g.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session35/s35g.sh
. bench/gpu/variant_steps.sh
variant_setup s35g
kernel_tests K 200
grep -E "^attention: kernel" "$R/kernels_K.log"
variant_finish s35g
