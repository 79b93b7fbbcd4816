#!/usr/bin/env bash
# bench/gpu/pool_bulk.sh — bulk embedding through the pool on the GPU machine, and what it does
# to a query's latency: client (libember) -> ember-broker -> ember-worker --device cuda:0 ->
# back, on loopback. Per model and per CONFIGS entry it starts one pool and measures
#   bulk   bench_pool_load: THREADS client threads x INFLIGHT requests of TEXTS passages each
#          (60-250 words, bench/make_bench_texts.py), closed loop: texts/s, tokens/s, p50/p99
#          of a request;
#   query  one client thread, one 1 x 128-token request at a time, on an idle pool: p50/p99;
#   mixed  the same queries while the bulk load runs: the query's p50/p99 and the bulk rate.
# The in-process engine's rate on the same model (bench_engine_cuda ragged) is the ceiling the
# bulk rate is compared with.
#
# DEVICE (default cuda:0,graphs=all) is the worker's --device.
# CONFIGS entries are CHUNK:CREDITS:MBT[:INFLIGHT] (broker --chunk-tokens, worker --credits,
# --max-batch-tokens and --max-inflight; "-" leaves one at the program's default); default "-:-:-".
#
# Usage (on the GPU host, from the repo root):
#   [CONFIGS=...] [MODELS="minilm bert-base"] bench/gpu/pool_bulk.sh CARRY OUT
#   CARRY holds bin/ (ember-broker, ember-worker, ember, bench_pool_load), lib/ and
#   tokenizer.json (as for pool_latency.sh); OUT receives JSON and logs.
set -euo pipefail
. bench/gpu/carry_env.sh
models_list=${MODELS:-minilm bert-base}
# shellcheck disable=SC2086
carry_setup "$1" "$2" $models_list
threads=${THREADS:-2} inflight=${INFLIGHT:-8} texts=${TEXTS:-64} seconds=${SECONDS_BULK:-8}
corpus="$out/passages.txt"
python3 bench/make_bench_texts.py "$out/corpus.txt" 4000 >/dev/null
awk 'NF > 50' "$out/corpus.txt" >"$corpus" # the passages: what an index is built from
text128=$(printf 'hello %.0s' $(seq 126))  # [CLS] + 126 + [SEP] = 128 tokens
fe=tcp://127.0.0.1:7611 be=tcp://127.0.0.1:7612
for model in $models_list; do
    for cfg in ${CONFIGS:--:-:-}; do
        IFS=: read -r chunk credits mbt winflight <<<"$cfg"
        winflight=${winflight:--}
        tag="$model-$(tr : - <<<"${cfg//-/def}")" # "-" (default) as "def"
        bargs=() wargs=() # "-": the program's default
        [ "$chunk" = - ] || bargs+=(--chunk-tokens "$chunk")
        [ "$credits" = - ] || wargs+=(--credits "$credits")
        [ "$mbt" = - ] || wargs+=(--max-batch-tokens "$mbt")
        [ "$winflight" = - ] || wargs+=(--max-inflight "$winflight")
        "$carry/bin/ember-broker" --frontend $fe --backend $be --model "$models/$model" \
            --tokenizer-threads 4 "${bargs[@]}" >"$out/broker-$tag.log" 2>&1 &
        broker=$!
        "$carry/bin/ember-worker" --broker $be --model "$models/$model" \
            --device "${DEVICE:-cuda:0,graphs=all}" "${wargs[@]}" >"$out/worker-$tag.log" 2>&1 &
        worker=$!
        trap 'kill $worker $broker 2>/dev/null || true; wait 2>/dev/null || true' EXIT
        wait_for_pool $fe 300 || echo "== the pool did not answer in 60 s"
        echo "== $model: chunk-tokens $chunk, credits $credits, max-batch-tokens $mbt," \
            "max-inflight $winflight"
        load=("$carry/bin/bench_pool_load" --broker $fe --texts-file "$corpus" --texts "$texts"
            --threads "$threads" --inflight "$inflight")
        "${load[@]}" --seconds 2 >/dev/null # warm-up
        echo "-- bulk alone"
        "${load[@]}" --seconds "$seconds" --json "$out/bulk_$tag.json"
        query=("$carry/bin/bench_pool_load" --broker $fe --text "$text128" --texts 1 --threads 1
            --inflight 1)
        echo "-- query alone"
        "${query[@]}" --seconds 3 --json "$out/query_$tag.json"
        echo "-- query under bulk load"
        "${load[@]}" --seconds "$seconds" --json "$out/mixed_bulk_$tag.json" &
        bulk=$!
        sleep 1
        "${query[@]}" --seconds $((seconds - 3)) --json "$out/mixed_query_$tag.json"
        wait $bulk || true
        kill -TERM $worker $broker
        wait $worker $broker || true
        trap - EXIT
        grep -h "engine cuda\|start-up" "$out/worker-$tag.log" | head -3 || true
    done
done
