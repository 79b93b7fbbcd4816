#!/usr/bin/env python3
"""tests/reference/make_tokenizer_corpus.py — writes the tokenizer exactness corpus: a seeded,
deterministic set of awkward texts (raw bytes, invalid UTF-8 included) with the token ids and
type ids Hugging Face `tokenizers` produces for them, read by tests/test_tokenizer_exact.c.

Cases: >= 10,000 single texts, 2,000 pairs (no truncation), truncation cases (max_length 8, 16,
128, 256, 512, LongestFirst, right) for singles and pairs of many lengths, and a few hundred
without special tokens. HF sees each text as bytes.decode("utf-8", "replace") (what a Python
caller would pass); ids come from Tokenizer.from_file(tokenizer.json) with no_truncation() and
no_padding() unless the case truncates.

Usage: make_tokenizer_corpus.py --tokenizer models/all-MiniLM-L6-v2/tokenizer.json --out DIR
Writes DIR/tokenizer_corpus.bin:
  "EMTKCORP" u32 version(1) u32 n_cases, then per case (little-endian):
  u8 is_pair, u8 add_special, u8 truncate, u8 pad, i32 max_length (0 = none),
  u32 len_a, a bytes, u32 len_b, b bytes, u32 n, i32 ids[n], i32 type_ids[n]
Needs tokenizers==0.23.3 (ops/requirements-test.txt).
"""
import argparse
import os
import random
import struct
import sys

SEED = 20240611

ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings map sentences to vectors so that similar meanings end up close together.",
    "How do I reset my password if I no longer have access to my email?",
    "In 1969, Apollo 11 landed on the Moon; Neil Armstrong's first words were broadcast live.",
    "She said, \"It's not what you think\" -- and then left without another word...",
    "Prices rose 3.5% year-over-year, while wages grew only 2.1 percent.",
    "Don't forget: the meeting's at 10:30am (room B-204), not 11!",
    "Transformers use self-attention to weigh the importance of each token in context.",
    "What's the difference between affect and effect?",
    "A well-known e-mail address like john.doe@example.com should be tokenized sensibly.",
    "The mitochondria is the powerhouse of the cell.",
    "Unbelievably, the antidisestablishmentarianism debate resurfaced in parliament.",
    "best pizza near me open now",
    "python list comprehension vs map performance",
    "symptoms of vitamin D deficiency in adults",
    "cheap flights from new york to london in december",
    "Why is the sky blue? Rayleigh scattering explains it.",
    "I've been waiting for HOURS!!! This is UNACCEPTABLE.",
    "CamelCaseIdentifiersAndSnake_case_names_are_common_in_code.",
    "Mr. Smith's co-worker's dog—a golden retriever—ran off.",
]
MULTI = [
    "我们今天去公园散步，天气非常好。", "机器学习是人工智能的一个分支。", "北京欢迎你！",
    "東京は日本の首都です。ひらがなとカタカナ、漢字を混ぜて書きます。", "ラーメンを食べたい",
    "안녕하세요, 만나서 반갑습니다. 한국어 문장입니다.", "서울특별시",
    "مرحبا بالعالم، كيف حالك اليوم؟", "اللغة العربية جميلة",
    "שלום עולם, מה שלומך?", "עברית",
    "नमस्ते दुनिया, आप कैसे हैं?", "हिन्दी भाषा",
    "สวัสดีครับ ยินดีที่ได้รู้จัก", "ภาษาไทย",
    "Ça va très bien, merci! Où est la bibliothèque? Élève, garçon, naïve, cœur.",
    "Größe, Straße, Äpfel, Öl, Übermut — deutsche Umlaute.",
    "¿Dónde está el baño? ¡Muy señor mío! Niño, acción, pingüino.",
    "Привет, мир! Как дела? Съешь же ещё этих мягких французских булок.",
    "Γειά σου Κόσμε! Ελληνικά γράμματα: αβγδε ΑΒΓΔΕ ςσΣ.",
    "Tiếng Việt có nhiều dấu: Hà Nội, Sài Gòn, người, được, những.",
    "Português: ação, coração, João, você.", "Polski: zażółć gęślą jaźń.",
    "Türkçe: İstanbul, ılık, ŞÇĞÜÖ.", "Čeština: příliš žluťoučký kůň úpěl ďábelské ódy.",
    "İIıi", "ΣΑΣ σας", "ǅungla ǈ ǋ", "Ångström Å Å", "ﬁﬂ ﬀ ẞ ß",
]
CJK_EXTRA = ["\U00020000", "\U0002A6D6", "\U0002A700", "\U0002B740", "\U0002B820", "\U0002B920",
             "\U0002CEAF", "\U0002CEB0", "\U00030000", "\uF900", "\uF9FF", "\uFA30", "\uFAD9",
             "\U0002F800", "\U0002FA1D", "\u3400", "\u4DB5", "\u4DBF", "\u9FFF", "\u9FD5",
             "\u3007", "\u3005", "\u2E80", "\u2F00", "\u3131", "\uAC00", "\uD7A3", "\u1100"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "👩🏿‍💻", "🇫🇷", "🇺🇸🇯🇵", "1️⃣", "#️⃣", "*️⃣", "🏳️‍🌈", "❤️", "🤷‍♀️",
         "🧑🏻‍🤝‍🧑🏿", "☺", "✌🏼", "🙏", "🔥🔥🔥", "🐍", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "⌚", "©", "™", "®"]
