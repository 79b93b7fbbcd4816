#!/usr/bin/env bash
# From a fresh machine: installs dependencies, fetches the default model (all-MiniLM-L6-v2, real
# weights), builds ember, and embeds the sample texts in ops/sample-texts.txt, printing the first
# values of each embedding. Usage: ops/quickstart.sh [TEXT_FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
ops/install-deps.sh
ops/fetch-model.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" --target ember
input=${1:-ops/sample-texts.txt}
echo "== ember embed --model models/all-MiniLM-L6-v2 --input $input"
./build/client/ember embed --model models/all-MiniLM-L6-v2 --input "$input" |
    python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    e = r["embedding"]
    print("text %d: %d tokens, dim %d, [%s, ...]" % (r["index"], r["tokens"], len(e),
          ", ".join("%.4f" % x for x in e[:4])))'
