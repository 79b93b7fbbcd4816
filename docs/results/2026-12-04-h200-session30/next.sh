#!/bin/bash
# Prepared in session 30 for the next one (not run). Builds, all from main a6e6f09 (the review's
# last code change: k_add_ln_rows takes kern::setup_once's largest shared carve-out, unmeasured),
# and F from before it:
#   M   main
#   F   main before that change (session 30's s30e build, 7c7920b's engine code): M against F is
#       the carve-out's effect on BERT-base's LayerNorm (MiniLM runs the same code in both)
#   S2  main + ln384s2.patch (this folder): add_layernorm with 2 rows a thread at hidden 384 from
#       6144 rows (s30d: 4 rows made MiniLM's ragged pass 2% slower while BERT-base's gained 1.2%;
#       2 is the step between)
#   T   main + session 28's warpskip.patch + session 29's tiles.patch (the attention's host-built
#       tile table): session 29 measured the kernel -16% at 16384 ragged tokens but the engine
#       -0.5%; here also with lanes=1 (M1 / T1), where the attention's last wave is not filled by
#       the other lane's kernels, to see whether the lanes are what hides the gain.
# If .gpucarry/binM, binF, binS2, binT are gone: git worktree add build-next/bin0 main (F: 7c7920b); build each
# (kernels_cuda bench_kernels_cuda bench_engine_cuda engine_cuda) with the patch applied.
# Pack: tar cf - -C .gpucarry lib binM binF binS2 binT | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/next.tar.xz
# Device: carry [".gpupack/next.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/next.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session30/next.sh
. bench/gpu/variant_steps.sh
variant_setup next
kernel_tests M 90 add_layernorm || { variant_finish next; exit 1; }
kernel_tests S2 90 add_layernorm || { variant_finish next; exit 1; }
kernel_tests T 150 attention || { variant_finish next; exit 1; }
attention_bench M T
shared_tuning 1024,4096,ragged M F S2 T M1 T1
AB_ITERS=100 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 1024,4096,ragged 3 M="$C/binM" \
    F="$C/binF" S2="$C/binS2" T="$C/binT" M1="$C/binM,lanes=1" T1="$C/binT,lanes=1" \
    > "$R/ab_summary.txt" 2>&1
ab_summary "$R/ab_summary.txt"
variant_finish next
