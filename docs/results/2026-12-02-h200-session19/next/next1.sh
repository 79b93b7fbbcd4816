#!/bin/bash
# Prepared in session 19 for session 20's first device call (~8 min), not run: the fused embedding
# + input copy (embed-copy.patch beside this script: MiniLM 1 x 128's copy and embedding add 6.6 us
# of its 120 in session 19's trace; expected ~3 us less) against main.
# Dev box (repository root), once (or: bash docs/results/2026-12-02-h200-session19/next/prepare.sh,
# which makes every pack of next1-3.sh from a fresh checkout):
#   git checkout -b embed-copy main && git am docs/results/2026-12-02-h200-session19/next/embed-copy.patch
#   git checkout main
#   # .gpucarry/lib: the ldd-listed openblas, jansson, gfortran, quadmath + libcupti.so.13
#   bench/gpu/pack_builds.sh .gpupack/s20.tar.xz bin0=main:bench_engine_cuda,bench_kernels_cuda \
#     binE=embed-copy:bench_engine_cuda,bench_kernels_cuda,kernels_cuda,engine_cuda \
#     -- docs/results/2026-12-02-h200-session19/next/next1.sh
#   cp build-next/bin0/build/bench/libember_kernel_trace.so .gpucarry/ (and re-pack, or add it
#   to the tar) for the trace at the end
# Device: carry [".gpupack/s20.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s20.tar.xz -C .gpucarry && bash .gpucarry/next1.sh
# At most 8 files come back from $OUT: everything goes into one tar at the end.
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 90 $C/binE/kernels_cuda embed copy ) > $R/kernels_E.txt 2>&1; echo "rc $?" >> $R/kernels_E.txt
echo "kernels E embed copy: $(grep -E "CHECK failed|passed|rc " $R/kernels_E.txt | tail -2 | tr '\n' ' ')"
for b in 0 E; do
    timeout 120 $C/bin$b/bench_kernels_cuda $R/bk_$b.json 20 2>&1 | grep -iE "embed|copy" > $R/bench_embed_$b.txt
done
paste $R/bench_embed_0.txt $R/bench_embed_E.txt | cut -c1-160
( time EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 220 $C/binE/engine_cuda ) \
  > $R/engine_E.log 2>&1; echo "rc $?" >> $R/engine_E.log
grep -E "CHECK failed|host share|passed|rc " $R/engine_E.log | tail -4
AB_ITERS=300 bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,256,1024 3 A=$C/bin0 E=$C/binE \
  | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//'
AB_MODELS=minilm AB_ITERS=60 bench/gpu/engine_ab.sh $R/ab_ragged.txt /tmp/m ragged 2 A=$C/bin0 \
  E=$C/binE | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//'
if [ -f $C/libember_kernel_trace.so ]; then
    EMBER_TUNE_CACHE=/tmp/engine_ab_tc_minilm_E CUDA_INJECTION64_PATH=$PWD/$C/libember_kernel_trace.so \
        EMBER_TRACE_OUT=$R/t_E.csv timeout 90 $C/binE/bench_engine_cuda profile /tmp/m/minilm cuda:0 \
        b1_128 300 spin=5000 | tail -1
    python3 bench/gpu/kernel_trace_summary.py $R/t_E.csv 200 $R/t_E.json | head -8
    gzip -f $R/t_E.csv
fi
tar cf $OUT/r.tar -C $OUT r && rm -rf $R
