#!/bin/bash
# Session 31, run 1: the row-complete LayerNorm GEMM (branch rowln, "wgmma 128x384 s2 rowln":
# a CTA per 128 whole rows of MiniLM's 384 columns, the sublayer end in registers) against main
# (binS2 = main 32db32c's engine code: add_layernorm with 2 rows a thread at hidden 384).
#   kernels_cuda linear_ln (every candidate x shape x residual type, dead rows) on R;
#   gemms bench of out+ln / ffn2+ln, MiniLM, f16 with the f16 residual in place (the engine's
#   stream) and bf16 with the fp32 residual;
#   engine A/B of S2 and R on MiniLM (each tunes afresh: R has one configuration more).
# Pack: tar cf - -C .gpucarry lib binS2 binR | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r1.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r1.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session31/r1.sh
. bench/gpu/variant_steps.sh
variant_setup r1
kernel_tests R 240 linear_ln || { variant_finish r1; exit 1; }
grep -E "rowln" "$R/kernels_R.log" | head -5
gemms_bench "4096,16384 dtype=f16 residual=16 model=minilm" R
grep -E "rowln|cublas" "$R/g_R.txt" | grep -E "(out|ffn2)\+ln" | cut -c1-100
mv "$R/g_R.txt" "$R/g_R_f16.txt"
gemms_bench "4096,16384 model=minilm gemm=out+ln" R
grep -E "rowln|best" "$R/g_R.txt"
AB_MODELS=minilm AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 1024,4096,8192,ragged 3 \
    S2="$C/binS2" R="$C/binR" > "$R/ab_summary.txt" 2>&1
ab_summary "$R/ab_summary.txt"
variant_finish r1
