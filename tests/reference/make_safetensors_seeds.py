#!/usr/bin/env python3
"""tests/reference/make_safetensors_seeds.py — writes the seed corpora of the model-file fuzz
targets: tests/fuzz/seeds/fuzz_safetensors/ (small valid and invalid .safetensors files, a few
hundred bytes each) and tests/fuzz/seeds/fuzz_model_config/ (the real config.json's text and
variants). The libFuzzer targets start from these; the replay ctests run them in every build.

Files are built by hand with struct and json (no safetensors/torch needed): an 8-byte
little-endian header length, the JSON header padded with spaces to a multiple of 8 (as the
reference writer does), then the data. Deterministic: same script, same bytes.

Run from the repository root:  python3 tests/reference/make_safetensors_seeds.py
"""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ST_DIR = os.path.join(ROOT, "tests", "fuzz", "seeds", "fuzz_safetensors")
CFG_DIR = os.path.join(ROOT, "tests", "fuzz", "seeds", "fuzz_model_config")

SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
         "U8": 1, "BOOL": 1}


def pack(header_text, data=b"", pad=True):
    h = header_text.encode("utf-8")
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def build(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes); laid out back to back."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return pack(json.dumps(header, separators=(",", ":")), data)


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def f16(*bits):
    return struct.pack("<%dH" % len(bits), *bits)


def write(d, name, blob):
    with open(os.path.join(d, name), "wb") as f:
        f.write(blob)


