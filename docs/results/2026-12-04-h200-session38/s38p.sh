#!/bin/bash
# Session 38, prepared (no device was lent this session): the pruned last layer (branch row-pool:
# with CLS or last-token pooling the last layer past its attention runs on the pooled rows
# alone, device option prune=auto|off) on the GPU for the first time. Its kernels' tests
# (kernels_cuda pool: kern_pool_rows_cuda against kern_pool_rows_ref, bit for bit; kernels_cuda
# attention: kern_attention_pooled_cuda's first and last rows in every case of the full kernel's,
# against kern_attention_ref, the other rows unwritten), the whole
# engine_cuda test (its new row-pooling part: CLS + Normalize and last-token pooling of the
# random MiniLM-shape model against the CPU engine, lazily, with graphs=all and with prune=off,
# the pruned chunks counted), then bench/gpu/check_engine.py (the CLS twins of both random
# models, make_random_models.py's minilm-cls and bert-base-cls, against transformers' first rows:
# the pruned pass against an independent reference). The timing is s38q.sh.
# Build: P = branch row-pool; tests/kernels_cuda, tests/engine_cuda, bench/bench_kernels_cuda,
#   bench/bench_engine_cuda into .gpucarry/binP (strip --strip-unneeded); .gpucarry/lib as before.
# Pack: in .gpupack/s38.tar.xz beside binA (main) and binR (row-tile) for s37b/s37c/s37d.sh:
#   tar cf - -C .gpucarry lib binA binR binP | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s38.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s38.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session38/s38p.sh
# Optional argument: the build's label (default P); session 39 runs it on RP (row-tile + row-pool,
# docs/results/2026-12-05-h200-session39/README.txt), which checks the row tile in the engine too.
. bench/gpu/variant_steps.sh
L=${1:-P}
variant_setup "s38p_$L"
[ -d /tmp/m/minilm-cls ] || python3 bench/gpu/make_random_models.py /tmp/m >/dev/null 2>&1
kernel_tests "$L" 150 pool attention
grep -E "pool rows|attention: kernel|CHECK failed" "$R/kernels_$L.log" | head -16
(time EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp \
    EMBER_TUNE_CACHE=/tmp/tc_engine_$L timeout 270 "$C/bin$L/engine_cuda") > "$R/engine_$L.log" 2>&1
echo "== engine_cuda $L rc $? at $SECONDS s"
grep -E "pooling_mode.*(worst|pruned)|row tile|CHECK failed|passed|real" "$R/engine_$L.log" | tail -16
# the engine against transformers fp32 (gpu-check step 4's script): the CLS twins through the
# pruned pass, the mean-pooled models as before
timeout 170 python3 bench/gpu/check_engine.py --bin "$C/bin$L/bench_engine_cuda" --models /tmp/m \
    --out "$R/check" > "$R/check.log" 2>&1
echo "== check_engine $L rc $? at $SECONDS s"
sed -n '/== whole-engine/,$p' "$R/check.log"
rm -f "$R"/check/*.bin
variant_finish "s38p_$L"
