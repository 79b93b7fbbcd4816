#!/bin/bash
# Prepared in session 25 for session 26 (NOT RUN), ~3 min, from g6's pack (same command with
# g7.sh): the attention (~50 us per 13.6k-token chunk and layer at MiniLM). Nsight Compute of
# main's wgmma kernel (binD), the first launch of each launch configuration (every bench T and
# dtype, both models): duration, issue slots, cycles per issued instruction, warps per SM.
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
C=$PWD/.gpucarry R=$OUT/g7
mkdir -p $R
timeout 400 ncu --clock-control none --set full -k regex:k_attention_wgmma --filter-mode per-launch-config --launch-count 1 -o /tmp/att $C/binD/bench_kernels_cuda /tmp/k.json 1 > /tmp/ncu_att.log 2>&1
echo "== ncu attention rc $?"; tail -2 /tmp/ncu_att.log
ncu -i /tmp/att.ncu-rep --page details > $R/attention_details.txt 2>&1
grep -E "k_attention_wgmma|Grid Size|Duration|Issue Slots Busy|Warp Cycles Per Issued|Registers Per|Achieved Active Warps" $R/attention_details.txt | cut -c1-120 | head -60
tar cf $OUT/g7.tar -C $OUT g7 && rm -rf $R
