#!/usr/bin/env python3
"""common/gen_unicode_tables.py — writes common/unicode_tables.c, the character tables the
tokenizer (common/tok_*.c) needs, from versioned Unicode Character Database data.

Why versioned data: Hugging Face `tokenizers` (0.23.x) mixes Unicode versions, and its outputs
depend on each (see docs/tokenizer.md for how this was established):
  * general categories (BertNormalizer is_control = Cc|Cf|Co, BertPreTokenizer punctuation = P*,
    strip_accents' nonspacing marks = Mn) come from the `unicode_categories` crate: Unicode 8.0;
  * NFD (canonical decompositions + canonical combining classes) comes from the
    `unicode-normalization-alignments` crate: Unicode 9.0;
  * lowercase (Rust std char::to_lowercase) and whitespace (char::is_whitespace) follow the Rust
    standard library the wheel was built with: Unicode 17.0.
utf8proc (Unicode 15 on Debian 12) matches none of these exactly, so the tables are derived here
from the UCD as packaged by the PyPI sdists of `unicodedata2` at exactly those versions (each
sdist carries CPython's generated database headers; a tiny C program compiled against them dumps
every code point). Nothing here is derived from tokenizers' outputs.

Usage: python3 common/gen_unicode_tables.py [--sdist-dir DIR] [--out common/unicode_tables.c]
  Needs a C compiler (cc) and either the three sdists in DIR (unicodedata2-8.0.0.tar.gz,
  -9.0.0.tar.gz, -17.0.0.tar.gz) or network access to PyPI (`pip download` fetches them).
Deterministic: same inputs, same output file.
"""
import argparse
import os
import subprocess
import sys
import tarfile
import tempfile

CAT_VERSION = "8.0.0"   # unicode_categories crate
NFD_VERSION = "9.0.0"   # unicode-normalization-alignments crate
STD_VERSION = "17.0.0"  # Rust std (char::to_lowercase, char::is_whitespace)

# PropList.txt White_Space, unchanged since Unicode 6.3 (when U+180E left it); Rust's
# char::is_whitespace is exactly this property.
WHITE_SPACE = [(0x0009, 0x000D), (0x0020, 0x0020), (0x0085, 0x0085), (0x00A0, 0x00A0),
               (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F),
               (0x205F, 0x205F), (0x3000, 0x3000)]

# BertNormalizer's "Chinese character" blocks (a fixed list in tokenizers' normalizers/bert.rs).
CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
       (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]

ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

DB_DUMPER = r"""
#include <stdio.h>
typedef unsigned int Py_UCS4;
typedef struct {
    const unsigned char category, combining, bidirectional, mirrored, east_asian_width,
        normalization_quick_check;
} _PyUnicode_DatabaseRecord;
typedef struct change_record {
    const unsigned char bidir_changed, category_changed, decimal_changed, mirrored_changed,
        east_asian_width_changed;
    const double numeric_changed;
} change_record;
#include "unicodedata_db.h"
int main(void) {
    for (unsigned cp = 0; cp < 0x110000; cp++) {
        int i = index1[cp >> SHIFT];
        i = index2[(i << SHIFT) + (cp & ((1u << SHIFT) - 1))];
        const _PyUnicode_DatabaseRecord *r = &_PyUnicode_Database_Records[i];
        int d = decomp_index1[cp >> DECOMP_SHIFT];
        d = decomp_index2[(d << DECOMP_SHIFT) + (cp & ((1u << DECOMP_SHIFT) - 1))];
        unsigned count = decomp_data[d] >> 8, prefix = decomp_data[d] & 255;
        printf("%X %s %u", cp, _PyUnicode_CategoryNames[r->category], r->combining);
        if (count && prefix == 0)
            for (unsigned k = 0; k < count; k++)
                printf(" %X", decomp_data[d + 1 + k]);
        printf("\n");
    }
    return 0;
}
"""

