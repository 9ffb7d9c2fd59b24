"""The embedded engine end to end: statements, results, stats, EXPLAIN, errors, damage."""
from __future__ import annotations

import datetime as dt
import os

import numpy as np
import pyarrow as pa
import pytest

import skipidx
from skipidx.apps import datagen
from skipidx.core.errors import BindError, ParseError, SkipidxError

DDL = """CREATE TABLE t (
    id UInt64, msg String, n Nullable(UInt16), d Date, ts DateTime, lc LowCardinality(String),
    INDEX tok msg TYPE tokenbf_v1(1024, 3, 0) GRANULARITY 1,
    INDEX ng msg TYPE ngrambf_v1(3, 1024, 2, 0) GRANULARITY 1,
    INDEX idmm id TYPE minmax GRANULARITY 2
) ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 4"""


def _rows(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.uint64)
    msgs = [f"row {i} word{i % 7}" + (" needle" if i in (5, 37) else "") for i in range(n)]
    return pa.table({
        "id": ids, "msg": msgs,
        "n": pa.array([None if i % 5 == 0 else i % 300 for i in range(n)], pa.uint16()),
        "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 40) for i in range(n)], pa.date32()),
        "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i) for i in range(n)], pa.timestamp("s")),
        "lc": [["a", "b", "c"][i % 3] for i in range(n)],
    })


@pytest.fixture()
def db():
    with skipidx.connect() as d:
        d.sql(DDL)
        d.insert("t", _rows(100))
        yield d


# ---- connect / lifecycle ------------------------------------------------------
def test_temporary_database_is_removed_on_close() -> None:
    d = skipidx.connect()
    path = d.path
    d.sql("CREATE TABLE x (a UInt8) ENGINE = MergeTree ORDER BY a")
    assert os.path.isdir(path)
    d.close()
    assert not os.path.exists(path)
    with pytest.raises(SkipidxError, match="closed"):
        d.sql("SHOW TABLES")


def test_named_database_persists(tmp_path) -> None:
    with skipidx.connect(tmp_path / "db") as d:
        d.sql("CREATE TABLE x (a UInt8) ENGINE = MergeTree ORDER BY a; INSERT INTO x VALUES (1), (2)")
    with skipidx.connect(str(tmp_path / "db")) as d:
        assert d.sql("SELECT sum(a) FROM x").fetchall() == [(3,)]
        assert d.tables() == ["x"]


def test_sql_runs_all_statements_and_returns_last(db) -> None:
    res = db.sql("INSERT INTO t (id, msg) VALUES (1000, 'x'); SELECT count() FROM t")
    assert res.fetchall() == [(101,)]
    results = db.sql_all("SELECT 1; SELECT 2 AS two")
    assert [r.fetchall() for r in results] == [[(1,)], [(2,)]]
    assert results[1].column_names == ["two"]


@pytest.mark.parametrize("text", ["", "   ", "-- only a comment\n", "/* c */ ;"], ids=["empty", "blank", "comment", "semi"])
def test_empty_statement_is_an_error(db, text) -> None:
    with pytest.raises(SkipidxError):
        db.sql(text)


# ---- results -------------------------------------------------------------------
def test_result_shapes(db) -> None:
    r = db.sql("SELECT id, msg, n FROM t WHERE id < 3 ORDER BY id")
    assert r.column_names == ["id", "msg", "n"]
    assert r.fetchall() == [(0, "row 0 word0", None), (1, "row 1 word1", 1), (2, "row 2 word2", 2)]
    assert isinstance(r.to_arrow(), pa.Table)
    assert list(r.df()["id"]) == [0, 1, 2]
    assert r.to_pandas().shape == (3, 3)
    assert r.to_arrow().schema.field("id").type == pa.uint64()


def test_insert_pandas_and_record_batch(db) -> None:
    import pandas as pd

    df = _rows(3).to_pandas()
    df["id"] = df["id"] + 500
    assert db.insert("t", df) == 3
    rb = _rows(2).to_batches()[0]
    assert db.insert("t", rb) == 2
    assert db.sql("SELECT count() FROM t").fetchall() == [(105,)]
    assert isinstance(df, pd.DataFrame)


