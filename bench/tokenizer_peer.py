#!/usr/bin/env python3
"""bench/tokenizer_peer.py — the peer for bench/bench_tokenizer.c: Hugging Face `tokenizers`,
single-threaded (RAYON_NUM_THREADS=1, TOKENIZERS_PARALLELISM=false), on the same corpus file
(tests/reference/tokenizer_bench_corpus.py format) and the same tokenizer.json. Measures
encode() in a loop and encode_batch() (one thread) and reports the faster as the peer; texts
are decoded to str outside the timed region, no truncation or padding.

Usage: tokenizer_peer.py --corpus FILE --tokenizer tokenizer.json [--reps 5] [--json OUT]
Prints texts/s, tokens/s, MB/s (medians over reps) and writes them as JSON.
"""
import os

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import struct  # noqa: E402
import time  # noqa: E402


def read_corpus(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"EMTKBNCH", "not a tokenizer bench corpus"
    (n,) = struct.unpack_from("<I", data, 8)
    off = 12
    texts = []
    for _ in range(n):
        (ln,) = struct.unpack_from("<I", data, off)
        off += 4
        texts.append(data[off:off + ln])
        off += ln
    return texts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import tokenizers
    from tokenizers import Tokenizer
    raw = read_corpus(args.corpus)
    texts = [b.decode("utf-8", "replace") for b in raw]
    n_bytes = sum(len(b) for b in raw)
    tok = Tokenizer.from_file(args.tokenizer)
    tok.no_truncation()
    tok.no_padding()
    n_tokens = sum(len(e.ids) for e in tok.encode_batch(texts))  # also warms up
    results = {}
    for mode in ("encode", "encode_batch"):
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            if mode == "encode":
                for t in texts:
                    tok.encode(t)
            else:
                tok.encode_batch(texts)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        results[mode] = {"seconds": med, "texts_per_s": len(texts) / med,
                         "tokens_per_s": n_tokens / med, "mb_per_s": n_bytes / med / 1e6}
    best = min(results, key=lambda m: results[m]["seconds"])
    out = {"impl": "hf-tokenizers", "version": tokenizers.__version__, "threads": 1,
           "texts": len(texts), "bytes": n_bytes, "tokens": n_tokens, "reps": args.reps,
           "modes": results, "best_mode": best}
    out.update({k: results[best][k] for k in ("seconds", "texts_per_s", "tokens_per_s",
                                              "mb_per_s")})
    print("%-22s %12s %14s %10s" % ("peer (HF, 1 thread)", "texts/s", "tokens/s", "MB/s"))
    for m, r in results.items():
        print("%-22s %12.0f %14.0f %10.2f" % (m, r["texts_per_s"], r["tokens_per_s"],
                                              r["mb_per_s"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
