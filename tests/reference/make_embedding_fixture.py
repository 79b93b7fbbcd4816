#!/usr/bin/env python3
"""tests/reference/make_embedding_fixture.py — writes tests/fixtures/minilm_st_reference.bin, the
independent reference the CPU engine test (tests/test_engine_cpu.c) compares against.

It builds a deterministic set of texts (seeded; no network, no data sets): short queries, long
passages, multilingual text, emoji, punctuation, and at least 20 texts longer than 256 tokens (so
they are truncated), and runs sentence-transformers on them on the CPU in fp32:

  kind 0  "full":       SentenceTransformer(models/all-MiniLM-L6-v2).encode(text) with default
                        settings: Transformer -> mean Pooling -> Normalize, 384 dims.
  kind 1  "matryoshka": encode(text, truncate_dim=128, normalize_embeddings=True). ST truncates
                        the (already normalised) sentence embedding to the first 128 dims and,
                        because normalize_embeddings=True, L2-normalises again after truncating.
                        (With truncate_dim alone ST does NOT re-normalise.) This equals the engine's
                        semantic "truncate, then re-normalise when normalising".
  kind 2  "raw":        the same model with its Normalize module removed (Transformer -> Pooling
                        only), i.e. the raw mean-pooled vector, 384 dims.
  kind 3  "cls":        the same Transformer with CLS pooling and Normalize (as the bge models
                        pool), 384 dims: the engine's last layer then computes only that row.
  kind 4  "last":       the same Transformer with last-token pooling, no Normalize (raw), 384
                        dims: the row-pruned last layer's other case.

Token ids are those ST's own tokenizer produced (model.tokenize, truncation to max_seq_length
256, special tokens included); token type ids are all 0 for single texts.

File format (all little-endian):
  header: char magic[8] = "EMBFIX01"; u32 n_records; u32 max_seq_length; u32 hidden; u32 reserved
  record: u32 kind; u32 dim; u32 n_text_bytes; u32 n_ids;
          u8 text[n_text_bytes] (UTF-8, no NUL); i32 ids[n_ids]; f32 embedding[dim]
Records of kind 0 come first (one per text, in text order), then kinds 1 to 4 (subsets; kinds 3
and 4 were added later, after the older records, whose bytes did not change).

Run from the repository root:  python3 tests/reference/make_embedding_fixture.py
(sentence-transformers 6.2, torch 2.15 CPU; see ops/requirements-bench.txt). Deterministic: the
same versions give the same bytes.
"""
import os
import random
import struct
import sys

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "models", "all-MiniLM-L6-v2")
OUT = os.path.join(ROOT, "tests", "fixtures", "minilm_st_reference.bin")

WORDS = (
    "the of and to in is was for on that with as by at from his her an which are this be had "
    "not were they have one all their has been more when there who can would some into its "
    "only other also time first new two may after over years these such most used made many "
    "system data model network server request latency throughput memory kernel thread batch "
    "token sequence embedding vector search query document index cluster graph river mountain "
    "city history music science language education health market energy climate ocean forest "
    "library protocol algorithm compiler database engine scheduler broker worker gateway cache "
    "university government company population research development century region island "
    "village station bridge festival museum painting novel theory experiment measurement"
).split()

HANDWRITTEN = [
    "hello",
    "Hello, world!",
    "What is the capital of France?",
    "how do i reset my password",
    "Best pizza near me?!",
    "A man is playing a guitar.",
    "The quick brown fox jumps over the lazy dog.",
    "I love this!!! 😀😀😀 #happy",
    "Emoji soup: 🚀🔥💯🎉👍🏽👨‍👩‍👧‍👦🇫🇷",
    "Ünïcödé àccénts: café, naïve, coöperate, façade, jalapeño",
    "Straße, Größe, Fußgängerübergang",
    "Где находится ближайшая станция метро?",
    "机器学习是人工智能的一个分支。",
    "東京は日本の首都です。",
    "한국어 문장도 처리할 수 있나요?",
    "مرحبا بالعالم، كيف حالك اليوم؟",
    "שלום עולם",
    "नमस्ते दुनिया, आप कैसे हैं?",
    "Ελληνικά: Καλημέρα κόσμε",
    "ไทย: สวัสดีครับ",
    "Tiếng Việt: Xin chào thế giới",
    "punctuation!!! ??? ... --- ;;; ::: ((( ))) [[[ ]]] {{{ }}}",
    "e-mail: john.doe@example.com, url: https://example.org/a/b?c=d&e=f#g",
    "C++ vs. C#: which is faster? (benchmarks, 2024)",
    "$1,234.56 + 7.89% = ??? @#%^&*",
    "    leading and trailing spaces    ",
    "tabs\tand\tnew\nlines\r\nmixed",
    "UPPERCASE TEXT SHOULD BE LOWERCASED BY THE TOKENIZER",
    "x",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
    "1234567890 9876543210 3.14159 2.71828",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "don't won't can't shouldn't it's we're they've",
    "¿Dónde está la biblioteca?",
    "Le cœur a ses raisons que la raison ne connaît point.",
    "Zażółć gęślą jaźń",
    "Ça va? Très bien, merci!",
    "def f(x): return x ** 2  # python code",
    "SELECT * FROM users WHERE id = 42;",
    "<html><body><p>Hello</p></body></html>",
]

