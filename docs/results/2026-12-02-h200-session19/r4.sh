#!/bin/bash
# session 19, device call 4 (~3 min): BERT-base's ragged pass per kernel (ncu, one eager pass of
# the 100 texts with the tuned plans; bin0 = main dc3b078), the planning data for its GEMMs and
# LayerNorms. Device: carry [".gpupack/s19d.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s19d.tar.xz -C .gpucarry && bash .gpucarry/r4.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry m=bert-base
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
EMBER_TUNE_CACHE=/tmp/tc0 $C/bin0/bench_engine_cuda profile /tmp/m/$m cuda:0 ragged 10 spin=5000 | tail -1
# every eager pass (3 warm-ups + 1); ncu_summary.py takes the last one (2 chunks)
EMBER_TUNE_CACHE=/tmp/tc0 timeout 240 ncu --csv --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
    $C/bin0/bench_engine_cuda profile /tmp/m/$m cuda:0,graphs=off ragged 1 > $OUT/ncu_${m}_ragged.csv 2> $OUT/ncu_${m}_ragged.err
python3 bench/gpu/ncu_summary.py $OUT/ncu_${m}_ragged.csv 2 $OUT/ncu_${m}_ragged.json | tail -12
