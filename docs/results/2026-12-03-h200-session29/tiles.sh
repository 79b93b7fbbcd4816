#!/bin/bash
# Session 29: N = main 19757ba, WS = main + session 28's warpskip.patch (branch ws), TT = WS + the
# attention's tile table (branch tiles: per-sequence query tiles, longest key walk first, built
# on the host per batch, kern_attention_tiles_build), TL = TT + the LayerNorm register kernels
# reading gamma / beta from L1 (branch ln: 120-124 -> 64-76 registers). Kernel tests of TL
# (attention: mma, wgmma, wgmma tiles; add_layernorm; embed_layernorm), bench_kernels_cuda of N
# and TL (TL's has the wgmma attention with and without the table), engine A/B (one tuning),
# then TL's engine test. Ran; results in tiles/ and README.txt item 1. The branches are gone:
# WS = session 28's warpskip.patch, TL's LayerNorm change = ln.patch (TT's table: an earlier
# form of tiles.patch).
# Pack: binN binWS binTT binTL (kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda,
# stripped) + lib/; tar cf - -C .gpucarry lib binN binWS binTT binTL | xz -T2 --lzma2=preset=6,dict=192MiB
# Device: carry [".gpupack/tt.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/tt.tar.xz -C .gpucarry && bash docs/results/2026-12-03-h200-session29/tiles.sh
. bench/gpu/variant_steps.sh
variant_setup tiles
kernel_tests TL 150 attention add_layernorm embed || { variant_finish tiles; exit 1; }
attention_bench N TL
grep -E "T=(4096|16384) (add_layernorm|embed_layernorm)" $R/k_N.txt $R/k_TL.txt
shared_tuning b1_128,1024,ragged N WS TT TL
AB_ITERS=150 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 N=$C/binN \
  WS=$C/binWS TT=$C/binTT TL=$C/binTL > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
(time EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp timeout 150 $C/binTL/engine_cuda) > $R/engine_TL.log 2>&1
echo "== engine_cuda TL rc $?"; grep -E "CHECK failed|passed|real" $R/engine_TL.log | tail -4
variant_finish tiles
