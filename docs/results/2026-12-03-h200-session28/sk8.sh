#!/bin/bash
# Session 28, ~5 min: SK = branch gemm-splitk8 c31c870 (re-made this session) against main
# da9d903 (N): split-K 8 configurations ("wgmma 64x64 s8 splitk8", plain and folded; 62-72
# registers, no spills) for the FFN-down (K = 1536 / 3072) at <= 256 tokens, where the tuner now
# picks split-K 4: half the K slices and bytes per CTA, twice the CTAs. The aim: MiniLM 1 x 128
# (0.120-0.123 ms across runs) safely under its 0.12 target.
# Kernel tests first (linear*: every configuration must run; a failing SK stops the run); gemms
# N / SK at 128 and 256 tokens; engine A/B, 3 rounds, each label tuning its own cache (the
# configuration list differs, so one tuning cannot serve both).
# The pack (dev box): binLABEL = kernels_cuda engine_cuda bench_kernels_cuda bench_engine_cuda built
#   in build-next/bin0 at the label's commit, stripped; lib/ = libopenblas.so.0 libjansson.so.4
#   libgfortran.so.5 libquadmath.so.0;
#   tar cf - -C .gpucarry lib binN binBB binET binSK bn32.sh et.sh sk8.sh final.sh \
#     | xz -T1 --lzma2=preset=6,dict=192MiB > .gpupack/s28.tar.xz   (~15 MB: one dictionary spans the
#   four near-identical builds)
# Device: carry [".gpupack/s28.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s28.tar.xz -C .gpucarry && bash .gpucarry/sk8.sh
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
