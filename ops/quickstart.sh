#!/usr/bin/env bash
# From a fresh machine: installs dependencies, fetches the default model (all-MiniLM-L6-v2, real
# weights), builds ember, starts a local pool (a private redis-server, ember-broker and one
# ember-worker on the CPU engine, via ops/pool.sh on free loopback ports), embeds the sample
# texts in ops/sample-texts.txt THROUGH the pool (`ember embed --broker`), prints a summary and
# stops the pool again (also on failure or Ctrl-C). Usage: ops/quickstart.sh [TEXT_FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
ops/install-deps.sh
ops/fetch-model.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" --target ember ember-broker ember-worker
input=${1:-ops/sample-texts.txt}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rundir=build/quickstart-pool
frontend="tcp://127.0.0.1:$(free_port)"
trap 'ops/pool.sh down --dir "$rundir" >/dev/null || echo "quickstart: stopping the pool failed; see $rundir/logs" >&2' EXIT
echo "== ops/pool.sh up: redis-server, ember-broker, 1 ember-worker (logs in $rundir/logs)"
BUILD_DIR=build ops/pool.sh up --workers 1 --dir "$rundir" --model models/all-MiniLM-L6-v2 \
    --frontend "$frontend" --backend "tcp://127.0.0.1:$(free_port)" --redis-port "$(free_port)"
# shellcheck disable=SC1091
. "$rundir/pool.env"
echo "== ember status --redis $EMBER_REDIS"
./build/client/ember status --redis "$EMBER_REDIS"
echo "== ember embed --broker $EMBER_FRONTEND --input $input"
start=$(date +%s%N)
./build/client/ember embed --broker "$EMBER_FRONTEND" --input "$input" >"$rundir/embeddings.jsonl"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
python3 - "$rundir/embeddings.jsonl" "$ms" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
for r in rows:
    e = r["embedding"]
    print("text %d: %d tokens, dim %d, [%s, ...]" % (r["index"], r["tokens"], len(e),
          ", ".join("%.4f" % x for x in e[:4])))
print("%d texts, %d tokens embedded through the pool in %s ms" % (
    len(rows), sum(r["tokens"] for r in rows), sys.argv[2]))
PY
echo "== stopping the pool"