MARKS = ["\u0300", "\u0301", "\u0302", "\u0303", "\u0308", "\u030A", "\u0316", "\u0327",
         "\u0328", "\u0334", "\u0345", "\u05B0", "\u05BC", "\u0651", "\u064B", "\u093C",
         "\u094D", "\u0E31", "\u0E48", "\u0F71", "\u0F72", "\u1DCE", "\u20D2", "\u20E3",
         "\u302A", "\u3099", "\U0001D165", "\U0001D16D", "\U0001D167", "\u0903", "\u09BE",
         "\u08E3", "\u1AB0", "\u1DF6", "\U0001E000", "\U0001E944", "\u0489", "\u20DD"]
CONTROLS = [chr(c) for c in list(range(0, 32)) + [0x7F] + list(range(0x80, 0xA0))] + [
    "\u200B", "\u200C", "\u200D", "\u200E", "\u200F", "\uFEFF", "\u00AD", "\u2060", "\u2061",
    "\u2066", "\u2069", "\u061C", "\u180E", "\uFFF9", "\uFFFB", "\U000E0001", "\U000E0020",
    "\U000E007F", "\uE000", "\uF8FF", "\U000F0000", "\U0010FFFD", "\uFFFD", "\u0600", "\u06DD",
    "\u08E2", "\u0890", "\U000110CD", "\U00013430", "\U0001BCA0", "\U0001D173"]
SPACES = [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x85", "\xa0", "\u1680", "\u2000", "\u2001",
          "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009",
          "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\x1c", "\x1d", "\x1e",
          "\x1f", "\u180e", "\u200b"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + list(
    "«»„“”‘’‚‛—–‐‑‒―…¿¡、。，．！？：；「」『』【】〈〉《》〔〕〜・•†‡§¶‰′″‹›⁂※¦¨´¸¯°±×÷¬µ·") + [
    "\u166D", "\U000111C9", "\u2E43", "\u2E44", "\u2E4F", "\u2E52", "\u061D", "\u09FD",
    "\u0A76", "\u0C77", "\u0C84", "\u1B7D", "\U00010EAD", "\U00011944", "\U00016FE2",
    "\U0001E95E", "\u055A", "\u05BE", "\u1400", "\u2010", "\u2053", "\u301C", "\u30A0",
    "\uFE58", "\uFF0D", "\u00A1", "\u00A7", "\u00B6", "\u0F14", "\u104A", "\u2CF9"]
SPECIAL_LIT = ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "[cls]", "[Cls]", "[ CLS ]",
               "[CLS", "CLS]", "[[SEP]]", "[MASK][MASK]", "x[SEP]y", "[SEP]", "[sep]", "[MASK]."]
URLS = ["https://example.com/path?q=1&r=two#frag", "http://www.test.org/a_b-c/d.html",
        "ftp://files.example.net/pub/file.tar.gz", "www.google.com", "user@mail.co.uk",
        "C:\\Program Files\\App\\app.exe", "/usr/local/bin/python3", "192.168.0.1:8080"]
CODE = ["def f(x): return x**2 + 1", "for (int i = 0; i < n; i++) { sum += a[i]; }",
        "SELECT * FROM users WHERE id = 42;", "<div class=\"row\">Hello</div>",
        "x = {'a': [1, 2, 3], \"b\": None}", "if (a && b || !c) return -1;",
        "console.log(`value=${v}`);", "#include <stdio.h>", "a->b->c = NULL;",
        "$ ls -la | grep '.py' > out.txt 2>&1"]
NUMBERS = ["0", "42", "3.14159", "-17", "1,000,000", "1e-10", "0x1F", "2024-06-11", "12:30:45",
           "٣٤٥", "४२", "一二三", "Ⅻ", "½", "²³", "①②", "１２３", "𝟙𝟚𝟛"]
