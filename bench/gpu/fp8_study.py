#!/usr/bin/env python3
"""bench/gpu/fp8_study.py — would FP8 GEMMs keep the 0.9999 cosine bar? A precision study on the
CPU, no GPU needed: the real all-MiniLM-L6-v2 through transformers in fp32, with the inputs and
weights of chosen Linear layers rounded to a narrower type first (fp32 arithmetic after that, as
a tensor core accumulates): FP8 E4M3 with a scale per weight row (output channel) and per token
(row of the activations), or with a scale per 32 elements of K on both (e4m3b32), or bf16 /
binary16 as the control the engine's types give; then the attention in FP8 as FlashAttention-3
computes it (Q and K a scale per token and head, P one fixed scale, V a scale per channel),
through transformers' eager attention. Each
embedding (masked mean, L2-normalised, as sentence-transformers pools this model) is compared
with the unrounded model's by cosine. Prints a table; writes OUT when --out is given.
Usage: fp8_study.py --model models/all-MiniLM-L6-v2 --texts TEXTS [--n 64] [--out OUT.json]"""
import argparse
import json
import types

import torch
import transformers.models.bert.modeling_bert as modeling_bert
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


def round_e4m3_b32(x, dim):
    """x rounded to E4M3 with one scale per 32 consecutive elements of its last dim (K)"""
    del dim
    b = x.reshape(*x.shape[:-1], x.shape[-1] // 32, 32)
    return round_e4m3(b, -1).reshape(x.shape)


def rounder(kind):
    if kind == "e4m3":
        return round_e4m3
    if kind == "e4m3b32":
        return round_e4m3_b32
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


def fp8_attention(qk, pv):
    """transformers' eager attention with Q, K (qk) and P, V (pv) rounded to E4M3"""
    def forward(module, q, k, v, mask, scaling=None, dropout=0.0, **kwargs):
        del module, dropout, kwargs
        if qk:
            q, k = round_e4m3(q, -1), round_e4m3(k, -1)
        w = torch.matmul(q, k.transpose(2, 3)) * (scaling or q.size(-1) ** -0.5)
        w = torch.softmax(w if mask is None else w + mask, dim=-1)
        if pv:
            w = (w * E4M3_MAX).to(torch.float8_e4m3fn).float() / E4M3_MAX
            v = round_e4m3(v, -2)
        return torch.matmul(w, v).transpose(1, 2).contiguous(), w
    return forward


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--out")
    a = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModel.from_pretrained(a.model, attn_implementation="eager").float().eval()
    texts = [t.strip() for t in open(a.texts, encoding="utf-8") if t.strip()][: a.n]
    enc = tok(texts, padding=True, truncation=True, max_length=512, return_tensors="pt")
    ref = embed(model, enc)
    rows = []
    print(f"{len(texts)} texts; cosine to the fp32 model (bar 0.9999)")
    print(f"{'type':8} {'layers':14} {'worst':>9} {'median':>9}")
    cases = [("bf16", "all"), ("f16", "all")] + [("e4m3", g) for g in GROUPS] + \
        [("e4m3b32", "out-proj"), ("e4m3b32", "FFN-up")] + \
        [("e4m3", "attention " + w) for w in ("QK", "PV", "QKPV")]
    eager = modeling_bert.eager_attention_forward
    for kind, group in cases:
        unpatch(model)
        if group.startswith("attention"):
            w = group.split()[1]
            modeling_bert.eager_attention_forward = fp8_attention("QK" in w, "PV" in w)
        else:
            modeling_bert.eager_attention_forward = eager
            patch(model, GROUPS[group], rounder(kind))
        c = (embed(model, enc) * ref).sum(-1)
        rows.append({"type": kind, "layers": group, "worst": c.min().item(),
                     "median": c.median().item()})
        print(f"{kind:8} {group:14} {rows[-1]['worst']:9.6f} {rows[-1]['median']:9.6f}")
    modeling_bert.eager_attention_forward = eager
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump({"model": a.model, "texts": len(texts), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
