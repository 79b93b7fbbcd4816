#!/bin/bash
# Session 29: N = main 19757ba, WS = main + session 28's warpskip.patch (branch ws), TT = WS + the
# attention's tile table (branch tiles: per-sequence query tiles, longest key walk first, built
# on the host per batch, kern_attention_tiles_build). Kernel tests of TT (attention: mma, wgmma,
# wgmma tiles), bench_kernels_cuda of all three, engine A/B (one tuning), then TT's engine test.
# Pack: binN binWS binTT (kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda,
# stripped) + lib/; tar cf - -C .gpucarry lib binN binWS binTT | xz -T2 --lzma2=preset=6,dict=192MiB
# Device: carry [".gpupack/tt.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/tt.tar.xz -C .gpucarry && bash docs/results/2026-12-03-h200-session29/tiles.sh
. bench/gpu/variant_steps.sh
variant_setup tiles
kernel_tests TT 150 attention || { variant_finish tiles; exit 1; }
attention_bench N WS TT
shared_tuning b1_128,512,1024,ragged N WS TT
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,512,1024,ragged 3 N=$C/binN \
  WS=$C/binWS TT=$C/binTT > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
(time EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp timeout 150 $C/binTT/engine_cuda) > $R/engine_TT.log 2>&1
echo "== engine_cuda TT rc $?"; grep -E "CHECK failed|passed|real" $R/engine_TT.log | tail -4
variant_finish tiles
