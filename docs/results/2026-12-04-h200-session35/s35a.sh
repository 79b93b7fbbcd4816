#!/bin/bash
# Session 35, run 1: two changes to the wgmma attention against main (bin0 = 681cd5c):
# F (fold): head dim 32's row sums folded into PV (one m64n40k16 a k16 slice, V's N running on
# into a tile of ones) instead of four m64n8k16 of P x ones beside four m64n32k16;
# T (tail, on F): a sequence's last key block skips the exponentials of the k16 slices past its
# end. Kernel tests (attention) of F and T; the kernels sustained 0.6 s at 16384 tokens (mJ);
# the engine A/B (ragged, shared tuning, 3 rounds alternating); ncu source counters of T's
# attention in one eager ragged pass (MiniLM).
# Pack: tar cf - -C .gpucarry lib bin0 binF binT | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s35a.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s35a.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session35/s35a.sh
. bench/gpu/variant_steps.sh
variant_setup s35a
kernel_tests F 90 attention
kernel_tests T 90 attention
for v in 0 F T; do
    BENCH_SUSTAIN_S=0.6 timeout 150 "$C/bin$v/bench_kernels_cuda" "$R/k_$v.json" 30 > "$R/k_$v.txt" 2>&1
    echo "== kernels $v rc $? at $SECONDS s"
    grep -E "T=(4096|16384) attention wgmma tiles" "$R/k_$v.txt"
done
shared_tuning ragged 0 F T
AB_MODELS="minilm bert-base" AB_ITERS=600 bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m ragged 3 \
    0=$C/bin0 F=$C/binF T=$C/binT > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.txt"
EMBER_TUNE_CACHE=/tmp/engine_ab_tc_minilm_T timeout 120 ncu --set full --import-source yes \
    -k regex:attention_wgmma -c 1 -o "$R/att_T" "$C/binT/bench_engine_cuda" profile /tmp/m/minilm \
    cuda:0,graphs=off ragged 1 > "$R/ncu.log" 2>&1
echo "== ncu rc $? at $SECONDS s"
ncu -i "$R/att_T.ncu-rep" --page source --csv --print-source sass > "$R/att_T_sass.csv" 2>/dev/null
python3 bench/gpu/ncu_source_summary.py "$R/att_T_sass.csv" 30 > "$R/att_T_summary.txt" 2>&1
head -60 "$R/att_T_summary.txt"
ncu -i "$R/att_T.ncu-rep" --page details --csv > "$R/att_T_details.csv" 2>/dev/null
rm -f "$R"/*.ncu-rep
variant_finish s35a
