"""Precision study (session 14): the LayerNorm folded into the GEMMs around it (y = r (x W'^T - mu c)
+ d + b, W' = W diag(gamma), c = W gamma, d = W beta; the residual and the pooling take LN(x) on
the fly from the stored pre-LN x) against today's binary16 pipeline, both simulated in numpy
(every value the engine stores rounded to binary16, P rounded before P V), on the real
all-MiniLM-L6-v2 against the fixture's sentence-transformers embeddings (kind 0, normalised).
Usage, from anywhere: python3 fold_study.py [N_TEXTS]  (needs models/all-MiniLM-L6-v2, numpy)."""
import json, os, struct, sys
import numpy as np
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))
from embedding_fixture import read_fixture

def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); base = 8 + n; t = {}
    for k, v in h.items():
        if k == "__metadata__": continue
        s, e = v["data_offsets"]; dt = {"F32": np.float32, "F16": np.float16, "I64": np.int64}[v["dtype"]]
        t[k] = np.frombuffer(b[base + s:base + e], dtype=dt).reshape(v["shape"]).astype(np.float64)
    return t

W = load(os.path.join(REPO, "models/all-MiniLM-L6-v2/model.safetensors"))
P = "" if "embeddings.word_embeddings.weight" in W else "bert."
cfg = json.load(open(os.path.join(REPO, "models/all-MiniLM-L6-v2/config.json")))
L, H, NH = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"]; HD = H // NH
eps = cfg.get("layer_norm_eps", 1e-12)
f16 = lambda a: a.astype(np.float16).astype(np.float64)
def erf_gelu(z):
    from math import erf
    return 0.5 * z * (1 + np.vectorize(erf)(z / np.sqrt(2)))
def ln(x, g, b):
    mu = x.mean(-1, keepdims=True); var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b, mu, 1 / np.sqrt(var + eps)
def attn(qkv, rnd):
    T = qkv.shape[0]; q, k, v = qkv[:, :H], qkv[:, H:2 * H], qkv[:, 2 * H:]; out = np.zeros((T, H))
    for h in range(NH):
        s = q[:, h*HD:(h+1)*HD] @ k[:, h*HD:(h+1)*HD].T / np.sqrt(HD)
        p = np.exp(s - s.max(-1, keepdims=True)); p = rnd(p)   # P rounded as the kernel does
        out[:, h*HD:(h+1)*HD] = (p @ v[:, h*HD:(h+1)*HD]) / p.sum(-1, keepdims=True)
    return out
def lw(l, n): return W[f"{P}encoder.layer.{l}.{n}"]
stats = {"max_abs_preln": 0.0, "max_mu_over_sigma": 0.0}
def forward(ids, mode):
    T = len(ids); ident = lambda a: a
    rnd = ident if mode == "fp64" else f16
    wr = ident if mode == "fp64" else f16
    e = W[P + "embeddings.word_embeddings.weight"][ids] + W[P + "embeddings.position_embeddings.weight"][:T] \
        + W[P + "embeddings.token_type_embeddings.weight"][0]
    h, _, _ = ln(e, W[P + "embeddings.LayerNorm.weight"], W[P + "embeddings.LayerNorm.bias"])
    h = rnd(h)
    # fold state: x (pre-LN, stored), (mu, r) of it, and the LN params that normalise it
    fx = None
    for l in range(L):
        Wqkv = np.concatenate([lw(l, f"attention.self.{n}.weight") for n in ("query", "key", "value")])
        bqkv = np.concatenate([lw(l, f"attention.self.{n}.bias") for n in ("query", "key", "value")])
        Wo, bo = lw(l, "attention.output.dense.weight"), lw(l, "attention.output.dense.bias")
        g1, be1 = lw(l, "attention.output.LayerNorm.weight"), lw(l, "attention.output.LayerNorm.bias")
        W1, b1 = lw(l, "intermediate.dense.weight"), lw(l, "intermediate.dense.bias")
        W2, b2 = lw(l, "output.dense.weight"), lw(l, "output.dense.bias")
        g2, be2 = lw(l, "output.LayerNorm.weight"), lw(l, "output.LayerNorm.bias")
        def folded_gemm(x, mu, r, g, be, Wm, bm):  # LN(x) Wm^T + bm without materialising LN(x)
            Wp = wr(Wm * g[None, :]); c = (Wm * g[None, :]).sum(1); d = Wm @ be
            return r * (x @ Wp.T - mu * c) + d + bm
        if mode == "fold" and fx is not None:
            x, mu, r, g, be = fx
            qkv = rnd(folded_gemm(x, mu, r, g, be, Wqkv, bqkv))
            resid = (x - mu) * r * g + be          # LN(x) on the fly, from the stored x
        else:
            qkv = rnd(h @ wr(Wqkv).T + bqkv); resid = h
        ctx = rnd(attn(qkv, rnd))
        pre = ctx @ wr(Wo).T + bo + resid
        if mode == "fold":
            h1, mu1, r1 = ln(pre, g1, be1)           # stats from the fp32 epilogue values
            x1 = rnd(pre)
            stats["max_abs_preln"] = max(stats["max_abs_preln"], np.abs(pre).max())
            stats["max_mu_over_sigma"] = max(stats["max_mu_over_sigma"], np.abs(mu1 * r1).max())
            u = rnd(erf_gelu(folded_gemm(x1, mu1, r1, g1, be1, W1, b1)))
            pre2 = u @ wr(W2).T + b2 + ((x1 - mu1) * r1 * g1 + be1)
            h2, mu2, r2 = ln(pre2, g2, be2)
            stats["max_abs_preln"] = max(stats["max_abs_preln"], np.abs(pre2).max())
            stats["max_mu_over_sigma"] = max(stats["max_mu_over_sigma"], np.abs(mu2 * r2).max())
            fx = (rnd(pre2), mu2, r2, g2, be2); h = h2   # h only for the last layer's pooling
        else:
            h1 = rnd(ln(pre, g1, be1)[0])
            u = rnd(erf_gelu(h1 @ wr(W1).T + b1))
            h = ln(u @ wr(W2).T + b2 + h1, g2, be2)[0]
            if l < L - 1: h = rnd(h)
    if mode == "fold":  # pooling reads LN(x) of the last layer, on the fly from the stored x
        x, mu, r, g, be = fx; h = (x - mu) * r * g + be
    m = h.mean(0); return m / np.linalg.norm(m)

recs = [r for r in read_fixture(os.path.join(REPO, "tests/fixtures/minilm_st_reference.bin")) if r["kind"] == 0]
n = int(sys.argv[1]) if len(sys.argv) > 1 else len(recs)
res = {k: [] for k in ("fp64", "cur", "fold")}
for r in recs[:n]:
    ref = np.array(r["embedding"]); ref /= np.linalg.norm(ref)
    for k in res:
        res[k].append(float(forward(np.array(r["ids"]), k) @ ref))
for k, v in res.items():
    v = np.array(v); print(f"{k:5s} n={len(v)} worst {v.min():.7f} mean {v.mean():.7f}")
print(stats)