def test_insert_values_casts_literals(db) -> None:
    db.sql("INSERT INTO t VALUES (200, 'a b', NULL, '2024-03-04', '2024-03-04 05:06:07', 'z'), "
           "(201, 'c', 7, '2024-03-05', 1709615167, 'z')")
    r = db.sql("SELECT id, n, d, ts FROM t WHERE lc = 'z' ORDER BY id")
    assert r.fetchall() == [(200, None, dt.date(2024, 3, 4), dt.datetime(2024, 3, 4, 5, 6, 7)),
                            (201, 7, dt.date(2024, 3, 5), dt.datetime(2024, 3, 5, 5, 6, 7))]
    # a column list: the others take their defaults (NULL for Nullable)
    db.sql("INSERT INTO t (id, lc) VALUES (300, 'y')")
    assert db.sql("SELECT msg, n, d FROM t WHERE id = 300").fetchall() == [("", None, dt.date(1970, 1, 1))]


@pytest.mark.parametrize("stmt,match", [
    ("INSERT INTO t (id) VALUES (-1)", "range"),
    ("INSERT INTO t (id, n) VALUES (1, 70000)", "range"),
    ("INSERT INTO t (id, d) VALUES (1, 'yesterday')", "Date"),
    ("INSERT INTO t (id, msg) VALUES (1, 5)", "supertype"),
    ("INSERT INTO t (id, nope) VALUES (1, 2)", "nope"),
    ("INSERT INTO t (id, msg) VALUES (1)", "values"),
    ("INSERT INTO nosuch VALUES (1)", "nosuch"),
], ids=["negative-uint", "uint16-overflow", "bad-date", "int-into-string", "unknown-column", "arity", "unknown-table"])
def test_bad_insert_leaves_table_unchanged(db, stmt, match) -> None:
    with pytest.raises(SkipidxError, match=match):
        db.sql(stmt)
    assert db.sql("SELECT count() FROM t").fetchall() == [(100,)]


def test_aggregates_group_by_order_limit(db) -> None:
    assert db.sql("SELECT count(), count(n), sum(id), min(n), max(msg), uniqExact(lc) FROM t").fetchall() == [
        (100, 80, 4950, 1, "row 99 word1", 3)]
    r = db.sql("SELECT lc, count() AS c, avg(id) FROM t GROUP BY lc ORDER BY lc DESC LIMIT 2")
    assert r.fetchall() == [("c", 33, 50.0), ("b", 33, 49.0)]
    assert db.sql("SELECT id FROM t ORDER BY id DESC LIMIT 2 OFFSET 1").fetchall() == [(98,), (97,)]
    assert db.sql("SELECT id FROM t ORDER BY id LIMIT 1, 2").fetchall() == [(1,), (2,)]
    # NULLs last in both directions (ClickHouse's default), first when asked
    assert db.sql("SELECT n FROM t WHERE id < 6 ORDER BY n").fetchall() == [(1,), (2,), (3,), (4,), (None,), (None,)]
    assert db.sql("SELECT n FROM t WHERE id < 6 ORDER BY n DESC").fetchall()[-1] == (None,)
    assert db.sql("SELECT n FROM t WHERE id < 6 ORDER BY n NULLS FIRST").fetchall()[0] == (None,)
    # empty input: ClickHouse's defaults
    assert db.sql("SELECT count(), sum(id), min(n), max(id) FROM t WHERE id > 1000").fetchall() == [
        (0, 0, None, 0)]
    assert db.sql("SELECT lc, count() FROM t WHERE id > 1000 GROUP BY lc").fetchall() == []
    # positional ORDER BY, aliases
    assert db.sql("SELECT lc AS k, count() FROM t GROUP BY k ORDER BY 1").fetchall()[0] == ("a", 34)


def test_projection_expressions(db) -> None:
    r = db.sql("SELECT lower(lc), id + 1, hasToken(msg, 'needle') FROM t WHERE id = 5")
    assert r.fetchall() == [("c", 6, 1)]
    assert r.column_names == ["lower(lc)", "plus(id, 1)", "hasToken(msg, 'needle')"]  # ClickHouse's names


