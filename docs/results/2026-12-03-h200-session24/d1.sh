#!/bin/bash
# Session 24, run d1 (~5 min), main a70f2e9's code (binD): (1) what the FFN-up's GELU epilogue
# costs: gemms ffn1+bias (the same GEMM, bias only) beside ffn1+gelu, both models, 4096 / 16384
# tokens, binary16; (2) what each node of the 1 x 128 graph adds now (CUPTI trace, as session 19's
# r4.sh), MiniLM and BERT-base. (The real-model check did not fit: with its 40 MB the pack and the
# tree passed the device's 64 MiB.)
# Dev box: binD = bench_kernels_cuda bench_engine_cuda libember_kernel_trace.so (build-next/bin0 at
#   a70f2e9; bench_engine_cuda's code = b518b20's);
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binD d1.sh | xz -T2 > .gpupack/s24d.tar.xz
# Device: carry [".gpupack/s24d.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s24d.tar.xz -C .gpucarry && bash .gpucarry/d1.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/d1 T=$PWD/.gpucarry/binD/libember_kernel_trace.so
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
for g in ffn1+bias ffn1+gelu; do
  timeout 100 $C/binD/bench_kernels_cuda gemms $R/g_$g.json 20 4096,16384 dtype=f16 gemm=$g > $R/g_$g.txt 2>&1
  echo "== $g rc $?"; grep "best of" $R/g_$g.txt
done
grep -E "cublasLt" $R/g_ffn1+bias.txt | head -8
trace() { # name model case iters
    EMBER_TUNE_CACHE=/tmp/tc_$2 CUDA_INJECTION64_PATH=$T EMBER_TRACE_OUT=$R/t_$1.csv EMBER_TRACE_API=0 \
        timeout 90 $C/binD/bench_engine_cuda profile /tmp/m/$2 cuda:0 $3 $4 spin=5000 | tail -1 | cut -c1-160
    python3 bench/gpu/kernel_trace_summary.py $R/t_$1.csv 200 $R/t_$1.json > $R/t_$1.txt 2>&1
    cat $R/t_$1.txt | head -40; gzip -f $R/t_$1.csv
}
for m in minilm bert-base; do # fill the tuning caches untraced
  EMBER_TUNE_CACHE=/tmp/tc_$m timeout 120 $C/binD/bench_engine_cuda profile /tmp/m/$m cuda:0 b1_128 20 spin=5000 | cut -c1-150
done
trace minilm_b1 minilm b1_128 300
trace bert_b1 bert-base b1_128 300
trace minilm_ragged minilm ragged 30
tar cf $OUT/d1.tar -C $OUT d1 && rm -rf $R
