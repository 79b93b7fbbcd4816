"""tests/reference/embedding_fixture.py — the one reader of the sentence-transformers fixture
(tests/fixtures/minilm_st_reference.bin; format and writer in make_embedding_fixture.py), for the
Python checks that use it (tests/test_cli.py, bench/gpu/check_real_model.py). Standard library
only."""
import struct


def read_fixture(path):
    """The fixture's records in file order, each a dict: kind (0 full, 1 matryoshka, 2 raw),
    text (str), ids (list of int), embedding (tuple of float). Raises ValueError on a file that is
    not a whole EMBFIX01 fixture."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24 or data[:8] != b"EMBFIX01":
        raise ValueError("%s: not an EMBFIX01 fixture" % path)
    n = struct.unpack_from("<I", data, 8)[0]
    pos, records = 24, []
    for _ in range(n):
        kind, dim, n_text, n_ids = struct.unpack_from("<IIII", data, pos)
        pos += 16
        text = data[pos:pos + n_text].decode("utf-8")
        pos += n_text
        ids = list(struct.unpack_from("<%di" % n_ids, data, pos))
        pos += 4 * n_ids
        emb = struct.unpack_from("<%df" % dim, data, pos)
        pos += 4 * dim
        records.append({"kind": kind, "text": text, "ids": ids, "embedding": emb})
    if pos != len(data):
        raise ValueError("%s: %d trailing bytes" % (path, len(data) - pos))
    return records