TYPE_DUMPER = r"""
#include <stdio.h>
typedef unsigned int Py_UCS4;
typedef struct {
    const int upper, lower, title;
    const unsigned char decimal, digit;
    const unsigned short flags;
} _PyUnicode_TypeRecord;
#define EXTENDED_CASE_MASK 0x4000
#include "unicodetype_db.h"
int main(void) {
    for (unsigned cp = 0; cp < 0x110000; cp++) {
        int i = index1[cp >> SHIFT];
        i = index2[(i << SHIFT) + (cp & ((1u << SHIFT) - 1))];
        const _PyUnicode_TypeRecord *t = &_PyUnicode_TypeRecords[i];
        printf("%X", cp);
        if (t->flags & EXTENDED_CASE_MASK) {
            int idx = t->lower & 0xFFFF, n = t->lower >> 24;
            for (int k = 0; k < n; k++)
                printf(" %X", _PyUnicode_ExtendedCase[idx + k]);
        } else {
            printf(" %X", (unsigned)(cp + t->lower));
        }
        printf("\n");
    }
    return 0;
}
"""


def fetch_sdist(version, sdist_dir):
    name = "unicodedata2-%s.tar.gz" % version
    path = os.path.join(sdist_dir, name)
    if not os.path.exists(path):
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps",
                               "--no-binary", ":all:", "unicodedata2==" + version,
                               "-d", sdist_dir])
    return path


def run_dumper(sdist, source, work, kind):
    tag = os.path.basename(sdist).replace(".tar.gz", "")
    with tarfile.open(sdist) as tf:
        tf.extractall(work)
    inc = os.path.join(work, tag, "unicodedata2")
    src = os.path.join(work, "%s_%s.c" % (tag, kind))
    exe = src[:-2]
    with open(src, "w") as f:
        f.write(source)
    subprocess.check_call(["cc", "-O1", "-w", "-I", inc, src, "-o", exe])
    out = subprocess.check_output([exe]).decode()
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        rows[int(parts[0], 16)] = parts[1:]
    # the header must say the version we asked for
    with open(os.path.join(inc, "unicodedata_db.h")) as f:
        head = f.read(200)
    want = os.path.basename(sdist).split("-")[1].replace(".tar.gz", "")
    if '"%s"' % want not in head:
        raise SystemExit("unexpected UNIDATA_VERSION in %s" % sdist)
    return rows