def test_select_star_and_without_from(db) -> None:
    assert db.sql("SELECT * FROM t WHERE id = 1").column_names == ["id", "msg", "n", "d", "ts", "lc"]
    assert db.sql("SELECT 1 + 2 AS x").fetchall() == [(3,)]


def test_group_by_rules(db) -> None:
    with pytest.raises(BindError, match="GROUP BY"):
        db.sql("SELECT id, count() FROM t")
    with pytest.raises(BindError, match="not allowed"):
        db.sql("SELECT count() FROM t WHERE count() > 1")


# ---- pruning and stats ---------------------------------------------------------------
def test_stats_of_a_selective_query(db) -> None:
    r = db.sql("SELECT count() FROM t WHERE hasToken(msg, 'needle')")
    assert r.fetchall() == [(2,)]
    st = r.stats
    assert (st.parts_total, st.granules_total) == (1, 25)
    assert 2 <= st.granules_selected <= 6
    assert st.rows_read == 4 * st.granules_selected
    assert st.rows_matched == 2
    tok = st.index("tok")
    assert (tok.granules_before, tok.type, tok.used) == (25, "tokenbf_v1", True)
    assert tok.granules_after >= 2
    assert st.index("idmm").note == "no usable atom"
    d = st.as_dict()
    assert d["granules_total"] == 25 and d["indexes"][0]["name"] == "tok"
    assert st["parts_selected"] == 1
    assert st.prune_ms >= 0 and st.scan_ms >= 0


def test_index_notes(db) -> None:
    st = db.sql("SELECT count() FROM t WHERE NOT hasToken(msg, 'needle')").stats
    assert st.index("tok").note == "negation only"
    assert st.granules_selected == 25
    st = db.sql("SELECT count() FROM t WHERE msg LIKE '%ne%'").stats
    assert "no complete token" in st.index("tok").note
    st = db.sql("SELECT count() FROM t WHERE hasToken(msg, 'needle') OR lc = 'a'").stats
    assert "ORed" in st.index("tok").note
    assert st.granules_selected == 25


def test_or_of_two_indexes_prunes(db) -> None:
    r = db.sql("SELECT count() FROM t WHERE hasToken(msg, 'needle') OR id = 99")
    assert r.fetchall() == [(3,)]
    st = r.stats
    assert st.granules_selected < 12, st
    # alone, neither index can prune an OR whose other side it cannot answer
    assert st.index("tok").granules_after == 25 and st.index("idmm").granules_after == 25


def test_constant_false_where_reads_nothing(db) -> None:
    r = db.sql("SELECT count() FROM t WHERE id = -1")
    assert r.fetchall() == [(0,)]
    assert (r.stats.granules_selected, r.stats.rows_read) == (0, 0)
    r = db.sql("SELECT count() FROM t WHERE n = 70000 OR n != 70000")
    assert r.fetchall() == [(80,)]   # NULL rows are neither


def test_useless_indexes_are_not_read(db, monkeypatch) -> None:
    from skipidx.store.part import Part

    calls: list[str] = []
    orig = Part.load_index

    def spy(self, name):
        calls.append(name)
        return orig(self, name)

    monkeypatch.setattr(Part, "load_index", spy)
    db.sql("SELECT count() FROM t WHERE NOT hasToken(msg, 'needle') OR lc = 'b'")
    assert calls == []
    db.sql("SELECT count() FROM t WHERE hasToken(msg, 'needle') AND id > 50")
    assert sorted(calls) == ["idmm", "ng", "tok"]   # the ngram index answers hasToken too


def test_limit_without_order_stops_reading() -> None:
    with skipidx.connect() as d:
        d.sql("CREATE TABLE big (id UInt64) ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 100")
        d.insert("big", pa.table({"id": np.arange(100_000, dtype=np.uint64)}))
        r = d.sql("SELECT id FROM big WHERE id % 2 = 0 LIMIT 3")
        assert r.fetchall() == [(0,), (2,), (4,)]
        assert r.stats.rows_read <= 8 * 100
        r = d.sql("SELECT id FROM big ORDER BY id DESC LIMIT 2")
        assert r.fetchall() == [(99_999,), (99_998,)]


