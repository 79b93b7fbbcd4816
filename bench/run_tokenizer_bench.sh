#!/usr/bin/env bash
# bench/run_tokenizer_bench.sh — ember's tokenizer against Hugging Face `tokenizers` (one
# thread each) on the same generated corpus, in one run: prints both tables and the ratio
# ember/HF of texts per second (target >= 3), and writes a combined JSON.
#
# Usage: bench/run_tokenizer_bench.sh [OUT_JSON]   (default $BUILD/tokenizer_bench.json)
# Env: BUILD (default build, must hold bench/bench_tokenizer), REPS (default 5).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-$root/build}"
out="${1:-$build/tokenizer_bench.json}"
reps="${REPS:-5}"
py="${PYTHON:-python3}"
tokjson="$root/models/all-MiniLM-L6-v2/tokenizer.json"
work="$build/tokenizer_bench"
mkdir -p "$work"
bin="$build/bench/bench_tokenizer"
[ -x "$bin" ] || { echo "run_tokenizer_bench: $bin missing; build target bench_tokenizer" >&2; exit 1; }
"$py" "$root/tests/reference/tokenizer_bench_corpus.py" --out "$work/corpus.bin"
"$bin" --corpus "$work/corpus.bin" --tokenizer "$tokjson" --reps "$reps" --json "$work/ember.json"
"$py" "$root/bench/tokenizer_peer.py" --corpus "$work/corpus.bin" --tokenizer "$tokjson" \
    --reps "$reps" --json "$work/peer.json"
"$py" - "$work/ember.json" "$work/peer.json" "$out" <<'PY'
import json, sys
e = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
if e["tokens"] != p["tokens"]:
    print("run_tokenizer_bench: WARNING token counts differ: ember %d, HF %d" % (e["tokens"], p["tokens"]))
ratio = e["texts_per_s"] / p["texts_per_s"]
print("ratio ember/HF (texts/s): %.2fx  (target >= 3x; HF best mode: %s)" % (ratio, p["best_mode"]))
json.dump({"ember": e, "peer": p, "ratio": ratio, "target": 3.0}, open(sys.argv[3], "w"), indent=2)
print("wrote", sys.argv[3])
PY
