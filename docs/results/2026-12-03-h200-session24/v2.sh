#!/bin/bash
# Session 24, run v2 MODEL (~4 min a model): the bench of record against transformers in the
# same run, binV as in v1.sh (b518b20's code: main + the fault tests' branch).
# Device: (after v1, the pack unpacked) bash .gpucarry/v2.sh minilm; bash .gpucarry/v2.sh bert-base
C=$PWD/.gpucarry m=$1 R=$OUT/v2_$1
mkdir -p $R
export LD_LIBRARY_PATH=$C/binV:$C/lib:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > $R/gpu.txt
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
timeout 200 $C/binV/bench_engine_cuda bench /tmp/m/$m $m $R/bench_engine_$m.json 500 spin=5000 > $R/bench_engine_$m.log 2>&1
echo "rc $? bench $m"; grep -iE "batch 1 x 128|ragged|tokens/s" $R/bench_engine_$m.log | head -8
timeout 150 python3 bench/gpu/transformers_peer.py /tmp/m/$m $m $R/peer_$m.json 200 > $R/peer_$m.log 2>&1
echo "rc $? peer $m"; tail -4 $R/peer_$m.log
tar cf $OUT/v2_$m.tar -C $OUT v2_$m && rm -rf $R
