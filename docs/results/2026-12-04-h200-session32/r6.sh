#!/bin/bash
# Session 32, run 6: a persistent wgmma attention with the tile table (branch attn-persist,
# binP): about as many CTAs as the SMs hold, each taking (tile, head) items in a snake order,
# all its table entries read before the PDL wait, Q tiles by TMA (the next item's loaded at this
# one's start), the K/V stage ring running across items (a later item's first blocks loaded
# during this one's last steps), 3 stages at head dim 64 (2 Q tiles); against main 44e7948 (binS).
#   kernels_cuda attention on P (with a new case of several items a CTA); bench_kernels_cuda S /
#   P; one GEMM tuning shared; engine A/B 4096 / 8192 / ragged, 2 rounds.
# Pack: tar cf - -C .gpucarry lib binS/bench_kernels_cuda binS/bench_engine_cuda binP/kernels_cuda binP/bench_kernels_cuda binP/bench_engine_cuda | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r6.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r6.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session32/r6.sh
. bench/gpu/variant_steps.sh
variant_setup r6
kernel_tests P 200 attention || { grep -E "FAIL|fail" "$R/kernels_P.log" | head -20; variant_finish r6; exit 1; }
attention_bench S P
shared_tuning 4096,8192,ragged S P
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 4096,8192,ragged 2 S="$C/binS" \
    P="$C/binP" > "$R/ab_summary.txt" 2>&1
ab_summary "$R/ab_summary.txt"
variant_finish r6
