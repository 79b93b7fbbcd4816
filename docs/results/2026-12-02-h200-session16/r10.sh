#!/bin/bash
# prepared in session 16, not yet run: the fused feed-forward kernel (branch mlp-fused 78493ae,
# MiniLM's and BERT-base's shapes; device option mlp=on runs it at the buckets <= 256 tokens):
# its tests against the unfused references, the engine tests (three mlp=on modes against the CPU
# engine, MiniLM shape), the gemms bench at 128 / 256 / 1024 tokens, binary16 ("mlp": fused,
# beside the best FFN-up + GELU and FFN-down + LayerNorm), then main (bin0) against mlp=on
# (binM), tuned, 3 rounds, both shapes (~10 min in all: two calls within the 600 s limit,
# PART=1 the tests and the bench, PART=2 the A/B; no PART: both)
d=$(dirname $0) M=$PWD/.gpucarry/binM
if [ "${PART:-1}" = 1 ]; then
  BIN=$M TESTS=mlp_fused ENGINE=mlp TOKENS=128,256,1024 TAG=_mlp BENCH=" mlp |best of ours" \
    bash $d/r3.sh
fi
[ "${PART:-2}" = 2 ] || exit 0
BIN=$M DEV=cuda:0,mlp=on CASES=b1_128,16,256 TAG=_mlp bash $d/r4.sh
