#!/bin/bash
# Session 30, second run: H (gelu-h2, the binary16 GELU) after the first run's checks.
# 1. the real all-MiniLM-L6-v2 as a binary16 copy (what the binary16 engine loads; the first
#    run's bf16 copy capped it at ~0.99994) against sentence-transformers' fixture; 2. where H's
#    time goes (profile_engine.sh: graphs, then one eager pass of each case under Nsight Compute).
# The binary16 copy (41 MB with xz) and the tree (16 MB) left no room for a second build within
# the tool's 64 MiB: its tensor bytes travel as two byte planes (high bytes, then low; 38.7 MB
# with xz), put back below.
# Pack: tar cf - -C .gpucarry lib real16 binH/bench_engine_cuda
#         | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s30b.tar.xz
#   (.gpucarry/real16: python3 bench/gpu/pack_bf16_model.py models/all-MiniLM-L6-v2 .gpucarry/real16 f16,
#    its model.safetensors as model.safetensors.planes.xz: the header, then the bytes 0, 2, 4, ...
#    and 1, 3, 5, ... of the tensor data)
# Device: carry [".gpupack/s30b.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s30b.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session30/s30b.sh
. bench/gpu/variant_steps.sh
variant_setup s30b
real=/tmp/real16
mkdir -p $real && cp -r "$C/real16/." $real/ && rm -f $real/model.safetensors.planes.xz &&
    python3 - "$C/real16/model.safetensors.planes.xz" $real/model.safetensors <<'PY'
import lzma, struct, sys
import numpy as np
d = lzma.decompress(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", d[:8])[0]
p = np.frombuffer(d[8 + n:], dtype=np.uint8)
b = np.empty_like(p)
b[0::2], b[1::2] = p[:p.size // 2], p[p.size // 2:]
open(sys.argv[2], "wb").write(d[:8 + n] + b.tobytes())
PY
v=H
python3 bench/gpu/check_real_model.py --bin "$C/bin$v/bench_engine_cuda" --model $real \
    --fixture tests/fixtures/minilm_st_reference.bin --out "$R/real_$v" --devices cuda:0 \
    > "$R/real_$v.log" 2>&1
echo "== real $v rc $?"
sed -n '/== real/,$p' "$R/real_$v.log" | head -12
rm -f "$R/real_$v"/*.bin
bash bench/gpu/profile_engine.sh "$C/binH/bench_engine_cuda" /tmp/m "$R/profile" > "$R/profile.log" 2>&1
echo "== profile rc $?"
grep -A16 "ragged: kernels" "$R/profile/profile.txt"
rm -f "$R"/profile/*.csv
variant_finish s30b
