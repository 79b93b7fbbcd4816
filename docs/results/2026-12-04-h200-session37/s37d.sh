#!/bin/bash
# Session 37, run 4 (prepared): the row tile on BERT-base (rows of 768), A against R (as s37b.sh:
# the same pack) on ragged, 8192 and 16384 tokens, 2 rounds; the bench mode (one batch, 4
# pipelined, 4 in flight, energy) of A and R for both models; the board's GEMM energy ceiling
# (bench/gpu/gemm_ceiling.py: cuBLAS at 8192^3 and at the engine's shapes); the fused FFN's pass energy
# against ffn=off over longer windows (run 1: the kernel 12% below the unfused pair alone, the
# pass even).
# Pack: as s37b.sh (.gpupack/s37b.tar.xz)
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s37b.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session37/s37d.sh
. bench/gpu/variant_steps.sh
variant_setup s37d
AB_MODELS=bert-base AB_ITERS=200 timeout 240 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m \
    ragged,8192,16384 2 A="$C/binA" R="$C/binR" > /dev/null 2>&1
echo "== ab bert-base at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
echo "buckets x GEMMs on the row tile: $(grep -c 'row tile' /tmp/engine_ab_tc_bert-base_R)"
cp /tmp/engine_ab_tc_bert-base_R "$R/tune_cache_bert-base_R.txt"
for m in minilm bert-base; do
    for v in A R; do
        EMBER_TUNE_CACHE=/tmp/engine_ab_tc_${m}_$v timeout 100 "$C/bin$v/bench_engine_cuda" bench \
            "/tmp/m/$m" "$m" "$R/bench_${m}_$v.json" 200 spin=5000 > "$R/bench_${m}_$v.txt" 2>&1
        echo "== bench $m $v rc $? at $SECONDS s"
        grep -E "100 texts|per 1000" "$R/bench_${m}_$v.txt" | head -6
    done
done
# what a GEMM's joules can be on this board (cuBLAS through torch, sustained at the cap)
timeout 120 python3 bench/gpu/gemm_ceiling.py "$R/gemm_ceiling.json" > "$R/gemm_ceiling.txt" 2>&1
echo "== gemm ceiling rc $? at $SECONDS s"
cat "$R/gemm_ceiling.txt"
# the fused FFN's puzzle: 12% fewer joules alone at 16384 tokens, even in the whole pass (r1:
# 910.6 vs 927.9 mJ, runs 901-1024); the pass's energy over longer windows (1500 passes a run)
EMBER_TUNE_CACHE=/tmp/tc_minilm_f timeout 100 "$C/binA/bench_engine_cuda" profile /tmp/m/minilm \
    cuda:0,ffn=off ragged,16384,12288 20 spin=5000 > "$R/tune_f.txt" 2>&1
# (session 38) and the fused FFN from 10240 tokens (ffn_min=10240, ~0.6 of a wave): the ragged
# batch's second chunk (~11k tokens, on the other lane beside the 16384 one) fused too, as ffn=on
# did in session 36 (ragged -2.2% wall, -5.5% mJ against off) without fusing 8192 and below (12288
# alone: +6.4% with ffn=on); 12288 is the case it may cost
for v in off auto f10; do cp /tmp/tc_minilm_f "/tmp/engine_ab_tc_minilm_$v"; done
AB_MODELS=minilm AB_ITERS=1500 timeout 270 bash bench/gpu/engine_ab.sh "$R/ab_ffn.txt" /tmp/m \
    16384,12288,ragged 2 off="$C/binA,ffn=off" auto="$C/binA" f10="$C/binA,ffn_min=10240" \
    > /dev/null 2>&1
echo "== ab ffn at $SECONDS s"
ab_table "$R/ab_ffn.txt" | tee "$R/ab_ffn_table.md"
variant_finish s37d
