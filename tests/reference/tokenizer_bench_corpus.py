#!/usr/bin/env python3
"""tests/reference/tokenizer_bench_corpus.py — writes a realistic, seeded tokenizer benchmark
corpus shared by bench/bench_tokenizer.c and bench/tokenizer_peer.py: about 70% short search
queries and 30% passages of ~200 words, mostly English with French, German, Spanish, Russian,
Chinese, Japanese and Korean mixed in.

Usage: tokenizer_bench_corpus.py --out FILE [--n 4000]
Format: "EMTKBNCH" u32 n, then n times (u32 len, len bytes of UTF-8), little-endian.
"""
import argparse
import random
import struct

SEED = 7

EN = ("the of and to in is was for on that with as by at from it an be this which or are "
      "have has had not but all were when we there can been one would their more if will "
      "about up out them so some into time only other new could these two may first then "
      "people like over such our very how most years after where between through world "
      "system model data language learning network search results query embedding vector "
      "similarity document retrieval performance training evaluation benchmark dataset "
      "sentence transformer attention layer token sequence research university government "
      "market company product customer service price health medical patient treatment "
      "history century war city country river mountain weather climate energy water food "
      "computer software hardware memory processor internet security privacy password "
      "account email phone address London Paris Berlin Tokyo American European however "
      "although because therefore meanwhile nevertheless approximately significantly "
      "well-known state-of-the-art e-mail don't it's we're they've 2023 1.5 100% $20").split()
FR = "le la les des une est dans pour avec sur pas qui que très été où même déjà français".split()
DE = "der die das und ist nicht mit für auf über größer Straße Mädchen schön müssen".split()
ES = "el la los las del que una por con para está año niño también información".split()
RU = "и в не на я что он с как это по но они мы же вы из за был для".split()
ZH = ["我们", "今天", "机器学习", "人工智能", "搜索", "中国", "北京", "数据", "模型", "语言"]
JA = ["東京", "日本語", "ひらがな", "カタカナ", "ラーメン", "検索", "です", "ました"]
KO = ["안녕하세요", "서울", "한국어", "검색", "데이터", "모델"]
QUERY_STARTS = ["how to", "what is", "why does", "best", "cheap", "where can i buy",
                "difference between", "symptoms of", "who invented", "when did", ""]


def word(rng):
    r = rng.random()
    if r < 0.82:
        return rng.choice(EN)
    if r < 0.86:
        return rng.choice(FR)
    if r < 0.9:
        return rng.choice(DE)
    if r < 0.93:
        return rng.choice(ES)
    if r < 0.95:
        return rng.choice(RU)
    if r < 0.97:
        return rng.choice(ZH)
    if r < 0.985:
        return rng.choice(JA)
    return rng.choice(KO)


def passage(rng, n_words):
    out = []
    sentence = 0
    for i in range(n_words):
        w = word(rng)
        if sentence == 0:
            w = w[:1].upper() + w[1:]
        out.append(w)
        sentence += 1
        if sentence > rng.randrange(8, 25):
            out[-1] += rng.choice([".", ".", "?", "!", ";"])
            sentence = 0
        elif rng.random() < 0.06:
            out[-1] += ","
    return " ".join(out) + "."


def query(rng):
    q = rng.choice(QUERY_STARTS)
    words = [word(rng) for _ in range(rng.randrange(2, 9))]
    return (q + " " + " ".join(words)).strip() + rng.choice(["", "", "?"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=4000)
    args = ap.parse_args()
    rng = random.Random(SEED)
    texts = []
    for _ in range(args.n):
        if rng.random() < 0.7:
            texts.append(query(rng))
        else:
            texts.append(passage(rng, rng.randrange(150, 250)))
    with open(args.out, "wb") as f:
        f.write(b"EMTKBNCH" + struct.pack("<I", len(texts)))
        for t in texts:
            b = t.encode("utf-8")
            f.write(struct.pack("<I", len(b)) + b)
    print("tokenizer_bench_corpus: %d texts, %d bytes -> %s"
          % (len(texts), sum(len(t.encode()) for t in texts), args.out))


if __name__ == "__main__":
    main()
