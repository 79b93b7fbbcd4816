#!/usr/bin/env python3
"""tests/reference/tokenizer_unicode_check.py — ctest tokenizer_unicode: runs the C dump
(tests/test_tokenizer_unicode_dump.c) and Hugging Face `tokenizers` over every code point and
compares, per code point: BertNormalizer clean_text, strip_accents (NFD + drop Mn), NFD,
lowercase, and BertPreTokenizer / WhitespaceSplit splitting of "a<c>b". This is how the
generated tables (common/gen_unicode_tables.py) are verified; it never generates them.
Prints the mismatch count per property (and the first few code points); exits 1 on any.

Usage: tokenizer_unicode_check.py DUMP_BINARY
"""
import subprocess
import sys


def main():
    try:
        from tokenizers import normalizers, pre_tokenizers
    except ImportError:
        sys.exit("tokenizer_unicode_check: `tokenizers` missing; pip install -r "
                 "ops/requirements-test.txt")
    out = subprocess.run([sys.argv[1]], check=True, capture_output=True).stdout.decode()
    norms = [
        normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False,
                                   strip_accents=False, lowercase=False),
        normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False,
                                   strip_accents=True, lowercase=False),
        normalizers.NFD(),
        normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False,
                                   strip_accents=False, lowercase=True),
    ]
    names = ["clean_text", "strip_accents", "nfd", "lowercase", "bert_pretok", "whitespace"]
    bert, ws = pre_tokenizers.BertPreTokenizer(), pre_tokenizers.WhitespaceSplit()
    bad = {n: [] for n in names}
    count = 0
    for line in out.splitlines():
        f = line.split()
        cp = int(f[0], 16)
        s = chr(cp)
        for i, n in enumerate(norms):
            got = "" if f[1 + i] == "-" else bytes.fromhex(f[1 + i]).decode()
            if got != n.normalize_str(s):
                bad[names[i]].append(cp)
        if int(f[5]) != len(bert.pre_tokenize_str("a" + s + "b")):
            bad["bert_pretok"].append(cp)
        if int(f[6]) != len(ws.pre_tokenize_str("a" + s + "b")):
            bad["whitespace"].append(cp)
        count += 1
    failed = False
    for n in names:
        print("tokenizer unicode: %-13s %d/%d code points match%s"
              % (n, count - len(bad[n]), count,
                 "" if not bad[n] else "; first: " + " ".join("U+%04X" % c for c in bad[n][:8])))
        failed = failed or bool(bad[n])
    if count != 0x110000 - 0x800:
        print("tokenizer unicode: dump has %d lines" % count)
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
