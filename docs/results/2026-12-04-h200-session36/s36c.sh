#!/bin/bash
# Session 36, run 3: where the fused FFN's time goes. Nsight Compute (full set, source counters)
# of k_ffn at 16384 tokens (128 tiles, one per CTA), then the kernel bench at 16384 / 16896 /
# 27392 tokens with 1 s sustained windows.
# Pack: tar cf - -C .gpucarry lib binF | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s36c.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s36c.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session36/s36c.sh
. bench/gpu/variant_steps.sh
variant_setup s36c
BENCH_SUSTAIN_S=0 timeout 200 ncu --set full --import-source yes -k regex:k_ffn -c 1 -o "$R/ffn" \
    "$C/binF/bench_kernels_cuda" ffn "$R/ncu_bench.json" 16384 > "$R/ncu.log" 2>&1
echo "== ncu rc $? at $SECONDS s"
ncu -i "$R/ffn.ncu-rep" --page source --csv --print-source sass > "$R/ffn_sass.csv" 2>/dev/null
python3 bench/gpu/ncu_source_summary.py "$R/ffn_sass.csv" 40 > "$R/ffn_summary.txt" 2>&1
head -75 "$R/ffn_summary.txt"
ncu -i "$R/ffn.ncu-rep" --page details --csv > "$R/ffn_details.csv" 2>/dev/null
grep -E '"(Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|DRAM Throughput|Executed Ipc Active|Issue Slots Busy|SM Busy|Registers Per Thread|Local Memory Spilling Requests|Shared Memory Configuration Size|Achieved Occupancy)"' "$R/ffn_details.csv" | cut -d, -f12- | head -30
ncu -i "$R/ffn.ncu-rep" --page raw --csv --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__cycles_active.avg,sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active > "$R/ffn_raw.csv" 2>&1
cat "$R/ffn_raw.csv" | tail -3 | cut -c1-600
rm -f "$R"/*.ncu-rep
BENCH_SUSTAIN_S=1 timeout 200 "$C/binF/bench_kernels_cuda" ffn "$R/ffn.json" 16384,16896,27392 > "$R/ffn.txt" 2>&1
echo "== bench ffn rc $? at $SECONDS s"
grep -vE "unfused: ffn1" "$R/ffn.txt" | tail -20
variant_finish s36c
