"""Page-level reads of Parquet column chunks (skipidx.store.parquet_pages) against pyarrow's
own reads of the same files: every codec, data page v1/v2, dictionary / plain / delta
encodings, NULLs; and external tables whose zones are finer than their row groups."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.store import parquet_pages as pp

duckdb = pytest.importorskip("duckdb")


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "kraken", "delta", "éclair", ""])
    msg = [None if rng.random() < 0.05 else " ".join(rng.choice(words, 3)) + f" {i}" for i in range(n)]
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "u": pa.array(rng.integers(0, 60000, n).astype(np.uint16)),
        "f": pa.array(rng.random(n)),
        "msg": pa.array(msg, pa.string()),
        "low": pa.array(rng.choice(np.array(["a", "b", "c"]), n)),
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1000, pa.timestamp("ms")),
        "flag": pa.array(rng.random(n) < 0.5),
    })


WRITERS = [
    {"compression": "snappy"},
    {"compression": "zstd", "data_page_version": "2.0"},
    {"compression": "gzip", "use_dictionary": False},
    {"compression": "none", "data_page_version": "2.0", "use_dictionary": ["low"]},
    {"compression": "snappy", "use_dictionary": False, "column_encoding": {"msg": "DELTA_BYTE_ARRAY", "id": "DELTA_BINARY_PACKED"}},
    {"compression": "lz4", "use_dictionary": False, "column_encoding": {"msg": "DELTA_LENGTH_BYTE_ARRAY"}},
]


@pytest.mark.parametrize("kw", WRITERS, ids=[str(sorted(w.items()))[:60] for w in WRITERS])
def test_pages_decode_like_pyarrow(tmp_path, kw):
    n = 30_000
    t = _table(n, 3)
    p = str(tmp_path / "f.parquet")
    pq.write_table(t, p, row_group_size=n, data_page_size=16 << 10, write_batch_size=512, **kw)
    md = pq.ParquetFile(p).metadata
    whole = pq.read_table(p)
    fd = os.open(p, os.O_RDONLY)
    try:
        els = pp.footer_schema_elements(fd, os.fstat(fd).st_size)
        assert len(els) == md.num_columns + 1
        rng = np.random.default_rng(1)
        for j in range(md.num_columns):
            name = md.schema.column(j).path
            try:
                lay = pp.chunk_layout(fd, md.row_group(0).column(j), n)
            except skipidx.SkipidxError:
                continue            # (a codec this module leaves to pyarrow: the row group is read whole)
            assert int(lay.rows.sum()) == n and lay.first_rows[0] == 0
            k = lay.rows.shape[0]
            for pages in (np.arange(k), np.array([k - 1]), np.unique(rng.integers(0, k, 3))):
                col = pp.decode_pages(fd, lay, pages, els[j + 1], name)
                rows = np.concatenate([np.arange(lay.first_rows[i], lay.first_rows[i] + lay.rows[i]) for i in pages])
                want = whole.column(name).take(pa.array(rows))
                assert col.cast(want.type).equals(want), (name, pages)
            if name == "msg":
                assert k > 3
                hit = pp.matching_pages(fd, lay, [b"kraken", b"1"])
                got = pp.matching_rows(lay, hit)
                vals = whole.column("msg").to_pylist()
                need = [i for i, v in enumerate(vals) if v is not None and "kraken" in v and "1" in v]
                assert set(need) <= set(got.tolist())           # never a page with a match dropped
                if lay.encoding[0] in (0, 6) or lay.dict_span is not None:
                    miss = pp.matching_pages(fd, lay, [b"absent-needle"])
                    whole_values = all(int(e) in (0, 2, 6, 8) for e in lay.encoding)
                    assert not miss.any() or not whole_values
    finally:
        os.close(fd)


def test_zoned_external_table_equals_duckdb(tmp_path):
    """Zones of 4096 rows over row groups of 10k-50k rows written with several codecs and page
    versions: hasToken / LIKE / = / ranges / IS NULL give DuckDB's rows; zones kept are fewer
    than the row groups' rows; db.prune names row groups; a table made before zones (its
    state without zone_rows) still prunes by row group with its sidecars."""
    from skipidx.store import external as ext

    root = tmp_path / "lake"
    root.mkdir()
    for i, kw in enumerate(WRITERS[:4]):
        t = _table(40_000, 10 + i).set_column(0, "id", pa.array(np.arange(40_000, dtype=np.int64) + i * 40_000))
        pq.write_table(t, root / f"f{i}.parquet", row_group_size=[10_000, 50_000, 16_384, 40_000][i],
                       data_page_size=8 << 10, **kw)
    db = skipidx.connect(str(tmp_path / "db"))
    idx = "INDEX tok msg TYPE sbbf('token'), INDEX ng msg TYPE sbbf('ngram', n = 3), INDEX mm id TYPE minmax"
    tdir = os.path.join(db.path, "logs")
    orig = ext.DEFAULT_ZONE_ROWS
    ext.DEFAULT_ZONE_ROWS = 4096
    try:
        db.sql(f"CREATE TABLE logs ({idx}) ENGINE = ParquetFiles('{root}/*.parquet')")
    finally:
        ext.DEFAULT_ZONE_ROWS = orig
    assert ext._read_state(tdir).zone_rows == 4096
    rare = duckdb.sql(f"SELECT msg FROM read_parquet('{root}/*.parquet') WHERE id % 7919 = 11 AND msg IS NOT NULL").fetchall()
    tok = rare[0][0].split()[-1]
    cases = [(f"hasToken(msg, '{tok}')", f"regexp_matches(msg, '(^|[^A-Za-z0-9\\x80-\\xff]){tok}([^A-Za-z0-9]|$)')"),
             (f"msg LIKE '%kraken {tok}'", f"msg LIKE '%kraken {tok}'"),
             (f"msg = {rare[1][0]!r}", f"msg = {rare[1][0]!r}"),
             ("id BETWEEN 45000 AND 45100", "id BETWEEN 45000 AND 45100"),
             ("msg IS NULL AND id < 300", "msg IS NULL AND id < 300"),
             ("hasToken(msg, 'nothere')", "false")]
    for where, dwhere in cases:
        r = db.sql(f"SELECT id, u, f, msg, low, ts, flag FROM logs WHERE {where} ORDER BY id")
        d = duckdb.sql(f"SELECT id, u, f, msg, low, ts, flag FROM read_parquet('{root}/*.parquet') "
                       f"WHERE {dwhere} ORDER BY id").fetchall()
        assert r.fetchall() == d, where
        assert r.stats.granules_total > 4 * 8 and r.stats.granules_selected < r.stats.granules_total / 4, where
        c = db.sql(f"SELECT count() FROM logs WHERE {where}").fetchall()[0][0]
        assert c == len(d)
    kept = db.prune("logs", f"hasToken(msg, '{tok}')")
    assert kept and all(rgs == sorted(set(rgs)) for _, rgs in kept)
    got = []
    for p, rgs in kept:
        tt = pq.ParquetFile(p).read_row_groups(rgs, columns=["msg"])
        got += [m for m in tt["msg"].to_pylist() if m is not None and m.split()[-1] == tok]
    assert len(got) >= 1
    text = "\n".join(x[0] for x in db.sql(f"EXPLAIN indexes = 1 SELECT id FROM logs WHERE hasToken(msg, '{tok}')").fetchall())
    assert "Zones: " in text and "Row groups: " in text
    # a table made before zones: state without zone_rows -> granules are row groups
    db.sql(f"CREATE TABLE old ({idx}) ENGINE = ParquetFiles('{root}/*.parquet')")
    odir = os.path.join(db.path, "old")
    with ext.WriteLock(odir):
        st = ext._read_state(odir)
        st.zone_rows = 0
        st.files = {}
        ext._write_state(odir, st)
    assert "zone_rows" not in ext._read_state(odir).to_json()
    db.sql("ALTER TABLE old REFRESH")
    r = db.sql(f"SELECT id FROM old WHERE hasToken(msg, '{tok}') ORDER BY id")
    assert r.fetchall() == db.sql(f"SELECT id FROM logs WHERE hasToken(msg, '{tok}') ORDER BY id").fetchall()
    assert r.stats.granules_total == sum(pq.ParquetFile(root / f"f{i}.parquet").num_row_groups for i in range(4))
    assert r.stats.index("tok").granules_after < r.stats.granules_total
    db.close()


def test_external_lz4_pages_searched_and_equal_duckdb(tmp_path):
    """pyarrow's "LZ4" chunks (Parquet LZ4_RAW) are decompressed and searched by the page
    prefilter like every other codec: a needle absent from a page skips it, and the rows
    equal DuckDB's."""
    root = tmp_path / "lake"
    root.mkdir()
    t = _table(30_000, 5)
    msg = t.column("msg").to_pylist()
    msg[12_345] = "a zebrafish here"
    t = t.set_column(t.schema.get_field_index("msg"), "msg", pa.array(msg, pa.string()))
    pq.write_table(t, root / "f.parquet", row_group_size=30_000, data_page_size=8 << 10, compression="lz4",
                   use_dictionary=False)
    p = str(root / "f.parquet")
    md = pq.ParquetFile(p).metadata
    j = [md.schema.column(k).path for k in range(md.num_columns)].index("msg")
    fd = os.open(p, os.O_RDONLY)
    try:
        lay = pp.chunk_layout(fd, md.row_group(0).column(j), 30_000)
        assert lay.codec == "LZ4", lay.codec
        hit = pp.matching_pages(fd, lay, [b"zebrafish"])
        assert int(hit.sum()) == 1 < hit.shape[0], "LZ4 pages are searched, not all kept"
        assert not pp.matching_pages(fd, lay, [b"absent-needle"]).any()
    finally:
        os.close(fd)
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql(f"CREATE TABLE logs (INDEX tok msg TYPE sbbf('token')) ENGINE = ParquetFiles('{root}/*.parquet')")
    for where, dwhere in [("hasToken(msg, 'kraken')", "regexp_matches(msg, '(^|[^A-Za-z0-9])kraken([^A-Za-z0-9]|$)')"),
                          ("msg LIKE '%raken%'", "msg LIKE '%raken%'"), ("hasToken(msg, 'zebrafish')", "msg = 'a zebrafish here'"),
                          ("msg LIKE '%ebrafis%'", "msg LIKE '%ebrafis%'")]:
        got = db.sql(f"SELECT count() FROM logs WHERE {where}").fetchall()[0][0]
        want = duckdb.sql(f"SELECT count(*) FROM read_parquet('{p}') WHERE {dwhere}").fetchall()[0][0]
        assert got == want, (where, got, want)