MULTI_SNIPPETS = [
    "机器学习", "自然语言处理", "日本語のテキスト", "русский язык", "données", "ελληνικά",
    "العربية", "हिन्दी", "한국어", "😀", "🚀", "café", "naïve", "Ωmega", "—", "…", "«quoted»",
]


def make_texts():
    rng = random.Random(20260101)
    texts = list(HANDWRITTEN)
    # Short queries, 3-20 words, some with punctuation / a multilingual snippet.
    for i in range(140):
        n = rng.randint(3, 20)
        w = [rng.choice(WORDS) for _ in range(n)]
        if i % 5 == 0:
            w.insert(rng.randrange(len(w) + 1), rng.choice(MULTI_SNIPPETS))
        s = " ".join(w)
        if i % 3 == 0:
            s = s.capitalize() + "?"
        elif i % 3 == 1:
            s = s + "."
        texts.append(s)
    # Passages, 40-200 words in sentences.
    for i in range(110):
        n = rng.randint(40, 200)
        sent, out = [], []
        for j in range(n):
            sent.append(rng.choice(WORDS))
            if len(sent) >= rng.randint(6, 18):
                out.append(" ".join(sent).capitalize() + rng.choice([".", ".", ",", "!", "?", ";"]))
                sent = []
            if j % 37 == 11 and i % 4 == 0:
                out.append(rng.choice(MULTI_SNIPPETS))
        if sent:
            out.append(" ".join(sent).capitalize() + ".")
        texts.append(" ".join(out))
    # Long passages, well over 256 tokens (truncated by ST and by us).
    for i in range(24):
        n = rng.randint(300, 450)
        w = [rng.choice(WORDS) for _ in range(n)]
        if i % 3 == 0:
            w += [rng.choice(MULTI_SNIPPETS) for _ in range(20)]
        texts.append(" ".join(w) + ".")
    return texts


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    texts = make_texts()
    model = SentenceTransformer(MODEL, device="cpu")
    model.eval()
    max_len = model.max_seq_length
    assert max_len == 256, max_len

    ids = []
    for t in texts:
        f = model.preprocess([t])
        n = int(f["attention_mask"][0].sum())
        ids.append([int(x) for x in f["input_ids"][0][:n]])
        assert all(int(x) == 0 for x in f.get("token_type_ids", torch.zeros(1, n))[0][:n])
    n_long = sum(1 for t in texts if len(model.tokenizer(t)["input_ids"]) > max_len)
    assert n_long >= 20, n_long

    with torch.no_grad():
        full = model.encode(texts, convert_to_numpy=True, batch_size=32)
        mat_idx = list(range(0, len(texts), max(1, len(texts) // 20)))[:20]
        mat_idx[-1] = len(texts) - 1  # include a truncated long text
        mat = model.encode([texts[i] for i in mat_idx], truncate_dim=128,
                           normalize_embeddings=True, convert_to_numpy=True)
        raw_model = SentenceTransformer(modules=[model[0], model[1]], device="cpu")
        raw_idx = [i + 3 for i in mat_idx[:-1]] + [len(texts) - 2]
        raw = raw_model.encode([texts[i] for i in raw_idx], convert_to_numpy=True)
        # one row a sequence: 40 texts across the kinds of text (the first ones are 1-3 words),
        # the last two truncated long ones included
        row_idx = list(range(0, len(texts), len(texts) // 38))[:38] + [len(texts) - 3, len(texts) - 1]
        hidden = model[0].get_word_embedding_dimension()
        cls_model = SentenceTransformer(
            modules=[model[0], Pooling(hidden, pooling_mode="cls"), Normalize()], device="cpu")
        cls = cls_model.encode([texts[i] for i in row_idx], convert_to_numpy=True)
        last_model = SentenceTransformer(
            modules=[model[0], Pooling(hidden, pooling_mode="lasttoken")], device="cpu")
        last = last_model.encode([texts[i] for i in row_idx], convert_to_numpy=True)

    records = []
    for i, t in enumerate(texts):
        records.append((0, t, ids[i], full[i]))
    for j, i in enumerate(mat_idx):
        records.append((1, texts[i], ids[i], mat[j]))
    for j, i in enumerate(raw_idx):
        records.append((2, texts[i], ids[i], raw[j]))
    for kind, embs in ((3, cls), (4, last)):
        for j, i in enumerate(row_idx):
            records.append((kind, texts[i], ids[i], embs[j]))

    with open(OUT, "wb") as f:
        f.write(b"EMBFIX01")
        f.write(struct.pack("<IIII", len(records), max_len, full.shape[1], 0))
        for kind, t, tid, emb in records:
            b = t.encode("utf-8")
            e = np.asarray(emb, dtype="<f4")
            f.write(struct.pack("<IIII", kind, e.shape[0], len(b), len(tid)))
            f.write(b)
            f.write(np.asarray(tid, dtype="<i4").tobytes())
            f.write(e.tobytes())
    print(f"{OUT}: {len(texts)} texts ({n_long} over {max_len} tokens), {len(records)} records, "
          f"{os.path.getsize(OUT)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
