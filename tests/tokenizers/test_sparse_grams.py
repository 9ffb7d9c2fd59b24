"""The sparse_grams tokenizer against chDB's sparseGrams / sparseGramsUTF8 (the oracle),
and its query side: a substring's grams are always among a holding value's grams."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings, strategies as st

from skipidx.core.errors import SkipidxError
from skipidx.core.tokenizer_api import get_tokenizer

pytest.importorskip("chdb")
from skipidx.apps.research import chdb_session as _chdb  # noqa: E402

ALPHABET = st.sampled_from(list("abcab xyz-_.") + ["п", "界", "😊", "Ω", "\u00e9"])
TEXT = st.text(ALPHABET, max_size=40)


def _sql_str(b: bytes) -> str:
    return "'" + "".join(f"\\x{c:02x}" for c in b) + "'"


def chdb_grams(values: list[bytes], mn: int, mx: int, utf8: bool, cutoff: int | None = None) -> list[list[bytes]]:
    fn = "sparseGramsUTF8" if utf8 else "sparseGrams"
    extra = f", {cutoff}" if cutoff is not None else ""
    arr = "[" + ", ".join(_sql_str(v) for v in values) + "]"
    q = f"SELECT arrayMap(v -> {fn}(v, {mn}, {mx}{extra}), {arr})"
    raw = _chdb.query(q, "RowBinary").bytes()
    p = 0

    def varint() -> int:
        nonlocal p
        n, shift = 0, 0
        while True:
            b = raw[p]
            p += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return n

    out: list[list[bytes]] = []
    for _ in range(varint()):
        grams = []
        for _ in range(varint()):
            ln = varint()
            grams.append(raw[p:p + ln])
            p += ln
        out.append(grams)
    assert p == len(raw) and len(out) == len(values)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXT, min_size=1, max_size=12), st.integers(3, 6), st.integers(0, 12), st.booleans())
def test_equals_chdb(texts, mn, extra, utf8):
    """Per value, the grams and their order equal chDB's sparseGrams[UTF8](s, min, max)."""
    values = [t.encode() for t in texts]
    mx = mn + extra
    tok = get_tokenizer("sparse_grams", min_length=mn, max_length=mx, utf8=int(utf8))
    want = chdb_grams(values, mn, mx, utf8)
    tk = tok.tokenize(pa.array(values, pa.binary()))
    got: list[list[bytes]] = [[] for _ in values]
    for r, g in zip(tk.rows.tolist(), tk.to_pylist()):
        got[r].append(g)
    assert got == want
    for v, w in zip(values, want):
        assert tok.grams(v) == w


def test_cutoff_and_long_values_equal_chdb():
    rng = np.random.default_rng(5)
    values = [rng.choice(list(b"abcdefgh "), size=int(n)).astype(np.uint8).tobytes() for n in (0, 1, 2, 3, 9, 50, 300)]
    for mn, mx, cut in ((3, 100, None), (3, 10, 5), (4, 4, None), (5, 40, 8)):
        tok = get_tokenizer("sparse_grams", min_length=mn, max_length=mx,
                            **({"min_cutoff_length": cut} if cut else {}))
        want = chdb_grams(values, mn, mx, False, cut)
        assert [tok.grams(v) for v in values] == want


def test_random_bytes_byte_mode_equal_chdb():
    """Arbitrary bytes (invalid UTF-8 included) in byte mode."""
    rng = np.random.default_rng(7)
    values = [bytes(rng.integers(0, 256, size=int(n), dtype=np.uint8)) for n in rng.integers(0, 30, 40)]
    tok = get_tokenizer("sparse_grams")
    assert [tok.grams(v) for v in values] == chdb_grams(values, 3, 100, False)


def test_hashes_are_xxh64_of_grams():
    tok = get_tokenizer("sparse_grams", utf8=1)
    arr = pa.array(["hello world", None, "привет мир", ""])
    tk = tok.tokenize(arr)
    rows, h = tok.hash_column(arr, 7)
    assert np.array_equal(rows, tk.rows)
    assert [int(x) for x in h] == [xxhash.xxh64_intdigest(g, 7) for g in tk.to_pylist()]
    assert set(tk.rows.tolist()) == {0, 2}


@settings(max_examples=150, deadline=None)
@given(TEXT, st.data(), st.integers(3, 5), st.booleans())
def test_substring_grams_are_in_value(text, data, mn, utf8):
    """Locality: the grams the query side asks for a substring are all grams of the value."""
    v = text.encode()
    tok = get_tokenizer("sparse_grams", min_length=mn, max_length=mn + 8, utf8=int(utf8))
    a = data.draw(st.integers(0, len(v)))
    b = data.draw(st.integers(a, len(v)))
    req = tok.requirement("like", (b"%" + v[a:b].replace(b"%", b"\\%").replace(b"_", b"\\_") + b"%",))
    if req is None:
        return
    have = set(tok.grams(v))
    assert any(set(group) <= have for group in req.any_of)


def test_invalid_utf8_values_still_found():
    """UTF-8 mode: a value that is not valid UTF-8 is found through its byte grams."""
    tok = get_tokenizer("sparse_grams", utf8=1)
    v = b"ab\xe0xyzqr"
    req = tok.requirement("like", (b"%xyzq%",))
    have = set(tok.grams(v))
    assert any(set(g) <= have for g in req.any_of)


@pytest.mark.parametrize("params, msg", [
    ({"min_length": 2}, "at least 3"), ({"min_length": 5, "max_length": 4}, "cannot be larger"),
    ({"min_cutoff_length": 2}, "smaller"), ({"max_length": 10, "min_cutoff_length": 11}, "larger"),
    ({"utf8": 2}, "utf8"), ({"n": 3}, "unknown parameter"), ({"min_length": "3"}, "integer"),
])
def test_bad_params(params, msg):
    with pytest.raises(SkipidxError, match=msg):
        get_tokenizer("sparse_grams", **params)


def test_sbbf_sparse_grams_prunes_short_and_long_substrings():
    import skipidx

    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (id UInt64, s String, INDEX i s TYPE sbbf('sparse_grams', fpp = 0.01)) "
               "ORDER BY id SETTINGS index_granularity = 64")
        rng = np.random.default_rng(3)
        words = ["alpha", "beta", "gamma", "delta", "omega", "kappa"]
        msgs = [" ".join(rng.choice(words, 4)) for _ in range(4096)]
        msgs[1000] = "needle xyzzy here"
        db.insert("t", pa.table({"id": np.arange(4096, dtype=np.uint64), "s": msgs}))
        for pat in ("%zzy%", "%xyzzy%", "%dle xyzzy h%"):
            r = db.sql(f"SELECT count() FROM t WHERE s LIKE '{pat}'")
            assert r.fetchall() == [(1,)]
            assert r.stats.granules_selected == 1, pat