def in_ranges(cp, ranges):
    return any(a <= cp <= b for a, b in ranges)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdist-dir", default=None)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "unicode_tables.c"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gen_unicode_")
    sdist_dir = args.sdist_dir or work
    cat = run_dumper(fetch_sdist(CAT_VERSION, sdist_dir), DB_DUMPER, work, "db")
    nfd = run_dumper(fetch_sdist(NFD_VERSION, sdist_dir), DB_DUMPER, work, "db")
    std_sdist = fetch_sdist(STD_VERSION, sdist_dir)
    std = run_dumper(std_sdist, DB_DUMPER, work, "db")
    low = run_dumper(std_sdist, TYPE_DUMPER, work, "type")

    F_CTRL, F_PUNCT, F_MN, F_WS, F_CJK, F_DECOMP, F_LOWER, F_WORD = (1 << i for i in range(8))
    ccc = [0] * 0x110000
    flags = [0] * 0x110000
    decomp = {}
    lower = {}

    def full_decomp(cp):
        d = nfd[cp][2:]
        if not d:
            return [cp]
        out = []
        for x in d:
            out.extend(full_decomp(int(x, 16)))
        return out

    for cp in range(0x110000):
        c8 = cat[cp][0]
        f = 0
        if c8 in ("Cc", "Cf", "Co"):
            f |= F_CTRL
        if c8.startswith("P") or (cp < 128 and chr(cp) in ASCII_PUNCT):
            f |= F_PUNCT
        if c8 == "Mn":
            f |= F_MN
        if in_ranges(cp, WHITE_SPACE):
            f |= F_WS
        if in_ranges(cp, CJK):
            f |= F_CJK
        ccc[cp] = int(nfd[cp][1])
        if len(nfd[cp]) > 2:
            decomp[cp] = full_decomp(cp)
            f |= F_DECOMP
        elif 0xAC00 <= cp <= 0xD7A3:
            f |= F_DECOMP  # Hangul syllables decompose algorithmically
        lw = [int(x, 16) for x in low[cp]]
        if lw != [cp]:
            lower[cp] = lw
            f |= F_LOWER
        c17 = std[cp][0]
        # regex \w (used by single_word added tokens): letters, marks, Nd, Nl, Pc, joiners
        if c17[0] in "LM" or c17 in ("Nd", "Nl", "Pc") or cp in (0x200C, 0x200D):
            f |= F_WORD
        flags[cp] = f

    # two-stage table: 256-code-point blocks of record indexes
    recs = []
    rec_index = {}
    blocks = []
    block_index = {}
    stage1 = []
    for b in range(0x110000 >> 8):
        blk = []
        for cp in range(b << 8, (b + 1) << 8):
            key = (flags[cp], ccc[cp])
            if key not in rec_index:
                rec_index[key] = len(recs)
                recs.append(key)
            blk.append(rec_index[key])
        t = tuple(blk)
        if t not in block_index:
            block_index[t] = len(blocks)
            blocks.append(t)
        stage1.append(block_index[t])
    assert len(recs) <= 256 and len(blocks) <= 65535

    def pool_table(name, mapping, max_len):
        keys = sorted(mapping)
        pool = []
        offs = []
        for k in keys:
            offs.append((len(pool), len(mapping[k])))
            pool.extend(mapping[k])
        assert len(pool) < (1 << 24) and max(n for _, n in offs) <= max_len
        s = []
        s.append("const int32_t com_uni_%s_count = %d;\n" % (name, len(keys)))
        s.append("const uint32_t com_uni_%s_cp[%d] = {\n" % (name, len(keys)))
        s.append(fmt_list(["0x%X" % k for k in keys]))
        s.append("};\n/* pool offset << 8 | length */\n")
        s.append("const uint32_t com_uni_%s_ref[%d] = {\n" % (name, len(keys)))
        s.append(fmt_list(["0x%X" % (o << 8 | n) for o, n in offs]))
        s.append("};\n")
        s.append("const uint32_t com_uni_%s_pool[%d] = {\n" % (name, len(pool)))
        s.append(fmt_list(["0x%X" % x for x in pool]))
        s.append("};\n")
        return "".join(s)

    with open(args.out, "w") as f:
        f.write("/* common/unicode_tables.c — GENERATED by common/gen_unicode_tables.py; do not edit.\n"
                " * Character tables for the tokenizer: general-category flags from Unicode %s,\n"
                " * canonical decompositions and combining classes from Unicode %s, lowercase and\n"
                " * \\w from Unicode %s, White_Space (stable since 6.3). See unicode_tables.h and\n"
                " * docs/tokenizer.md. Immutable data: safe from any thread. */\n"
                % (CAT_VERSION, NFD_VERSION, STD_VERSION))
        f.write('#include "common/unicode_tables.h"\n\n')
        f.write("const com_uni_rec_t com_uni_recs[%d] = {\n" % len(recs))
        f.write(fmt_list(["{0x%02X, %d}" % r for r in recs]))
        f.write("};\n")
        f.write("const uint16_t com_uni_stage1[%d] = {\n" % len(stage1))
        f.write(fmt_list([str(x) for x in stage1]))
        f.write("};\n")
        f.write("const uint8_t com_uni_stage2[%d][256] = {\n" % len(blocks))
        for blk in blocks:
            f.write("{\n" + fmt_list([str(x) for x in blk]) + "},\n")
        f.write("};\n")
        f.write(pool_table("decomp", decomp, 4))
        f.write(pool_table("lower", lower, 3))
    print("wrote %s: %d records, %d blocks, %d decompositions, %d lowercase mappings"
          % (args.out, len(recs), len(blocks), len(decomp), len(lower)))


def fmt_list(items, width=96):
    lines = []
    cur = "   "
    for it in items:
        if len(cur) + len(it) + 2 > width:
            lines.append(cur)
            cur = "   "
        cur += " " + it + ","
    lines.append(cur)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
