#!/bin/bash
# Session 34, run 2: energy at the power cap (bench/bench_energy.h, NVML).
# E34 = main 685ffed + the energy readout in bench_engine_cuda (profile lines, bench JSON) and
# bench_kernels_cuda (BENCH_SUSTAIN_S: each 16384-token row run back to back at the cap).
# 1. An engine A/B of device options on the ragged batch, with joules per run and the SM clock:
#    binary16 (the default) against dtype=bf16 and lanes=1; MiniLM 600 runs a round, BERT-base 150.
# 2. The kernels at 16384 tokens sustained for 0.6 s each: us and mJ per launch at the cap.
# Pack: tar cf - -C .gpucarry lib binE34 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s34a.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s34a.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session34/s34a.sh
. bench/gpu/variant_steps.sh
variant_setup s34a
B=$C/binE34
nvidia-smi -q -d POWER | grep -iE "limit|draw" | head -8 > "$R/power_limits.txt"
cat "$R/power_limits.txt"
for m in minilm:600 bert-base:150; do
    AB_MODELS=${m%%:*} AB_ITERS=${m#*:} bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m ragged 2 \
        F16="$B" BF16="$B,dtype=bf16" L1="$B,lanes=1" > /dev/null 2>&1
done
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
grep -oE "^== .*|wall median [0-9.]+ ms|energy.*" "$R/ab.txt" | paste - - - | head -24
echo "== at $SECONDS s"
BENCH_SUSTAIN_S=0.6 timeout 400 "$B/bench_kernels_cuda" "$R/k.json" 50 > "$R/k.txt" 2>&1
echo "== kernels sustained rc $? at $SECONDS s"
grep -E "sustained|T=16384" "$R/k.txt" | grep -vE ": (cublasLt|wgmma|mma)"
cp "$R/k.json" "$R/k_sustained.json.txt"
variant_finish s34a