def test_count_without_where_reads_no_column() -> None:
    with skipidx.connect() as d:
        d.sql("CREATE TABLE c (a String) ENGINE = MergeTree ORDER BY tuple()")
        d.insert("c", pa.table({"a": ["x"] * 1000}))
        r = d.sql("SELECT count() FROM c")
        assert r.fetchall() == [(1000,)]


# ---- EXPLAIN -------------------------------------------------------------------------
def test_explain_indexes_shape(db) -> None:
    r = db.sql("EXPLAIN indexes = 1 SELECT count() FROM t WHERE hasToken(msg, 'needle') AND id > 50")
    assert r.column_names == ["explain"]
    lines = [x[0] for x in r.fetchall()]
    text = "\n".join(lines)
    for want in ["Skip", "Name: tok", "Description: tokenbf_v1 GRANULARITY 1", "Name: idmm",
                 "Description: minmax GRANULARITY 2", "Name: <Combined skip indexes>", "Ranges:"]:
        assert any(l.strip() == want or l.strip().startswith(want) for l in lines), (want, text)
    parts = [l.strip() for l in lines if l.strip().startswith("Parts: ") and "|" not in l]
    assert parts and all(p.split(": ")[1].split("/")[1] == "1" for p in parts), text
    grans = [l.strip() for l in lines if l.strip().startswith("Granules: ")]
    assert grans and all(g.endswith("/25") for g in grans), text
    assert "Condition: hasToken(msg, 'needle'): all of {nee, eed, edl, dle}" in [l.strip() for l in lines], text
    assert r.stats.granules_selected == 0   # both needle rows have id <= 50


def test_explain_says_why_an_index_did_not_help(db) -> None:
    lines = [x[0].strip() for x in db.sql("EXPLAIN indexes = 1 SELECT id FROM t WHERE msg LIKE '%ne%'").fetchall()]
    assert "tok (tokenbf_v1 GRANULARITY 1): msg LIKE '%ne%': pattern yields no complete token" in lines, lines
    assert "idmm (minmax GRANULARITY 2): no usable atom" in lines, lines


# ---- errors ------------------------------------------------------------------------
@pytest.mark.parametrize("sql,cls,match,col", [
    ("SELECT count() FROM nosuch", BindError, "unknown table 'nosuch'", 21),
    ("SELECT nope FROM t", BindError, "unknown column 'nope'", 8),
    ("SELECT count() FROM t WHERE\n  nofunc(msg)", BindError, "unknown function 'nofunc'", 3),
    ("SELECT count() FROM t WHERE hasToken(id, 'x')", BindError, "UInt64 of argument of function hasToken", 38),
    ("SELECT count() FROM t WHERE hasToken(msg, msg)", BindError, "must be a constant", 43),
    ("SELECT count() FROM t WHERE hasToken(msg)", BindError, "2 arguments", 29),
    ("SELECT count() FROM t WHERE hasToken(msg, 'a b')", BindError, "separator", 43),
    ("SELECT count() FROM t WHERE msg = 1", BindError, "supertype", 29),
    ("SELECT count() FROM t WHERE id = 'abc'", BindError, "cannot convert string 'abc'", 29),
    ("SELECT count() FROM t WHERE msg", BindError, "filter", 29),
    ("SELECT count() FROM t WHERE match(msg, '(')", BindError, "regex", 40),
    ("SELECT count() FROM t WHERE multiSearchAny(msg, [])", BindError, "Array", 49),
    ("SELECT count() FROM t WHERE d = 5", BindError, "Date", 29),
    ("SELECT sum(msg) FROM t", BindError, "sum", 12),
    ("SELECT count() FROM t WHERE", ParseError, None, 28),
], ids=["table", "column", "function", "hastoken-uint", "nonconst-needle", "arity", "separator", "int-vs-string",
        "bad-int-string", "string-filter", "bad-regex", "empty-array", "date-vs-int", "sum-string", "parse"])
def test_errors_name_the_problem_and_place(db, sql, cls, match, col) -> None:
    with pytest.raises(cls, match=match) as ei:
        db.sql(sql)
    assert ei.value.column == col, str(ei.value)
    # the database still answers
    assert db.sql("SELECT count() FROM t").fetchall() == [(100,)]


