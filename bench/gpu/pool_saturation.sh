#!/usr/bin/env bash
# bench/gpu/pool_saturation.sh — where one ember-broker saturates, on a many-core host (the GPU
# machine's 16 cores; no GPU used). Real processes on loopback; the load comes from
# bench_pool_load (libember, closed loop, several client threads with many requests in flight).
#   1. broker tokenization: tokenize requests of 256 texts (~26 tokens each) against a broker with
#      --tokenizer-threads 1, 2, 4, 8: texts/s and tokens/s.
#   2. requests/s: 1-text embed requests (8 tokens) through a broker and W = 1, 2, 4, 6 CPU
#      workers serving the "tiny" model of bench/gpu/make_random_models.py (real weights, a few
#      microseconds of compute per text, so the workers outrun the broker); with the broker main
#      thread's CPU share over the window (/proc), which reaches ~100% where the broker
#      saturates.
# Usage (repo root): bench/gpu/pool_saturation.sh CARRY OUT
#   CARRY holds bin/ (ember-broker, ember-worker, bench_pool_load), lib/ and tokenizer.json, as
#   for bench/gpu/pool_latency.sh; OUT receives a log per run, JSON per point and summary.txt.
set -euo pipefail
. bench/gpu/carry_env.sh
carry_setup "$1" "$2" tiny
fe=tcp://127.0.0.1:7611
be=tcp://127.0.0.1:7612
passage="Search teams index millions of passages; each one is embedded once, then queried by many short questions over time."
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; pids=(); }
trap cleanup EXIT
# main-thread CPU ticks (utime + stime) of pid
ticks() { awk '{print $14 + $15}' "/proc/$1/task/$1/stat"; }
hz=$(getconf CLK_TCK)

echo "== 1. broker tokenization (tokenize, 256 texts per request)" | tee "$out/summary.txt"
for t in 1 2 4 8; do
    "$carry/bin/ember-broker" --frontend $fe --backend $be --model "$models/tiny" \
        --tokenizer-threads $t >"$out/broker-tok$t.log" 2>&1 &
    pids=($!)
    sleep 1
    printf 'tokenizer threads %d: ' $t | tee -a "$out/summary.txt"
    "$carry/bin/bench_pool_load" --broker $fe --op tokenize --texts 256 --threads 4 \
        --inflight 4 --seconds 3 --text "$passage" --json "$out/tok_$t.json" | tee -a "$out/summary.txt"
    cleanup
done

echo "== 2. requests/s, 1 text x 8 tokens, CPU workers on the tiny model" | tee -a "$out/summary.txt"
for w in 1 2 4 6; do
    "$carry/bin/ember-broker" --frontend $fe --backend $be --model "$models/tiny" \
        --tokenizer-threads 2 >"$out/broker-w$w.log" 2>&1 &
    broker=$!
    pids=($broker)
    for i in $(seq $w); do
        "$carry/bin/ember-worker" --broker $be --model "$models/tiny" --device cpu --threads 1 \
            >"$out/worker-w$w-$i.log" 2>&1 &
        pids+=($!)
    done
    sleep 2
    t0=$(ticks $broker)
    printf 'workers %d: ' $w | tee -a "$out/summary.txt"
    "$carry/bin/bench_pool_load" --broker $fe --op embed --threads 3 --inflight 64 --seconds 3.5 \
        --json "$out/rps_$w.json" | tee -a "$out/summary.txt"
    t1=$(ticks $broker)
    # the load runs 0.5 s warm-up + 3.5 s window + drain: CPU share over the whole 4 s
    awk -v a=$t0 -v b=$t1 -v hz=$hz -v w=$w \
        'BEGIN { printf "  broker main thread CPU over the run: %.0f%% of one core\n", 100 * (b - a) / hz / 4.0 }' |
        tee -a "$out/summary.txt"
    cleanup
done