def safetensors_seeds():
    os.makedirs(ST_DIR, exist_ok=True)
    s = {}
    # Valid.
    s["valid_mixed.safetensors"] = build([
        ("half", "F16", [2, 3], f16(0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x7e00)),
        ("brain", "BF16", [4], f16(0x3f80, 0xc040, 0x0001, 0xff80)),
        ("single", "F32", [1, 2], f32(1.5, -0.1)),
        ("ids", "I64", [2], struct.pack("<2q", 0, 1)),
        ("flag", "BOOL", [3], b"\x00\x01\x00"),
        ("empty", "F32", [0, 4], b""),
        ("scalar", "F32", [], f32(7.25)),
    ], metadata={"format": "pt"})
    s["valid_empty.safetensors"] = pack("{}")
    s["valid_metadata_only.safetensors"] = pack('{"__metadata__":{"format":"pt","x":"y"}}')
    # A tiny BERT with the real file's tensor names (hidden 4, 1 layer, vocab 8, positions 4).
    H, I, V, P = 4, 8, 8, 4
    bert = [("embeddings.position_ids", "I64", [1, P], struct.pack("<4q", 0, 1, 2, 3)),
            ("embeddings.word_embeddings.weight", "F32", [V, H], f32(*[0.01 * i for i in range(V * H)])),
            ("embeddings.position_embeddings.weight", "F32", [P, H], f32(*[0.02] * (P * H))),
            ("embeddings.token_type_embeddings.weight", "F32", [2, H], f32(*[0.03] * (2 * H))),
            ("embeddings.LayerNorm.weight", "F32", [H], f32(*[1.0] * H)),
            ("embeddings.LayerNorm.bias", "F32", [H], f32(*[0.0] * H))]
    for w in ("query", "key", "value"):
        bert += [("encoder.layer.0.attention.self.%s.weight" % w, "F16", [H, H], f16(*[0x3c00] * (H * H))),
                 ("encoder.layer.0.attention.self.%s.bias" % w, "BF16", [H], f16(*[0x3f80] * H))]
    bert += [("encoder.layer.0.intermediate.dense.weight", "F32", [I, H], f32(*[0.5] * (I * H)))]
    s["tiny_bert.safetensors"] = build(bert, metadata={"format": "pt"})
    # A gap of one byte between tensors and no header padding: valid for us (the reference
    # library insists on contiguous data, but a gap cannot cause an out-of-bounds read).
    s["valid_gap_unpadded.safetensors"] = pack(
        '{"a":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},'
        '"b":{"dtype":"F32","shape":[1],"data_offsets":[7,11]}}', b"\x00" * 11, pad=False)
    # Invalid (one problem each).
    one = '{"w":{"dtype":"%s","shape":%s,"data_offsets":%s}}'
    s["bad_short.safetensors"] = b"\x10\x00\x00\x00\x00\x00\x00"
    s["bad_len_past_end.safetensors"] = struct.pack("<Q", 4096) + b"{}"
    s["bad_len_2e63.safetensors"] = struct.pack("<Q", 1 << 63) + b"{}      "
    s["bad_not_json.safetensors"] = pack("not json at all")
    s["bad_array.safetensors"] = pack("[1,2,3]")
    s["bad_unknown_dtype.safetensors"] = pack(one % ("U32", "[1]", "[0,4]"), b"\x00" * 4)
    s["bad_negative_dim.safetensors"] = pack(one % ("F32", "[-1]", "[0,4]"), b"\x00" * 4)
    s["bad_overflow.safetensors"] = pack(
        one % ("F32", "[4294967296,4294967296,4294967296]", "[0,4]"), b"\x00" * 4)
    s["bad_9_dims.safetensors"] = pack(one % ("F32", "[1,1,1,1,1,1,1,1,1]", "[0,4]"), b"\x00" * 4)
    s["bad_past_end.safetensors"] = pack(one % ("F32", "[2]", "[0,8]"), b"\x00" * 4)
    s["bad_begin_gt_end.safetensors"] = pack(one % ("F32", "[0]", "[4,0]"), b"\x00" * 4)
    s["bad_size.safetensors"] = pack(one % ("F32", "[3]", "[0,8]"), b"\x00" * 8)
    s["bad_overlap.safetensors"] = pack(
        '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
        '"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', b"\x00" * 12)
    s["bad_duplicate.safetensors"] = pack(
        '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        '"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', b"\x00" * 8)
    s["bad_nul_name.safetensors"] = pack(
        '{"a\\u0000b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', b"\x00" * 4)
    s["bad_metadata.safetensors"] = pack('{"__metadata__":{"format":1}}')
    for name, blob in sorted(s.items()):
        write(ST_DIR, name, blob)
    return len(s)


def config_seeds():
    os.makedirs(CFG_DIR, exist_ok=True)
    real_path = os.path.join(ROOT, "models", "all-MiniLM-L6-v2", "config.json")
    base = {
        "_name_or_path": "nreimers/MiniLM-L6-H384-uncased", "architectures": ["BertModel"],
        "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": False,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 384,
        "initializer_range": 0.02, "intermediate_size": 1536, "layer_norm_eps": 1e-12,
        "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12,
        "num_hidden_layers": 6, "pad_token_id": 0, "position_embedding_type": "absolute",
        "transformers_version": "4.8.2", "type_vocab_size": 2, "use_cache": True,
        "vocab_size": 30522}
    c = {}
    if os.path.exists(real_path):  # the real file's exact bytes
        with open(real_path, "rb") as f:
            c["real_config.json"] = f.read()
    else:
        c["real_config.json"] = json.dumps(base, indent=2).encode()

    def variant(**kw):
        d = dict(base)
        for k, v in kw.items():
            if v is None:
                d.pop(k, None)
            else:
                d[k] = v
        return json.dumps(d, indent=1).encode()
    c["minimal.json"] = json.dumps({"model_type": "bert", "vocab_size": 1000, "hidden_size": 64,
                                    "num_hidden_layers": 2, "num_attention_heads": 4,
                                    "intermediate_size": 256}).encode()
    c["arch_only.json"] = variant(model_type=None, architectures=["BertForMaskedLM"])
    c["gelu_new.json"] = variant(hidden_act="gelu_new")
    c["relu_pad_null.json"] = variant(hidden_act="relu", pad_token_id=None)
    c["gpt2.json"] = json.dumps({"model_type": "gpt2", "vocab_size": 50257, "n_embd": 768,
                                 "n_layer": 12, "n_head": 12}).encode()
    c["zero_heads.json"] = variant(num_attention_heads=0)
    c["not_divisible.json"] = variant(num_attention_heads=7)
    c["wrong_types.json"] = variant(hidden_size="384", layer_norm_eps="1e-12")
    c["relative_pos.json"] = variant(position_embedding_type="relative_key")
    c["huge.json"] = variant(vocab_size=2 ** 40, max_position_embeddings=10 ** 9)
    c["malformed.json"] = b'{"model_type": "bert", "hidden_size": 384,'
    for name, blob in sorted(c.items()):
        write(CFG_DIR, name, blob)
    return len(c)


if __name__ == "__main__":
    n1 = safetensors_seeds()
    n2 = config_seeds()
    print("wrote %d safetensors seeds to %s and %d config seeds to %s"
          % (n1, os.path.relpath(ST_DIR, ROOT), n2, os.path.relpath(CFG_DIR, ROOT)))
