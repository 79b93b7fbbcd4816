#!/bin/bash
# Session 37, run 3 (prepared; for after s37b.sh and s37d.sh show the row tile correct and
# kept): R (main + row_tile_R.patch) through gpu-check steps 3-4 (engine_cuda; the engine against the CPU engine
# and transformers on the random-weight models; the real all-MiniLM-L6-v2 against
# sentence-transformers: the tuner now may pick the row tile at the large buckets) and the
# benches of record (step 5, 500 repetitions, transformers in the same run).
# Pack: tar cf - -C .gpucarry lib binR real16 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s37c.tar.xz
#   (50 MB: fits beside the tree since the old result folders are archived, docs/results/README.md)
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s37c.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session37/s37c.sh
# Optional argument: the build's label (default R); session 40 packs binRP (row-tile + row-pool)
# with real16 in .gpupack/s40c.tar.xz for `s37c.sh RP` (docs/results/2026-12-05-h200-session40/);
# session 41 packs main's build as binP in .gpupack/s41m.tar.xz for `s37c.sh P`
# (docs/results/2026-12-05-h100-session41/README.txt). Step 5 gets the time steps 3-4 leave, as it
# now also benches the CLS twins.
. bench/gpu/variant_steps.sh
L=${1:-R}
variant_setup "s37c_$L"
ln -sfn ../lib "$C/bin$L/lib"
ln -sfn ../real16 "$C/bin$L/real-minilm"
MODELS=/tmp/m OUT=$R/gc timeout 300 ops/gpu-check.sh --prebuilt "$C/bin$L" --engine-only --steps 3,4 > "$R/gc.log" 2>&1
echo "== gpu-check 3,4 rc $? at $SECONDS s"
grep -E "worst|OVERALL|passed|FFN fused" "$R/gc/summary.txt" "$R/gc.log" | tail -20
rm -rf "$R"/gc/real "$R"/gc/check
MODELS=/tmp/m OUT=$R/rec timeout $((570 - SECONDS)) ops/gpu-check.sh --prebuilt "$C/bin$L" --engine-only \
    --reps 500 --steps 5 > "$R/rec.log" 2>&1
echo "== gpu-check 5 rc $? at $SECONDS s"
tail -48 "$R/rec/summary.txt" 2>/dev/null || tail -20 "$R/rec.log"
variant_finish "s37c_$L"
