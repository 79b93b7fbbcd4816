#!/bin/bash
# Session 37, run 2 (prepared; no device was lent after run 1): the row tile (kernels/ffn.h
# kern_proj_ln_cuda: y = LN(a W^T + b + residual), a CTA holding whole rows: 128 of 384, or 64 of
# 768 with the consumer groups splitting the columns) as the last candidate of
# KERN_LINEAR_BIAS_ADD_LN plans (R = main + row_tile_R.patch) against main (A). Its kernel tests
# (proj_ln; linear_ln with the row tile among the candidates), the gemms bench of out+ln and
# ffn2+ln for both models in binary16 with the 16-bit residual (sustained 1 s: joules), then an
# engine A/B of A against R on MiniLM (ragged, 4096, 12288, 16384; 3 rounds, each tuning its own
# GEMMs) and the buckets whose plans chose the row tile.
# Build: A = main, R = main + docs/results/2026-12-04-h200-session37/row_tile_R.patch (git am);
#   tests/kernels_cuda, tests/engine_cuda, bench/bench_kernels_cuda, bench/bench_engine_cuda of
#   each into .gpucarry/binA, .gpucarry/binR (strip --strip-unneeded); .gpucarry/lib as before.
# Pack: tar cf - -C .gpucarry lib binA binR | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s37b.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s37b.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session37/s37b.sh
. bench/gpu/variant_steps.sh
variant_setup s37b
kernel_tests R 300 proj_ln linear_ln
grep -E "proj_ln .*(worst|skipped)|linear \+ LayerNorm|row tile|CHECK failed" "$R/kernels_R.log" | head -16
for m in minilm bert-base; do
    for g in out+ln ffn2+ln; do
        BENCH_SUSTAIN_S=1 timeout 100 "$C/binR/bench_kernels_cuda" gemms "$R/g_${m}_$g.json" \
            4096,16384 dtype=f16 residual=16 model=$m gemm=$g > "$R/g_${m}_$g.txt" 2>&1
        echo "== gemms $m $g rc $? at $SECONDS s"
        grep -E "best of|row tile|cublasLt #0" "$R/g_${m}_$g.txt" | cut -c1-150
    done
done
AB_MODELS=minilm AB_ITERS=400 timeout 300 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m \
    ragged,4096,12288,16384 3 A="$C/binA" R="$C/binR" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
echo "buckets x GEMMs on the row tile: $(grep -c 'row tile' /tmp/engine_ab_tc_minilm_R)"
grep "row tile" /tmp/engine_ab_tc_minilm_R | cut -c1-120 | head -30
cp /tmp/engine_ab_tc_minilm_R "$R/tune_cache_minilm_R.txt"
variant_finish s37b
