"""Provable |activation| bounds of a post-LN BERT (session 11 feasibility check for an engine
whose weights and activations are all IEEE binary16, max 65504). LayerNorm outputs: |y_i| <=
sqrt(H - 1) |gamma_i| + |beta_i|; a GEMM after a LayerNorm (QKV, FFN-up): Cauchy-Schwarz with
||n||_2 <= sqrt(H); attention output: a convex combination of V rows; a GEMM after an
element-wise bound (output projection, FFN-down): the row's L1 norm. Reads model.safetensors
with a minimal parser. Usage: f16_bounds.py MODEL_DIR"""
import json, struct, sys, math
import numpy as np

def load(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        hdr = json.loads(f.read(n)); base = 8 + n
        data = f.read()
    out = {}
    for k, v in hdr.items():
        if k == '__metadata__': continue
        a, b = v['data_offsets']
        dt = {'F32': np.float32, 'F16': np.float16, 'I64': np.int64}[v['dtype']]
        out[k.replace('bert.', '')] = np.frombuffer(data[a:b], dtype=dt).reshape(v['shape']).astype(np.float64)
    return out

W = load(sys.argv[1] + '/model.safetensors')
cfg = json.load(open(sys.argv[1] + '/config.json'))
H, L = cfg['hidden_size'], cfg['num_hidden_layers']
def ln_stats(g, b):
    # LN output y = g*n + b with sum(n^2) <= H: |y_i| <= sqrt(H-1)|g_i| + |b_i|
    return math.sqrt(H - 1) * np.abs(g).max() + np.abs(b).max()
def lin_after_ln(Wm, bias, g, b):
    # y_j = sum_i W_ji (g_i n_i + b_i) + bias_j, ||n||_2 <= sqrt(H)  (Cauchy-Schwarz)
    return (np.sqrt(((Wm * g[None, :]) ** 2).sum(1)) * math.sqrt(H) + np.abs(Wm @ b + bias)).max()
def lin_elem(Wm, bias, xb):
    # |x_i| <= xb elementwise: |y_j| <= xb ||W_j||_1 + |bias_j|
    return (xb * np.abs(Wm).sum(1) + np.abs(bias)).max()
g0, b0 = W['embeddings.LayerNorm.weight'], W['embeddings.LayerNorm.bias']
rows = []
g, b = g0, b0
worst = 0.0
for l in range(L):
    p = 'encoder.layer.%d.' % l
    Wq = np.concatenate([W[p + 'attention.self.%s.weight' % t] for t in ('query', 'key', 'value')])
    bq = np.concatenate([W[p + 'attention.self.%s.bias' % t] for t in ('query', 'key', 'value')])
    qkv = lin_after_ln(Wq, bq, g, b)
    v_only = lin_after_ln(W[p + 'attention.self.value.weight'], W[p + 'attention.self.value.bias'], g, b)
    ctx = v_only  # convex combination of V rows
    out = lin_elem(W[p + 'attention.output.dense.weight'], W[p + 'attention.output.dense.bias'], ctx)
    g1, b1 = W[p + 'attention.output.LayerNorm.weight'], W[p + 'attention.output.LayerNorm.bias']
    ln1 = ln_stats(g1, b1)
    up = lin_after_ln(W[p + 'intermediate.dense.weight'], W[p + 'intermediate.dense.bias'], g1, b1)
    gelu = max(up, 0.17)
    down = lin_elem(W[p + 'output.dense.weight'], W[p + 'output.dense.bias'], gelu)
    g, b = W[p + 'output.LayerNorm.weight'], W[p + 'output.LayerNorm.bias']
    ln2 = ln_stats(g, b)
    # the residual add before LN: out + residual (previous LN bound)
    rows.append((l, qkv, out, ln1, up, down, ln2))
    worst = max(worst, qkv, out, ln1, up, down, ln2)
print('layer   qkv      out-proj   ln1      ffn-up    ffn-down   ln2   (bounds on |value|)')
for r in rows:
    print('%3d ' % r[0] + ' '.join('%9.1f' % x for x in r[1:]))
print('embedding LN bound %.1f; worst %.1f (binary16 max 65504)' % (ln_stats(g0, b0), worst))
