#!/bin/bash
# Session 32, run 4: where the time goes after the attention's lazy check and tensor-core row sums
# (main 44e7948; binR/bench_engine_cuda): Nsight Compute sections (speed of light, scheduler and
# warp state statistics with the stall reasons, occupancy, instruction mix, source counters) and
# the pipes' utilisation of the first wgmma attention and the first GEMM of ours (FFN-up + GELU)
# of one eager ragged pass, MiniLM and BERT-base; then bench/gpu/profile_engine.sh on MiniLM (one
# eager ragged pass, kernels serialised: the per-kernel table).
# Pack: tar cf - -C .gpucarry lib binR/bench_engine_cuda | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r4.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r4.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session32/r4.sh
. bench/gpu/variant_steps.sh
variant_setup r4
b=$C/binR/bench_engine_cuda
k='regex:k_attention_wgmma|k_gemm<'
for m in minilm bert-base; do
    export EMBER_TUNE_CACHE=$R/tune-$m.txt
    timeout 120 $b profile /tmp/m/$m cuda:0 ragged 20 > $R/tune_run_$m.txt 2>&1
    timeout 200 ncu --clock-control none -k "$k" --launch-count 2 --section SpeedOfLight \
        --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
        --section InstructionStats --section SourceCounters \
        $b profile /tmp/m/$m cuda:0,graphs=off ragged 1 > $R/ncu_sections_$m.txt 2>&1
    echo "== $m sections rc $?"
    grep -E "k_attention_wgmma|k_gemm<|Duration|Issue Slots Busy|Warp Cycles Per Issued|Achieved Active Warps|Compute \(SM\) Throughput|Stall" $R/ncu_sections_$m.txt | cut -c1-150 | head -40
    timeout 120 ncu --clock-control none -k "$k" --launch-count 2 --metrics \
sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio \
        $b profile /tmp/m/$m cuda:0,graphs=off ragged 1 > $R/ncu_pipes_$m.txt 2>&1
    echo "== $m pipes rc $?"
    grep -E "k_attention_wgmma|k_gemm<|pct|ratio" $R/ncu_pipes_$m.txt | sed -E 's/ +/ /g' | cut -c1-140 | head -36
done
mkdir -p /tmp/m1 && ln -sfn /tmp/m/minilm /tmp/m1/minilm
bash bench/gpu/profile_engine.sh "$b" /tmp/m1 "$R/profile" > "$R/profile.log" 2>&1
echo "== profile rc $?"
grep -A24 "minilm ragged: kernels" "$R/profile/profile.txt"
rm -f "$R"/profile/*.csv
variant_finish r4
