"""Dictionary-encoded pages decoded by skipidx (skipidx.store.parquet_pages.dictionary_indices
against a dictionary decoded once and cached per file version): the RLE / bit-packed
decoder against an encoder written here, the indices against pyarrow's reads of the same
pages, = / IN / NOT IN over zoned external tables against DuckDB for dictionary- and
plain-encoded columns, and a file replaced under the same identity never read through a
stale cached dictionary."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.store import external as ext
from skipidx.store import parquet_pages as pp

duckdb = pytest.importorskip("duckdb")


@pytest.fixture(autouse=True)
def _kernel_path(monkeypatch):
    """The indices decoded by the kernel from the first page on (a process that has not
    loaded numba reads its first pages framed for pyarrow: tested below)."""
    from skipidx.core import lazy

    monkeypatch.setattr(lazy, "_numpy_left", [0])


def _encode_hybrid(vals: np.ndarray, bw: int, rng) -> bytes:
    """The values as a random mix of RLE runs and bit-packed runs (the Parquet spec's layout)."""
    out = bytearray()
    i = 0
    n = len(vals)
    while i < n:
        if rng.random() < 0.4:
            k = int(rng.integers(1, 40))
            v = int(vals[i])
            j = i
            while j < n and j - i < k and vals[j] == v:
                j += 1
            h = (j - i) << 1
            while h >= 0x80:
                out.append((h & 0x7F) | 0x80)
                h >>= 7
            out.append(h)
            out += v.to_bytes((bw + 7) // 8, "little")
            i = j
        else:
            groups = int(rng.integers(1, 70))
            chunk = [int(x) for x in vals[i:i + groups * 8]]
            chunk += [0] * (groups * 8 - len(chunk))        # the last group padded
            h = (groups << 1) | 1
            while h >= 0x80:
                out.append((h & 0x7F) | 0x80)
                h >>= 7
            out.append(h)
            acc = 0
            for k, x in enumerate(chunk):
                acc |= x << (k * bw)
            out += acc.to_bytes(groups * bw, "little")
            i += groups * 8
    return bytes(out)


@pytest.mark.parametrize("bw", [1, 2, 3, 7, 8, 9, 13, 16, 17, 24, 31, 32])
def test_rle_hybrid_decodes_what_the_spec_encodes(bw):
    rng = np.random.default_rng(bw)
    n = 5000
    top = (1 << bw) - 1
    vals = rng.integers(0, top + 1, n, dtype=np.int64)
    vals[rng.random(n) < 0.3] = top               # repeats (RLE runs) and the widest value
    vals = np.repeat(vals, rng.integers(1, 4, n))[:n]
    data = b"\x07\x07" + _encode_hybrid(vals, bw, rng)
    got = pp._rle_hybrid(data, 2, len(data), bw, n)
    assert np.array_equal(got.astype(np.int64) & 0xFFFFFFFF, vals)
    for skip, count in ((1, 10), (7, 1), (8, 8), (333, 2000), (n - 5, 5), (n, 0)):
        got = pp._rle_hybrid(data, 2, len(data), bw, count, skip)
        assert np.array_equal(got.astype(np.int64) & 0xFFFFFFFF, vals[skip:skip + count]), (skip, count)
    with pytest.raises(skipidx.SkipidxError):
        pp._rle_hybrid(data, 2, len(data) - (bw + 7) // 8 - 1, bw, n)   # runs cut short
    assert pp._rle_hybrid(data, 2, 2, 0, 5).tolist() == [0] * 5


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = np.array([f"key-{i:05d}" for i in range(40_000)])
    k = keys[rng.integers(0, 40_000, n)]
    s = pa.array([None if rng.random() < 0.07 else str(x) for x in k], pa.string())
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "s": s,
        "u": pa.array(rng.integers(0, 90_000, n).astype(np.uint64) * 7919),
        "small": pa.array(rng.integers(0, 300, n).astype(np.uint16)),
        "f": pa.array(rng.integers(0, 900, n) / 8.0, mask=rng.random(n) < 0.05),
        "req": pa.array(k, pa.string()),
    }, schema=pa.schema([("id", pa.int64()), ("s", pa.string()), ("u", pa.uint64()), ("small", pa.uint16()),
                         ("f", pa.float64()), pa.field("req", pa.string(), nullable=False)]))


WRITERS = [
    {"compression": "snappy"},
    {"compression": "zstd", "data_page_version": "2.0"},
    {"compression": "none"},
    {"compression": "gzip", "data_page_version": "2.0", "use_dictionary": ["s", "u"]},
    {"compression": "snappy", "use_dictionary": False},
]


@pytest.mark.parametrize("kw", WRITERS, ids=[str(sorted(w.items()))[:50] for w in WRITERS])
def test_dictionary_indices_equal_pyarrow(tmp_path, kw):
    n = 20_000
    t = _table(n, 5)
    p = str(tmp_path / "f.parquet")
    pq.write_table(t, p, row_group_size=n, data_page_size=4 << 10, write_batch_size=700, **kw)
    md = pq.ParquetFile(p).metadata
    whole = pq.read_table(p)
    fd = os.open(p, os.O_RDONLY)
    decoded = 0
    try:
        els = pp.footer_schema_elements(fd, os.fstat(fd).st_size)
        rng = np.random.default_rng(2)
        for j in range(md.num_columns):
            name = md.schema.column(j).path
            lay = pp.chunk_layout(fd, md.row_group(0).column(j), n)
            k = lay.rows.shape[0]
            want_type = whole.schema.field(name).type
            for pages in (np.arange(k), np.array([k - 1]), np.unique(rng.integers(0, k, 3))):
                if not pp.dictionary_pages(lay, pages):
                    assert lay.dict_span is None or kw.get("use_dictionary") is not None
                    continue
                if lay.physical == "BYTE_ARRAY":
                    ch = pp.decode_pages(fd, lay, pages, els[j + 1], name, dictionary=True).chunk(0)
                    dic = ch.dictionary
                    assert len(dic) == lay.dict_values
                    own = pp.plain_string_dictionary(lay, pp.dictionary_page(fd, lay), want_type)
                    assert own is not None and own.equals(dic.cast(want_type))
                else:
                    dic = pp.plain_dictionary(lay, pp.dictionary_page(fd, lay), want_type)
                rows = np.concatenate([np.arange(lay.first_rows[i], lay.first_rows[i] + lay.rows[i]) for i in pages])
                m = rows.shape[0]
                for first, stop in ((0, m), (int(rng.integers(0, m)), m), (0, int(rng.integers(1, m + 1))),
                                    (m // 3, m // 3 + 1)):
                    idx, valid = pp.dictionary_indices(fd, lay, pages, md.schema.column(j).max_definition_level,
                                                       len(dic), first, stop)
                    got = dic.take(pa.array(idx, mask=None if valid is None else ~valid))
                    want = whole.column(name).take(pa.array(rows[first:stop])).combine_chunks()
                    assert got.cast(want.type).equals(want), (name, pages, first, stop)
                decoded += 1
    finally:
        os.close(fd)
    assert decoded > 0 or kw.get("use_dictionary") is False


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_string_dictionary_pages_unpacked_by_the_kernel(tmp_path, compression):
    """BYTE_ARRAY dictionary pages unpacked here equal pyarrow's values (empty, long and
    non-UTF-8 values); a non-UTF-8 value read as a string gives None (pyarrow decides);
    a page cut short is an error, never a short dictionary."""
    vals = [b"", b"a", b"\xff\xfe not utf-8", b"x" * 70_000, "\u00e9t\u00e9".encode()] + [b"k%d" % i for i in range(500)]
    rng = np.random.default_rng(4)
    col = pa.array([vals[i] for i in rng.integers(0, len(vals), 6000)], pa.binary())
    p = str(tmp_path / "b.parquet")
    pq.write_table(pa.table({"b": col}), p, compression=compression)
    md = pq.ParquetFile(p).metadata
    fd = os.open(p, os.O_RDONLY)
    try:
        lay = pp.chunk_layout(fd, md.row_group(0).column(0), md.num_rows)
        raw = pp.dictionary_page(fd, lay)
        got = pp.plain_string_dictionary(lay, raw, pa.binary())
        assert len(got) == lay.dict_values and set(got.to_pylist()) == set(vals)
        assert got.take(pa.array(pp.dictionary_indices(fd, lay, np.arange(lay.rows.shape[0]), 1, len(got))[0])
                        ).equals(col)
        assert pp.plain_string_dictionary(lay, raw, pa.string()) is None
        assert pp.plain_string_dictionary(lay, raw, pa.large_binary()).type == pa.large_binary()
        if compression == "none":
            with pytest.raises(skipidx.SkipidxError):
                pp.plain_string_dictionary(lay, raw[:-3], pa.binary())
    finally:
        os.close(fd)


def _lake(root, tables_kw):
    root.mkdir()
    for i, kw in enumerate(tables_kw):
        t = _table(30_000, 20 + i).set_column(0, "id", pa.array(np.arange(30_000, dtype=np.int64) + i * 30_000))
        pq.write_table(t, root / f"f{i}.parquet", row_group_size=[10_000, 30_000, 16_384, 12_000, 30_000][i],
                       data_page_size=6 << 10, **kw)


def _zoned(db, root, idx, zone_rows=2048):
    orig = ext.DEFAULT_ZONE_ROWS
    ext.DEFAULT_ZONE_ROWS = zone_rows
    try:
        db.sql(f"CREATE TABLE lake ({idx}) ENGINE = ParquetFiles('{root}/*.parquet')")
    finally:
        ext.DEFAULT_ZONE_ROWS = orig


def test_in_and_equality_equal_duckdb_on_dictionary_and_plain_columns(tmp_path, monkeypatch):
    root = tmp_path / "lake"
    _lake(root, WRITERS)
    db = skipidx.connect(str(tmp_path / "db"))
    _zoned(db, root, "INDEX si s TYPE bloom_filter(0.01), INDEX ui u TYPE bloom_filter(0.01), "
                     "INDEX fi f TYPE bloom_filter(0.01), INDEX smi small TYPE bloom_filter(0.01), "
                     "INDEX ri req TYPE bloom_filter(0.01)", zone_rows=1024)
    glob = f"{root}/*.parquet"
    some = duckdb.sql(f"SELECT s, u, f, small, req FROM read_parquet('{glob}') WHERE id % 9973 = 5 "
                      "AND s IS NOT NULL").fetchall()
    s5 = ", ".join(repr(r[0]) for r in some[:5])
    u5 = ", ".join(str(r[1]) for r in some[:5])
    cases = [f"s = {some[0][0]!r}", f"s IN ({s5}, 'absent')", f"s IN ({s5}) AND id % 2 = 0",
             f"u = {some[1][1]}", f"u IN ({u5}, 3)", f"f = {some[2][2]}", f"small IN ({some[0][3]}, {some[3][3]})",
             f"req IN ({s5})", f"s NOT IN ({s5}) AND id < 700", f"s IN ({s5}) OR s IS NULL AND id < 300"]
    ext._DICTIONARIES.clear()
    for where in cases:
        q = f"SELECT id, s, u, small, f, req FROM lake WHERE {where} ORDER BY id"
        r = db.sql(q)
        d = duckdb.sql(f"SELECT id, s, u, small, f, req FROM read_parquet('{glob}') WHERE {where} ORDER BY id").fetchall()
        assert r.fetchall() == d, where
        assert db.sql(f"SELECT count() FROM lake WHERE {where}").fetchall()[0][0] == len(d), where
        if where.split()[0] in ("s", "u", "req") and "NOT IN" not in where and "NULL" not in where:
            assert r.stats.granules_selected < r.stats.granules_total / 2, where
    # the decoded dictionaries were used (and cached) for zones read inside row groups
    assert len(ext._DICTIONARIES) >= 4
    # and give what the framed-page path gives
    monkeypatch.setattr(ext.ExternalFile, "_dictionary_rows", lambda *a, **k: None)
    for where in cases[:6]:
        q = f"SELECT id, s, u, small, f, req FROM lake WHERE {where} ORDER BY id"
        d = duckdb.sql(f"SELECT id, s, u, small, f, req FROM read_parquet('{glob}') WHERE {where} ORDER BY id").fetchall()
        assert db.sql(q).fetchall() == d, where
    db.close()


def test_a_file_replaced_under_the_same_identity_never_uses_a_stale_dictionary(tmp_path):
    """The key column permuted inside each zone: the same keys per zone (the sidecars stay
    right), the same footer bytes, size and mtime (the same identity), but another
    dictionary page (keys in another first-seen order) and so other (id, key) pairs. A
    dictionary cached from the old bytes must not be used for the new ones."""
    from skipidx.store.lake import identity_of

    root = tmp_path / "lake"
    root.mkdir()
    n, zone = 8192, 1024
    rng = np.random.default_rng(9)
    keys = np.array([f"k{i:05d}" for i in rng.permutation(n)])
    ids = np.arange(n, dtype=np.int64)

    def write(path, order):
        pq.write_table(pa.table({"id": ids, "k": pa.array(keys[order])}), path, row_group_size=n,
                       compression="none", data_page_size=2 << 10, write_statistics=True)

    p = str(root / "a.parquet")
    write(p, np.arange(n))
    db = skipidx.connect(str(tmp_path / "db"))
    _zoned(db, root, "INDEX ki k TYPE bloom_filter(0.01)", zone_rows=zone)
    wanted = [str(keys[5]), str(keys[3000]), str(keys[8000])]
    where = "k IN (" + ", ".join(repr(x) for x in wanted) + ")"
    q = f"SELECT id, k FROM lake WHERE {where} ORDER BY id"
    before = db.sql(q)
    assert before.fetchall() == [(5, wanted[0]), (3000, wanted[1]), (8000, wanted[2])]
    assert before.stats.granules_selected < before.stats.granules_total
    fd = os.open(p, os.O_RDONLY)
    ident, tail = identity_of(fd, p)
    os.close(fd)
    assert any(k[0] == ident for k in list(ext._DICTIONARIES._d)), "the query cached the page dictionary"
    # the same keys in another order inside each zone
    order = np.concatenate([z + rng.permutation(zone) for z in range(0, n, zone)])
    tmp = str(tmp_path / "b.parquet")
    write(tmp, order)
    os.replace(tmp, p)
    os.utime(p, ns=(ident.mtime_ns, ident.mtime_ns))
    fd = os.open(p, os.O_RDONLY)
    ident2, tail2 = identity_of(fd, p)
    os.close(fd)
    assert tail2 == tail and ident2 == ident, "the replacement must keep the identity for this test to mean anything"
    d = duckdb.sql(f"SELECT id, k FROM read_parquet('{p}') WHERE {where} ORDER BY id").fetchall()
    assert d != [(5, wanted[0]), (3000, wanted[1]), (8000, wanted[2])]
    assert db.sql(q).fetchall() == d
    assert db.sql(f"SELECT count() FROM lake WHERE {where} AND id IN (5, 3000, 8000)").fetchall()[0][0] == \
        sum(1 for i, _ in d if i in (5, 3000, 8000))
    db.close()


@pytest.mark.parametrize("window", [1, 7, 64])
def test_page_headers_longer_than_the_read_window(tmp_path, monkeypatch, window):
    """The page walk reads a window at each header and widens it where the header is longer:
    windows shorter than a header give the layout of one far longer than any header."""
    p = str(tmp_path / "f.parquet")
    pq.write_table(_table(12_000, 4), p, row_group_size=12_000, data_page_size=2 << 10, write_batch_size=300)
    md = pq.ParquetFile(p).metadata
    fd = os.open(p, os.O_RDONLY)
    try:
        for j in range(md.num_columns):
            with monkeypatch.context() as m:
                m.setattr(pp, "_HEADER_WINDOW", 1 << 24)
                whole = pp.chunk_layout(fd, md.row_group(0).column(j), 12_000)
            with monkeypatch.context() as m:
                m.setattr(pp, "_HEADER_WINDOW", window)
                small = pp.chunk_layout(fd, md.row_group(0).column(j), 12_000)
            assert whole.rows.shape[0] > 1
            for f in ("offsets", "lengths", "header_lengths", "first_rows", "rows", "kinds", "encoding", "uncompressed"):
                assert np.array_equal(getattr(whole, f), getattr(small, f)), f
            assert (whole.dict_span, whole.dict_values) == (small.dict_span, small.dict_values)
    finally:
        os.close(fd)


def test_a_new_process_reads_dictionary_pages_without_numba(tmp_path):
    """A new process's first point query over an external table loads no numba (its pages
    framed for pyarrow, as before); the answer equals DuckDB's."""
    import json
    import subprocess
    import sys
    import textwrap

    root = tmp_path / "lake"
    _lake(root, WRITERS[:2])
    db = skipidx.connect(str(tmp_path / "db"))
    _zoned(db, root, "INDEX si s TYPE bloom_filter(0.01)", zone_rows=1024)
    db.close()
    some = duckdb.sql(f"SELECT s FROM read_parquet('{root}/*.parquet') WHERE id % 9973 = 5 AND s IS NOT NULL").fetchall()
    where = "s IN (" + ", ".join(repr(r[0]) for r in some[:3]) + ")"
    code = textwrap.dedent(f"""
        import json, sys
        import skipidx
        r = skipidx.connect({str(tmp_path / "db")!r}).sql("SELECT id, s FROM lake WHERE {where} ORDER BY id")
        print(json.dumps({{"rows": r.fetchall(), "kept": r.stats.granules_selected, "total": r.stats.granules_total,
                          "numba": "numba" in sys.modules}}))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    d = duckdb.sql(f"SELECT id, s FROM read_parquet('{root}/*.parquet') WHERE {where} ORDER BY id").fetchall()
    assert [tuple(x) for x in got["rows"]] == d and got["kept"] < got["total"] / 2
    assert not got["numba"]
