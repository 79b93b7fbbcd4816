#!/bin/bash
# Session 23, run 3 (~4 min): why MiniLM's K = 384 GEMMs run at ~45% of the tensor peak. Nsight
# Compute (speed of light, memory workload, warp states) on one launch each, 16384 tokens, binary16:
# QKV by our 128x128 ping-pong, our 128x192 cooperative and cuBLASLt's first choice; FFN-up +
# GELU by the 128x128 ping-pong and the 256x128 cooperative.
# Dev box: tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#   lib/libquadmath.so.0 binA/bench_kernels_cuda r3.sh | xz -T2 > .gpupack/s23c.tar.xz
# Device: carry [".gpupack/s23c.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s23c.tar.xz -C .gpucarry && bash .gpucarry/r3.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r3
mkdir -p $R
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
i=0
for spec in "qkv|128x128 s4 pingpong f16|k_gemm" "qkv|128x192 s4 f16|k_gemm" "qkv|cublasLt|regex:^(?!k_)" \
            "ffn1+gelu|128x128 s4 pingpong f16|k_gemm" "ffn1+gelu|256x128 s3 f16|k_gemm"; do
  IFS='|' read g m k <<< "$spec"; i=$((i+1))
  timeout 100 $NCU --clock-control none --cache-control none \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum.per_second,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    -k "$k" --launch-skip 3 --launch-count 1 \
    $C/binA/bench_kernels_cuda gemms /tmp/g.json 5 16384 model=minilm gemm=$g dtype=f16 "match=$m" > $R/ncu_$i.txt 2>&1
  echo "== $i $g $m rc $?"
  grep -E "Duration|Memory Throughput|L2 Cache Throughput|Compute \(SM\)|gmma_cycles|lts__t_bytes|dram__bytes|Achieved Occupancy|Warp Cycles Per Issued|Issued Warp|^  [a-z_]*gemm|Stall" $R/ncu_$i.txt | head -16
done
tar cf $OUT/r3.tar -C $OUT r3 && rm -rf $R
