#!/bin/bash
# Session 28, ~2 min: the GELU FFN-up GEMM (ours: "wgmma 128x128 s4 pingpong", the first k_gemm
# of an eager ragged pass; prof2.sh's filter missed it) under Nsight Compute: sections and the
# pipes' utilisation, MiniLM and BERT-base, main da9d903 (binN). Does its GELU epilogue (two MUFU
# per value) or the ping-pong's turn-taking keep it 13 us (MiniLM, 16384 tokens) above the
# bias-only GEMM?
# Pack: .gpupack/s28.tar.xz; run: bash docs/results/2026-12-03-h200-session28/prof3.sh
. bench/gpu/variant_steps.sh
variant_setup prof3
b=$C/binN/bench_engine_cuda
for m in minilm bert-base; do
  export EMBER_TUNE_CACHE=$R/tune-$m.txt
  timeout 120 $b profile /tmp/m/$m cuda:0 ragged 20 > $R/tune_run_$m.txt 2>&1
  timeout 150 ncu --clock-control none -k regex:k_gemm --launch-count 1 --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
    --section Occupancy --section InstructionStats \
    $b profile /tmp/m/$m cuda:0,graphs=off ragged 1 > $R/ncu_sections_$m.txt 2>&1
  echo "== $m sections rc $?"
  grep -E "  void|Duration|SM Frequency|Elapsed Cycles|SM Active Cycles|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Instructions  " $R/ncu_sections_$m.txt | cut -c1-120 | head -12
  timeout 120 ncu --clock-control none -k regex:k_gemm --launch-count 1 --metrics \
sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio \
    $b profile /tmp/m/$m cuda:0,graphs=off ragged 1 > $R/ncu_pipes_$m.txt 2>&1
  echo "== $m pipes rc $?"
  grep -E "  void|pct|ratio" $R/ncu_pipes_$m.txt | sed -E 's/ +/ /g' | cut -c1-120 | head -20
done
variant_finish prof3
