#!/bin/bash
# Session 27: did merging gemm-pp3 cost the ragged pass? (final.sh bench on main faeaa04: MiniLM
# ragged 2.260 ms where attn-lazy-tma alone ran 2.155 in the session's v5 bench.) Engine A/B,
# 3 rounds, each label tuning its own cache: LT = attn-lazy-tma c0bc4fc (no pp3 configurations),
# M = main faeaa04. (Prepared with a third label M2, the same binary tuned apart; that call was
# lost when the machine was taken back, and the rerun, this script as it stands, had no time
# for it.)
# Dev box: binLT/bench_engine_cuda (s27a's), binM/bench_engine_cuda (s27d's binS);
#   tar cf - -C .gpucarry lib/... binLT/bench_engine_cuda binM ab.sh | xz -T8 > .gpupack/s27e.tar.xz
# Device: carry [".gpupack/s27e.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s27e.tar.xz -C .gpucarry && bash .gpucarry/ab.sh
C=$PWD/.gpucarry R=$OUT/ab
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64
mkdir -p $R
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 LT=$C/binLT M=$C/binM > $R/ab_summary.txt 2>&1
grep -E "==|wall" $R/ab_summary.txt | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//; s/ \(2 chunks.*//'
for m in minilm bert-base; do for v in LT M; do cp /tmp/engine_ab_tc_${m}_$v $R/tune_${m}_$v.txt; done; done
tar cf $OUT/ab.tar -C $OUT ab && rm -rf $R
