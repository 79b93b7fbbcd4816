#!/bin/bash
# Session 29, last run: G = main + gelu_erf as max(z, 0) - |z| c (13 instructions a value, 14
# before; fp32 emulation over [-12, 12]: max |error| / max(1, |z|) 1.457e-7 against 1.461e-7).
# The FFN-up + GELU epilogue is issue-bound (twenty-fourth round). Kernel tests of G (bias_gelu,
# linear), the ffn1+gelu GEMMs of N and G (f16, 4096 and 16384 tokens), engine A/B (one tuning).
# NOT RUN as written: with the device time left, a reduced form ran (README.txt item 5: kernel
# tests bias_gelu only, the MiniLM 16384 GEMM, a 2-round MiniLM A/B of b1_128 and ragged). Run it
# whole (the linear tests above all) before merging g13.patch (the change; on main).
# Pack: binN binG + lib/: tar cf - -C .gpucarry lib binN binG | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/g13.tar.xz
# Device: carry [".gpupack/g13.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/g13.tar.xz -C .gpucarry && bash docs/results/2026-12-03-h200-session29/g13.sh
. bench/gpu/variant_steps.sh
variant_setup g13
kernel_tests G 150 bias_gelu linear || { variant_finish g13; exit 1; }
gemms_bench "4096,16384 dtype=f16 gemm=ffn1+gelu" N G
shared_tuning b1_128,1024,ragged N G
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 N=$C/binN G=$C/binG > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
variant_finish g13