INVALID = [b"\x80", b"\xbf", b"\x80\x80\x80", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98",
           b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xe0\x9f\xbf", b"\xf0\x80\x80\xaf",
           b"\xf0\x8f\xbf\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xed\xa0\x80\xed\xb0\x80",
           b"\xf4\x90\x80\x80", b"\xf7\xbf\xbf\xbf", b"\xf5", b"\xf8\x88\x80\x80\x80", b"\xfe",
           b"\xff", b"\xfc\x84\x80\x80\x80\x80", b"\xc3\x28", b"\xe2\x28\xa1", b"\xf0\x28\x8c\xbc",
           b"\xe2\x82\x28", b"\xf0\x90\x28\xbc", b"\xf0\x9f\x98\x80\x80", b"\xc2", b"\xdf",
           b"\xe1\x80", b"\xef\xbf", b"\xf4\x8f\xbf", b"\xf1\x80\x80"]


def rand_cp(rng):
    r = rng.random()
    if r < 0.35:
        cp = rng.randrange(0x80, 0x3000)
    elif r < 0.55:
        cp = rng.randrange(0x3000, 0x10000)
    elif r < 0.75:
        cp = rng.randrange(0x10000, 0x20000)
    elif r < 0.85:
        cp = rng.randrange(0x20000, 0x40000)
    elif r < 0.9:
        cp = rng.randrange(0xE0000, 0x110000)
    else:
        cp = rng.randrange(0x40000, 0xE0000)
    if 0xD800 <= cp <= 0xDFFF:
        cp = 0xFFFD
    return chr(cp)


