#!/usr/bin/env bash
# Installs what ember needs to build and test on Debian 12: compilers and CMake, the libraries
# (ZeroMQ, czmq, msgpack-c, hiredis, jansson, OpenBLAS), redis-server, clang for the
# fuzzers, and the Python reference tools the tests compare against (ops/requirements-test.txt).
# Skips what is already there, so it is cheap to re-run. Needs root (or sudo) for apt-get.
# Usage: ops/install-deps.sh [--bench]   (--bench adds PyTorch + sentence-transformers peers)
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(build-essential cmake pkg-config git clang clang-format libclang-rt-14-dev python3 python3-pip
      libzmq3-dev libczmq-dev libmsgpack-dev libhiredis-dev redis-server
      libjansson-dev libopenblas-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "install-deps: apt-get install ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi
# Debian's own python3 marks itself externally managed; these are test tools, not system parts.
export PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1
reqs=(-r ops/requirements-test.txt)
[ "${1:-}" = "--bench" ] && reqs+=(-r ops/requirements-bench.txt)
if ! python3 -m pip install --quiet "${reqs[@]}"; then
    echo "install-deps: pip install failed" >&2
    exit 1
fi
echo "install-deps: ready"
