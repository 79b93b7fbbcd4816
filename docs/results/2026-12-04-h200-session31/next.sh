#!/bin/bash
# Prepared in session 31 for the next one (not run): the engine's configuration under sustained
# load, on main's build (binTG = main's bench_engine_cuda, engine code of 7e5091b). The lanes and
# max_batch_tokens defaults (2, 32768) were chosen in the twelfth and thirteenth rounds, before
# ~30% of today's speed; since then a pass's kernels changed, and the thirtieth round showed the
# two lanes' sharing of the SMs deciding what a kernel change is worth. Bulk clients keep the
# queue full, so this measures `bench_engine_cuda concurrent` (one engine, DEPTH 4 copies of the
# 100-text ragged batch back to back, REPS 20; tokens/s) for lanes 1-4 x max_batch_tokens 16384 /
# 32768 / 65536 (MiniLM; BERT-base at lanes 2 / 3, 32768), 2 alternating rounds, and the one-batch
# ragged case with lanes 2 / 3 / 4 (bench_engine_cuda profile: an idle engine cuts the batch into
# max_batch_tokens / lanes chunks). One tuning cache per model, shared by every run (the lanes and
# the token budget leave the GEMM plans as they are; a larger budget adds buckets, tuned once).
# Pack: tar cf - -C .gpucarry lib binTG/bench_engine_cuda | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/next32.tar.xz
#   (.gpucarry/binTG: main's bench_engine_cuda, stripped; lib/: gpu-check --pack's libraries)
# Device: mkdir -p .gpucarry && tar xJf .gpupack/next32.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session31/next.sh
. bench/gpu/variant_steps.sh
variant_setup next32
b="$C/binTG/bench_engine_cuda"
conc() { # MODEL LANES MBT
    EMBER_TUNE_CACHE=/tmp/tc_$1 timeout 120 "$b" concurrent "/tmp/m/$1" "cuda:0,lanes=$2" 1 "$3" 4 20 \
        spin=5000 2>&1 | grep "^concurrent" | sed -E 's/ [0-9]+ x [0-9]+ x [0-9]+ tokens each//' |
        tee -a "$R/concurrent.txt"
}
for round in 0 1; do
    echo "== round $round" | tee -a "$R/concurrent.txt"
    for mbt in 32768 16384 65536; do
        for lanes in 2 1 3 4; do conc minilm $lanes $mbt; done
    done
    for lanes in 2 3; do conc bert-base $lanes 32768; done
done
for lanes in 2 3 4; do
    EMBER_TUNE_CACHE=/tmp/tc_minilm timeout 120 "$b" profile /tmp/m/minilm "cuda:0,lanes=$lanes" \
        ragged 200 spin=5000 2>&1 | grep -E "^profile .*ragged:" | tee -a "$R/ragged_lanes.txt"
done
variant_finish next32
