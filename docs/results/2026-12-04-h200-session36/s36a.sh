#!/bin/bash
# Session 36, run 1: the fused FFN (kernels/ffn.cu) on the H200: its kernel tests (both
# configurations, bf16 and f16, against kern_ffn_ref), the kernel bench against the unfused
# FFN-up + FFN-down(+LN) pair at MiniLM's shape, then an engine A/B of ffn=off against ffn=on on
# MiniLM (one GEMM tuning shared), 3 rounds.
# Pack: tar cf - -C .gpucarry lib binF | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s36a.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s36a.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session36/s36a.sh
. bench/gpu/variant_steps.sh
variant_setup s36a
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader
kernel_tests F 300 ffn
grep -E "ffn .*(worst|skipped)|refus" "$R/kernels_F.log" | head -20
timeout 200 "$C/binF/bench_kernels_cuda" ffn "$R/ffn.json" > "$R/ffn.txt" 2>&1
echo "== bench ffn rc $? at $SECONDS s"
cat "$R/ffn.txt" | tail -40
EMBER_TUNE_CACHE=/tmp/tc_minilm timeout 200 "$C/binF/bench_engine_cuda" profile /tmp/m/minilm \
    cuda:0,ffn=off b1_128,ragged 20 spin=5000 > "$R/tune.txt" 2>&1
for v in off on; do cp /tmp/tc_minilm "/tmp/engine_ab_tc_minilm_$v"; done
AB_MODELS=minilm AB_ITERS=600 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m b1_128,ragged 3 \
    off="$C/binF,ffn=off" on="$C/binF,ffn=on" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
variant_finish s36a
