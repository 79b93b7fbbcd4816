#!/bin/bash
# Prepared in session 27 for session 28 or later (NOT RUN), ~5 min: SK = branch gemm-splitk8
# a870010 against main faeaa04 (N): split-K 8 configurations ("wgmma 64x64 s8 splitk8", plain
# and folded) for the FFN-down (K = 1536 / 3072) at <= 256 tokens, where the tuner now picks
# split-K 4 (64x64 s8 splitk4 fold: 48 CTAs of 6 K slices at MiniLM's 1 x 128, ~5.1 us of the
# layer's ~18.4 in the graph, session 23's trace). Half the K slices and bytes per CTA, twice
# the CTAs; the split reduction reads the same DSMEM bytes per CTA. The aim: MiniLM 1 x 128
# (0.120-0.123 ms across runs) safely under its 0.12 target.
# Kernel tests first (linear*: every configuration must run; a failing SK stops the run); gemms
# N / SK at 128 and 256 tokens; engine A/B, 3 rounds, each label tuning its own cache (the
# configuration list differs, so one tuning cannot serve both).
# SK then needs `final.sh check` with its binaries (binS = binSK) before it merges.
# Dev box: binN as in bn32.sh (main faeaa04); binSK = kernels_cuda engine_cuda bench_kernels_cuda
#   bench_engine_cuda (build-next/bin0 at a870010), stripped;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binN binSK sk8.sh final.sh | xz -T8 > .gpupack/s28c.tar.xz
# Device: carry [".gpupack/s28c.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s28c.tar.xz -C .gpucarry && bash .gpucarry/sk8.sh
. bench/gpu/variant_steps.sh
variant_setup sk8
kernel_tests SK 200 linear linear_ln linear_fold linear_pdl || { variant_finish sk8; exit 1; }
grep splitk8 $R/kernels_SK.log | tail -3
for v in N SK; do
  timeout 120 $C/bin$v/bench_kernels_cuda gemms $R/g_$v.json 20 128,256 dtype=f16 > $R/g_$v.txt 2>&1
  echo "== gemms $v rc $?"; grep "best of" $R/g_$v.txt | grep -E "ffn2" | cut -c1-110
  grep -E "ffn2.*splitk" $R/g_$v.txt | cut -c1-90
done
AB_ITERS=400 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,256 3 N=$C/binN SK=$C/binSK > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
for m in minilm bert-base; do grep -c splitk8 /tmp/engine_ab_tc_${m}_SK; grep -P "\tn (128|256) in (1536|3072) " /tmp/engine_ab_tc_${m}_SK | cut -f2-; done
variant_finish sk8
