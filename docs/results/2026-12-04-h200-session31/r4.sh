#!/bin/bash
# Session 31, run 4: the real all-MiniLM-L6-v2 (a binary16 copy, its tensor bytes in two planes)
# through main's engine (binTG = main 696c9b6's bench_engine_cuda: the tile table from 8192
# tokens, the warp-level mask skipping, 2 rows a thread in the LayerNorm) against
# sentence-transformers' fp32 embeddings of the original weights (tests/fixtures).
# Pack: tar cf - -C .gpucarry lib real16 binTG/bench_engine_cuda | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r4.tar.xz
#   (.gpucarry/real16: python3 bench/gpu/pack_bf16_model.py models/all-MiniLM-L6-v2 .gpucarry/real16 f16 --planes)
# The pack (50.3 MB) and the tree (17.4 MB) pass the tool's 64 MiB: move the earlier sessions'
# docs/results folders aside for the call (tree 4.0 MB) and put them back after.
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r4.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session31/r4.sh
. bench/gpu/variant_steps.sh
variant_setup r4
real=/tmp/real16
mkdir -p $real && cp -r "$C/real16/." $real/ && rm -f $real/model.safetensors.planes.xz &&
    python3 bench/gpu/pack_bf16_model.py --unplanes "$C/real16/model.safetensors.planes.xz" \
        $real/model.safetensors || { variant_finish r4; exit 1; }
python3 bench/gpu/check_real_model.py --bin "$C/binTG/bench_engine_cuda" --model $real \
    --fixture tests/fixtures/minilm_st_reference.bin --out "$R/real_TG" --devices cuda:0 \
    > "$R/real_TG.log" 2>&1
echo "== real TG rc $?"
sed -n '/== real/,$p' "$R/real_TG.log" | head -12
tail -12 "$R/real_TG.log"
rm -f "$R/real_TG"/*.bin
variant_finish r4
