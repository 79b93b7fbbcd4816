#!/bin/bash
# Session 30, first run: H = main + g13.patch (session 29) + the binary16 GELU in packed binary16
# arithmetic (kern::gelu_erf_h2: 8.5 SASS instructions a value in the FFN-up's epilogue, bias add
# and pack included, against 14.5). N = main's engine code (session 29's binN).
# Kernel tests of H (the new exhaustive GELU bound test in bias_gelu; every GEMM epilogue), the
# ffn1+gelu GEMMs of N and H (f16, 4096 and 16384 tokens, both models), a 3-round engine A/B
# (one shared tuning).
# Pack: tar cf - -C .gpucarry lib binN binH | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/h2.tar.xz
# Device: carry [".gpupack/h2.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/h2.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session30/h2.sh
. bench/gpu/variant_steps.sh
variant_setup h2
kernel_tests H 200 bias_gelu linear linear_ln linear_fold linear_pdl
grep -E "^gelu " "$R/kernels_H.log"
gemms_bench "4096,16384 dtype=f16 gemm=ffn1+gelu" N H
shared_tuning b1_128,1024,ragged N H
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m b1_128,1024,ragged 3 N="$C/binN" H="$C/binH" > "$R/ab_summary.txt" 2>&1
ab_summary "$R/ab_summary.txt"
variant_finish h2
