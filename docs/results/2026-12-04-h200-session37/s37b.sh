#!/bin/bash
# Session 37, run 2: the row tile (kernels/ffn.h kern_proj_ln_cuda: y = LN(a W^T + b + residual)
# with a CTA holding 128 whole rows of 384, the FFN kernel's FFN-down half with A streamed) as the
# last candidate of KERN_LINEAR_BIAS_ADD_LN plans (R) against main (A = 83f6331). Its kernel tests
# (proj_ln; linear_ln with the row tile among the candidates), the gemms bench of MiniLM's out+ln
# and ffn2+ln in binary16 with the 16-bit residual (sustained 1 s: joules), then an engine A/B of
# A against R on MiniLM (ragged, 4096, 12288, 16384; 3 rounds, each tuning its own GEMMs), the
# buckets whose plans chose the row tile, and the bench mode for both. Last, whether the fused FFN's
# joules reach a one-lane engine (session 37 run 1: even with ffn=off on two lanes): ffn=off
# against auto at lanes=1 on A, 2 rounds.
# Pack: tar cf - -C .gpucarry lib binA binR | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s37b.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s37b.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session37/s37b.sh
. bench/gpu/variant_steps.sh
variant_setup s37b
kernel_tests R 300 proj_ln linear_ln
grep -E "proj_ln .*(worst|skipped)|linear \+ LayerNorm|row tile|CHECK failed" "$R/kernels_R.log" | head -12
for g in out+ln ffn2+ln; do
    BENCH_SUSTAIN_S=1 timeout 150 "$C/binR/bench_kernels_cuda" gemms "$R/g_$g.json" 4096,16384 \
        dtype=f16 residual=16 model=minilm gemm=$g > "$R/g_$g.txt" 2>&1
    echo "== gemms $g rc $? at $SECONDS s"
    grep -E "best of|row 128|cublasLt #0" "$R/g_$g.txt" | cut -c1-140
done
AB_MODELS=minilm AB_ITERS=400 timeout 330 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m \
    ragged,4096,12288,16384 3 A="$C/binA" R="$C/binR" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
grep -c "row 128x384" /tmp/engine_ab_tc_minilm_R
grep "row 128x384" /tmp/engine_ab_tc_minilm_R | cut -c1-120 | head -30
cp /tmp/engine_ab_tc_minilm_R "$R/tune_cache_R.txt"
for v in A R; do
    EMBER_TUNE_CACHE=/tmp/engine_ab_tc_minilm_$v timeout 100 "$C/bin$v/bench_engine_cuda" bench \
        /tmp/m/minilm minilm "$R/bench_$v.json" 200 spin=5000 > "$R/bench_$v.txt" 2>&1
    echo "== bench $v rc $? at $SECONDS s"
    grep -E "100 texts|per 1000" "$R/bench_$v.txt" | head -6
done
EMBER_TUNE_CACHE=/tmp/tc_minilm1 timeout 100 "$C/binA/bench_engine_cuda" profile /tmp/m/minilm \
    cuda:0,ffn=off,lanes=1 ragged,16384 20 spin=5000 > "$R/tune1.txt" 2>&1
for v in off1 auto1; do cp /tmp/tc_minilm1 "/tmp/engine_ab_tc_minilm_$v"; done
AB_MODELS=minilm AB_ITERS=400 timeout 120 bash bench/gpu/engine_ab.sh "$R/ab1.txt" /tmp/m \
    ragged,16384 2 off1="$C/binA,ffn=off,lanes=1" auto1="$C/binA,lanes=1" > /dev/null 2>&1
echo "== ab lanes=1 at $SECONDS s"
ab_table "$R/ab1.txt" | tee "$R/ab1_table.md"
variant_finish s37b