def test_create_table_validation() -> None:
    with skipidx.connect() as d:
        with pytest.raises(SkipidxError, match="tokenbf_v1"):
            d.sql("CREATE TABLE bad (id UInt64, INDEX i id TYPE tokenbf_v1(256, 2, 0)) ENGINE = MergeTree ORDER BY id")
        with pytest.raises(SkipidxError, match="unknown column"):
            d.sql("CREATE TABLE bad (id UInt64, INDEX i nope TYPE minmax) ENGINE = MergeTree ORDER BY id")
        with pytest.raises(SkipidxError, match="type"):
            d.sql("CREATE TABLE bad (id Uint64) ENGINE = MergeTree ORDER BY id")
        with pytest.raises(SkipidxError, match="ORDER BY"):
            d.sql("CREATE TABLE bad (id UInt64) ENGINE = MergeTree ORDER BY nope")
        assert d.tables() == []
        d.sql("CREATE TABLE IF NOT EXISTS ok (id UInt64) ENGINE = MergeTree ORDER BY id")
        d.sql("CREATE TABLE IF NOT EXISTS ok (id UInt64) ENGINE = MergeTree ORDER BY id")
        with pytest.raises(SkipidxError, match="exists"):
            d.sql("CREATE TABLE ok (id UInt64) ENGINE = MergeTree ORDER BY id")


# ---- DDL and the store -----------------------------------------------------------------
def test_show_describe_drop(db) -> None:
    assert db.sql("SHOW TABLES").fetchall() == [("t",)]
    assert db.sql("DESCRIBE TABLE t").fetchall()[:3] == [("id", "UInt64", ""), ("msg", "String", ""),
                                                         ("n", "Nullable(UInt16)", "")]
    db.sql("DROP TABLE t")
    assert db.sql("SHOW TABLES").fetchall() == []
    db.sql("DROP TABLE IF EXISTS t")
    with pytest.raises(SkipidxError, match="unknown table"):
        db.sql("DROP TABLE t")


def test_alter_index_lifecycle_and_optimize(db) -> None:
    db.insert("t", _rows(100).set_column(0, "id", pa.array(np.arange(100, 200, dtype=np.uint64))))
    db.sql("ALTER TABLE t ADD INDEX lcset lc TYPE set(10) GRANULARITY 1")
    st = db.sql("SELECT count() FROM t WHERE lc = 'zz'").stats
    assert "not materialized" in st.index("lcset").note
    db.sql("ALTER TABLE t MATERIALIZE INDEX lcset")
    r = db.sql("SELECT count() FROM t WHERE lc = 'zz'")
    assert r.fetchall() == [(0,)] and r.stats.granules_selected == 0
    assert r.stats.parts_total == 2
    db.sql("OPTIMIZE TABLE t FINAL")
    r = db.sql("SELECT count(), sum(id) FROM t WHERE hasToken(msg, 'needle')")
    assert r.fetchall() == [(4, 5 + 37 + 105 + 137)]
    assert r.stats.parts_total == 1
    db.sql("ALTER TABLE t DROP INDEX lcset")
    assert [i.name for i in db.sql("SELECT count() FROM t WHERE lc = 'a'").stats.indexes] == ["tok", "ng", "idmm"]


def test_insert_from_infile(db, tmp_path) -> None:
    import pyarrow.parquet as pq

    p = tmp_path / "rows.parquet"
    pq.write_table(_rows(10), p)
    db.sql(f"INSERT INTO t FROM INFILE '{p}' FORMAT Parquet")
    assert db.sql("SELECT count() FROM t").fetchall() == [(110,)]
    with pytest.raises(SkipidxError):
        db.sql(f"INSERT INTO t FROM INFILE '{tmp_path / 'missing.parquet'}' FORMAT Parquet")
    assert db.sql("SELECT count() FROM t").fetchall() == [(110,)]


