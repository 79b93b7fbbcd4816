#!/bin/bash
# Session 28, ~3 min: why the two biggest kernels of a ragged pass run below their rooflines.
# Nsight Compute sections (speed of light, compute and memory workload, scheduler and warp
# state statistics, occupancy, instruction mix) of the first wgmma attention and the first
# GELU FFN-up GEMM (ours, ping-pong) of one eager ragged pass, MiniLM and BERT-base, main
# da9d903 (binN); then the pipes' utilisation by metric names (a separate run: a name this
# ncu lacks fails only that run).
# Pack: .gpupack/s28.tar.xz; run: bash docs/results/2026-12-03-h200-session28/prof2.sh
. bench/gpu/variant_steps.sh
variant_setup prof2
b=$C/binN/bench_engine_cuda
k='regex:k_attention_wgmma|k_gemm<'
for m in minilm bert-base; do
  export EMBER_TUNE_CACHE=$R/tune-$m.txt
  timeout 120 $b profile /tmp/m/$m cuda:0 ragged 20 > $R/tune_run_$m.txt 2>&1
  timeout 200 ncu --clock-control none -k "$k" --launch-count 2 --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats \
    --section WarpStateStats --section Occupancy --section LaunchStats --section InstructionStats \
    $b profile /tmp/m/$m cuda:0,graphs=off ragged 1 > $R/ncu_sections_$m.txt 2>&1
  echo "== $m sections rc $?"
  grep -E "k_attention_wgmma|k_gemm<|Duration|Issue Slots Busy|Executed Ipc Active|No Eligible|Warp Cycles Per Issued|Achieved Active Warps|Compute \(SM\) Throughput|Memory Throughput" $R/ncu_sections_$m.txt | head -40
  timeout 120 ncu --clock-control none -k "$k" --launch-count 2 --metrics \
sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio \
    $b profile /tmp/m/$m cuda:0,graphs=off ragged 1 > $R/ncu_pipes_$m.txt 2>&1
  echo "== $m pipes rc $?"
  grep -E "k_attention_wgmma|k_gemm<|pct|ratio" $R/ncu_pipes_$m.txt | sed -E 's/ +/ /g' | cut -c1-140 | head -30
done
variant_finish prof2
