#!/bin/bash
# Session 30, third run: what folding the LayerNorms costs each GEMM at the ragged buckets now
# that the FFN-up's GELU is cheap (H = main 0dd7b5d). 1. bias_gelu's kernel test with bf16's
# tolerance corrected; 2. per model: the ragged case and 4096 tokens, default (fold up to one
# layer's size) and fold=on at every bucket (fold_max=16384), wall medians with graphs, then one
# eager ragged pass of fold=on under Nsight Compute (per-kernel times, as profile_engine.sh; the
# default's are s30b's).
# Pack: tar cf - -C .gpucarry lib binH/bench_engine_cuda binH/kernels_cuda
#         | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s30c.tar.xz
# Device: carry [".gpupack/s30c.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s30c.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session30/s30c.sh
. bench/gpu/variant_steps.sh
variant_setup s30c
kernel_tests H 90 bias_gelu
grep -E "^gelu " "$R/kernels_H.log"
B=$C/binH/bench_engine_cuda
for m in minilm bert-base; do
    export EMBER_TUNE_CACHE=$R/tune-$m.txt
    for dev in cuda:0 cuda:0,fold=on,fold_max=16384; do
        for c in 4096 ragged; do
            "$B" profile "/tmp/m/$m" "$dev" "$c" 200 | tee -a "$R/profile.txt" | sed -E 's/, submit.*//'
        done
    done
    ncu --csv --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
        "$B" profile "/tmp/m/$m" cuda:0,graphs=off,fold=on,fold_max=16384 ragged 1 \
        >"$R/ncu_${m}_fold.csv" 2>"$R/ncu_${m}_fold.err"
    echo "== $m ragged fold=on: kernels of one eager run" | tee -a "$R/profile.txt"
    python3 bench/gpu/ncu_summary.py "$R/ncu_${m}_fold.csv" 2 "$R/ncu_${m}_fold.json" | tee -a "$R/profile.txt" | head -20
done
rm -f "$R"/*.csv
variant_finish s30c
