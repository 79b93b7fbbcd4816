#!/bin/bash
# session 19, device call 3 (~7 min): what the graph launch call costs for which kind of graph
# (graph_launch2.cu: plain / params / cluster / smem / kinds / events / all, one graph relaunched
# or 4 in rotation); slot-reuse (binM = main 97cbc29 + branch slot-reuse: an idle engine restarts
# its slot ring, so one request at a time reuses one graph) and lanes=1 (2 slots instead of 4)
# against main dc3b078 (bin0); binM's engine and pooling tests. att32-bn128 again with the row-max
# tree kept in registers (d8db0ea): binT4 (128-key blocks, 4 CTAs per SM, 8 bytes spilled) and
# binT3 (3 CTAs per SM, 167 registers) against bin0 on MiniLM's 1024 and ragged.
# Device: carry [".gpupack/s19c.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s19c.tar.xz -C .gpucarry && bash .gpucarry/r3.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
$C/graph_launch2 2000 | tee $OUT/graph_launch2.txt
AB_ITERS=300 bench/gpu/engine_ab.sh $OUT/ab.txt /tmp/m b1_128,256 3 A=$C/bin0 M=$C/binM \
  L=$C/bin0,lanes=1 | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//'
( time timeout 60 $C/binT4/kernels_cuda attention ) > $OUT/kernels_T4.txt 2>&1; echo "rc $?" >> $OUT/kernels_T4.txt
echo "kernels T4 attention: $(grep -E "CHECK failed|passed|rc " $OUT/kernels_T4.txt | tail -2 | tr '\n' ' ')"
AB_MODELS=minilm AB_ITERS=60 bench/gpu/engine_ab.sh $OUT/ab_T.txt /tmp/m 1024,ragged 3 A=$C/bin0 \
  T4=$C/binT4 T3=$C/binT3 | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//'
( time timeout 60 $C/binM/kernels_cuda pool ) > $OUT/kernels_M.txt 2>&1; echo "rc $?" >> $OUT/kernels_M.txt
echo "kernels M pool: $(grep -E "CHECK failed|passed|rc " $OUT/kernels_M.txt | tail -2 | tr '\n' ' ')"
( time EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 220 $C/binM/engine_cuda ) \
  > $OUT/engine_M.log 2>&1; echo "rc $?" >> $OUT/engine_M.log
grep -E "CHECK failed|host share|lazy graphs|passed|rc " $OUT/engine_M.log | tail -6
