#!/bin/bash
# Session 33, run 4: G2 = main + many_items_test.patch + the GELU in fp32 through tanh
# (kern::gelu_erf: h (1 + tanh.approx.f32(h (c1 + c2 z^2))), h = z / 2, for both 16-bit types;
# 6 instructions a value, the binary16 pair packed once). NT = main + the test patch (session 32).
# Kernel tests (GELU, linear, linear_fold), engine_cuda, the ffn1+gelu GEMM rows, an engine A/B
# of both models; then gpu-check steps 3-4 on G2 (transformers, the real MiniLM) and step 5 (the
# benches of record) with what time is left.
# Pack: tar cf - -C .gpucarry lib real16 binNT binG2 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/g2.tar.xz
#   (55.3 MB: the earlier sessions' docs/results folders moved aside for the call)
# Device: mkdir -p .gpucarry && tar xJf .gpupack/g2.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session33/g2.sh
. bench/gpu/variant_steps.sh
variant_setup g2
kernel_tests G2 300 bias_gelu linear linear_fold || { variant_finish g2; exit 1; }
grep -E "^gelu" "$R/kernels_G2.log"
(export EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp
    time timeout 300 "$C/binG2/engine_cuda") > "$R/engine_G2.log" 2>&1
echo "== engine_cuda G2 rc $?"
grep -E "passed|failed|CHECK" "$R/engine_G2.log" | tail -3
gemms_bench "4096,16384 dtype=f16 gemm=ffn1+gelu" NT G2 | grep -E "==|best of ours wgmma 128x128 s4 pingpong f16:"
shared_tuning 1024,4096,ragged NT G2
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 1024,4096,ragged 3 NT="$C/binNT" \
    G2="$C/binG2" > "$R/ab_summary.txt" 2>&1
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
echo "== at $SECONDS s"
ln -sfn ../lib "$C/binG2/lib"
ln -sfn ../real16 "$C/binG2/real-minilm"
MODELS=/tmp/m OUT=$R/gc ops/gpu-check.sh --prebuilt "$C/binG2" --engine-only --steps 3,4 > "$R/gc.log" 2>&1
echo "== gpu-check 3,4 rc $? at $SECONDS s"
grep -E "worst|OVERALL" "$R/gc/summary.txt" "$R/gc.log" | tail -12
rm -rf "$R"/gc/real "$R"/gc/check
if [ $SECONDS -lt 330 ]; then
    reps=$([ $SECONDS -lt 280 ] && echo 500 || echo 200)
    MODELS=/tmp/m OUT=$R/rec timeout $((560 - SECONDS)) ops/gpu-check.sh --prebuilt "$C/binG2" \
        --engine-only --reps $reps --steps 5 > "$R/rec.log" 2>&1
    echo "== gpu-check 5 (reps $reps) rc $? at $SECONDS s"
    tail -22 "$R/rec/summary.txt" 2>/dev/null || tail -20 "$R/rec.log"
fi
variant_finish g2
