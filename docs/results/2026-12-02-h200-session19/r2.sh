#!/bin/bash
# session 19, device call 2 (~9 min): where the host's ~10 us of MiniLM's 1 x 128 go (nsys API and
# kernel trace of binH: the engine's host share with the CUDA calls apart); pool-unroll4 (binP:
# the folded pooling with 4 loads in flight, no row prefetch) A/B; MiniLM's ragged kernels (ncu).
# Device: carry [".gpupack/s19b.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s19b.tar.xz -C .gpucarry && bash .gpucarry/r2.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 60 $C/binP/kernels_cuda pool ) > $OUT/kernels_P.txt 2>&1; echo "rc $?" >> $OUT/kernels_P.txt
echo "kernels P pool: $(grep -E "CHECK failed|passed|rc " $OUT/kernels_P.txt | tail -2 | tr '\n' ' ')"
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NSYS"
if [ -n "$NSYS" ]; then
    EMBER_TUNE_CACHE=/tmp/tcH $C/binH/bench_engine_cuda profile /tmp/m/minilm cuda:0 b1_128 50 spin=5000 | tail -1
    EMBER_TUNE_CACHE=/tmp/tcH timeout 150 $NSYS profile -t cuda,osrt --cuda-graph-trace=node -s none \
        --cpuctxsw=none -f true -o $OUT/h $C/binH/bench_engine_cuda profile /tmp/m/minilm cuda:0 \
        b1_128 300 spin=5000 > $OUT/nsys_run.txt 2>&1
    tail -2 $OUT/nsys_run.txt
    timeout 60 $NSYS stats -r cuda_api_sum,cuda_gpu_kern_sum -f csv -o $OUT/st $OUT/h.nsys-rep > /dev/null 2>&1
    timeout 60 $NSYS export --type sqlite -f true -o $OUT/h.sqlite $OUT/h.nsys-rep > /dev/null 2>&1
    ls -la $OUT; rm -f $OUT/h.nsys-rep
    head -12 $OUT/st_cuda_api_sum.csv 2>/dev/null
fi
AB_ITERS=300 bench/gpu/engine_ab.sh $OUT/ab.txt /tmp/m b1_128,256 3 A=$C/bin0 H=$C/binH P=$C/binP \
  | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//'
m=minilm
EMBER_TUNE_CACHE=/tmp/tc0 $C/bin0/bench_engine_cuda profile /tmp/m/$m cuda:0 ragged 20 spin=5000 | tail -1
EMBER_TUNE_CACHE=/tmp/tc0 timeout 200 ncu --csv --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
    $C/bin0/bench_engine_cuda profile /tmp/m/$m cuda:0,graphs=off ragged 1 > $OUT/ncu_${m}_ragged.csv 2> $OUT/ncu_${m}_ragged.err
python3 bench/gpu/ncu_summary.py $OUT/ncu_${m}_ragged.csv 2 $OUT/ncu_${m}_ragged.json | tail -25
