#!/usr/bin/env bash
# bench/run_engine_bench.sh — the CPU engine against sentence-transformers in one run, on the same
# texts and machine: makes the corpus (bench/make_bench_texts.py), runs bench_engine_cpu (ember:
# tokenize + embed, token-budget batches) and bench/engine_peer.py (ST model.encode, torch threads
# 2), prints both tables and the ratio ember/ST of the best texts/s, and writes combined JSON.
#
# Usage: bench/run_engine_bench.sh [OUT_JSON] (default $BUILD/bench-engine.json)
# Env: BUILD (default build, must hold bench/bench_engine_cpu), N_TEXTS (1000), REPS (3),
#      BUDGETS (4096,8192), THREADS (0 = all cores; e.g. 1,2), ST_BATCH_SIZES (32,64,128).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${1:-$BUILD/bench-engine.json}
N_TEXTS=${N_TEXTS:-1000}
REPS=${REPS:-3}
BUDGETS=${BUDGETS:-4096,8192}
THREADS=${THREADS:-0}
ST_BATCH_SIZES=${ST_BATCH_SIZES:-32,64,128}
mkdir -p "$(dirname "$OUT")"
TEXTS=$BUILD/bench_texts.txt
python3 bench/make_bench_texts.py "$TEXTS" "$N_TEXTS"
echo "== ember (bench_engine_cpu) =="
"$BUILD/bench/bench_engine_cpu" --texts "$TEXTS" --budgets "$BUDGETS" --threads "$THREADS" \
    --reps "$REPS" --json "$OUT.ember"
echo "== sentence-transformers (bench/engine_peer.py, torch threads 2) =="
python3 bench/engine_peer.py --texts "$TEXTS" --batch-sizes "$ST_BATCH_SIZES" --threads 2 \
    --reps "$REPS" --json "$OUT.st" 2> >(grep -v -e Loading -e 'Token indices' >&2)
python3 - "$OUT" <<'PY'
import json, platform, sys, time
out = sys.argv[1]
em = json.load(open(out + ".ember"))
st = json.load(open(out + ".st"))
ratio = em["best"]["texts_per_s"] / st["best"]["texts_per_s"]
res = {"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "host": platform.node(),
       "cpu": platform.processor(), "ember": em, "sentence_transformers": st,
       "ratio_texts_per_s": ratio}
json.dump(res, open(out, "w"), indent=2)
print(f"ratio ember/ST texts/s: {ratio:.2f}  (ember {em['best']['texts_per_s']:.1f}, "
      f"ST {st['best']['texts_per_s']:.1f}; target >= 1.0) -> {out}")
PY
rm -f "$OUT.ember" "$OUT.st"
