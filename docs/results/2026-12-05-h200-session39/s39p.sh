#!/bin/bash
# Session 39: session 38's s38p.sh (the pruned last layer's correctness) on a build of both
# waiting branches at once, so one device call checks the row tile in the whole engine too:
# RP = row-tile + row-pool (branch row-both: main + row_tile_R.patch + row_pool_P.patch, no
# conflicts). kernels_cuda pool + attention (the pruned layer's kernels), the whole engine_cuda
# (the row tile wherever the tuner picks it, the pruned last layer for CLS / last-token pooling;
# against the CPU engine), check_engine.py (every random model, the CLS twins included, against
# transformers). A failure names its part: pool / attention / pooling_mode lines are the prune's.
# Usage (GPU host, after unpacking s39.tar.xz into .gpucarry): bash THIS [LABEL]   (LABEL: RP)
. bench/gpu/variant_steps.sh
L=${1:-RP}
variant_setup "s39p_$L"
kernel_tests "$L" 150 pool attention
grep -E "pool rows|attention: kernel|CHECK failed" "$R/kernels_$L.log" | head -16
(time EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp \
    EMBER_TUNE_CACHE=/tmp/tc_engine_$L timeout 270 "$C/bin$L/engine_cuda") > "$R/engine_$L.log" 2>&1
echo "== engine_cuda $L rc $? at $SECONDS s"
grep -E "pooling_mode.*(worst|pruned)|row tile|CHECK failed|passed|real" "$R/engine_$L.log" | tail -16
timeout 170 python3 bench/gpu/check_engine.py --bin "$C/bin$L/bench_engine_cuda" --models /tmp/m \
    --out "$R/check" > "$R/check.log" 2>&1
echo "== check_engine $L rc $? at $SECONDS s"
sed -n '/== whole-engine/,$p' "$R/check.log"
rm -f "$R"/check/*.bin
variant_finish "s39p_$L"
