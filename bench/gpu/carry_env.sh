# bench/gpu/carry_env.sh — shared set-up of the pool benches on the GPU host, sourced by
# pool_latency.sh and pool_saturation.sh: `carry_setup CARRY OUT MODEL...` sets carry (absolute),
# out (created), LD_LIBRARY_PATH (the carried libraries first) and models=/tmp/ember-models
# (written by make_random_models.py unless every MODEL is there), and copies the carried
# tokenizer.json into each MODEL.
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
