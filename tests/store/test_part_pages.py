"""Dictionary-encoded String columns of parts read page by page (skipidx.store.part_pages).

The page path must give exactly what pyarrow's read gives (same values, NULLs,
types) for every codec, nullable or not, across row groups and parts, and step
aside (None) wherever it does not apply.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.core.errors import SkipidxError
from skipidx.store import part_pages

WORDS = ["alpha", "beta", "gamma", "délta", "", "x" * 40, "ünïcødé ✓", "tail"]
DDL = ("CREATE TABLE t (id UInt64, s Nullable(String) CODEC(LZ4), k String CODEC(ZSTD), "
       "u String CODEC(NONE), d String, n Int64) ORDER BY id SETTINGS index_granularity = 300")


def _rows(lo: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    s = [None if x == 0 else WORDS[x % len(WORDS)] + str(x % 13) for x in rng.integers(0, 60, n).tolist()]
    k = [WORDS[x] for x in rng.integers(0, len(WORDS), n).tolist()]
    u = [f"u{x}" for x in rng.integers(0, 40, n).tolist()]
    d = [f"trace-{x:08x}" for x in rng.integers(0, 1 << 30, n).tolist()]     # ~one value per row
    return pa.table({"id": pa.array(np.arange(lo, lo + n), pa.uint64()), "s": pa.array(s, pa.string()),
                     "k": pa.array(k, pa.string()), "u": pa.array(u, pa.string()), "d": pa.array(d, pa.string()),
                     "n": pa.array(rng.integers(0, 9, n), pa.int64())})


@pytest.fixture(scope="module")
def db():
    import numba  # noqa: F401  (the page path runs where numba is loaded)

    with skipidx.connect() as d:
        d.sql(DDL)
        d.insert("t", _rows(0, 2000, 1))
        d.insert("t", _rows(2000, 1300, 2))
        yield d


def _spy(monkeypatch) -> list:
    took = []
    real = part_pages.read_dictionary_columns

    def spy(*a, **k):
        got = real(*a, **k)
        took.append(got is not None)
        return got
    monkeypatch.setattr("skipidx.store.part.read_dictionary_columns", spy)
    return took


@pytest.mark.parametrize("cols", [["s"], ["k"], ["u"], ["d"], ["s", "k", "u"]])
def test_page_reads_equal_pyarrow_reads(db, cols, monkeypatch):
    took = _spy(monkeypatch)
    rng = np.random.default_rng(len(cols))
    with db.catalog.table("t").snapshot() as snap:
        for p in snap.parts:
            assert set(cols) <= p.dictionary_columns or cols == ["d"], p.dictionary_columns
            n = p.n_granules
            for ranges in ([(0, n)], [(0, 1)], [(n - 1, n)],
                           sorted({(int(a), int(a) + 1) for a in rng.integers(0, n, 3)})):
                for _ in range(2):           # the second read hits the cached dictionaries
                    got = p.read(cols, ranges, dictionary=cols)
                monkeypatch.setattr(part_pages, "numba_loaded", lambda: False)
                want = p.read(cols, ranges, dictionary=cols)
                monkeypatch.undo()
                took = _spy(monkeypatch)
                assert got.schema == want.schema, (cols, ranges)
                for c in cols:
                    a, b = got.column(c), want.column(c)
                    if pa.types.is_dictionary(a.type):
                        a = pa.chunked_array([x.dictionary_decode() for x in a.chunks], a.type.value_type)
                        b = pa.chunked_array([x.dictionary_decode() for x in b.chunks], b.type.value_type)
                    assert a.to_pylist() == b.to_pylist(), (c, ranges)
    if all(c in ("s", "k", "u") for c in cols):
        # the low-cardinality columns are dictionary-written: the page path answered
        db.catalog.table("t").snapshot().close()
        with db.catalog.table("t").snapshot() as snap:
            snap.parts[0].read(cols, [(0, 2)], dictionary=cols)
        assert took and all(took), "the page path did not answer"


@pytest.mark.parametrize("where", ["s IN ('alpha1', 'beta2', 'tail7')", "s = 'gamma3'", "s IS NULL",
                                   "k IN ('', 'ünïcødé ✓')", "u = 'u17' OR u = 'u39'", "NOT (s IN ('alpha1'))",
                                   "lower(k) = 'délta'"])
def test_counts_equal_pyarrow(db, where):
    data = pa.concat_tables([_rows(0, 2000, 1), _rows(2000, 1300, 2)])
    import duckdb

    con = duckdb.connect()
    con.register("data", data)
    want = con.execute(f"SELECT count(), sum(id) FROM data WHERE {where}").fetchone()
    for _ in range(2):
        got = db.sql(f"SELECT count(), sum(id) FROM t WHERE {where}").fetchall()[0]
        assert (got[0], got[1] or None) == (want[0], want[1]), where
    rows = db.sql(f"SELECT id, s, k FROM t WHERE {where} ORDER BY id").to_arrow()
    assert rows.column("id").to_pylist() == [r[0] for r in con.execute(
        f"SELECT id FROM data WHERE {where} ORDER BY id").fetchall()]


def _ident(path: str) -> tuple:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _bytes(path: str) -> pa.Buffer:
    with open(path, "rb") as f:
        return pa.py_buffer(f.read())


def test_steps_aside_for_invalid_utf8_and_plain_pages(tmp_path):
    import numba  # noqa: F401

    path = str(tmp_path / "f.parquet")
    t = pa.table({"s": pa.array([b"ok", b"\xff\xfe", b"ok"] * 100, pa.binary()),
                  "p": pa.array([f"v{i}" for i in range(300)], pa.string())})
    pq.write_table(t, path, use_dictionary=["s"], row_group_size=150, compression="lz4")
    md = pq.read_metadata(path)
    ident = _ident(path)
    # not UTF-8: no answer for a String column (pyarrow's read and the UTF-8 check report it) ...
    src = _bytes(path)
    assert part_pages.read_dictionary_columns(path, ident, md, [0, 1], [pa.field("s", pa.string())], src) is None
    # ... and exactly pyarrow's bytes for a Binary one
    got = part_pages.read_dictionary_columns(path, ident + ("b",), md, [0, 1], [pa.field("s", pa.binary())], src)
    assert got is not None
    assert pc.cast(got[0], pa.binary()).to_pylist() == t.column("s").to_pylist()
    # PLAIN pages (no dictionary) and an unknown column: no answer
    assert part_pages.read_dictionary_columns(path, ident, md, [0], [pa.field("p", pa.string())], src) is None
    assert part_pages.read_dictionary_columns(path, ident, md, [0], [pa.field("zz", pa.string())], src) is None
    # a file that is not the one the caller looked at (another identity): no answer
    assert part_pages.read_dictionary_columns(path, (0, 0, 0, 0), md, [0], [pa.field("s", pa.binary())], src) is None


def test_damaged_page_is_not_an_answer(tmp_path):
    """A data page whose indices point past the dictionary is never turned into values."""
    import numba  # noqa: F401
    from skipidx.store import parquet_pages as pp

    path = str(tmp_path / "f.parquet")
    t = pa.table({"s": pa.array(["a", "b", "c"] * 50, pa.string())},
                 schema=pa.schema([pa.field("s", pa.string(), nullable=False)]))
    pq.write_table(t, path, use_dictionary=True, compression="none")
    md = pq.read_metadata(path)
    assert part_pages.read_dictionary_columns(path, _ident(path), md, [0], [pa.field("s", pa.string())],
                                              _bytes(path)) is not None
    with open(path, "rb") as f:
        lay = pp.chunk_layout(f.fileno(), md.row_group(0).column(0), md.num_rows)
    off = int(lay.offsets[0] + lay.header_lengths[0])
    raw = bytearray(open(path, "rb").read())
    # the page holds: bit width, then RLE/bit-packed runs; widen the bit width to 8 with a run of 255s
    bw_pos = off
    assert raw[bw_pos] == 2, raw[bw_pos:bw_pos + 4]
    raw[bw_pos + 1:bw_pos + 4] = bytes([0x02, 0xFF, 0x02])     # run of 1 value 255 (bit width 2 -> 0xFF & 3)
    raw[bw_pos] = 8
    with open(path, "wb") as f:
        f.write(raw)
    try:
        got = part_pages.read_dictionary_columns(path, _ident(path) + ("damaged",), md, [0],
                                                 [pa.field("s", pa.string())], _bytes(path))
    except SkipidxError:
        got = None
    assert got is None


MEMBERSHIP_WHERES = ["s IN ('alpha1', 'beta2', 'tail7')", "s NOT IN ('alpha1', 'beta2')", "s = 'gamma3'",
                     "s != 'gamma3'", "NOT (s IN ('alpha1'))", "s IN ('alpha1', NULL)", "s NOT IN ('alpha1', NULL)",
                     "(s IN ('alpha1')) IS NULL", "s IN ('none of them', 'nor this')", "k IN ('', 'ünïcødé ✓')",
                     "k = ''", "'délta' = k", "u IN ('u1', 'u2', 'u3') AND s != 'alpha1'",
                     "s = 'gamma3' OR k = 'tail'"]


def _answers(db, wheres):
    return [(db.sql(f"SELECT count(), sum(id) FROM t WHERE {w}").fetchall(),
             db.sql(f"SELECT id FROM t WHERE {w} ORDER BY id LIMIT 30").fetchall()) for w in wheres]


def test_membership_over_stable_dictionaries_equals_the_general_evaluation(db, monkeypatch):
    from skipidx.expr import evaluate as E

    calls = []
    real = E._membership_on_hashes
    monkeypatch.setattr(E, "_membership_on_hashes", lambda *a: calls.append(1) or real(*a))
    for _ in range(2):
        fast = _answers(db, MEMBERSHIP_WHERES)
    assert sum(1 for _ in calls), "the membership path did not run"
    monkeypatch.setattr(E, "_membership_on_hashes", lambda *a: None)
    assert fast == _answers(db, MEMBERSHIP_WHERES)


def test_membership_with_colliding_hashes_compares_the_bytes(db, monkeypatch):
    """Every value's and every constant's hash made one: each value is then compared byte by byte."""
    from skipidx.core import hashing
    from skipidx.expr import evaluate as E

    monkeypatch.setattr(E, "_membership_on_hashes", lambda *a: None)
    want = _answers(db, MEMBERSHIP_WHERES)
    monkeypatch.undo()
    _answers(db, MEMBERSHIP_WHERES)        # the dictionaries read (and registered)
    stable = E._STABLE_DICTIONARIES
    assert len(stable), "no dictionary was registered"
    saved = dict(stable._d)
    hits = []
    try:
        for k, (dic, h, offs, data) in saved.items():
            stable._d[k] = (dic, np.full_like(h, 42), offs, data)
        E._NEEDLE_HASHES.clear()
        monkeypatch.setattr(hashing, "xxh64_array", lambda a, seed=0: np.full(len(a), 42, dtype=np.uint64))
        real = E._membership_on_hashes
        monkeypatch.setattr(E, "_membership_on_hashes", lambda *a: (lambda r: hits.append(r is not None) or r)(
            real(*a)))
        assert _answers(db, MEMBERSHIP_WHERES) == want
        assert any(hits)
    finally:
        stable._d.update(saved)
        E._NEEDLE_HASHES.clear()
