#!/bin/bash
# prepared in session 16, not yet run: the fused feed-forward kernel (branch mlp-fused fecb5a8,
# MiniLM's and BERT-base's shapes; device option mlp=on runs it at the buckets <= 256 tokens):
# its tests against the unfused references, the engine tests (three mlp=on modes against the CPU
# engine, MiniLM shape), the gemms bench at 128 / 256 / 1024 tokens, binary16 ("mlp": fused,
# beside the best FFN-up + GELU and FFN-down + LayerNorm), then main (bin0) against mlp=on
# (binM), tuned, 3 rounds, both shapes (~10 min in all: two calls within the 600 s limit,
# PART=1 the tests and the bench, PART=2 the A/B; no PART: both)
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=$PWD/.gpucarry/bin0; B=$PWD/.gpucarry/binM
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
if [ "${PART:-1}" = 1 ]; then
( time timeout 100 $B/kernels_cuda mlp_fused ) > $OUT/mlp_tests.txt 2>&1
echo "rc $?" >> $OUT/mlp_tests.txt; grep -E "CHECK failed|passed|mlp_fused|rc " $OUT/mlp_tests.txt | tail -8
( time EMBER_TUNE_CACHE=/tmp/tcm EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 240 $B/engine_cuda ) > /tmp/em.log 2>&1
echo "rc $?" >> /tmp/em.log
grep -E "CHECK failed|passed|rc |mlp|real" /tmp/em.log | head -40 > $OUT/engine_tests_mlp.txt; tail -4 $OUT/engine_tests_mlp.txt
timeout 150 $B/bench_kernels_cuda gemms $OUT/gemms_mlp.json 128,256,1024 dtype=f16 > $OUT/gemms_mlp.txt 2>&1
grep -E " mlp |best of ours" $OUT/gemms_mlp.txt
fi
[ "${PART:-2}" = 2 ] || exit 0
for m in minilm bert-base; do
  for r in 0 1 2; do
    for v in A M; do
      bin=$A; dev=cuda:0; [ $v = M ] && bin=$B && dev=cuda:0,mlp=on
      EMBER_TUNE_CACHE=/tmp/tcab_${m}_$v timeout 60 $bin/bench_engine_cuda profile /tmp/m/$m $dev b1_128,16,256 400 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab_mlp.txt
      grep -E "profile .*(b1_128|16|256):" /tmp/p.txt >> $OUT/ab_mlp.txt
    done
  done
done
sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/\(.*//' $OUT/ab_mlp.txt
