#!/bin/bash
# session 18 run 5: why the folded GEMMs are slower inside the fold=on pass than in the gemms
# bench (session 17 run4 against run2: BERT-base 1024 folded FFN-up 20.34 us under ncu in the pass,
# 12.23 in the bench, cuBLASLt's 12.60 / 13.36). Nsight Compute --set full, clocks left alone, of
# the same kernel (k_gemm<..., 6>, 128x192 s4, and <..., 4>, 64x128 s6) in the pass and in the
# bench's graph. carry [".gpupack/gc.tar.xz"] (bin0 = main 361042f).
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
B=.gpucarry/bin0
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
m=/tmp/m/bert-base
EMBER_TUNE_CACHE=/tmp/tcF timeout 100 $B/bench_engine_cuda profile $m cuda:0,fold=on 1024 200 \
  spin=5000 > $OUT/prof_fold.txt 2>&1
EMBER_TUNE_CACHE=/tmp/tcA timeout 100 $B/bench_engine_cuda profile $m cuda:0,fold=off 1024 200 \
  spin=5000 > $OUT/prof_plain.txt 2>&1
grep -E "profile" $OUT/prof_fold.txt $OUT/prof_plain.txt
N="ncu --clock-control none --kernel-name-base demangled"
for e in 6 4; do
  EMBER_TUNE_CACHE=/tmp/tcF timeout 120 $N -k "regex:k_gemm<.*\(int\)$e>" --launch-skip 12 \
    --launch-count 2 --set full -o $OUT/pass_e$e $B/bench_engine_cuda profile $m cuda:0,fold=on \
    1024 2 > $OUT/ncu_pass_e$e.log 2>&1
done
timeout 120 $N -k "regex:k_gemm<.*\(int\)6>" --launch-skip 5 --launch-count 2 --set full \
  -o $OUT/bench_e6 $B/bench_kernels_cuda gemms /tmp/g6.json 1024 dtype=f16 model=bert-base \
  gemm=ffn1+fold "match=128x192 s4 fold" > $OUT/ncu_bench_e6.log 2>&1
timeout 120 $N -k "regex:k_gemm<.*\(int\)4>" --launch-skip 5 --launch-count 2 --set full \
  -o $OUT/bench_e4 $B/bench_kernels_cuda gemms /tmp/g4.json 1024 dtype=f16 model=bert-base \
  gemm=ffn2+stats "match=64x128 s6 fold" > $OUT/ncu_bench_e4.log 2>&1
for f in pass_e6 pass_e4 bench_e6 bench_e4; do
  ncu --import $OUT/$f.ncu-rep --page details > $OUT/$f.txt 2>&1
  ncu --import $OUT/$f.ncu-rep --page raw --csv > $OUT/$f.raw.csv 2>&1
  rm -f $OUT/$f.ncu-rep
done
tail -n 3 $OUT/ncu_*.log
grep -E "k_gemm|^    Duration|Grid Size|Block Size|Registers Per|Memory Throughput|L2 Hit|DRAM Throughput|Achieved Occ|Warp Cycles Per Issued|SM Frequency|Issued Ipc" \
  $OUT/pass_e6.txt $OUT/bench_e6.txt $OUT/pass_e4.txt $OUT/bench_e4.txt | cut -c1-150 | head -90
