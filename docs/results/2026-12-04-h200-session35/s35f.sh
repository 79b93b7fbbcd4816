#!/bin/bash
# Session 35, run 6: against F (main fd8e63a): P = two heads a CTA at head dim 32 (the tile's
# prologue, key ranges and mbarriers shared; the key blocks numbered across the heads so the
# second head's K/V load behind the first's; the small test cases with 3 heads too), Z = the V
# rows past n_tokens zeroed out of line from a block index fixed at the prologue (10 fewer
# instructions a key block), PZ = both. Kernel tests (attention); the kernels at 16384 tokens
# (sustained 0.4 s); the engine A/B on MiniLM (1 x 128, 4096, ragged; 3 rounds, one tuning).
# Pack: tar cf - -C .gpucarry lib binF binP binZ binPZ | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s35f.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s35f.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session35/s35f.sh
. bench/gpu/variant_steps.sh
variant_setup s35f
for v in P Z PZ; do kernel_tests $v 90 attention; done
for v in F P Z PZ; do
    BENCH_SUSTAIN_S=0.4 timeout 100 "$C/bin$v/bench_kernels_cuda" "$R/k_$v.json" 30 > "$R/k_$v.txt" 2>&1
    echo "== kernels $v rc $? at $SECONDS s"
    grep -E "T=(4096|16384) attention wgmma tiles" "$R/k_$v.txt" | cut -c1-150
done
shared_tuning b1_128,4096,ragged F P Z PZ
AB_MODELS=minilm AB_ITERS=600 bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m b1_128,4096,ragged 3 \
    F=$C/binF P=$C/binP Z=$C/binZ PZ=$C/binPZ > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.txt"
variant_finish s35f
