#!/bin/bash
# Session 42, call 2 (replaces s42b.sh, which never ran: the device refused it). Pack
# .gpupack/s42m.tar.xz (16.6 MB): lib, binP (main 353675d's four binaries), binS (branch
# splitk-stagger: split-K partial tiles summed from each rank's own tile on, not in rank order),
# trace (bench/gpu/kernel_trace.c built against the torch wheel's CUPTI 13.0, with libcupti.so.13).
#  1. the board's GEMM ceiling in joules (bench/gpu/gemm_ceiling.py, prepared in session 37, never
#     run): is 0.87 TFLOP per joule, the best of the engine's GEMMs at the cap, the board's best?
#     (docs/benchmarks.md forty-first round: what BERT-base's 3.0 M tok/s needs)
#  2. engine A/B P against S, MiniLM and BERT-base at 128 / 256 / 512 tokens (the buckets whose
#     GEMMs take split-K), each variant tuning its own GEMMs
#  3. kernels_cuda linear linear_ln linear_fold on S (every split-K configuration, every epilogue,
#     both types), under /usr/bin/time (session 41's H100: linear + linear_ln 130 s wall with 5 min
#     of system time: where does it go?)
#  4. if time is left: the CUPTI trace of both models' 1 x 128 graphs on P and S; the idle board
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s42m.tar.xz -C .gpucarry &&
#         bash docs/results/2026-12-05-h200-session42/s42c.sh [END_SECONDS, default 420; < 250: no step 1]
. bench/gpu/variant_steps.sh
variant_setup s42c
END=${1:-420} # seconds the call may take (the session's device time left, less start-up)
if [ "$END" -ge 250 ]; then # a short call: the A/B first (MiniLM's 1 x 128 is at its target's line)
    timeout 90 python3 bench/gpu/gemm_ceiling.py "$R/gemm_ceiling.json" > "$R/gemm_ceiling.txt" 2>&1
    echo "== gemm_ceiling rc $? at $SECONDS s"
    cat "$R/gemm_ceiling.txt"
    cp "$R/gemm_ceiling.json" "$R/gemm_ceiling.keep"
fi
AB_ITERS=1000 timeout $((END / 2 + 60 - SECONDS)) bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m b1_128,256,512 2 \
    P="$C/binP" S="$C/binS" > "$R/ab.log" 2>&1
echo "== engine A/B rc $? at $SECONDS s"
ab_table "$R/ab.txt" 2>&1 | tail -20
/usr/bin/time -v timeout $((END - 20 - SECONDS)) "$C/binS/kernels_cuda" linear linear_ln linear_fold > "$R/kernels_S.log" 2>&1
echo "== kernels_cuda S rc $? at $SECONDS s"
grep -E "CHECK failed|passed|plans checked|Elapsed|User time|System time|context switches" "$R/kernels_S.log" | head -20
for v in P S; do
    for m in minilm bert-base; do
        [ $SECONDS -lt $((END - 15)) ] || break 2
        cp "/tmp/engine_ab_tc_${m}_$v" "/tmp/tc_trace" 2>/dev/null
        EMBER_TUNE_CACHE=/tmp/tc_trace CUDA_INJECTION64_PATH=$C/trace/libember_kernel_trace.so \
            EMBER_TRACE_OUT=$R/t_${m}_$v.csv timeout 30 "$C/bin$v/bench_engine_cuda" profile \
            /tmp/m/$m cuda:0 b1_128 300 spin=5000 > "$R/t_${m}_$v.log" 2>&1
        python3 bench/gpu/kernel_trace_summary.py "$R/t_${m}_$v.csv" 200 > "$R/t_${m}_${v}_b1.txt" 2>&1
        echo "== trace $m $v at $SECONDS s"
        tail -32 "$R/t_${m}_${v}_b1.txt" | cut -c1-110
        gzip -f "$R/t_${m}_$v.csv"
    done
done
idle_board
variant_finish s42c
