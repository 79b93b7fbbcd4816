#!/usr/bin/env bash
# Sets up (dependencies, model) if needed, builds ember and runs the test suite with ctest.
# Environment: BUILD_DIR (default build), CMAKE_ARGS (extra configure flags, e.g.
# -DEMBER_WERROR=ON), CTEST_ARGS (extra ctest flags, e.g. "-L cpu" or "-R tokenizer").
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
ops/install-deps.sh
ops/fetch-model.sh
# shellcheck disable=SC2086
cmake -S . -B "$build" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
# shellcheck disable=SC2086
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" ${CTEST_ARGS:-}
