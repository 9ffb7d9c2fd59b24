"""Column codecs: ``col Type CODEC(LZ4 | ZSTD[(level)] | NONE)``.

Parsed as ClickHouse writes them, validated with positions, stored per column in
the table metadata, written as each column's Parquet compression (checked in
the files' own metadata, and by DuckDB reading the files), kept by merges and
shown by DESCRIBE as ClickHouse's ``codec_expression`` (checked against chDB).
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.core.errors import BindError, SkipidxError
from skipidx.store.metadata import TableMeta, codec_parquet, normalize_codec

DDL = ("CREATE TABLE t (id UInt64 CODEC(LZ4), msg String CODEC(ZSTD(7)), tag String CODEC(NONE), "
       "n Nullable(UInt16) CODEC(ZSTD), plain String, lc LowCardinality(String) CODEC(LZ4)) ORDER BY id")
#: column -> (canonical codec, Parquet codec name as DuckDB prints it); plain follows the table
#: setting (default lz4, as ClickHouse's)
WANT = {"id": ("LZ4", "LZ4_RAW"), "msg": ("ZSTD(7)", "ZSTD"), "tag": ("NONE", "UNCOMPRESSED"),
        "n": ("ZSTD(1)", "ZSTD"), "plain": ("", "LZ4_RAW"), "lc": ("LZ4", "LZ4_RAW")}


@pytest.fixture
def db(tmp_path):
    d = skipidx.connect(str(tmp_path / "db"))
    yield d
    d.close()


def _rows(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.uint64()),
        "msg": [f"message {i % 97} text" for i in ids],
        "tag": [f"t{i % 5}" for i in ids],
        "n": pa.array([None if i % 7 == 0 else i % 1000 for i in ids], pa.uint16()),
        "plain": [f"p{i}" for i in ids],
        "lc": [("a", "b", "c")[i % 3] for i in ids],
    })


def _part_files(db, table: str = "t") -> list[str]:
    snap = db.catalog.table(table).snapshot()
    try:
        return [os.path.join(p.path, "data.parquet") for p in snap.parts]
    finally:
        snap.close()


def _duckdb_codecs(path: str) -> dict[str, set[str]]:
    duckdb = pytest.importorskip("duckdb")
    out: dict[str, set[str]] = {}
    for col, comp in duckdb.sql(f"SELECT path_in_schema, compression FROM parquet_metadata('{path}')").fetchall():
        out.setdefault(col, set()).add(comp)
    return out


# ---- the codec list -> canonical expression ------------------------------------------

CANONICAL = [
    ("lz4", [("LZ4", [])], "LZ4"),
    ("zstd_default_level", [("ZSTD", [])], "ZSTD(1)"),
    ("zstd_level", [("ZSTD", [3])], "ZSTD(3)"),
    ("zstd_max", [("ZSTD", [22])], "ZSTD(22)"),
    ("none", [("NONE", [])], "NONE"),
]


@pytest.mark.parametrize("codecs,want", [c[1:] for c in CANONICAL], ids=[c[0] for c in CANONICAL])
def test_normalize_codec(codecs, want):
    assert normalize_codec(codecs) == want
    assert codec_parquet(want)[0] in ("lz4", "zstd", "none")


def test_codec_parquet_mapping():
    assert codec_parquet("LZ4") == ("lz4", None)
    assert codec_parquet("ZSTD(9)") == ("zstd", 9)
    assert codec_parquet("NONE") == ("none", None)
    for bad in ("Delta", "ZSTD", "ZSTD(0)", "ZSTD(23)", "lz4", "LZ4, ZSTD(1)"):
        with pytest.raises(SkipidxError, match="invalid codec"):
            codec_parquet(bad)


# ---- errors, with the position of the codec at fault ----------------------------------

ERRORS = [
    # (id, column definition, message fragment, the codec at fault: the error points at it)
    ("chain", "a UInt64 CODEC(Delta, ZSTD)", "codec chains are not supported", "ZSTD)"),
    ("chain_of_supported", "a UInt64 CODEC(LZ4, NONE)", "codec chains are not supported", "NONE"),
    ("delta", "a UInt64 CODEC(Delta)", "codec Delta is not supported", "Delta"),
    ("double_delta", "a UInt64 CODEC(DoubleDelta)", "codec DoubleDelta is not supported", "DoubleDelta"),
    ("t64", "a UInt64 CODEC(T64)", "codec T64 is not supported", "T64"),
    ("gorilla", "a Float64 CODEC(Gorilla)", "codec Gorilla is not supported", "Gorilla"),
    ("lz4hc", "a UInt64 CODEC(LZ4HC(9))", "codec LZ4HC is not supported", "LZ4HC"),
    ("default", "a UInt64 CODEC(Default)", "codec Default is not supported", "Default"),
    ("case_sensitive", "a UInt64 CODEC(lz4)", "unknown codec 'lz4' (codec names are case-sensitive", "lz4"),
    ("unknown", "a UInt64 CODEC(Brotli)", "unknown codec 'Brotli'", "Brotli"),
    ("zstd_too_high", "a UInt64 CODEC(ZSTD(23))", "ZSTD level must be an integer in [1, 22], got 23", "ZSTD"),
    ("zstd_zero", "a UInt64 CODEC(ZSTD(0))", "ZSTD level must be an integer in [1, 22], got 0", "ZSTD"),
    ("zstd_negative", "a UInt64 CODEC(ZSTD(-1))", "got -1", "ZSTD"),
    ("zstd_string", "a UInt64 CODEC(ZSTD('3'))", "got '3'", "ZSTD"),
    ("zstd_float", "a UInt64 CODEC(ZSTD(3.5))", "got 3.5", "ZSTD"),
    ("zstd_two_args", "a UInt64 CODEC(ZSTD(1, 2))", "at most one argument", "ZSTD"),
    ("lz4_args", "a UInt64 CODEC(LZ4(1))", "codec LZ4 takes no arguments", "LZ4"),
    ("none_args", "a UInt64 CODEC(NONE(1))", "codec NONE takes no arguments", "NONE"),
]


@pytest.mark.parametrize("coldef,fragment,at", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_codec_errors(db, coldef, fragment, at):
    prefix = "CREATE TABLE x (k UInt8,\n  "
    sql = f"{prefix}{coldef}) ORDER BY k"
    column = 3 + coldef.index(at, coldef.index("CODEC(") + 6)     # 1-based, on line 2
    with pytest.raises(BindError) as info:
        db.sql(sql)
    err = info.value
    assert fragment in err.message, err.message
    assert (err.line, err.column) == (2, column), f"{err.message} at {err.line}:{err.column}, wanted 2:{column}"
    assert "x" not in db.tables(), "a rejected CREATE must not create the table"


def test_codec_error_position_golden(db):
    with pytest.raises(BindError) as info:
        db.sql("CREATE TABLE x (a UInt64 CODEC(Delta, ZSTD))")
    assert (info.value.line, info.value.column) == (1, 39)
    assert "line 1, column 39" in str(info.value)


def test_codec_error_in_cli_shape(db):
    """The message names what is supported (a user can fix the DDL from it)."""
    with pytest.raises(SkipidxError, match=r"supported: LZ4, ZSTD, ZSTD\(level 1..22\), NONE"):
        db.sql("CREATE TABLE x (a UInt64 CODEC(Delta, LZ4))")


# ---- storage ------------------------------------------------------------------------

def test_round_trip_and_parquet_codecs(db):
    db.sql(DDL)
    db.insert("t", _rows(5000))
    assert db.sql("SELECT count(), sum(id), max(msg), count(n) FROM t").fetchall() == [
        (5000, sum(range(5000)), "message 96 text", 5000 - len(range(0, 5000, 7)))]
    meta = db.table_meta("t")
    assert {c.name: c.codec or "" for c in meta.columns} == {k: v[0] for k, v in WANT.items()}
    for path in _part_files(db):
        md = pq.ParquetFile(path).metadata
        got = {md.row_group(0).column(i).path_in_schema: md.row_group(0).column(i).compression
               for i in range(md.num_columns)}
        assert got == {"id": "LZ4", "msg": "ZSTD", "tag": "UNCOMPRESSED", "n": "ZSTD", "plain": "LZ4",
                       "lc": "LZ4"}, f"pyarrow's view of {path}"
        # the codec as written in the Parquet footer: LZ4 is LZ4_RAW (not the deprecated Hadoop LZ4)
        assert _duckdb_codecs(path) == {k: {v[1]} for k, v in WANT.items()}, path


def test_zstd_level_reaches_the_writer(db, monkeypatch):
    """Parquet's footer does not record the level: check what the part writer is given."""
    from skipidx.store import writer as part_mod

    seen = []
    real = part_mod.pq.ParquetWriter

    def spy(*a, **kw):
        seen.append((kw.get("compression"), kw.get("compression_level")))
        return real(*a, **kw)

    monkeypatch.setattr(part_mod.pq, "ParquetWriter", spy)
    db.sql(DDL)
    db.insert("t", _rows(100))
    comp, level = seen[-1]
    assert comp == {"id": "lz4", "msg": "zstd", "tag": "none", "n": "zstd", "plain": "lz4", "lc": "lz4"}
    assert level == {"msg": 7, "n": 1}


