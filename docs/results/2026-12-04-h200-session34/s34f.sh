#!/bin/bash
# Session 34, run 7: chunk size against energy at the power cap. bench_engine_cuda concurrent
# (one engine, its 2 lanes) with max_batch_tokens 8192 / 16384 / 32768 (the default: the
# ragged batch as 2 chunks of ~13.6k tokens, whose FFN intermediates, 42 MB each, do not fit
# the 50 MB L2 together; 16384 cuts it into 4 of ~6.8k), one batch at a time (depth 1, 2
# rounds alternating) and 4 in flight (1 round): tokens/s, mJ per 1000 tokens, SM clock.
# Pack: tar cf - -C .gpucarry lib binE34 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s34f.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s34f.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session34/s34f.sh
. bench/gpu/variant_steps.sh
variant_setup s34f
B=$C/binE34
run() { # model mbt depth reps
    EMBER_TUNE_CACHE=/tmp/tc_$1 timeout 120 "$B/bench_engine_cuda" concurrent /tmp/m/$1 cuda:0 1 \
        $2 $3 $4 spin=5000 2>&1 | grep -E "^concurrent" | sed -E 's/^concurrent \/tmp\/m\///' |
        tee -a "$R/chunks.txt"
}
for r in 0 1; do
    for mbt in 32768 16384 8192; do run minilm $mbt 1 800; run bert-base $mbt 1 150; done
done
for mbt in 32768 16384 8192; do run minilm $mbt 4 200; run bert-base $mbt 4 40; done
echo "== at $SECONDS s"
variant_finish s34f
