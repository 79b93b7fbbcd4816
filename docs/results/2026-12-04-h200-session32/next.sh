#!/bin/bash
# Prepared in session 32 for the next one (not run; ~4 min with the start-up):
# (a) the kernel-test case of several (tile, head) items a CTA (many_items_test.patch: ~3000
#     ragged tokens in 30 sequences of 1-300 tokens, half under 41, 16 heads, GQA, both head
#     dims, causal or not) ran only on the persistent build (r6): run it on main's kernels (NT)
#     before merging it;
# (b) a warp-specialised attention for batches with a tile table at head dim 32
#     (ws_attention.patch, compile-checked only): one CTA an SM, a producer warp group (24
#     registers) whose warp w feeds consumer group w's stream of (tile, head) items (its Q tiles
#     and K/V ring run ahead across items, so an item after the first starts with its loads in
#     place), the consumers' steps those of main's kernel; W4 = 4 consumer groups at 120
#     registers (ptxas: 140 bytes of spill stores, some inside the step loop), W3 = 3 at 160 (no spill, 12 consumer warps an
#     SM). Both with the test. The table path only (buckets >= 8192 tokens): MiniLM's ragged case
#     and the 16384 kernel rows; head dim 64 (BERT-base) keeps main's kernel.
# Build (dev box): /tmp/buildws.sh of session 32, i.e. in build-next/bin0 (git worktree add
#   --detach build-next/bin0 main; configure as the session notes say): apply
#   many_items_test.patch, build kernels_cuda bench_kernels_cuda bench_engine_cuda -> binNT;
#   apply ws_attention.patch -> binW4; set WsCfg's kConsumers = 3, kConsumerRegs = 160 -> binW3;
#   strip the binaries. binS = main's bench_kernels_cuda + bench_engine_cuda (or binNT's).
# Pack: tar cf - -C .gpucarry lib binNT binW4 binW3 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/next33.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/next33.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session32/next.sh
. bench/gpu/variant_steps.sh
variant_setup next33
kernel_tests NT 300 attention
grep -E "ragged hd|FAIL" "$R/kernels_NT.log" | head -8
ok=1
for v in W4 W3; do
    kernel_tests $v 300 attention || ok=0
done
attention_bench NT W4 W3
if [ $ok = 1 ]; then
    shared_tuning 8192,ragged NT W4 W3
    AB_MODELS=minilm AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 8192,ragged 3 \
        NT="$C/binNT" W4="$C/binW4" W3="$C/binW3" > "$R/ab_summary.txt" 2>&1
    ab_summary "$R/ab_summary.txt"
    ab_table "$R/ab.txt" | tee "$R/ab_table.md"
fi
variant_finish next33
