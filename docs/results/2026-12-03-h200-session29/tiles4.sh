#!/bin/bash
# Session 29, second run: T4 = the tile table whose entries also carry the tile's key range and
# whether its rows are of one sequence (branch tiles 2nd form: a one-sequence tile's CTA needs one
# read before its Q and K/V loads, where packed tiles need tok_seq then cu). N = main 19757ba, WS
# = main + warpskip. Kernel tests of T4 (attention), bench_kernels_cuda N / T4, engine A/B (one
# tuning, 4 rounds); then ops/gpu-check.sh --engine-only --steps 3,4 (engine test + check_engine.py
# against transformers) on T4 when it beat N on the ragged batch without losing at 1024 tokens,
# else on N (main). Ran (it checked N); results in tiles4/ and README.txt item 2. T4's code:
# tiles.patch (on main + session 28's warpskip.patch).
# Pack: binN binWS binT4 + lib/: tar cf - -C .gpucarry lib binN binWS binT4 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/t4.tar.xz
# Device: carry [".gpupack/t4.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/t4.tar.xz -C .gpucarry && bash docs/results/2026-12-03-h200-session29/tiles4.sh
. bench/gpu/variant_steps.sh
variant_setup tiles4
kernel_tests T4 150 attention || { variant_finish tiles4; exit 1; }
attention_bench N T4
shared_tuning b1_128,1024,ragged N WS T4
AB_ITERS=150 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 4 N=$C/binN \
  WS=$C/binWS T4=$C/binT4 > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
pick=$(python3 - "$R/ab.txt" T4 <<'PY'
import re, sys, statistics as st, collections
d = collections.defaultdict(list); cur = None
for line in open(sys.argv[1]):
    m = re.match(r'== (\S+) (\S+) round', line)
    if m: cur = m.groups(); continue
    m = re.search(r'cuda:0 (\S+): .* wall median ([\d.]+)', line)
    if m and cur: d[(cur[0], m.group(1), cur[1])].append(float(m.group(2)))
r = lambda m, c, v: st.median(d[(m, c, v)])
V = sys.argv[2]
win = r('minilm', 'ragged', V) < 0.995 * r('minilm', 'ragged', 'N') and \
      r('bert-base', 'ragged', V) <= 1.005 * r('bert-base', 'ragged', 'N') and \
      all(r(m, '1024', V) <= 1.005 * r(m, '1024', 'N') for m in ['minilm', 'bert-base'])
print(V if win else 'N')
PY
)
echo "== checking $pick"
cp -r $C/lib $C/bin$pick/lib
OUT=$R/check_$pick MODELS=/tmp/m timeout 400 ops/gpu-check.sh --prebuilt $C/bin$pick --engine-only --reps 200 --steps 3,4 2>&1 | tail -25
variant_finish tiles4
