#!/usr/bin/env python3
"""bench/gpu/fp8_study.py — would FP8 GEMMs keep the 0.9999 cosine bar? A precision study on the
CPU, no GPU needed: the real all-MiniLM-L6-v2 through transformers in fp32, with the inputs and
weights of chosen Linear layers rounded to a narrower type first (fp32 arithmetic after that, as
a tensor core accumulates): FP8 E4M3 with a scale per weight row (output channel) and per token
(row of the activations), or bf16 / binary16 as the control the engine's types give. Each
embedding (masked mean, L2-normalised, as sentence-transformers pools this model) is compared
with the unrounded model's by cosine. Prints a table; writes OUT when --out is given.
Usage: fp8_study.py --model models/all-MiniLM-L6-v2 --texts TEXTS [--n 64] [--out OUT.json]"""
import argparse
import json
import types

import torch
from transformers import AutoModel, AutoTokenizer

E4M3_MAX = 448.0
# which Linear layers (substrings of their module names) each case rounds
GROUPS = {
    "QKV": ["attention.self.query", "attention.self.key", "attention.self.value"],
    "out-proj": ["attention.output.dense"],
    "FFN-up": ["intermediate.dense"],
    "FFN-down": ["layer.0.output.dense", "layer.1.output.dense", "layer.2.output.dense",
                 "layer.3.output.dense", "layer.4.output.dense", "layer.5.output.dense"],
}
GROUPS["all"] = sum(GROUPS.values(), [])


def round_e4m3(x, dim):
    """x rounded to E4M3 with one scale per slice along dim (absmax -> 448), back in fp32"""
    s = x.abs().amax(dim=dim, keepdim=True).clamp(min=1e-12) / E4M3_MAX
    return (x / s).to(torch.float8_e4m3fn).float() * s


def rounder(kind):
    if kind == "e4m3":
        return round_e4m3
    t = {"bf16": torch.bfloat16, "f16": torch.float16}[kind]
    return lambda x, dim: x.to(t).float()


def embed(model, enc):
    with torch.no_grad():
        h = model(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float()
    return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)


def patch(model, names, rnd):
    """the named Linears compute with rounded weights (per row) and inputs (per token)"""
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and any(n in name for n in names):
            wq = rnd(mod.weight.data, 1)

            def forward(self, x, wq=wq):
                return torch.nn.functional.linear(rnd(x, -1), wq, self.bias)

            mod.forward = types.MethodType(forward, mod)


def unpatch(model):
    for mod in model.modules():
        mod.__dict__.pop("forward", None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--out")
    a = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModel.from_pretrained(a.model).float().eval()
    texts = [t.strip() for t in open(a.texts, encoding="utf-8") if t.strip()][: a.n]
    enc = tok(texts, padding=True, truncation=True, max_length=512, return_tensors="pt")
    ref = embed(model, enc)
    rows = []
    print(f"{len(texts)} texts; cosine to the fp32 model (bar 0.9999)")
    print(f"{'type':6} {'layers':9} {'worst':>9} {'median':>9}")
    for kind in ("bf16", "f16", "e4m3"):
        for group in (["all"] if kind != "e4m3" else list(GROUPS)):
            unpatch(model)
            patch(model, GROUPS[group], rounder(kind))
            c = (embed(model, enc) * ref).sum(-1)
            rows.append({"type": kind, "layers": group, "worst": c.min().item(),
                         "median": c.median().item()})
            print(f"{kind:6} {group:9} {rows[-1]['worst']:9.6f} {rows[-1]['median']:9.6f}")
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump({"model": a.model, "texts": len(texts), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
