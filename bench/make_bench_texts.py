#!/usr/bin/env python3
"""bench/make_bench_texts.py — writes the engine bench corpus: N texts (default 1000), one per
line (UTF-8, no newlines inside a text), deterministic (seeded): 50% short queries of 8-20 words,
50% passages of 60-250 words in sentences, with some punctuation, numbers and non-ASCII words.
Both bench/bench_engine_cpu.c and bench/engine_peer.py read the same file.

Usage: python3 bench/make_bench_texts.py OUT [N]
"""
import random
import sys

WORDS = (
    "the of and to in is was for on that with as by at from his her an which are this be had not "
    "were they have one all their has been more when there who can would some into its only other "
    "also time first new two may after over years these such most used made many system data model "
    "network server request latency throughput memory kernel thread batch token sequence embedding "
    "vector search query document index cluster graph river mountain city history music science "
    "language education health market energy climate ocean forest library protocol algorithm "
    "compiler database engine scheduler broker worker gateway cache university government company "
    "population research development century region island village station bridge festival museum "
    "painting novel theory experiment measurement agriculture economy parliament election athlete "
    "championship tournament symphony orchestra architecture cathedral manuscript dynasty empire "
    "revolution treaty migration vaccine protein molecule galaxy telescope satellite volcano glacier "
    "desert rainfall harvest recipe restaurant airport highway railway software hardware processor "
    "transistor semiconductor bandwidth encryption password customer invoice payment subscription"
).split()
EXTRA = ["café", "naïve", "Zürich", "São Paulo", "東京", "Москва", "2024", "3.5%", "$120", "e-mail",
         "COVID-19", "U.S.", "don't", "(see below)", "—", "état", "Ωmega"]


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    rng = random.Random(4242)
    texts = []
    for i in range(n):
        if i % 2 == 0:
            w = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
            if rng.random() < 0.2:
                w.insert(rng.randrange(len(w)), rng.choice(EXTRA))
            texts.append(" ".join(w).capitalize() + rng.choice(["?", "", "."]))
        else:
            target, words, sents = rng.randint(60, 250), 0, []
            while words < target:
                k = min(rng.randint(6, 22), target - words)
                w = [rng.choice(WORDS) if rng.random() > 0.03 else rng.choice(EXTRA)
                     for _ in range(k)]
                sents.append(" ".join(w).capitalize() + rng.choice([".", ".", "!", "?", ";"]))
                words += k
            texts.append(" ".join(sents))
    with open(out, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(t.replace("\n", " ") + "\n")


if __name__ == "__main__":
    main()
