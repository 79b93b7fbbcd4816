#!/bin/bash
# Session 34, run 4: the benches with their energy (bench_engine_cuda bench: joules per run of
# the ragged batch, one batch and 4 copies in flight; JSON checked), and one query's energy.
# E34 = main 685ffed + the energy readout (bench/bench_energy.h).
# Pack: tar cf - -C .gpucarry lib binE34 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s34c.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s34c.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session34/s34c.sh
. bench/gpu/variant_steps.sh
variant_setup s34c
B=$C/binE34
for m in minilm bert-base; do
    timeout 200 "$B/bench_engine_cuda" bench /tmp/m/$m $m "$R/bench_$m.json" 500 spin=5000 \
        > "$R/bench_$m.txt" 2>&1
    echo "== bench $m rc $? at $SECONDS s"
    grep -E "batch 1|one batch|in flight|energy" "$R/bench_$m.txt"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d['energy']))" \
        "$R/bench_$m.json"
    cp "$R/bench_$m.json" "$R/bench_$m.json.txt"
done
timeout 100 "$B/bench_engine_cuda" profile /tmp/m/minilm cuda:0 b1_128 4000 spin=5000 2>&1 |
    grep -E "^profile .*seqs" | tee "$R/b1.txt"
variant_finish s34c
