#!/bin/bash
# Session 23, run 2 (~9 min): the benches of record against transformers in the same run (main
# a940d36 = binA: the attention change of run 1), whole-engine correctness against the CPU engine
# and transformers fp32, and every GEMM candidate at 16384 tokens (binary16) for the FFN-up study.
# Dev box: binA as in r1.sh;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binA/bench_engine_cuda binA/bench_kernels_cuda r2.sh | xz -T2 > .gpupack/s23b.tar.xz
# Device: carry [".gpupack/s23b.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s23b.tar.xz -C .gpucarry && bash .gpucarry/r2.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r2
mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $R/gpu.txt
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
for m in minilm bert-base; do
  timeout 170 $C/binA/bench_engine_cuda bench /tmp/m/$m $m $R/bench_engine_$m.json 500 spin=5000 > $R/bench_engine_$m.log 2>&1
  echo "rc $? bench $m"; grep -iE "batch 1 x 128|ragged|tokens/s" $R/bench_engine_$m.log | head -8
  timeout 120 python3 bench/gpu/transformers_peer.py /tmp/m/$m $m $R/peer_$m.json 200 > $R/peer_$m.log 2>&1
  echo "rc $? peer $m"; tail -4 $R/peer_$m.log
done
python3 bench/gpu/plot_latency.py $R $R/latency.png > /dev/null 2>&1 || echo "no plot here"
timeout 100 $C/binA/bench_kernels_cuda gemms $R/gemms.json 20 16384 dtype=f16 > $R/gemms.txt 2>&1
echo "rc $? gemms"; grep -E "ffn1\+gelu|qkv " $R/gemms.txt | sort -k6 -n | head -12
timeout 150 python3 bench/gpu/check_engine.py --bin $C/binA/bench_engine_cuda --models /tmp/m --out $R/check > $R/check_engine.log 2>&1
echo "rc $? check"; sed -n '/== whole-engine/,$p' $R/check_engine.log | tail -12; rm -f $R/check/*.bin
tar cf $OUT/r2.tar -C $OUT r2 && rm -rf $R
