#!/bin/bash
# Session 35, run 3: F (the head-dim-32 row sums folded into PV) checked and timed for the
# record. Part 1 (this call): gpu-check steps 3-4 on F (engine_cuda against the CPU engine;
# the engine against transformers on the random-weight models; the real MiniLM against
# sentence-transformers), then the engine A/B of main (0) and F on 1 x 128 and the ragged batch,
# 3 rounds alternating, one tuning shared. Part 2 (s35d.sh): the benches of record on F.
# Pack: tar cf - -C .gpucarry lib bin0 binF real16 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s35c.tar.xz
#   (the real model's planes are 39 MB: the tree went without docs/results/2026-12-0[1-3]*)
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s35c.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session35/s35c.sh
. bench/gpu/variant_steps.sh
variant_setup s35c
ln -sfn ../lib "$C/binF/lib"
ln -sfn ../real16 "$C/binF/real-minilm"
MODELS=/tmp/m OUT=$R/gc ops/gpu-check.sh --prebuilt "$C/binF" --engine-only --steps 3,4 > "$R/gc.log" 2>&1
echo "== gpu-check 3,4 rc $? at $SECONDS s"
grep -E "worst|OVERALL|passed" "$R/gc/summary.txt" "$R/gc.log" | tail -16
rm -rf "$R"/gc/real "$R"/gc/check
shared_tuning b1_128,ragged 0 F
AB_MODELS="minilm bert-base" AB_ITERS=600 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m \
    b1_128,ragged 3 0="$C/bin0" F="$C/binF" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
variant_finish s35c