def test_duckdb_reads_the_part_files(db):
    duckdb = pytest.importorskip("duckdb")
    db.sql(DDL)
    db.insert("t", _rows(3000))
    [path] = _part_files(db)
    got = duckdb.sql(f"SELECT id, msg, tag, n, plain, lc FROM read_parquet('{path}') ORDER BY id").fetchall()
    want = db.sql("SELECT id, msg, tag, n, plain, lc FROM t ORDER BY id").fetchall()
    assert got == want


def test_merge_keeps_codecs(db):
    db.sql(DDL + " SETTINGS compression = 'snappy'")
    for k in range(3):
        db.insert("t", _rows(1000, start=k * 1000))
    assert len(_part_files(db)) == 3
    db.sql("OPTIMIZE TABLE t FINAL")
    [path] = _part_files(db)
    want = {k: {v[1]} for k, v in WANT.items()}
    want["plain"] = {"SNAPPY"}          # no CODEC: the table's compression setting
    assert _duckdb_codecs(path) == want
    assert db.sql("SELECT count(), uniqExact(id) FROM t").fetchall() == [(3000, 3000)]


def test_alter_add_index_keeps_codecs(db):
    db.sql(DDL)
    db.insert("t", _rows(2000))
    db.sql("ALTER TABLE t ADD INDEX bf msg TYPE bloom_filter GRANULARITY 1")
    db.sql("ALTER TABLE t MATERIALIZE INDEX bf")
    for path in _part_files(db):
        assert _duckdb_codecs(path)["id"] == {"LZ4_RAW"}
    assert db.sql("SELECT count() FROM t WHERE msg = 'message 3 text'").fetchall() == [(len(range(3, 2000, 97)),)]


