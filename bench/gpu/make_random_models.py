#!/usr/bin/env python3
"""bench/gpu/make_random_models.py — writes seeded random-weight BERT models of real shapes for
the GPU check (ops/gpu-check.sh), in the layout ember loads (Hugging Face + sentence-transformers):

  OUT/minilm     all-MiniLM-L6-v2 shape: hidden 384, 6 layers, 12 heads, intermediate 1536,
                 mean pooling + Normalize (as the real model)
  OUT/bert-base  BERT-base shape: hidden 768, 12 layers, 12 heads, intermediate 3072, mean pooling
  OUT/tiny       hidden 64, 1 layer, 2 heads, intermediate 128 (for broker saturation benches)
  OUT/minilm-cls, OUT/bert-base-cls
                 the same weights (links) with CLS pooling, as the bge models pool: the
                 engine's last layer then runs on the pooled rows alone (prune=auto)

Each: config.json + model.safetensors (BertModel(BertConfig), torch.manual_seed(seed),
save_pretrained(safe_serialization=True), fp32), modules.json, 1_Pooling/config.json,
sentence_bert_config.json (max_seq_length 512), and tokenizer.json copied from
models/all-MiniLM-L6-v2 when the repository has it (not needed: the checks feed token ids).
Usage: make_random_models.py OUT [--seed 1234]. Needs torch + transformers; CPU is enough."""
import argparse
import json
import os
import shutil

import torch
from transformers import BertConfig, BertModel

SHAPES = {
    "minilm": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                   intermediate_size=1536, normalize=True),
    "bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                      intermediate_size=3072, normalize=False),
    # a real (if useless) model whose compute is a few microseconds per short text: CPU workers
    # serving it are fast enough that the broker, not the engine, limits a pool
    # (bench/gpu/pool_saturation.sh)
    "tiny": dict(hidden_size=64, num_hidden_layers=1, num_attention_heads=2,
                 intermediate_size=128, normalize=True),
}


def write_modules(d, hidden, normalize, mode):
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
        os.makedirs(os.path.join(d, "2_Normalize"), exist_ok=True)
    with open(os.path.join(d, "modules.json"), "w") as f:
        json.dump(modules, f, indent=2)
    with open(os.path.join(d, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": hidden,
                   "pooling_mode_cls_token": mode == "cls",
                   "pooling_mode_mean_tokens": mode == "mean", "pooling_mode_max_tokens": False,
                   "pooling_mode_mean_sqrt_len_tokens": False}, f, indent=2)


def write(out_dir, name, shape, seed, tokenizer):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    shape = dict(shape)
    normalize = shape.pop("normalize")
    cfg = BertConfig(vocab_size=30522, max_position_embeddings=512, type_vocab_size=2,
                     hidden_act="gelu", layer_norm_eps=1e-12, **shape)
    torch.manual_seed(seed)
    model = BertModel(cfg, add_pooling_layer=False).eval()
    model.save_pretrained(d, safe_serialization=True)
    write_modules(d, cfg.hidden_size, normalize, "mean")
    with open(os.path.join(d, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 512, "do_lower_case": False}, f, indent=2)
    if tokenizer and os.path.exists(tokenizer):
        shutil.copy(tokenizer, os.path.join(d, "tokenizer.json"))
    print(f"wrote {d}: hidden {cfg.hidden_size}, {cfg.num_hidden_layers} layers, seed {seed}")
    if name in ("minilm", "bert-base"):  # the CLS twin: the same files, its own pooling
        c = os.path.join(out_dir, name + "-cls")
        os.makedirs(c, exist_ok=True)
        for f in os.listdir(d):
            if f not in ("modules.json", "1_Pooling", "2_Normalize") and \
                    not os.path.exists(os.path.join(c, f)):
                os.symlink(os.path.abspath(os.path.join(d, f)), os.path.join(c, f))
        write_modules(c, cfg.hidden_size, normalize, "cls")
        print(f"wrote {c}: the same weights, CLS pooling")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tok = os.path.join(root, "models", "all-MiniLM-L6-v2", "tokenizer.json")
    for i, (name, shape) in enumerate(SHAPES.items()):
        write(a.out, name, shape, a.seed + i, tok)


if __name__ == "__main__":
    main()
