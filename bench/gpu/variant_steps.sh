#!/usr/bin/env bash
# bench/gpu/variant_steps.sh — the steps every device A/B script of a session shares
# (docs/results/*/NAME.sh): source it from the repository root on the GPU machine, after
# unpacking the session's pack into .gpucarry (bin<LABEL>/ per build, lib/ the carried libraries).
#   variant_setup NAME          C (.gpucarry), R ($OUT/NAME), the library path, the random models
#   kernel_tests LABEL SECS TEST...  bin<LABEL>/kernels_cuda TEST... under a timeout into
#                               $R/kernels_LABEL.log; prints the result; returns its exit status
#   attention_bench LABEL...    bin<LABEL>/bench_kernels_cuda (all kernels) into $R/k_LABEL.txt;
#                               prints the attention kernels' rows at 128, 4096, 16384 tokens
#   gemms_bench ARGS LABEL...   bin<LABEL>/bench_kernels_cuda gemms (every GEMM candidate; ARGS:
#                               its token list and filters, e.g. "4096,16384 dtype=f16
#                               gemm=ffn1+gelu") into $R/g_LABEL.txt; prints the best of ours per
#                               GEMM and the ping-pong tiles' rows
#   shared_tuning CASES LABEL...     tunes the GEMMs once per model with the first label's
#                               bench_engine_cuda and gives every label that cache, so an
#                               engine_ab.sh A/B of builds with the same GEMM configurations
#                               compares kernels, not two tunings
#   ab_summary FILE             engine_ab.sh's output, one line per case (wall and GPU medians)
#   ab_table RAW...             engine_ab.sh's raw OUT files as one table: each label's wall
#                               range and median over the rounds, against the first label's
#   idle_board                  the idle board's power, SM clock and temperature for 2 s
#                               (nvidia-smi every 200 ms) into $R/idle.csv; prints them
#   variant_finish NAME         $OUT/NAME.tar of $R without its JSON, $R removed
variant_setup() {
    C=$PWD/.gpucarry R=$OUT/$1
    export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
    mkdir -p "$R"
    [ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m >/dev/null 2>&1
}
kernel_tests() {
    local v=$1 secs=$2 rc
    shift 2
    (time timeout "$secs" "$C/bin$v/kernels_cuda" "$@") >"$R/kernels_$v.log" 2>&1
    rc=$?
    echo "rc $rc" >>"$R/kernels_$v.log"
    echo "== kernels $v rc $rc"
    grep -E "CHECK failed|passed|real" "$R/kernels_$v.log" | tail -3
    return $rc
}
attention_bench() {
    local v
    for v in "$@"; do
        timeout 120 "$C/bin$v/bench_kernels_cuda" "$R/k_$v.json" 50 >"$R/k_$v.txt" 2>&1
        echo "== bench $v rc $?"
        grep -E "T=(128|4096|16384) attention (mma|wgmma)" "$R/k_$v.txt"
    done
}
gemms_bench() {
    local args=$1 v
    shift
    for v in "$@"; do
        # shellcheck disable=SC2086 # ARGS is a word list
        timeout 120 "$C/bin$v/bench_kernels_cuda" gemms "$R/g_$v.json" 20 $args >"$R/g_$v.txt" 2>&1
        echo "== gemms $v rc $?"
        grep "best of" "$R/g_$v.txt" | cut -c1-110
        grep -E "pingpong f16" "$R/g_$v.txt" | cut -c1-90
    done
}
shared_tuning() {
    local cases=$1 m v
    shift
    for m in minilm bert-base; do
        EMBER_TUNE_CACHE=/tmp/tc_$m timeout 200 "$C/bin$1/bench_engine_cuda" profile "/tmp/m/$m" \
            cuda:0 "$cases" 20 spin=5000 >"$R/tune_$m.txt" 2>&1
        for v in "$@"; do cp "/tmp/tc_$m" "/tmp/engine_ab_tc_${m}_$v"; done
    done
}
ab_table() {
    python3 bench/gpu/ab_table.py "$@"
}
ab_summary() {
    grep -E "==|wall" "$1" | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//; s/ \(2 chunks.*//'
}
idle_board() {
    nvidia-smi --query-gpu=power.draw,clocks.sm,temperature.gpu --format=csv -lms 200 >"$R/idle.csv" &
    sleep 2
    kill $!
    echo "== idle board:"
    sort -u "$R/idle.csv" | head -4
}
variant_finish() {
    rm -f "$R"/*.json
    tar cf "$OUT/$1.tar" -C "$OUT" "$1" && rm -rf "$R"
}