# ---- metadata -----------------------------------------------------------------------

def test_metadata_json_round_trip(db):
    """Spark executors rebuild the table's metadata from its JSON: the codecs must survive."""
    db.sql(DDL)
    meta = db.table_meta("t")
    back = TableMeta.from_json(json.loads(json.dumps(meta.to_json())))
    assert back == meta
    cols = meta.to_json()["columns"]
    assert "codec" not in cols[4], "no codec key for a column without CODEC (older readers see the same JSON)"


def test_old_metadata_without_codec_loads(db):
    """Metadata written before codecs existed: every column follows the table's compression."""
    old = {"format_version": 1, "name": "old", "columns": [{"name": "a", "type": "UInt64"},
                                                           {"name": "s", "type": "String"}],
           "order_by": ["a"], "index_granularity": 8192, "indexes": [], "settings": {"compression": "gzip"}}
    meta = TableMeta.from_json(old)
    assert [c.codec for c in meta.columns] == [None, None]
    assert meta.parquet_compression() == ({"a": "gzip", "s": "gzip"}, {})
    default = TableMeta.from_json({**old, "settings": {}})
    assert default.parquet_compression() == ({"a": "lz4", "s": "lz4"}, {}), "default: lz4, as ClickHouse"


@pytest.mark.parametrize("codec", ["Delta", "ZSTD", "ZSTD(99)", "lz4", 5, None],
                         ids=["delta", "zstd_no_level", "zstd_99", "lowercase", "int", "null"])
def test_bad_codec_in_metadata_is_rejected(codec):
    obj = {"format_version": 1, "name": "bad", "columns": [{"name": "a", "type": "UInt64", "codec": codec}],
           "order_by": [], "index_granularity": 8192, "indexes": [], "settings": {}}
    with pytest.raises(SkipidxError, match="codec"):
        TableMeta.from_json(obj)


def test_reopen_keeps_codecs(tmp_path):
    path = str(tmp_path / "db")
    with skipidx.connect(path) as d:
        d.sql(DDL)
    with skipidx.connect(path) as d:
        d.insert("t", _rows(10))
        assert d.table_meta("t").column("msg").codec == "ZSTD(7)"
        [f] = _part_files(d)
        assert _duckdb_codecs(f)["msg"] == {"ZSTD"}


# ---- DESCRIBE ------------------------------------------------------------------------

def test_describe_matches_chdb(db):
    """DESCRIBE's codec_expression as ClickHouse prints it ('' where no CODEC is declared)."""
    from skipidx.apps.research import chdb_session as _chdb

    pytest.importorskip("chdb")
    db.sql(DDL)
    ours = db.sql("DESCRIBE TABLE t")
    assert ours.to_arrow().column_names == ["name", "type", "codec_expression"]
    chdb_db = _chdb.scratch_database("codec")
    _chdb.query(DDL.replace("CREATE TABLE t", f"CREATE TABLE {chdb_db}.t") + "")
    text = str(_chdb.query(f"DESCRIBE TABLE {chdb_db}.t", "TabSeparatedWithNames"))
    header, *lines = text.strip().split("\n")
    cols = header.split("\t")
    theirs = [tuple(dict(zip(cols, line.split("\t")))[k] for k in ("name", "type", "codec_expression"))
              for line in lines]
    assert ours.fetchall() == theirs
