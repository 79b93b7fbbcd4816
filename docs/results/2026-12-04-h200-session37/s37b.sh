#!/bin/bash
# Session 37, run 2 (prepared; no device was lent after run 1): the row tile (kernels/ffn.h
# kern_proj_ln_cuda: y = LN(a W^T + b + residual), a CTA holding whole rows: 128 of 384, or 64 of
# 768 with the consumer groups splitting the columns) as the last candidate of
# KERN_LINEAR_BIAS_ADD_LN plans (R = main + row_tile_R.patch) against main (A). Its kernel tests
# (proj_ln; linear_ln with the row tile among the candidates), the gemms bench of out+ln and
# ffn2+ln for both models in binary16 with the 16-bit residual (sustained 1 s: joules), then an
# engine A/B of A against R on MiniLM (ragged, 4096, 12288, 16384; 3 rounds, each tuning its own
# GEMMs), the buckets whose plans chose the row tile, and Nsight Compute of the row tile.
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
# where the row tile's time goes: Nsight Compute of MiniLM's out+ln at 16384 tokens (clocks left alone)
BENCH_SUSTAIN_S=0 timeout 150 ncu --clock-control none --set full -k regex:k_ffn -c 1 -o "$R/row" \
    "$C/binR/bench_kernels_cuda" gemms "$R/ncu_bench.json" 16384 dtype=f16 residual=16 \
    model=minilm gemm=out+ln "match=row tile" > "$R/ncu.log" 2>&1
echo "== ncu rc $? at $SECONDS s"
ncu -i "$R/row.ncu-rep" --page details --csv > "$R/row_details.csv" 2>/dev/null
grep -E '"(Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|DRAM Throughput|Executed Ipc Active|Issue Slots Busy|Registers Per Thread|Local Memory Spilling Requests)"' "$R/row_details.csv" | cut -d, -f12- | head -20
ncu -i "$R/row.ncu-rep" --page raw --csv --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__cycles_active.avg,l1tex__throughput.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed > "$R/row_raw.csv" 2>&1
tail -3 "$R/row_raw.csv" | cut -c1-600
rm -f "$R"/*.ncu-rep
variant_finish s37b
