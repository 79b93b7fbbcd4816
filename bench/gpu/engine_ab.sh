#!/usr/bin/env bash
# bench/gpu/engine_ab.sh — an A/B of engine builds or device options on the GPU machine, the
# comparison every change to the CUDA engine is judged by: for each model shape, ROUNDS rounds
# of every variant in turn (alternating, so drift hits all alike), `bench_engine_cuda profile`
# over CASES with spinning waits; each variant tunes into a cache of its own (round 0 fills it).
# Appends the raw lines to OUT and prints them condensed (wall median, p99, GPU median).
#
# Usage (GPU machine, repository root):
#   bench/gpu/engine_ab.sh OUT MODELS "CASES" ROUNDS LABEL=BINDIR[,DEVICE_OPTIONS]...
#   MODELS holds minilm/ and bert-base/ (bench/gpu/make_random_models.py, made if missing);
#   CASES as bench_engine_cuda takes them (e.g. b1_128,256,ragged); BINDIR holds
#   bench_engine_cuda; DEVICE_OPTIONS follow "cuda:0," (e.g. fold_max=512).
#   e.g. bench/gpu/engine_ab.sh $OUT/ab.txt /tmp/m b1_128,ragged 3 A=.gpucarry/bin0 B=.gpucarry/binB
# Environment: AB_MODELS (default "minilm bert-base"), AB_ITERS (default 400).
# bench/gpu/ab_table.py OUT [OUT...] turns OUT (several runs' pooled) into the table to read.
# Each variant's round 0 tunes its own GEMMs, and two tunings of the same code differ by ~1.5% on
# the ragged pass (session 31): for builds with the same GEMM configurations, fill the caches
# from one tuning first (variant_steps.sh shared_tuning), so the A/B compares kernels.
set -uo pipefail
[ $# -ge 5 ] || { sed -n '2,18p' "$0"; exit 2; }
out=$1 models=$2 cases=$3 rounds=$4
shift 4
[ -d "$models/minilm" ] || python3 bench/gpu/make_random_models.py "$models" >/dev/null 2>&1
tmp=$(mktemp)
for m in ${AB_MODELS:-minilm bert-base}; do
    for r in $(seq 0 $((rounds - 1))); do
        for v in "$@"; do
            label=${v%%=*} spec=${v#*=}
            bin=${spec%%,*} opts=
            [ "$spec" != "$bin" ] && opts=,${spec#*,}
            EMBER_TUNE_CACHE=/tmp/engine_ab_tc_${m}_$label timeout 300 "$bin/bench_engine_cuda" \
                profile "$models/$m" "cuda:0$opts" "$cases" "${AB_ITERS:-400}" spin=5000 >"$tmp" 2>&1
            echo "== $m $label round $r" >>"$out"
            grep -E "^profile .*: [0-9]+ seqs" "$tmp" >>"$out" || tail -3 "$tmp" >>"$out"
        done
    done
done
rm -f "$tmp"
sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/ \([0-9]+ tokens\/s wall\)//' "$out"
