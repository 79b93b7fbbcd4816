#!/bin/bash
# session 17 run 7: the fused feed-forward kernel, MiniLM shape only, after run 6's phase marks
# (binM3: all weights resident, P reduced by one bulk DSMEM copy per peer, the residual loaded
# while the copies land): the phase marks again (mlp_trace), its tests, the gemms bench (MiniLM,
# 128 / 256 tokens, binary16), then main (bin0) against mlp=on, tuned, MiniLM 1 x 128 / 16 / 256.
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
d=docs/results/2026-12-02-h200-session16
for n in 128 16 256; do .gpupack/mlp_trace 384 1536 $n | head -14; done | tee $OUT/trace.txt
( time timeout 100 .gpucarry/binM3/kernels_cuda mlp_fused ) > $OUT/kernels_mlp.txt 2>&1; echo "rc $?" >> $OUT/kernels_mlp.txt
tail -4 $OUT/kernels_mlp.txt
timeout 100 .gpucarry/binM3/bench_kernels_cuda gemms $OUT/gemms_mlp.json 128,256 dtype=f16 model=minilm > $OUT/gemms_mlp.txt 2>&1
grep -E " mlp |best of ours" $OUT/gemms_mlp.txt
sed -i 's/for m in minilm bert-base; do/for m in ${MODELS:-minilm bert-base}; do/' $d/r4.sh
MODELS=minilm BIN=$PWD/.gpucarry/binM3 DEV=cuda:0,mlp=on CASES=b1_128,16,256 TAG=_mlp ROUNDS="0 1 2" bash $d/r4.sh
