#!/usr/bin/env bash
# ops/pool.sh — a local ember pool: a private redis-server, one ember-broker and N ember-workers
# (CPU engine), started in the background with their logs and pids in one run directory, and
# stopped cleanly. docs/operations.md has the walk-through.
#
#   ops/pool.sh up     [--workers N] [--model DIR] [--dir RUNDIR] [--frontend EP] [--backend EP]
#                      [--redis-port P | --redis-url URL] [--heartbeat-ms N] [--threads N]
#                      [--broker-arg ARG]... [--worker-arg ARG]... [--wait-s S]
#   ops/pool.sh add-worker [--dir RUNDIR] [--worker-arg ARG]...
#   ops/pool.sh status [--dir RUNDIR]
#   ops/pool.sh down   [--dir RUNDIR] [--timeout S]
#
# up: starts redis-server (loopback, no persistence, files in RUNDIR; skipped with --redis-url,
#   which uses a Redis you run), ember-broker --redis, then N ember-worker --device cpu
#   --broker BACKEND --redis; writes RUNDIR/pool.env (EMBER_FRONTEND, EMBER_BACKEND, EMBER_REDIS,
#   EMBER_POOL_DIR; `source` it) and RUNDIR/pids/*.pid; waits (at most --wait-s, default 60)
#   until `ember status --redis` shows the broker, healthy, with N workers connected, and N
#   healthy workers; prints the endpoints.
#   On failure: the tail of every log, everything it started is stopped, exit 1.
# add-worker: one more worker into a running pool (same model, broker, Redis).
# status: the pool's processes (alive or not) and `ember status`.
# down: SIGTERM to the workers (they drain: finish their chunks, deregister), then the broker,
#   then Redis; waits for each group at most --timeout seconds (default 30) and only then sends
#   SIGKILL; reports how each process ended. Exit 0 when everything stopped on SIGTERM, 4 when
#   something needed SIGKILL (it is stopped all the same), 1 on errors.
#
# Defaults: --workers 1, --model models/all-MiniLM-L6-v2, --dir $BUILD_DIR/pool,
#   --frontend tcp://127.0.0.1:5555, --backend tcp://127.0.0.1:5556, --redis-port 6390.
# Binaries: $BUILD_DIR (default build) /broker/ember-broker, /worker/ember-worker,
#   /client/ember; EMBER_BROKER_BIN, EMBER_WORKER_BIN, EMBER_BIN override each one.
# Threads: each worker gets --threads N compute threads (default: cores / workers, at least 1;
#   also OPENBLAS_NUM_THREADS unless set) so several workers on one machine do not oversubscribe
#   the cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
broker_bin="${EMBER_BROKER_BIN:-$build/broker/ember-broker}"
worker_bin="${EMBER_WORKER_BIN:-$build/worker/ember-worker}"
ember_bin="${EMBER_BIN:-$build/client/ember}"

die() { echo "pool.sh: $*" >&2; exit 1; }
say() { echo "pool.sh: $*"; }

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}

cmd="${1:-}"
[ -n "$cmd" ] || { usage >&2; exit 2; }
shift

workers=1
model="$root/models/all-MiniLM-L6-v2"
rundir=""
frontend="tcp://127.0.0.1:5555"
backend="tcp://127.0.0.1:5556"
redis_port=6390
redis_url=""
heartbeat_ms=""
threads=""
wait_s=60
timeout_s=30
broker_args=()
worker_args=()

need() { [ $# -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
    case "$1" in
    --workers) need "$@"; workers="$2"; shift 2 ;;
    --model) need "$@"; model="$2"; shift 2 ;;
    --dir) need "$@"; rundir="$2"; shift 2 ;;
    --frontend) need "$@"; frontend="$2"; shift 2 ;;
    --backend) need "$@"; backend="$2"; shift 2 ;;
    --redis-port) need "$@"; redis_port="$2"; shift 2 ;;
    --redis-url) need "$@"; redis_url="$2"; shift 2 ;;
    --heartbeat-ms) need "$@"; heartbeat_ms="$2"; shift 2 ;;
    --threads) need "$@"; threads="$2"; shift 2 ;;
    --broker-arg) need "$@"; broker_args+=("$2"); shift 2 ;;
    --worker-arg) need "$@"; worker_args+=("$2"); shift 2 ;;
    --wait-s) need "$@"; wait_s="$2"; shift 2 ;;
    --timeout) need "$@"; timeout_s="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "pool.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