# ---- damaged index ------------------------------------------------------------------------
def test_damaged_index_is_ignored_and_answer_stays_exact(tmp_path) -> None:
    with skipidx.connect(tmp_path / "db") as d:
        d.sql(DDL)
        d.insert("t", _rows(100))
        snap = d.catalog.table("t").snapshot()
        part = snap.parts[0]
        path = os.path.join(part.path, "idx.tok.arrow")
        snap.close()
        raw = bytearray(open(path, "rb").read())
        raw[len(raw) // 2] ^= 0xFF
        with open(path, "wb") as f:
            f.write(bytes(raw))
        r = d.sql("SELECT count(), sum(id) FROM t WHERE hasToken(msg, 'needle')")
        assert r.fetchall() == [(2, 42)]
        note = r.stats.index("tok").note
        assert note is not None and "damaged index ignored" in note, note
        lines = [x[0] for x in d.sql("EXPLAIN indexes = 1 SELECT count() FROM t WHERE hasToken(msg, 'needle')").fetchall()]
        assert any("damaged index ignored" in l for l in lines), lines


# ---- a realistic table -----------------------------------------------------------------
def test_demo_like_table_prunes_rare_token() -> None:
    with skipidx.connect() as d:
        d.sql(datagen.SCHEMA_SQL.format(table="logs", indexes=",\n INDEX tok msg TYPE tokenbf_v1(8192, 3, 0)")
              + " SETTINGS index_granularity = 1024")
        d.insert("logs", datagen.generate_table(50_000, seed=3))
        r = d.sql(f"SELECT count() FROM logs WHERE hasToken(msg, '{datagen.RARE_TOKEN}')")
        assert r.fetchall() == [(datagen.RARE_ROWS,)]
        assert r.stats.granules_selected <= 2 * datagen.RARE_ROWS
        assert r.stats.granules_selected < r.stats.granules_total


def test_order_by_key_prunes_from_row_group_statistics() -> None:
    """The sorting key prunes range conditions without any index (ClickHouse's primary key)."""
    with skipidx.connect() as d:
        d.sql("CREATE TABLE k (k UInt64, s String) ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 10")
        big = [1, 2, 2**63, 2**64 - 1]
        d.insert("k", pa.table({"k": pa.array(list(range(1000)) + big, pa.uint64()), "s": ["x"] * 1004}))
        r = d.sql("SELECT count() FROM k WHERE k >= 990 AND k < 1000")
        assert r.fetchall() == [(10,)]
        assert r.stats.granules_selected == 2 and r.stats.index("PrimaryKey").granules_after == 2
        r = d.sql("SELECT count() FROM k WHERE k = 18446744073709551615 OR k IN (5, 6)")
        assert r.fetchall() == [(3,)] and r.stats.granules_selected == 2
        lines = [x[0].strip() for x in d.sql("EXPLAIN indexes = 1 SELECT count() FROM k WHERE k < 15").fetchall()]
        assert "PrimaryKey" in lines and "Granules: 2/101" in lines, lines
        # no condition on the key: no PrimaryKey block at all
        assert [i.name for i in d.sql("SELECT count() FROM k WHERE s = 'x'").stats.indexes] == []


def test_saturated_filters_are_reported() -> None:
    """A tokenbf_v1 of 32 bytes over thousands of distinct tokens is saturated: it says so."""
    with skipidx.connect() as d:
        d.sql("CREATE TABLE s (id UInt64, msg String, INDEX tiny msg TYPE tokenbf_v1(32, 3, 0)) "
              "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 512")
        d.insert("s", pa.table({"id": np.arange(2048, dtype=np.uint64), "msg": [f"w{i} v{i * 7}" for i in range(2048)]}))
        r = d.sql("SELECT count() FROM s WHERE hasToken(msg, 'w5')")
        assert r.fetchall() == [(1,)]
        assert "filter saturated in 4/4 index granules" in r.stats.index("tiny").note
        assert r.stats.granules_selected == 4


def test_prune_where_for_embedders(db) -> None:
    from skipidx.expr.evaluate import where_mask
    from skipidx.planner.plan import prune_where

    snap = db.catalog.table("t").snapshot()
    sel, st, bound = prune_where(snap, "hasToken(msg, 'needle')", db.index_cache)
    rows = 0
    for s in sel:
        t = s.part.read(["msg"], s.ranges)
        rows += int(where_mask(bound, t).to_numpy(zero_copy_only=False).sum())
    assert rows == 2 and st.granules_selected < st.granules_total
    sel, st, bound = prune_where(snap, None)
    assert bound is None and st.granules_selected == st.granules_total
    snap.close()
