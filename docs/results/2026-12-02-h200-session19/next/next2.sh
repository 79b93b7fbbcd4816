#!/bin/bash
# Prepared in session 19 for session 20's second device call (~7 min), not run: folded 64x128
# split-K 4 / 8 GEMM candidates (fold-splitk.patch beside this script) for FFN-down + statistics,
# which adds 5.1 us a layer to MiniLM 1 x 128 against ~3.2 for the other GEMMs (session 19 trace).
# Dev box (repository root), once (or: bash docs/results/2026-12-02-h200-session19/next/prepare.sh,
# which makes every pack of next1-3.sh from a fresh checkout):
#   git checkout -b fold-splitk8 main && git am docs/results/2026-12-02-h200-session19/next/fold-splitk.patch
#   git checkout main
#   bench/gpu/pack_builds.sh .gpupack/s20b.tar.xz bin0=main:bench_engine_cuda \
#     binK=fold-splitk8:bench_engine_cuda,kernels_cuda,bench_kernels_cuda \
#     -- docs/results/2026-12-02-h200-session19/next/next2.sh
# Device: carry [".gpupack/s20b.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s20b.tar.xz -C .gpucarry && bash .gpucarry/next2.sh
# The tuner picks the new candidates only where they are faster: the A/B shows whether any is.
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r2
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 240 $C/binK/kernels_cuda linear_fold ) > $R/kernels_K.txt 2>&1; echo "rc $?" >> $R/kernels_K.txt
echo "kernels K linear_fold: $(grep -E "CHECK failed|passed|rc " $R/kernels_K.txt | tail -2 | tr '\n' ' ')"
timeout 120 $C/binK/bench_kernels_cuda gemms $R/gemms_K.json 128,256 model=minilm gemm=ffn2+stats \
  > $R/gemms_K.txt 2>&1; grep -iE "split|ffn2" $R/gemms_K.txt | head -20
AB_ITERS=300 bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,256 3 A=$C/bin0 K=$C/binK \
  | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//'
EMBER_LOG=info EMBER_TUNE_CACHE=/tmp/engine_ab_tc_minilm_K $C/binK/bench_engine_cuda profile \
  /tmp/m/minilm cuda:0 b1_128 10 spin=5000 2>&1 | grep -iE "ffn2|plan|split" | head -20 > $R/plans_K.txt
tar cf $OUT/r2.tar -C $OUT r2 && rm -rf $R
