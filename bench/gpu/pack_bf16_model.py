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

--planes: DST_DIR/model.safetensors is then written as model.safetensors.planes.xz, its tensor
bytes as two planes (bytes 0, 2, 4, ... then 1, 3, 5, ...) before xz: the binary16 copy of
all-MiniLM-L6-v2 takes 38.7 MB so instead of 41, which beside the tree (16 MB), lib/ and
bench_engine_cuda fits the device tool's 64 MiB. --unplanes FILE.planes.xz OUT puts such a file
back.
Usage: pack_bf16_model.py SRC_DIR DST_DIR [bf16|f16] [--planes]   (numpy only)
       pack_bf16_model.py --unplanes FILE.planes.xz OUT.safetensors"""
import json
import lzma
import os
import shutil
import struct
import sys

import numpy as np


def to_bf16(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even (finite inputs)
    return r.astype(np.uint16)


def planes(data, forward):
    """The safetensors bytes with the tensor data as two byte planes (forward) or back."""
    n = 8 + struct.unpack("<Q", data[:8])[0]
    body = np.frombuffer(data, dtype=np.uint8, offset=n)
    if body.size % 2:
        sys.exit("odd tensor data: not 16-bit")
    out = np.empty_like(body)
    half = body.size // 2
    if forward:
        out[:half], out[half:] = body[0::2], body[1::2]
    else:
        out[0::2], out[1::2] = body[:half], body[half:]
    return data[:n] + out.tobytes()


def main():
    if sys.argv[1] == "--unplanes":
        with lzma.open(sys.argv[2]) as fin, open(sys.argv[3], "wb") as fout:
            fout.write(planes(fin.read(), False))
        return
    args = [a for a in sys.argv[1:] if a != "--planes"]
    src, dst = args[0], args[1]
    f16 = len(args) > 2 and args[2] == "f16"
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
    if "--planes" in sys.argv:
        path = os.path.join(dst, "model.safetensors")
        with open(path, "rb") as fin, lzma.open(path + ".planes.xz", "wb", preset=6) as fout:
            fout.write(planes(fin.read(), True))
        os.remove(path)
        print(f"{path}.planes.xz: {os.path.getsize(path + '.planes.xz')} bytes")


if __name__ == "__main__":
    main()