rundir="${rundir:-$build/pool}"
case "$rundir" in /*) ;; *) rundir="$(pwd)/$rundir" ;; esac
pids="$rundir/pids"
isnum() { case "$1" in ''|*[!0-9]*) return 1 ;; *) return 0 ;; esac; }

# ---- process helpers -------------------------------------------------------------------------

# alive PID NAME: the process exists, is not a zombie, and runs the program we started (a
# recycled pid is not ours).
alive() {
    local pid="$1" name="$2" state comm
    [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
    state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [ "$state" != "Z" ] && [ "$state" != "X" ] || return 1
    comm=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    case "$comm" in *"$name"*) return 0 ;; *) return 1 ;; esac
}

# start NAME LOG PROGRAM ARGS...: detached (own session, no terminal), output to LOG.
start() {
    local name="$1" logf="$2"
    shift 2
    printf '== %s %s\n' "$(date '+%F %T')" "$*" >>"$logf"
    setsid "$@" >>"$logf" 2>&1 </dev/null &
    local pid=$!
    echo "$pid $(basename "$1")" >"$pids/$name.pid"
    say "started $name (pid $pid)"
}

log_tails() {
    local f
    for f in "$rundir"/logs/*.log; do
        [ -f "$f" ] || continue
        echo "---- $(basename "$f") (last 20 lines)" >&2
        tail -n 20 "$f" >&2 || true
    done
}

# stop_group SIGNAL-TIMEOUT FILES...: SIGTERM each live process, wait up to timeout_s for all,
# SIGKILL the rest. Sets escalated=1 when SIGKILL was needed.
escalated=0
stop_group() {
    local f pid name t0 left any
    local -a live=()
    for f in "$@"; do
        [ -f "$f" ] || continue
        read -r pid name <"$f" || true
        if alive "$pid" "$name"; then
            kill -CONT "$pid" 2>/dev/null || true # a stopped process cannot handle SIGTERM
            kill -TERM "$pid" 2>/dev/null || true
            live+=("$f")
        else
            say "$(basename "$f" .pid): not running"
            rm -f "$f"
        fi
    done
    [ ${#live[@]} -gt 0 ] || return 0
    t0=$(date +%s%N)
    while :; do
        any=0
        for f in "${live[@]}"; do
            [ -f "$f" ] || continue
            read -r pid name <"$f" || true
            if alive "$pid" "$name"; then
                any=1
            else
                say "$(basename "$f" .pid) (pid $pid): stopped after SIGTERM in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
                rm -f "$f"
            fi
        done
        [ $any -eq 1 ] || return 0
        left=$(( timeout_s * 1000 - ($(date +%s%N) - t0) / 1000000 ))
        [ $left -gt 0 ] || break
        sleep 0.1
    done
    for f in "${live[@]}"; do
        [ -f "$f" ] || continue
        read -r pid name <"$f" || true
        if alive "$pid" "$name"; then
            kill -KILL "$pid" 2>/dev/null || true
            escalated=1
            echo "pool.sh: $(basename "$f" .pid) (pid $pid): still running after ${timeout_s}s, sent SIGKILL" >&2
            for _ in $(seq 50); do alive "$pid" "$name" || break; sleep 0.1; done
            alive "$pid" "$name" && echo "pool.sh: $(basename "$f" .pid) (pid $pid) survived SIGKILL" >&2
        fi
        rm -f "$f"
    done
}

down() {
    [ -d "$pids" ] || { say "no pool in $rundir"; return 0; }
    escalated=0
    shopt -s nullglob
    stop_group "$pids"/worker-*.pid
    stop_group "$pids"/broker.pid
    stop_group "$pids"/redis.pid
    shopt -u nullglob
    rm -f "$rundir/pool.env"
    rmdir "$pids" 2>/dev/null || true
    if [ $escalated -eq 1 ]; then
        say "pool in $rundir stopped (some processes needed SIGKILL; see $rundir/logs)"
        return 4
    fi
    say "pool in $rundir stopped cleanly"
}

# ---- status ----------------------------------------------------------------------------------

# healthy_count URL FRONTEND: prints "B C W": healthy brokers whose frontend has FRONTEND's port
# (a broker records the endpoint as bound, e.g. tcp://0.0.0.0:5555 for tcp://*:5555), the
# workers connected to such a broker (its workers= field, highest), healthy workers in Redis
healthy_count() {
    "$ember_bin" status --redis "$1" 2>/dev/null | awk -v port="${2##*:}" '
        $1 == "broker" && / healthy=yes$/ {
            fe = 0; n = 0
            for (i = 3; i <= NF; i++) {
                if ($i ~ /^frontend=/ && substr($i, length($i) - length(port)) == ":" port) fe = 1
                if ($i ~ /^workers=/) n = substr($i, 9) + 0
            }
            if (fe) { b++; if (n > c) c = n }
        }
        $1 == "worker" && / healthy=yes$/ { w++ }
        END { printf "%d %d %d\n", b, c, w }'
}

status() {
    [ -f "$rundir/pool.env" ] || { say "no pool in $rundir"; return 3; }
    # shellcheck disable=SC1091
    . "$rundir/pool.env"
    echo "pool in $rundir: frontend $EMBER_FRONTEND, backend $EMBER_BACKEND, redis $EMBER_REDIS"
    local f pid name rc=0
    for f in "$pids"/*.pid; do
        [ -f "$f" ] || continue
        read -r pid name <"$f" || true
        if alive "$pid" "$name"; then
            echo "  $(basename "$f" .pid): pid $pid running"
        else
            echo "  $(basename "$f" .pid): pid $pid NOT running (log: $rundir/logs/$(basename "$f" .pid).log)"
            rc=1
        fi
    done
    echo "registry (ember status --redis $EMBER_REDIS):"
    "$ember_bin" status --redis "$EMBER_REDIS" | sed 's/^/  /' || rc=$?
    return $rc
}

# ---- up --------------------------------------------------------------------------------------

port_of() { echo "${1##*:}"; }
port_free() { # port on 127.0.0.1 not bound
    python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
PY
}

fail_up() {
    echo "pool.sh: up failed: $*" >&2
    log_tails
    echo "pool.sh: stopping what was started" >&2
    timeout_s=10 down >&2 || true
    exit 1
}

next_worker_index() {
    local i=1
    while [ -e "$pids/worker-$i.pid" ]; do i=$((i + 1)); done
    echo "$i"
}

start_worker() {
    local i
    i=$(next_worker_index)
    local -a args=(--model "$EMBER_MODEL" --device cpu --broker "$EMBER_BACKEND" --redis "$EMBER_REDIS"
                   --threads "${EMBER_WORKER_THREADS:-0}")
    [ -n "${EMBER_HEARTBEAT_MS:-}" ] && args+=(--heartbeat-ms "$EMBER_HEARTBEAT_MS")
    start "worker-$i" "$rundir/logs/worker-$i.log" "$worker_bin" "${args[@]}" ${worker_args[@]+"${worker_args[@]}"}
}

up() {
    if ! isnum "$workers" || [ "$workers" -lt 1 ]; then die "--workers needs a positive integer"; fi
    isnum "$wait_s" || die "--wait-s needs an integer"
    [ -d "$model" ] || die "model directory $model not found (ops/fetch-model.sh)"
    model="$(cd "$model" && pwd)"
    local b
    for b in "$broker_bin" "$worker_bin" "$ember_bin"; do
        [ -x "$b" ] || die "$b missing: build it (cmake --build $build) or set BUILD_DIR / EMBER_*_BIN"
    done
    if [ -f "$rundir/pool.env" ]; then
        local f pid name
        for f in "$pids"/*.pid; do
            [ -f "$f" ] || continue
            read -r pid name <"$f" || true
            alive "$pid" "$name" && die "a pool is already up in $rundir (ops/pool.sh down --dir $rundir)"
        done
        say "removing the remains of a previous pool in $rundir"
        rm -rf "$pids" "$rundir/pool.env"
    fi
    mkdir -p "$pids" "$rundir/logs" "$rundir/redis"
    local nproc_; nproc_=$(nproc 2>/dev/null || echo 1)
    [ -n "$threads" ] || threads=$(( nproc_ / workers > 0 ? nproc_ / workers : 1 ))
    export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-$threads}"

    for ep in "$frontend" "$backend"; do
        case "$ep" in
        tcp://127.0.0.1:*|tcp://localhost:*|tcp://0.0.0.0:*|tcp://\*:*)
            port_free "$(port_of "$ep")" || die "port of $ep is in use (choose another with --frontend/--backend)" ;;
        esac
    done

    if [ -z "$redis_url" ]; then
        isnum "$redis_port" || die "--redis-port needs a number"
        port_free "$redis_port" || die "Redis port $redis_port is in use (--redis-port P, or --redis-url URL for a Redis you run)"
        command -v redis-server >/dev/null || die "redis-server not found (ops/install-deps.sh)"
        start redis "$rundir/logs/redis.log" redis-server --port "$redis_port" --bind 127.0.0.1 \
            --save '' --appendonly no --dir "$rundir/redis"
        redis_url="redis://127.0.0.1:$redis_port"
        local ok=0
        for _ in $(seq 100); do
            if redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG; then ok=1; break; fi
            sleep 0.1
        done
        [ $ok -eq 1 ] || fail_up "redis-server did not answer on port $redis_port"
    fi

    # %q: the file is sourced, so paths with spaces or quotes must come back as they went in
    printf 'EMBER_FRONTEND=%q\nEMBER_BACKEND=%q\nEMBER_REDIS=%q\nEMBER_POOL_DIR=%q\nEMBER_MODEL=%q\nEMBER_HEARTBEAT_MS=%q\nEMBER_WORKER_THREADS=%q\n' \
        "$frontend" "$backend" "$redis_url" "$rundir" "$model" "$heartbeat_ms" "$threads" \
        >"$rundir/pool.env"
    EMBER_MODEL=$model EMBER_BACKEND=$backend EMBER_REDIS=$redis_url EMBER_HEARTBEAT_MS=$heartbeat_ms
    EMBER_WORKER_THREADS=$threads

    local -a bargs=(--model "$model" --frontend "$frontend" --backend "$backend" --redis "$redis_url")
    [ -n "$heartbeat_ms" ] && bargs+=(--heartbeat-ms "$heartbeat_ms")
    start broker "$rundir/logs/broker.log" "$broker_bin" "${bargs[@]}" ${broker_args[@]+"${broker_args[@]}"}
    local i
    for i in $(seq "$workers"); do start_worker; done

    say "waiting (at most ${wait_s}s) for the broker and $workers healthy workers in $redis_url"
    local t_end=$(( $(date +%s) + wait_s )) counts bn cn wn f pid name
    while :; do
        for f in "$pids"/*.pid; do
            read -r pid name <"$f" || true
            alive "$pid" "$name" || fail_up "$(basename "$f" .pid) exited during start-up"
        done
        counts=$(healthy_count "$redis_url" "$frontend")
        read -r bn cn wn <<<"$counts"
        if [ "$bn" -ge 1 ] && [ "$cn" -ge "$workers" ] && [ "$wn" -ge "$workers" ]; then break; fi
        [ "$(date +%s)" -lt $t_end ] || fail_up "after ${wait_s}s: $bn healthy broker(s) with $cn of $workers workers connected, $wn of $workers healthy worker(s) in Redis"
        sleep 0.2
    done
    say "pool up in $rundir: $workers worker(s)"
    echo "EMBER_FRONTEND=$frontend"
    echo "EMBER_REDIS=$redis_url"
    echo "embed: $ember_bin embed --broker $frontend --input FILE"
    echo "stop:  $0 down --dir $rundir"
}

add_worker() {
    [ -f "$rundir/pool.env" ] || die "no pool in $rundir"
    # shellcheck disable=SC1091
    . "$rundir/pool.env"
    [ -x "$worker_bin" ] || die "$worker_bin missing"
    export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-${EMBER_WORKER_THREADS:-1}}"
    start_worker
}

case "$cmd" in
up) up ;;
down) down ;;
status) status ;;
add-worker) add_worker ;;
-h|--help|help) usage ;;
*) echo "pool.sh: unknown command '$cmd'" >&2; usage >&2; exit 2 ;;
esac
