#!/bin/bash
# Session 36, run 5: ping-pong turns between the fused FFN's two consumer groups (binP) against
# run 4's kernel (binF): binP's kernel tests, the kernel bench of both at 16384 / 16896 / 27392
# tokens (1 s windows), the engine A/B on MiniLM (ffn=off, F, P; one tuning), and the engine's
# bench mode of P.
# Pack: tar cf - -C .gpucarry lib binF binP | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s36e.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s36e.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session36/s36e.sh
. bench/gpu/variant_steps.sh
variant_setup s36e
kernel_tests P 300 ffn
grep -E "ffn .*(worst|skipped)|CHECK failed" "$R/kernels_P.log" | head -8
for v in F P; do
    BENCH_SUSTAIN_S=1 timeout 200 "$C/bin$v/bench_kernels_cuda" ffn "$R/ffn_$v.json" 16384,16896,27392 > "$R/ffn_$v.txt" 2>&1
    echo "== bench ffn $v rc $? at $SECONDS s"
    grep -E "^ *[0-9]+ (unfused|ffn) " "$R/ffn_$v.txt" | grep -v "unfused: ffn1"
done
EMBER_TUNE_CACHE=/tmp/tc_minilm timeout 200 "$C/binP/bench_engine_cuda" profile /tmp/m/minilm \
    cuda:0,ffn=off b1_128,ragged 20 spin=5000 > "$R/tune.txt" 2>&1
for v in off F P; do cp /tmp/tc_minilm "/tmp/engine_ab_tc_minilm_$v"; done
AB_MODELS=minilm AB_ITERS=600 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m ragged 3 \
    off="$C/binP,ffn=off" F="$C/binF,ffn=on" P="$C/binP,ffn=on" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
EMBER_TUNE_CACHE=/tmp/engine_ab_tc_minilm_P timeout 200 "$C/binP/bench_engine_cuda" bench \
    /tmp/m/minilm minilm "$R/bench_P.json" 200 spin=5000 ffn=on > "$R/bench_P.txt" 2>&1
echo "== bench P rc $? at $SECONDS s"
grep -E "100 texts|per 1000" "$R/bench_P.txt" | head -6
variant_finish s36e
