#!/usr/bin/env python3
"""bench/gpu/pack_bf16_model.py — a 16-bit copy of a safetensors model, for carrying real weights to
the GPU host within its transfer limit (all-MiniLM-L6-v2: 90.9 MB in fp32, 45 MB in 16 bits).

Every F32 tensor becomes BF16 (default) or F16 (third argument "f16"), rounded to nearest even:
exactly the rounding the CUDA engine applies when it loads fp32 weights in that type
(worker/model_bert_cuda.c: dtype=bf16, or binary16, its default where the model's range allows),
so the engine running in that type computes the same bits from the copy as from the original. (A reference that runs fp32 math on the copy sees the
rounded weights; compare the engine against references computed from the original instead, as
bench/gpu/check_real_model.py does with tests/fixtures/minilm_st_reference.bin.) Other files of
the model folder (config.json, tokenizer.json, ...) are copied as they are.
Usage: pack_bf16_model.py SRC_DIR DST_DIR [bf16|f16]   (numpy only)"""
import json
import os
import shutil
import struct
import sys

import numpy as np


def to_bf16(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even (finite inputs)
    return r.astype(np.uint16)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    f16 = len(sys.argv) > 3 and sys.argv[3] == "f16"
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        p = os.path.join(src, f)
        if os.path.isdir(p):  # e.g. 1_Pooling/config.json, which says how to pool
            shutil.copytree(p, os.path.join(dst, f), dirs_exist_ok=True)
        elif f != "model.safetensors":
            shutil.copy(p, os.path.join(dst, f))
    with open(os.path.join(src, "model.safetensors"), "rb") as fin:
        n = struct.unpack("<Q", fin.read(8))[0]
        header = json.loads(fin.read(n))
        base = 8 + n
        out_header, blobs, off = {}, [], 0
        for name, t in header.items():
            if name == "__metadata__":
                out_header[name] = t
                continue
            b0, b1 = t["data_offsets"]
            fin.seek(base + b0)
            raw = fin.read(b1 - b0)
            if t["dtype"] == "F32" and f16:  # numpy rounds to nearest even
                raw = np.frombuffer(raw, dtype="<f4").astype("<f2").tobytes()
                dtype = "F16"
            elif t["dtype"] == "F32":
                raw = to_bf16(np.frombuffer(raw, dtype="<f4")).astype("<u2").tobytes()
                dtype = "BF16"
            else:
                dtype = t["dtype"]
            out_header[name] = {"dtype": dtype, "shape": t["shape"],
                                "data_offsets": [off, off + len(raw)]}
            blobs.append(raw)
            off += len(raw)
    hj = json.dumps(out_header, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as fout:
        fout.write(struct.pack("<Q", len(hj)))
        fout.write(hj)
        for b in blobs:
            fout.write(b)
    print(f"{dst}/model.safetensors: {8 + len(hj) + off} bytes")


if __name__ == "__main__":
    main()
