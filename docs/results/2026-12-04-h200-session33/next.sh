#!/bin/bash
# Prepared in session 33 for the next one (compile-checked only; ~8 min with the start-up):
# O = main 0b92392 + out_store.patch: the wgmma attention's output leaves through the Q tile's
# shared memory (a warp writes its 16 rows as 4-byte pairs, XOR-swizzled by row, reads them back
# as 16-byte chunks and stores whole 64 / 128-byte rows; ncu had 31% excess L2 sectors from the
# 4-byte stores and 2.7% of the stall samples in the exit's drain); SASS: 24 STG.E.128 where
# there were 96 STG.E, 122 / 146 registers (121-123 / 148 before), no spill; out must be 16-byte
# aligned with ldo % 8 == 0 (the auto choice falls back to the mma kernel otherwise; tested).
# M34 = main 0b92392. Kernel tests, attention bench rows, an engine A/B of both models (4096,
# ragged, 3 rounds, one tuning shared); MiniLM's ragged batch in bursts of 20 / 400 / 20 with the
# SM clock and power logged; then gpu-check step 3 (engine_cuda, transformers) on O
# and step 5 (the benches of record, 500 repetitions) on whichever is faster on MiniLM's ragged.
# Build (dev box): worktree at 0b92392 -> kernels_cuda bench_kernels_cuda bench_engine_cuda
#   engine_cuda -> .gpucarry/binM34; apply out_store.patch, the same -> .gpucarry/binO; strip.
# Pack: tar cf - -C .gpucarry lib binM34 binO | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/next34.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/next34.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session33/next.sh
. bench/gpu/variant_steps.sh
variant_setup next34
kernel_tests O 200 attention || { variant_finish next34; exit 1; }
attention_bench M34 O | grep -E "==|T=4096|T=16384"
shared_tuning 4096,ragged M34 O
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 4096,ragged 3 M34="$C/binM34" \
    O="$C/binO" > "$R/ab_summary.txt" 2>&1
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
# Burst against sustained: the shared tuning's 20-repetition profile read MiniLM's ragged batch at
# 1.83-1.87 ms this session where the A/Bs' 200 read 2.00-2.05: clocks under power? MiniLM ragged
# with 20, 400, 20 repetitions, nvidia-smi every 100 ms beside it.
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv,noheader -lms 100 > "$R/clocks.csv" 2>&1 &
smi=$!
for n in 20 400 20; do
    echo "== burst $n start $(date +%H:%M:%S.%N | cut -c1-12)" >> "$R/burst.txt"
    EMBER_TUNE_CACHE=/tmp/engine_ab_tc_minilm_M34 timeout 60 "$C/binM34/bench_engine_cuda" profile \
        /tmp/m/minilm cuda:0 ragged $n spin=5000 2>&1 | grep -E "^profile .*seqs" >> "$R/burst.txt"
done
kill $smi
grep -oE "^== burst.*|wall median [0-9.]+ ms p99 [0-9.]+ ms" "$R/burst.txt"
python3 - "$R/clocks.csv" <<'PY'
import sys, statistics as st
rows = [l.split(", ") for l in open(sys.argv[1]) if l.count(",") >= 4]
busy = [r for r in rows if float(r[2].split()[0]) > 200]
if busy:
    mhz = [int(r[1].split()[0]) for r in busy]; w = [float(r[2].split()[0]) for r in busy]
    print(f"busy samples {len(busy)}: SM MHz min {min(mhz)} median {st.median(mhz)} max {max(mhz)};"
          f" W median {st.median(w):.0f} max {max(w):.0f}; reasons {sorted(set(r[4].strip() for r in busy))}")
PY
rec=M34
grep -E "^\| minilm \| ragged" "$R/ab_table.md" | grep -q -- " -[0-9.]*%" && rec=O
echo "== at $SECONDS s; record on $rec"
ln -sfn ../lib "$C/binO/lib"
ln -sfn ../lib "$C/bin$rec/lib"
MODELS=/tmp/m OUT=$R/gc ops/gpu-check.sh --prebuilt "$C/binO" --engine-only --steps 3 > "$R/gc.log" 2>&1
echo "== gpu-check 3 (O) rc $? at $SECONDS s"
grep -E "worst|OVERALL" "$R/gc.log" | tail -8
rm -rf "$R"/gc/check
MODELS=/tmp/m OUT=$R/rec timeout $((570 - SECONDS)) ops/gpu-check.sh --prebuilt "$C/bin$rec" \
    --engine-only --reps 500 --steps 5 > "$R/rec.log" 2>&1
echo "== gpu-check 5 ($rec) rc $? at $SECONDS s"
tail -22 "$R/rec/summary.txt" 2>/dev/null || tail -20 "$R/rec.log"
variant_finish next34
