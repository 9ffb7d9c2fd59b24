"""Per-column Parquet encoding of a part, and reading columns as Arrow dictionaries.

A part writes a column dictionary-encoded only where values repeat within a
granule (``choose_dictionary_columns``), records the choice in its manifest,
and ``Part.read(dictionary=...)`` hands those String columns back as Arrow
dictionaries -- always the same values as a decoded read.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.store import encoding, manifest

DDL = """CREATE TABLE t (id UInt64, uniq String, low String, nlow Nullable(String), lc LowCardinality(String),
    big UInt64, small UInt16, flag Bool, ts DateTime,
    INDEX lb low TYPE bloom_filter GRANULARITY 1)
    ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 256"""


def _rows(lo: int, n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed + lo)
    ids = np.arange(lo, lo + n, dtype=np.uint64)
    low = rng.integers(0, 20, n)
    nlow = pa.array([None if x % 7 == 0 else f"v{x}" for x in rng.integers(0, 30, n).tolist()])
    return pa.table({
        "id": ids,
        "uniq": pa.array([f"u{i:012d}" for i in ids.tolist()]),       # every value distinct
        "low": pa.array([f"w{x}" for x in low.tolist()]),             # 20 distinct values
        "nlow": nlow,
        "lc": pa.array([f"lc{i % 1000}" for i in ids.tolist()]),      # distinct within a granule, but declared
        "big": rng.integers(0, 2**40, n).astype(np.uint64),           # distinct numbers
        "small": (low % 3).astype(np.uint16),                          # 3 distinct numbers
        "flag": low % 2 == 0,
        "ts": pa.array((1_700_000_000 + ids // 4).astype("datetime64[s]")),  # 4 rows per second
    })


def _part_files(db, table: str = "t"):
    snap = db.catalog.table(table).snapshot()
    with snap:
        return [(p, p.manifest) for p in snap.parts]


@pytest.fixture()
def db():
    with skipidx.connect() as d:
        d.sql(DDL)
        d.insert("t", _rows(0, 3000))
        yield d


def _dict_pages(part) -> dict[str, bool]:
    md = pq.read_metadata(os.path.join(part.path, manifest.DATA_FILE))
    out = {}
    for j in range(md.num_columns):
        name = md.schema.column(j).name
        out[name] = all(md.row_group(i).column(j).has_dictionary_page for i in range(md.num_row_groups))
    return out


def test_encoding_follows_the_data(db):
    (part, man), = _part_files(db)
    want = {"low", "nlow", "lc", "small"}
    assert set(man["dictionary"]) == want, f"dictionary columns {man['dictionary']}, expected {sorted(want)}"
    pages = _dict_pages(part)
    for col, has in pages.items():
        assert has == (col in want), f"column {col}: dictionary page {has}, expected {col in want}"
    assert part.dictionary_columns == frozenset(want)


def test_choose_dictionary_columns_thresholds():
    with skipidx.connect() as d:
        d.sql(DDL)
        meta = d.catalog.table("t").snapshot().meta
    t = _rows(0, 1024)
    assert encoding.choose_dictionary_columns(meta, t, 256) == ["low", "nlow", "lc", "small"]
    # a string repeated 4 times per granule is dictionary-encoded, twice is not
    for reps, expect in ((4, True), (2, False)):
        u = t.set_column(1, "uniq", pa.array([f"r{i // reps}" for i in range(1024)]))
        assert ("uniq" in encoding.choose_dictionary_columns(meta, u, 256)) is expect, f"{reps} repeats"
    assert encoding.choose_dictionary_columns(meta, t.slice(0, 0), 256) == []


def test_dictionary_read_equals_decoded_read(db):
    (part, _), = _part_files(db)
    cols = ["id", "uniq", "low", "nlow", "lc", "small"]
    ranges = [(0, 2), (5, 9), (11, part.n_granules)]
    plain = part.read(cols, ranges)
    as_dict = part.read(cols, ranges, dictionary=["uniq", "low", "nlow", "lc", "id"])
    for c in cols:
        typ = as_dict.schema.field(c).type
        expect_dict = c in ("low", "nlow", "lc")     # dictionary-written String columns only
        assert pa.types.is_dictionary(typ) is expect_dict, f"column {c} read as {typ}"
        got = as_dict.column(c)
        if expect_dict:
            assert typ.value_type == pa.string() and typ.index_type == pa.int32(), typ
            got = got.cast(pa.string())
        assert got.equals(plain.column(c)), f"column {c}: dictionary read differs from the decoded read"
    assert as_dict.column("nlow").null_count == plain.column("nlow").null_count > 0


def test_parts_without_the_record_read_decoded(db):
    (part, man), = _part_files(db)
    old = {k: v for k, v in man.items() if k != "dictionary"}
    assert manifest.PartInfo(old).dictionary == frozenset()
    part._info = manifest.PartInfo(old)     # as a part written before the record existed
    t = part.read(["low"], dictionary=["low"])
    assert t.schema.field("low").type == pa.string(), "a part without the record must read decoded"


def test_merge_and_materialize_keep_the_record(db):
    db.insert("t", _rows(3000, 2000))
    db.catalog.table("t").optimize(final=True)
    (part, man), = _part_files(db)
    assert set(man["dictionary"]) == {"low", "nlow", "lc", "small"}, man["dictionary"]
    # a new index hard-links the data file: the record is carried over
    db.sql("ALTER TABLE t ADD INDEX ub uniq TYPE bloom_filter GRANULARITY 1")
    db.sql("ALTER TABLE t MATERIALIZE INDEX ub")
    (part2, man2), = _part_files(db)
    assert part2.name != part.name or man2 != man
    assert set(man2["dictionary"]) == {"low", "nlow", "lc", "small"}, man2.get("dictionary")
    rows = db.sql("SELECT low FROM t").fetchall()
    expect = sum(1 for (v,) in rows if v == "w3")
    got = db.sql("SELECT count() FROM t WHERE low = 'w3' AND uniq != 'x'").fetchall()
    assert got == [(expect,)], f"count on the rewritten part {got}, expected {expect}"


def test_bad_dictionary_record_is_corruption(tmp_path, db):
    import json
    from skipidx.core.errors import CorruptionError
    (part, man), = _part_files(db)
    d = tmp_path / "p"
    d.mkdir()
    bad = dict(man, dictionary="low")
    (d / manifest.MANIFEST).write_text(json.dumps(bad))
    with pytest.raises(CorruptionError, match="dictionary"):
        manifest.read_manifest(str(d))


@pytest.mark.parametrize("width, granule, want", [
    pytest.param(8, 8192, 8192, id="numbers: a granule per batch"),
    pytest.param(130, 8192, 8192, id="log lines: a granule per batch"),
    pytest.param(1000, 8192, 2048, id="1 KB values: halved to 2 MiB"),
    pytest.param(10_000, 8192, 1024, id="10 KB values: Arrow's 1024"),
    pytest.param(8, 512, 1024, id="small granules: Arrow's 1024"),
    pytest.param(8, 0, 1024, id="no rows"),
])
def test_write_batch_rows(width, granule, want):
    from skipidx.store.writer import WRITE_BATCH_MAX_BYTES, write_batch_rows

    n = 0 if granule == 0 else 300
    t = pa.table({"n": np.arange(n, dtype=np.int64), "s": pa.array(["x" * (width - 4)] * n)})
    got = write_batch_rows(t, granule or 8192)
    assert got == want, (width, granule, got)
    if n and got > 1024:
        assert got * max(c.nbytes for c in t.columns) / n <= WRITE_BATCH_MAX_BYTES


@pytest.mark.parametrize("width", [120, 20_000], ids=["log lines", "20 KB values"])
def test_pages_stay_near_a_mebibyte(tmp_path, width):
    """Batches of a whole granule do not make pages of wide values larger than Arrow's
    1024-row batches did: each page at most ~1 MiB plus one batch."""
    from skipidx.store.parquet_pages import chunk_layout

    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE w (k UInt32, s String) ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 8192")
    n = 40_000 if width < 1000 else 6000
    db.insert("w", pa.table({"k": pa.array(np.arange(n), pa.uint32()),
                             "s": [f"{i:08d}" + "y" * (width - 8) for i in range(n)]}))
    (part,) = db.catalog.table("w").snapshot().parts
    path = os.path.join(part.path, manifest.DATA_FILE)
    md = pq.ParquetFile(path).metadata
    fd = os.open(path, os.O_RDONLY)
    try:
        for g in range(md.num_row_groups):
            lay = chunk_layout(fd, md.row_group(g).column(1), md.row_group(g).num_rows)
            batch = 8192 if width < 1000 else 1024
            limit = (1 << 20) + batch * (width + 4)
            assert int(lay.uncompressed.max()) <= limit, (g, lay.uncompressed.tolist())
    finally:
        os.close(fd)
    got = db.sql("SELECT s FROM w ORDER BY k").arrow().column("s").to_pylist()
    assert got == [f"{i:08d}" + "y" * (width - 8) for i in range(n)]
