#!/usr/bin/env bash
# bench/run_pool_bench.sh — the pool benchmarks on loopback, in one run:
#   1. bench_pool (C, libember): round-trip overhead of a 1-text, 8-token request against a pool
#      started here with ops/pool.sh (1 worker), raw and minus the reported compute time;
#   2. bench/pool_bench.py (Python client): the same overhead with its Python floor measured,
#      broker tokenization throughput (--tokenizer-threads 1, 2, 4) and requests/s with 1, 2, 4
#      workers (it starts its own pools).
# Writes BUILD_DIR/pool_bench/{c.json,py.json} and a combined OUT_JSON.
#
# Usage: bench/run_pool_bench.sh [BUILD_DIR (default build)] [OUT_JSON] [--quick]
#   BUILD_DIR needs ember-broker, ember-worker, ember, libember and bench_pool (cmake --build).
#   Build without sanitizers (RelWithDebInfo, the default) for meaningful numbers.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
case "$build" in /*) ;; *) build="$(pwd)/$build" ;; esac
out="${2:-$build/pool_bench.json}"
quick=""
[ "${3:-}" = "--quick" ] && quick="--quick"
py="${PYTHON:-python3}"
work="$build/pool_bench"
mkdir -p "$work"
model="$root/models/all-MiniLM-L6-v2"
for b in broker/ember-broker worker/ember-worker client/ember; do
    [ -x "$build/$b" ] || { echo "run_pool_bench: $build/$b missing (cmake --build $build)" >&2; exit 1; }
done

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

c_json=""
if [ -x "$build/bench/bench_pool" ]; then
    echo "== C client (libember) against a pool from ops/pool.sh (1 worker, 1 thread)"
    rundir="$work/pool"
    fe="tcp://127.0.0.1:$(free_port)"
    trap 'BUILD_DIR="$build" "$root/ops/pool.sh" down --dir "$rundir" >/dev/null 2>&1 || true' EXIT
    BUILD_DIR="$build" "$root/ops/pool.sh" up --workers 1 --threads 1 --dir "$rundir" --model "$model" \
        --frontend "$fe" --backend "tcp://127.0.0.1:$(free_port)" --redis-port "$(free_port)" >/dev/null
    n=5000
    [ -n "$quick" ] && n=1000
    "$build/bench/bench_pool" --broker "$fe" --n "$n" \
        --json "$work/c.json"
    BUILD_DIR="$build" "$root/ops/pool.sh" down --dir "$rundir" >/dev/null
    trap - EXIT
    c_json="$work/c.json"
else
    echo "== (bench_pool not built: C client skipped)"
fi

echo "== Python client (pyzmq): overhead, tokenizer threads, requests/s"
"$py" "$root/bench/pool_bench.py" --build "$build" --model "$model" --json "$work/py.json" $quick

"$py" - "$c_json" "$work/py.json" "$out" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])) if sys.argv[1] else None
p = json.load(open(sys.argv[2]))
json.dump({"c_client": c, "python_client": p}, open(sys.argv[3], "w"), indent=2)
print("wrote", sys.argv[3])
PY
