#!/bin/bash
# Session 30, fourth run: L = main + add_layernorm with 2 or 4 rows a thread at the large buckets
# (k_add_ln_rows: each thread's loads of x and the residual for all its rows staged in shared
# memory by cp.async, normalised as they land), against H (main's code: session 30's binH).
# The LayerNorm kernel took 12.1-12.3 us a call of MiniLM's 13.7k-token chunks (run 4's profile,
# 13% of the pass): 3.3 waves of 8-row blocks at 16 warps an SM, each thread 96 bytes in flight.
# Kernel tests of L (add_layernorm: 1, 2 and 4 rows a thread), the kernel bench's add_layernorm
# rows of H and L, a 3-round engine A/B (4096, 8192, ragged; one shared tuning), engine_cuda of L.
# Pack: tar cf - -C .gpucarry lib binH binL | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s30d.tar.xz
# Device: carry [".gpupack/s30d.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s30d.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session30/s30d.sh
. bench/gpu/variant_steps.sh
variant_setup s30d
kernel_tests L 150 add_layernorm || { variant_finish s30d; exit 1; }
grep -E "^add_layernorm" "$R/kernels_L.log"
for v in H L; do
    timeout 150 "$C/bin$v/bench_kernels_cuda" "$R/k_$v.json" 50 >"$R/k_$v.txt" 2>&1
    echo "== bench $v rc $?"
    grep -E "T=(4096|16384) add_layernorm" "$R/k_$v.txt"
done
shared_tuning 4096,8192,ragged H L
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 4096,8192,ragged 3 H="$C/binH" L="$C/binL" > "$R/ab_summary.txt" 2>&1
ab_summary "$R/ab_summary.txt"
(time EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp timeout 200 "$C/binL/engine_cuda") > "$R/engine_cuda_L.log" 2>&1
echo "== engine_cuda L rc $?"
grep -E "passed|CHECK failed|real" "$R/engine_cuda_L.log" | tail -4
variant_finish s30d
