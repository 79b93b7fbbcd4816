#!/bin/bash
# Session 41, run 1: the decisive parts of s37b.sh and s38p.sh in one call, for a day when
# machines come rarely. On row-both (RP = main + row_tile_R.patch + row_pool_P.patch + the row
# tile's PDL test): the kernel tests of both branches (proj_ln with its new PDL check, linear_ln,
# pool, attention), the whole engine_cuda test, then an engine A/B of main (A) against RP on
# MiniLM (mean pooling: RP's pruned pass is off, so this is the row tile alone) at ragged and
# 16384 tokens, 2 rounds, then check_engine.py (RP against transformers fp32, the CLS twins
# through the pruned pass) in the time left. Each step's timeout is what the 600 s leave.
# Pack: .gpupack/s41.tar.xz (lib, binA, binR, binP, binRP; docs/results/2026-12-05-h100-session41/README.txt)
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s41.tar.xz -C .gpucarry && bash docs/results/2026-12-05-h100-session41/s41a.sh
. bench/gpu/variant_steps.sh
variant_setup s41a
left() { local l=$((575 - SECONDS - $1)); [ $l -gt 10 ] && echo $l || echo 10; }
[ -d /tmp/m/minilm-cls ] || python3 bench/gpu/make_random_models.py /tmp/m >/dev/null 2>&1
echo "== models at $SECONDS s"
kernel_tests RP "$(left 420)" proj_ln linear_ln pool attention
grep -E "proj_ln .*(worst|skipped|PDL)|linear \+ LayerNorm|row tile|pool rows|attention: kernel|CHECK failed" \
    "$R/kernels_RP.log" | head -24
echo "== at $SECONDS s"
(time EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp \
    EMBER_TUNE_CACHE=/tmp/tc_engine_RP timeout "$(left 200)" "$C/binRP/engine_cuda") > "$R/engine_RP.log" 2>&1
echo "== engine_cuda RP rc $? at $SECONDS s"
grep -E "pooling_mode.*(worst|pruned)|row tile|CHECK failed|passed|real" "$R/engine_RP.log" | tail -16
AB_MODELS=minilm AB_ITERS=300 timeout "$(left 60)" bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m \
    ragged,16384 2 A="$C/binA" RP="$C/binRP" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
echo "buckets x GEMMs on the row tile: $(grep -c 'row tile' /tmp/engine_ab_tc_minilm_RP 2>/dev/null)"
cp /tmp/engine_ab_tc_minilm_RP "$R/tune_cache_minilm_RP.txt" 2>/dev/null
timeout "$(left 0)" python3 bench/gpu/check_engine.py --bin "$C/binRP/bench_engine_cuda" --models /tmp/m \
    --out "$R/check" > "$R/check.log" 2>&1
echo "== check_engine RP rc $? at $SECONDS s"
sed -n '/== whole-engine/,$p' "$R/check.log"
rm -f "$R"/check/*.bin
variant_finish s41a