def long_word(rng):
    n = rng.choice([99, 100, 101, 100, 101, 150, 250, 98, 102])
    kind = rng.randrange(5)
    if kind == 0:
        return "a" * n
    if kind == 1:
        return "".join(rng.choice("abcdefghij") for _ in range(n))
    if kind == 2:
        return ("é" * n)[:n]
    if kind == 3:
        return "un" + "believ" * (n // 6) + "able"
    return "".join(rng.choice(["x", "é", "ß", "ж", "中", "😀", "e\u0301"]) for _ in range(n))


def fragment(rng):
    k = rng.randrange(16)
    if k == 0:
        return rng.choice(ENGLISH)
    if k == 1:
        return rng.choice(MULTI)
    if k == 2:
        return rng.choice(CJK_EXTRA) + rng.choice(["", "字", " ", "a"])
    if k == 3:
        return rng.choice(EMOJI)
    if k == 4:
        base = rng.choice("aeiouAEIOUnczsαοиж")
        return base + "".join(rng.choice(MARKS) for _ in range(rng.randrange(1, 7)))
    if k == 5:
        return rng.choice(CONTROLS)
    if k == 6:
        return "".join(rng.choice(SPACES) for _ in range(rng.randrange(1, 5)))
    if k == 7:
        return rng.choice(PUNCT) * rng.randrange(1, 3)
    if k == 8:
        return rng.choice(SPECIAL_LIT)
    if k == 9:
        return rng.choice(URLS)
    if k == 10:
        return rng.choice(CODE)
    if k == 11:
        return rng.choice(NUMBERS)
    if k == 12:
        return "".join(rand_cp(rng) for _ in range(rng.randrange(1, 6)))
    if k == 13:
        return long_word(rng)
    if k == 14:
        return rng.choice(rng.choice(ENGLISH).split())
    return rng.choice(["", " ", "  ", "\n\n", "a", "I", "Ünïcödé"])


def make_text(rng):
    """A text as raw bytes."""
    parts = []
    for _ in range(rng.randrange(1, 9)):
        if rng.random() < 0.07:
            parts.append(rng.choice(INVALID))
        else:
            parts.append(fragment(rng).encode("utf-8", "surrogatepass"))
        r = rng.random()
        if r < 0.5:
            parts.append(b" ")
        elif r < 0.6:
            parts.append(rng.choice(SPACES).encode())
    return b"".join(parts)


def fixed_texts():
    t = [b"", b" ", b"\t\n", b"a", b"[CLS]", b"[SEP][SEP]", b"hello world",
         b"a" * 100, b"a" * 101, b"a" * 99, ("é" * 100).encode(), ("é" * 101).encode(),
         ("中" * 120).encode(), "e\u0301".encode(), "\u00e9".encode(), b"\xed\xa0\x80",
         b"\xf4\x90\x80\x80", b"\xc0\x80", b"\xe0\x80\x80", b"\xf0\x80\x80\x80", b"\x80abc\xff"]
    for s in SPACES + CONTROLS + PUNCT + EMOJI + CJK_EXTRA + MARKS + NUMBERS + SPECIAL_LIT:
        t.append(("x" + s + "y").encode("utf-8", "surrogatepass"))
        t.append((s + " " + s).encode("utf-8", "surrogatepass"))
    for m in MARKS:
        for m2 in MARKS[::5]:
            t.append(("a" + m + m2 + "b").encode())
    for b in INVALID:
        t.append(b"ab" + b + b"cd")
        t.append(b)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--n-single", type=int, default=10500)
    args = ap.parse_args()
    try:
        import tokenizers
        from tokenizers import Tokenizer
    except ImportError:
        sys.exit("make_tokenizer_corpus: Python package `tokenizers` is missing; "
                 "pip install -r ops/requirements-test.txt (tokenizers==0.23.3)")
    if tokenizers.__version__ != "0.23.3":
        print("make_tokenizer_corpus: warning: tokenizers %s, the corpus was designed against "
              "0.23.3" % tokenizers.__version__, file=sys.stderr)
    rng = random.Random(SEED)
    singles = fixed_texts()
    while len(singles) < args.n_single:
        singles.append(make_text(rng))
    pairs = []
    for _ in range(2000):
        pairs.append((make_text(rng), make_text(rng)))
    tok = Tokenizer.from_file(args.tokenizer)
    tok.no_truncation()
    tok.no_padding()
    cases = []  # (is_pair, add_special, max_length, a, b, ids, type_ids)

    def dec(b):
        return b.decode("utf-8", "replace")

    encs = tok.encode_batch([dec(s) for s in singles], add_special_tokens=True)
    for s, e in zip(singles, encs):
        cases.append((0, 1, 0, s, b"", e.ids, e.type_ids))
    encs = tok.encode_batch([(dec(a), dec(b)) for a, b in pairs], add_special_tokens=True)
    for (a, b), e in zip(pairs, encs):
        cases.append((1, 1, 0, a, b, e.ids, e.type_ids))
    # without special tokens
    for s in singles[:150]:
        e = tok.encode(dec(s), add_special_tokens=False)
        cases.append((0, 0, 0, s, b"", e.ids, e.type_ids))
    for a, b in pairs[:150]:
        e = tok.encode(dec(a), dec(b), add_special_tokens=False)
        cases.append((1, 0, 0, a, b, e.ids, e.type_ids))
    # truncation: texts of many lengths, LongestFirst from the right
    def long_text(n_frag):
        return b" ".join(make_text(rng) for _ in range(n_frag))
    for max_len in (8, 16, 128, 256, 512):
        tok.enable_truncation(max_len, stride=0, strategy="longest_first", direction="right")
        for i in range(120):
            scale = rng.choice([1, 2, 4, 8, 16, 40, 80])
            a = long_text(rng.randrange(1, scale + 1))
            e = tok.encode(dec(a))
            cases.append((0, 1, max_len, a, b"", e.ids, e.type_ids))
            # HF computes every overflow combination for pairs (slow on long pairs): keep them
            # to at most ~24 fragments, still well past 512 tokens together
            scale = min(scale, 24)
            a = long_text(rng.randrange(1, scale + 1))
            b = long_text(rng.randrange(1, scale + 1))
            if i % 4 == 0:
                b = long_text(1)[:rng.randrange(0, 20)]
            e = tok.encode(dec(a), dec(b))
            cases.append((1, 1, max_len, a, b, e.ids, e.type_ids))
            e = tok.encode(dec(b), dec(a))
            cases.append((1, 1, max_len, b, a, e.ids, e.type_ids))
        for i in range(20):
            a = long_text(rng.randrange(1, 16))
            b = long_text(rng.randrange(1, 16))
            e = tok.encode(dec(a), dec(b), add_special_tokens=False)
            cases.append((1, 0, max_len, a, b, e.ids, e.type_ids))
    tok.no_truncation()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "tokenizer_corpus.bin")
    with open(path + ".tmp", "wb") as f:
        f.write(b"EMTKCORP" + struct.pack("<II", 1, len(cases)))
        for is_pair, add_special, max_len, a, b, ids, types in cases:
            f.write(struct.pack("<BBBBi", is_pair, add_special, 1 if max_len else 0, 0, max_len))
            f.write(struct.pack("<I", len(a)) + a + struct.pack("<I", len(b)) + b)
            f.write(struct.pack("<I", len(ids)))
            f.write(struct.pack("<%di" % len(ids), *ids))
            f.write(struct.pack("<%di" % len(types), *types))
    os.replace(path + ".tmp", path)
    n_single = sum(1 for c in cases if not c[0])
    print("make_tokenizer_corpus: %d cases (%d single, %d pair) -> %s"
          % (len(cases), n_single, len(cases) - n_single, path))


if __name__ == "__main__":
    main()
