#!/bin/bash
# Session 31, run 5: the attention's CTA order without a table. Main (TG, 7e5091b) made the wgmma
# attention's grid 1-D with heads fastest in every bucket; the table wants that (its longest tiles
# first for every head), but BERT-base's 1024 / 4096 / 8192 buckets were 0.5-0.8% slower in r2.
# O (branch grid-order) keeps tiles fastest when there is no table (below 8192 tokens), as the
# 2-D grid ran before.
#   kernels_cuda attention on O; engine A/B TG / O, both models, 1024 / 4096 / 8192 / ragged.
# Pack: tar cf - -C .gpucarry lib binTG/bench_engine_cuda binO | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r5.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r5.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session31/r5.sh
. bench/gpu/variant_steps.sh
variant_setup r5
kernel_tests O 150 attention || { variant_finish r5; exit 1; }
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 1024,4096,8192,ragged 3 TG="$C/binTG" \
    O="$C/binO" > "$R/ab_summary.txt" 2>&1
ab_summary "$R/ab_summary.txt"
variant_finish r5
