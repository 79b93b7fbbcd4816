#!/bin/bash
# Session 35, run 2: F (run 1's keeper: head dim 32's row sums folded into PV) against
# H (on F: head dim 64 folded too, 3 K/V stages there to make room for its 8 KiB of ones) and
# T2 (on F: a sequence's last key block skips the exponentials of its dead k16 slices, one
# unrolled body per live-slice count; run 1's predicated form T was 19% slower). Kernel tests
# (attention) of H and T2; the kernels sustained 0.6 s at 16384 tokens (mJ); the engine A/B
# (ragged, shared tuning, 3 rounds alternating); ncu source counters of F's attention.
# Pack: tar cf - -C .gpucarry lib binF binH binT2 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s35b.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s35b.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session35/s35b.sh
. bench/gpu/variant_steps.sh
variant_setup s35b
kernel_tests H 90 attention
kernel_tests T2 90 attention
for v in F H T2; do
    BENCH_SUSTAIN_S=0.6 timeout 150 "$C/bin$v/bench_kernels_cuda" "$R/k_$v.json" 30 > "$R/k_$v.txt" 2>&1
    echo "== kernels $v rc $? at $SECONDS s"
    grep -E "T=(4096|16384) attention wgmma tiles" "$R/k_$v.txt"
done
shared_tuning ragged F H T2
AB_MODELS="minilm bert-base" AB_ITERS=600 bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m ragged 3 \
    F=$C/binF H=$C/binH T2=$C/binT2 > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.txt"
EMBER_TUNE_CACHE=/tmp/engine_ab_tc_minilm_F timeout 120 ncu --set full --import-source yes \
    -k regex:attention_wgmma -c 1 -o "$R/att_F" "$C/binF/bench_engine_cuda" profile /tmp/m/minilm \
    cuda:0,graphs=off ragged 1 > "$R/ncu.log" 2>&1
echo "== ncu rc $? at $SECONDS s"
ncu -i "$R/att_F.ncu-rep" --page source --csv --print-source sass > "$R/att_F_sass.csv" 2>/dev/null
python3 bench/gpu/ncu_source_summary.py "$R/att_F_sass.csv" 30 > "$R/att_F_summary.txt" 2>&1
head -40 "$R/att_F_summary.txt"
ncu -i "$R/att_F.ncu-rep" --page details --csv > "$R/att_F_details.csv" 2>/dev/null
rm -f "$R"/*.ncu-rep
variant_finish s35b
