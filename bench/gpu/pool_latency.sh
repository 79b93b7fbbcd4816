#!/usr/bin/env bash
# bench/gpu/pool_latency.sh — the pool's round trip on the GPU machine: client (bench_pool via
# libember) -> ember-broker -> ember-worker --device cuda:0 -> back, on loopback, for a 1-text
# request of 128 tokens (issue target: p50 <= 0.3 ms, p99 <= 0.5 ms) and of 8 tokens. The model is
# a seeded random-weight all-MiniLM-L6-v2-shape model (bench/gpu/make_random_models.py) with the
# real tokenizer.json, since the real weights do not fit the transfer limit.
#
# Runs once with no spinning and once with broker, worker and client busy-polling SPINS us
# (default 200) before they sleep (--spin-us, ember_options_t.spin_us).
#
# Usage (on the GPU host, from the repo root): [SPINS=us] bench/gpu/pool_latency.sh CARRY OUT
#   CARRY holds bin/ (ember-broker, ember-worker, bench_pool), lib/ (the Debian runtime libraries
#   and libember.so.0 the binaries need) and tokenizer.json; OUT receives JSON and logs.
set -euo pipefail
carry=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
export LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
models=/tmp/ember-models
python3 bench/gpu/make_random_models.py "$models" >"$out/models.log" 2>&1
cp "$carry/tokenizer.json" "$models/minilm/"
fe=tcp://127.0.0.1:7601
be=tcp://127.0.0.1:7602
text128=$(printf 'hello %.0s' $(seq 126)) # [CLS] + 126 + [SEP] = 128 tokens
# One pool per spin setting (broker, worker and client busy-poll SPIN us before sleeping).
for spin in 0 ${SPINS:-200}; do
    "$carry/bin/ember-broker" --frontend $fe --backend $be --model "$models/minilm" \
        --spin-us $spin >"$out/broker-spin$spin.log" 2>&1 &
    broker=$!
    "$carry/bin/ember-worker" --broker $be --model "$models/minilm" --device cuda:0,graphs=all \
        --spin-us $spin >"$out/worker-spin$spin.log" 2>&1 &
    worker=$!
    trap 'kill $worker $broker 2>/dev/null || true; wait 2>/dev/null || true' EXIT
    for i in $(seq 100); do # until the worker has joined (capture-all takes a moment)
        echo hi | "$carry/bin/ember" embed --broker $fe --timeout-ms 2000 >/dev/null 2>&1 && break
        sleep 0.2
    done
    echo "== spin $spin us"
    "$carry/bin/bench_pool" --broker $fe --n 5000 --spin-us $spin --text "$text128" \
        --json "$out/pool_128_spin$spin.json"
    "$carry/bin/bench_pool" --broker $fe --n 5000 --spin-us $spin \
        --text "the quick brown fox jumps over" --json "$out/pool_8_spin$spin.json"
    kill -TERM $worker $broker
    wait $worker $broker || true
    trap - EXIT
done
