#!/bin/bash
# prepared in session 18, not yet run (the first call of session 19; ~9 min): five branches, each
# A/B against main, with their tests; four for MiniLM's 1 x 128 latency, one for its ragged pass.
#   binH  host-breakdown 987a5b2: the host's share of each chunk in the engine's stats and in the
#         profile line (submit -> launch, launch -> event seen, event -> result)
#   binG  graph-events 3dbcde1 (on host-breakdown): a captured pass records its slot's events
#         itself, so a graph launch is the submit path's one CUDA call
#   binU  pool-unroll4 c67831f: the folded pooling kernel without its spills (4 loads in flight)
#   binO  pool-overlap 4a9f35f (on pool-unroll4): the folded pooling kernel pulls each thread's
#         first 8 rows into L1 before staging the statistics (one round trip for both)
#   binT  att32-bn128: head-dim-32 attention in 128-key blocks (MiniLM's ragged pass: 29% is
#         attention)
# Pack (dev box): bench/gpu/pack_builds.sh .gpupack/s19.tar.xz \
#   bin0=main:bench_engine_cuda binH=host-breakdown:bench_engine_cuda \
#   binG=graph-events:bench_engine_cuda,engine_cuda binU=pool-unroll4:bench_engine_cuda,kernels_cuda \
#   binO=pool-overlap:bench_engine_cuda,kernels_cuda binT=att32-bn128:bench_engine_cuda,kernels_cuda \
#   -- docs/results/2026-12-02-h200-session18/next1.sh
# Device: carry [".gpupack/s19.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s19.tar.xz -C .gpucarry && bash .gpucarry/next1.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( time timeout 40 $C/binU/kernels_cuda pool ) > $OUT/kernels_U.txt 2>&1; echo "rc $?" >> $OUT/kernels_U.txt
grep -E "CHECK failed|passed|rc " $OUT/kernels_U.txt | tail -3
( time timeout 40 $C/binO/kernels_cuda pool ) > $OUT/kernels_O.txt 2>&1; echo "rc $?" >> $OUT/kernels_O.txt
grep -E "CHECK failed|passed|rc " $OUT/kernels_O.txt | tail -3
( time timeout 60 $C/binT/kernels_cuda attention ) > $OUT/kernels_T.txt 2>&1
echo "rc $?" >> $OUT/kernels_T.txt; grep -E "CHECK failed|passed|rc " $OUT/kernels_T.txt | tail -3
( time EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $C/binG/engine_cuda ) \
  > $OUT/engine_G.log 2>&1; echo "rc $?" >> $OUT/engine_G.log
grep -E "CHECK failed|host share|passed|rc " $OUT/engine_G.log | tail -5
AB_ITERS=300 bench/gpu/engine_ab.sh $OUT/ab.txt /tmp/m b1_128,256 3 A=$C/bin0 H=$C/binH G=$C/binG \
  U=$C/binU O=$C/binO | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/'
AB_MODELS=minilm AB_ITERS=100 bench/gpu/engine_ab.sh $OUT/ab_T.txt /tmp/m 1024,ragged 3 A=$C/bin0 \
  T=$C/binT | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/'
