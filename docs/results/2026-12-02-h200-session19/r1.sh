#!/bin/bash
# session 19, device call 1 (~9 min): four branches A/B against main with their tests.
#   bin0  main dc3b078
#   binH  host-breakdown: the host's share of each chunk (enqueue, latency, deliver) in the
#         engine's stats and the profile line
#   binG  graph-events (on host-breakdown): a captured pass records its slot's events itself
#   binP  pool-fold: folded pooling with 4 loads in flight (no spills), rows prefetched into L1
#         before the statistics are staged
#   binT  att32-bn128: head-dim-32 attention in 128-key blocks
# Device: carry [".gpupack/s19.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s19.tar.xz -C .gpucarry && bash .gpucarry/r1.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > $OUT/models.log 2>&1
for v in P:pool T:attention; do
    b=${v%%:*} t=${v#*:}
    ( time timeout 60 $C/bin$b/kernels_cuda $t ) > $OUT/kernels_$b.txt 2>&1; echo "rc $?" >> $OUT/kernels_$b.txt
    echo "kernels $b $t: $(grep -E "CHECK failed|passed|rc " $OUT/kernels_$b.txt | tail -2 | tr '\n' ' ')"
done
timeout 90 $C/binT/bench_kernels_cuda $OUT/bk_T.json 20 2>&1 | grep -iE "attention" > $OUT/bench_att_T.txt
timeout 90 $C/bin0/bench_kernels_cuda $OUT/bk_0.json 20 2>&1 | grep -iE "attention" > $OUT/bench_att_0.txt
( time EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $C/binG/engine_cuda ) \
  > $OUT/engine_G.log 2>&1; echo "rc $?" >> $OUT/engine_G.log
grep -E "CHECK failed|host share|passed|rc " $OUT/engine_G.log | tail -5
AB_ITERS=300 bench/gpu/engine_ab.sh $OUT/ab.txt /tmp/m b1_128,256 3 A=$C/bin0 H=$C/binH G=$C/binG \
  P=$C/binP | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//'
AB_MODELS=minilm AB_ITERS=100 bench/gpu/engine_ab.sh $OUT/ab_T.txt /tmp/m 1024,ragged 3 A=$C/bin0 \
  T=$C/binT | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//'
