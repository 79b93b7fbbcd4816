# bench/gpu/carry_env.sh — shared set-up of the pool benches on the GPU host, sourced by
# pool_latency.sh, pool_bulk.sh and pool_saturation.sh: `carry_setup CARRY OUT MODEL...` sets
# carry (absolute), out (created), LD_LIBRARY_PATH (the carried libraries first) and
# models=/tmp/ember-models (written by make_random_models.py unless every MODEL is there), and
# copies the carried tokenizer.json into each MODEL; `wait_for_pool FRONTEND TRIES`.
carry_setup() {
    carry=$(cd "$1" && pwd)
    out=$2
    shift 2
    mkdir -p "$out"
    export LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
    models=/tmp/ember-models
    local m missing=0
    for m in "$@"; do [ -f "$models/$m/model.safetensors" ] || missing=1; done
    if [ $missing -eq 1 ]; then
        python3 bench/gpu/make_random_models.py "$models" >"$out/models.log" 2>&1
    fi
    for m in "$@"; do cp "$carry/tokenizer.json" "$models/$m/"; done
}

# Waits until the pool behind frontend $1 embeds a text (a worker has joined; capturing every
# graph at start takes a moment): up to $2 tries 0.2 s apart. 0 once it answered, else 1.
wait_for_pool() {
    local i
    for i in $(seq "$2"); do
        echo hi | "$carry/bin/ember" embed --broker "$1" --timeout-ms 2000 >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}
