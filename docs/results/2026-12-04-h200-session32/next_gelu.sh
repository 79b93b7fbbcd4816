#!/bin/bash
# Prepared in session 32 for the next one (not run; ~6 min with the start-up): the binary16 GELU
# through tanh (gelu_tanh.patch, compile-checked only): kern::gelu_erf_h2 as z (1 + tanh(z (a + b
# z^2))) / 2 with a, b fitted to the erf form and rounded to the best binary16 pair (0x3a66,
# 0x287c), z clamped below at -12: ~10 instructions a pair against the ex2 form's ~16 (SASS: one
# F2FP, HMNMX2, 4 HFMA2 / HMUL2, 2 MUFU.TANH.F16 + PRMT, 1 HMUL2); a binary16 emulation over every
# z bounds it by 1.05e-3 max(1, |z|) with tanh's error at 2^-11 (the ex2 form: 1.04e-3; the test
# allows 1.25e-3). The FFN-up's GELU epilogue is issue-bound and costs ~8 us a layer-chunk of
# MiniLM (~5% of the ragged pass): fewer instructions there are the point.
#   kernels_cuda bias_gelu linear linear_fold on G; engine_cuda on G (the engine against the CPU
#   engine); bench_kernels_cuda gemms ffn1+gelu f16 at 4096 / 16384 on NT / G; engine A/B NT / G,
#   both models, 1024 / 4096 / ragged, 3 rounds. If it wins: gpu-check steps 3-4 (transformers,
#   the real MiniLM) before merging.
# Build: main + gelu_tanh.patch (it touches kernels/kern_cuda_dev.cuh: most kernels rebuild) ->
#   kernels_cuda bench_kernels_cuda bench_engine_cuda engine_cuda in .gpucarry/binG, stripped;
#   binNT as next.sh's (main + the test patch).
# Pack: tar cf - -C .gpucarry lib binNT binG | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/next33g.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/next33g.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session32/next_gelu.sh
. bench/gpu/variant_steps.sh
variant_setup next33g
kernel_tests G 400 bias_gelu linear linear_fold || { variant_finish next33g; exit 1; }
(export EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp
    time timeout 300 "$C/binG/engine_cuda") > "$R/engine_G.log" 2>&1
echo "== engine_cuda G rc $?"
grep -E "passed|failed|CHECK" "$R/engine_G.log" | tail -3
gemms_bench "4096,16384 dtype=f16 gemm=ffn1+gelu" NT G
shared_tuning 1024,4096,ragged NT G
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 1024,4096,ragged 3 NT="$C/binNT" \
    G="$C/binG" > "$R/ab_summary.txt" 2>&1
ab_summary "$R/ab_summary.txt"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
variant_finish next33g
