#!/usr/bin/env bash
# bench/gpu/pool_latency.sh — the pool's round trip on the GPU machine: client (bench_pool via
# libember) -> ember-broker -> ember-worker --device cuda:0 -> back, on loopback, for a 1-text
# request of 128 tokens (issue target: p50 <= 0.3 ms, p99 <= 0.5 ms) and of 8 tokens. The model is
# a seeded random-weight all-MiniLM-L6-v2-shape model (bench/gpu/make_random_models.py) with the
# real tokenizer.json, since the real weights do not fit the transfer limit.
#
# Runs one pool per CONFIGS entry (default "0 200"), each SPIN[:pin][:qos]: broker, worker and
# client busy-poll SPIN us before they sleep (--spin-us, ember_options_t.spin_us); "pin" puts
# each process on its own cores (taskset: broker 2, worker 4-6, client 8), so a spinning thread
# and its ZeroMQ I/O thread share a warm core; "qos" holds /dev/cpu_dma_latency at 0 (the
# kernel's PM QoS request: idle cores stay in shallow sleep states) while the pool runs; "ipc"
# connects client, broker and worker over Unix sockets (ipc://) instead of TCP loopback.
#
# Usage (on the GPU host, from the repo root): [CONFIGS="0 300 300:pin"] bench/gpu/pool_latency.sh CARRY OUT
#   CARRY holds bin/ (ember-broker, ember-worker, bench_pool), lib/ (the Debian runtime libraries
#   and libember.so.0 the binaries need) and tokenizer.json; OUT receives JSON and logs.
set -euo pipefail
. bench/gpu/carry_env.sh
carry_setup "$1" "$2" minilm
text128=$(printf 'hello %.0s' $(seq 126)) # [CLS] + 126 + [SEP] = 128 tokens
# One pool per configuration.
for cfg in ${CONFIGS:-0 200}; do
    spin=${cfg%%:*}
    pb="" pw="" pc="" qos=""
    case "$cfg" in *pin*) pb="taskset -c 2" pw="taskset -c 4-6" pc="taskset -c 8" ;; esac
    case "$cfg" in *qos*)
        python3 -c 'import os, struct, time
fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY); os.write(fd, struct.pack("i", 0)); time.sleep(3600)' &
        qos=$!
        sleep 0.5
        kill -0 $qos 2>/dev/null || { echo "== $cfg: /dev/cpu_dma_latency not writable, skipped"; continue; } ;;
    esac
    fe=tcp://127.0.0.1:7601 be=tcp://127.0.0.1:7602
    case "$cfg" in *ipc*) fe=ipc:///tmp/ember-bench-fe.sock be=ipc:///tmp/ember-bench-be.sock ;; esac
    tag=$(echo "$cfg" | tr ':' '-')
    $pb "$carry/bin/ember-broker" --frontend $fe --backend $be --model "$models/minilm" \
        --spin-us $spin >"$out/broker-$tag.log" 2>&1 &
    broker=$!
    $pw "$carry/bin/ember-worker" --broker $be --model "$models/minilm" --device cuda:0,graphs=all \
        --spin-us $spin >"$out/worker-$tag.log" 2>&1 &
    worker=$!
    trap 'kill $worker $broker $qos 2>/dev/null || true; wait 2>/dev/null || true' EXIT
    wait_for_pool $fe 300 || echo "== the pool did not answer in 60 s"
    echo "== config $cfg (spin $spin us)"
    $pc "$carry/bin/bench_pool" --broker $fe --n 5000 --spin-us $spin --text "$text128" \
        --json "$out/pool_128_$tag.json"
    $pc "$carry/bin/bench_pool" --broker $fe --n 5000 --spin-us $spin \
        --text "the quick brown fox jumps over" --json "$out/pool_8_$tag.json"
    kill -TERM $worker $broker
    wait $worker $broker || true
    [ -n "$qos" ] && { kill $qos; wait $qos 2>/dev/null || true; }
    trap - EXIT
done
