#!/bin/bash
# prepared in session 17, not yet run (the first call of session 18; ~5 min): (1) the engine
# tests on main (fold=auto the default; the tuning-cache test's plan count fixed after run8) and
# the GEMM / pooling kernel tests; (2) why the folded GEMMs are slower inside the pass than in
# the gemms bench from 1024 tokens on (run3 / run4): Nsight Compute --set full of MiniLM's folded
# sublayer end (k_gemm<..., 4>, the 64x64 s8 tile the tuner picks) inside the engine's fold=on
# 1024-token pass, and of the same configuration in the gemms bench's graph of one GEMM repeated.
# Binaries: .gpucarry/bin0 (prepare_next.sh: main's kernels_cuda, engine_cuda, bench_kernels_cuda,
# bench_engine_cuda).
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
B=.gpucarry/bin0
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( time EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $B/engine_cuda ) \
  > $OUT/engine_tests.log 2>&1; echo "rc $?" >> $OUT/engine_tests.log
grep -E "CHECK failed|passed|rc |real" $OUT/engine_tests.log | tail -6
( timeout 120 $B/kernels_cuda linear_fold pool ) > $OUT/kernels.txt 2>&1; echo "rc $?" >> $OUT/kernels.txt
tail -2 $OUT/kernels.txt
# the tuning cache filled without ncu (ncu would trace every timing launch), then two of the
# folded sublayer ends of the profiled passes
EMBER_TUNE_CACHE=/tmp/tcF timeout 60 $B/bench_engine_cuda profile /tmp/m/minilm cuda:0,fold=on 1024 20 \
  > /dev/null 2>&1
EMBER_TUNE_CACHE=/tmp/tcF timeout 150 ncu --kernel-name-base demangled -k "regex:k_gemm<.*, 4>" \
  --launch-skip 20 --launch-count 2 --set full -o $OUT/engine_fold \
  $B/bench_engine_cuda profile /tmp/m/minilm cuda:0,fold=on 1024 3 > $OUT/ncu_engine.log 2>&1
timeout 150 ncu --kernel-name-base demangled -k "regex:k_gemm<.*, 4>" --launch-skip 5 \
  --launch-count 2 --set full -o $OUT/bench_fold $B/bench_kernels_cuda gemms /tmp/g.json 1024 \
  dtype=f16 model=minilm gemm=out+stats "match=64x64 s8 fold" > $OUT/ncu_bench.log 2>&1
for f in engine_fold bench_fold; do
  ncu --import $OUT/$f.ncu-rep --page details > $OUT/$f.txt 2>&1
done
grep -E "k_gemm|Duration|Grid Size|Registers Per|Memory Throughput|L2 Hit|DRAM Throughput|Achieved Occ|Warp Cycles Per Issued" \
  $OUT/engine_fold.txt $OUT/bench_fold.txt | head -60
