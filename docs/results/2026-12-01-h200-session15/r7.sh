#!/bin/bash
# prepared in session 15, not yet run: where the folded GEMMs' time goes (diagnostic builds of
# fold-ln, tune=off so every folded GEMM is the first folding configuration, 64x64 s8 fold):
# v0 = fold-ln as is (run 4's code, the prefetch bounded by n so that the main loop no longer
# waits for n_rows); v1 = without the L1 prefetch before the main loop; v2 = also without the
# operand staging and with the plain bias epilogue (wrong results: timing only). Then every
# folding tile against its plain twin (bench_kernels_cuda gemms, binary16, 128 and 1024 tokens).
# First the branch's kernel tests.
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
B=$PWD/.gpucarry/bin7
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
# the branch's GEMM tests with every coverage check (linear_ln's never ran on the branch)
( time timeout 200 $B/kernels_cuda linear_ln linear_fold linear_pdl pool ) > $OUT/kernels.txt 2>&1
echo "rc $?" >> $OUT/kernels.txt; grep -E "CHECK failed|passed|rc " $OUT/kernels.txt | tail -5
for m in minilm bert-base; do
  for v in v0 v1 v2; do
    echo "== $m $v" >> $OUT/diag.txt
    timeout 60 $B/bench_$v profile /tmp/m/$m cuda:0,fold=on,tune=off b1_128,1024 300 spin=5000 2>&1 | grep -E "profile .*(b1_128|1024):" >> $OUT/diag.txt
  done
done
for v in v0 v2; do
  timeout 60 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum -k regex:k_gemm \
    --print-summary per-kernel $B/bench_$v profile /tmp/m/bert-base cuda:0,fold=on,tune=off 1024 2 > $OUT/ncu_bert_$v.txt 2>&1
done
timeout 150 $B/bench_kernels_cuda gemms $OUT/gemms.json 128,1024 dtype=f16 > $OUT/gemms.txt 2>&1
grep -E "best of ours" $OUT/gemms.txt
sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/\(.*//' $OUT/diag.txt
