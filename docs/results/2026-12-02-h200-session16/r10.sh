#!/bin/bash
# prepared in session 16, not yet run: the fused feed-forward kernel (branch mlp-fused, MiniLM's
# shape): its tests against the unfused references, then the gemms bench for MiniLM at 128 / 256
# / 1024 tokens, binary16 ("mlp": fused, beside the best FFN-up + GELU and FFN-down + LayerNorm)
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/binM
( time timeout 120 $B/kernels_cuda mlp_fused ) > $OUT/mlp_tests.txt 2>&1
echo "rc $?" >> $OUT/mlp_tests.txt; grep -E "CHECK failed|passed|mlp_fused|rc " $OUT/mlp_tests.txt | tail -8
timeout 120 $B/bench_kernels_cuda gemms $OUT/gemms_mlp.json 128,256,1024 model=minilm dtype=f16 > $OUT/gemms_mlp.txt 2>&1
grep -E " mlp |best of ours" $OUT/gemms_mlp.txt
