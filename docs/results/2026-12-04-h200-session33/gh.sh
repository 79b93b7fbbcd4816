#!/bin/bash
# Session 33, run 5 (the session's last ~4 device minutes): GH = G2 (run 4) with the FFN-up
# wgmma epilogue's binary16 GELU taking z / 2 from one FFMA of the accumulator and a halved bias
# (kern::gelu_erf_h2_of_half; the same bits as G2, one instruction a value fewer). Kernel tests
# (GELU, linear, linear_fold), then an engine A/B against NT (main + the test patch), 2 rounds.
# Pack: tar cf - -C .gpucarry lib binNT binGH | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/gh.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/gh.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session33/gh.sh
. bench/gpu/variant_steps.sh
variant_setup gh
kernel_tests GH 120 bias_gelu linear linear_fold || { variant_finish gh; exit 1; }
grep -E "^gelu f16" "$R/kernels_GH.log"
shared_tuning 4096,ragged NT GH
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 4096,ragged 2 NT="$C/binNT" \
    GH="$C/binGH" > "$R/ab_summary.txt" 2>&1
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
echo "== at $SECONDS s"
variant_finish gh
