#!/usr/bin/env bash
# bench/gpu/profile_engine.sh — where the CUDA engine's time goes, on the GPU host: for each model
# shape and case, the wall and GPU medians with graphs (bench_engine_cuda profile), and the
# per-kernel GPU times and DRAM / L2 traffic of one eager run under Nsight Compute (ncu
# --clock-control none --cache-control none), summarised by bench/gpu/ncu_summary.py. The
# profile runs before it fill a tuning cache of the script's own, so the ncu runs start from the
# tuned plans without timing anything (ncu would otherwise trace thousands of timing launches).
#
# Usage (GPU host, repo root): bench/gpu/profile_engine.sh BENCH_ENGINE_CUDA MODELS OUT
#   MODELS holds minilm/ and bert-base/ (bench/gpu/make_random_models.py).
set -uo pipefail
bin=$1 models=$2 out=$3
mkdir -p "$out"
for m in minilm bert-base; do
    export EMBER_TUNE_CACHE="$out/tune-$m.txt"
    for c in 8 b1_128 ragged 16384; do
        "$bin" profile "$models/$m" cuda:0 "$c" 200 | tee -a "$out/profile.txt"
    done
    for c in b1_128 ragged; do
        fw=1; [ "$c" = ragged ] && fw=2 # the ragged run is split into two chunks of <= 16384
        ncu --csv --clock-control none --cache-control none \
            --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
            "$bin" profile "$models/$m" cuda:0,graphs=off "$c" 1 >"$out/ncu_${m}_$c.csv" 2>"$out/ncu_${m}_$c.err"
        echo "== $m $c: kernels of one eager run" | tee -a "$out/profile.txt"
        python3 bench/gpu/ncu_summary.py "$out/ncu_${m}_$c.csv" $fw "$out/ncu_${m}_$c.json" |
            tee -a "$out/profile.txt"
    done
done
