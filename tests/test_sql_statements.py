"""The second-round statements, table functions, query parameters and query
SETTINGS, each run in skipidx and in chDB (the oracle: same statements, same
answers -- values, column names and types; SHOW CREATE's text; error classes)."""
from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.core.errors import BindError, ParseError, SkipidxError

chdb_mark = pytest.mark.chdb


@contextlib.contextmanager
def _chdb_db():
    pytest.importorskip("chdb")
    from skipidx.apps.research import chdb_session as ch

    name = ch.scratch_database("stmts")
    ch.query(f"USE {name}")
    try:
        yield name, ch
    finally:
        ch.query("USE default")
        ch.query(f"DROP DATABASE {name}")


def _norm(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float):
        return "nan" if math.isnan(v) else v
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, dt.datetime):
        return int((v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)).timestamp())
    if isinstance(v, dt.date):
        return (v - dt.date(1970, 1, 1)).days
    return v


def _rows(t: pa.Table) -> list[list[Any]]:
    cols = [(c.cast(pa.binary()) if pa.types.is_string(c.type) else c).to_pylist() for c in t.columns]
    return [[_norm(c[r]) for c in cols] for r in range(t.num_rows)]


def _type(t: pa.DataType) -> str:
    if pa.types.is_timestamp(t):
        return "uint32"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_date32(t):
        return "uint16"
    return str(t)


def _same(db, ch, sql: str, params: dict | None = None) -> None:
    mine = db.sql(sql, params=params).to_arrow()
    theirs = ch.session().query(sql, "ArrowTable", params=params) if params else ch.query(sql, "ArrowTable")
    assert mine.column_names == theirs.column_names, f"{sql}: names {mine.column_names} vs {theirs.column_names}"
    assert [_type(t) for t in mine.schema.types] == [_type(t) for t in theirs.schema.types], \
        f"{sql}: types {mine.schema.types} vs {theirs.schema.types}"
    assert _rows(mine) == _rows(theirs), f"{sql}: {_rows(mine)} vs chDB {_rows(theirs)}"


def _both(db, ch, script: str) -> None:
    for stmt in [s for s in script.split(";") if s.strip()]:
        db.sql(stmt)
        ch.query(stmt)


def _show_create(ch, dbname: str, table: str) -> str:
    text = ch.query(f"SHOW CREATE TABLE {table}", "TabSeparatedRaw").bytes().decode().rstrip("\n")
    return text.replace(f"CREATE TABLE {dbname}.", "CREATE TABLE default.")


@pytest.fixture()
def db():
    with skipidx.connect() as d:
        yield d


# ---------------------------------------------------------------------------- statements vs chDB

@chdb_mark
def test_insert_select_and_create_as_select(db) -> None:
    with _chdb_db() as (name, ch):
        _both(db, ch, """
            CREATE TABLE src (id UInt64, s String, n Nullable(Int32)) ENGINE = MergeTree ORDER BY id
                SETTINGS index_granularity = 4;
            INSERT INTO src SELECT number, 'v', number - 3 FROM numbers(20) WHERE number % 3 = 0;
            INSERT INTO src (id, n) SELECT number * 7 + 100, NULL FROM numbers(3);
            CREATE TABLE dst (k UInt32, s String DEFAULT 'dflt', m Int64) ENGINE = MergeTree ORDER BY k;
            INSERT INTO dst (k, m) SELECT id, n FROM src WHERE n IS NOT NULL;
            INSERT INTO dst SELECT id + 1000, s, 5 FROM src WHERE id > 10 SETTINGS max_threads = 1;
            CREATE TABLE cas ENGINE = MergeTree ORDER BY id AS SELECT id, n, id * 2 AS twice FROM src;
            CREATE TABLE cas2 (id UInt64, n Nullable(Int32)) ENGINE = MergeTree ORDER BY id AS SELECT id, n FROM src
        """)
        for sql in ["SELECT * FROM src ORDER BY id", "SELECT * FROM dst ORDER BY k", "SELECT * FROM cas ORDER BY id",
                    "SELECT * FROM cas2 ORDER BY id", "SELECT count() FROM dst WHERE s = 'dflt'"]:
            _same(db, ch, sql)
        for t in ("cas", "cas2", "dst"):
            assert db.sql(f"SHOW CREATE TABLE {t}").scalar() == _show_create(ch, name, t)


@chdb_mark
def test_show_create_truncate_alter_exists(db) -> None:
    with _chdb_db() as (name, ch):
        _both(db, ch, """
            CREATE TABLE t (id UInt64, s String, ts DateTime, b Bool DEFAULT true,
                INDEX tok s TYPE tokenbf_v1(512, 3, 0) GRANULARITY 1,
                INDEX ix id TYPE minmax GRANULARITY 4, INDEX st s TYPE set(0) GRANULARITY 2,
                INDEX bf s TYPE bloom_filter(0.01) GRANULARITY 1)
            ENGINE = MergeTree() ORDER BY (id, s) PRIMARY KEY id
            SETTINGS index_granularity = 8, index_granularity_bytes = '10Mi', min_bytes_for_wide_part = 0;
            INSERT INTO t (id, s, ts) VALUES (1, 'a b', '2024-01-01 00:00:00'), (2, 'c', '2024-01-02 03:04:05')
        """)
        assert db.sql("SHOW CREATE TABLE t").scalar() == _show_create(ch, name, "t")
        _same(db, ch, "EXISTS TABLE t")
        _same(db, ch, "EXISTS nope")
        _both(db, ch, """
            ALTER TABLE t ADD COLUMN IF NOT EXISTS c UInt32 DEFAULT id * 10 AFTER id, DROP COLUMN IF EXISTS zz,
                MODIFY SETTING vertical_merge_algorithm_min_rows_to_activate = 1000;
            ALTER TABLE t ADD COLUMN IF NOT EXISTS c UInt8;
            ALTER TABLE t ADD COLUMN first_col String FIRST;
            ALTER TABLE t DROP COLUMN b;
            INSERT INTO t (id, s, ts) VALUES (3, 'x', '2024-01-03 00:00:00')
        """)
        _same(db, ch, "SELECT * FROM t ORDER BY id")
        assert db.sql("SHOW CREATE TABLE t").scalar() == _show_create(ch, name, "t")
        _both(db, ch, "TRUNCATE TABLE t; TRUNCATE TABLE IF EXISTS nope")
        _same(db, ch, "SELECT count() FROM t")


@chdb_mark
def test_type_aliases_match_clickhouse(db) -> None:
    cols = "a int, b Int, c BIGINT, d TEXT, e VARCHAR(255), f DOUBLE, g BOOLEAN, h INTEGER, i TINYINT, j FLOAT"
    with _chdb_db() as (name, ch):
        _both(db, ch, f"CREATE TABLE al ({cols}) ENGINE = MergeTree ORDER BY tuple()")
        assert db.sql("SHOW CREATE TABLE al").scalar() == _show_create(ch, name, "al")


@chdb_mark
@pytest.mark.parametrize("ddl,err", [
    ("CREATE TABLE pk (id UInt64, s String) ENGINE = MergeTree ORDER BY id PRIMARY KEY s",
     "the column in the position 0 is id, not s"),
    ("CREATE TABLE pk (id UInt64, s String) ENGINE = MergeTree ORDER BY id PRIMARY KEY (id, s)",
     "its length: 2 is greater than the sorting key length: 1"),
])
def test_primary_key_must_prefix_order_by(db, ddl: str, err: str) -> None:
    with pytest.raises(SkipidxError) as info:
        db.sql(ddl)
    assert err in info.value.message
    with _chdb_db() as (_name, ch):
        with pytest.raises(Exception, match="prefix of the sorting key"):
            ch.query(ddl)


# ---------------------------------------------------------------------------- table functions

@pytest.fixture()
def files(tmp_path):
    (tmp_path / "w.csv").write_text("a,b,c,d,e\n1,x,1.5,2024-01-02,true\n2,y,2.5,2024-01-03,false\n")
    (tmp_path / "w2.csv").write_text("a,b,c,d,e\n3,z,3.5,2024-01-04,true\n")
    (tmp_path / "n.csv").write_text('1,"x, y",1.5\n2,,\n')
    (tmp_path / "w.tsv").write_text("a\tb\n1\tx\n5\tq\n")
    (tmp_path / "h.tsv").write_text("a\tb\n1\tx\n")
    (tmp_path / "j.jsonl").write_text('{"a":1,"b":"x","d":1.5,"e":null}\n{"a":2,"b":"y","d":2,"e":"z"}\n')
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["x", None], "c": pa.array([1, 2], pa.uint8())},
                            schema=pa.schema([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.string()),
                                              pa.field("c", pa.uint8())])), tmp_path / "p.parquet")
    return tmp_path


@chdb_mark
@pytest.mark.parametrize("call", [
    "file('{d}/w.csv')", "file('{d}/w*.csv', CSVWithNames)", "file('{d}/n.csv')", "file('{d}/n.csv', CSV)",
    "file('{d}/w.tsv')", "file('{d}/h.tsv', TSVWithNames)", "file('{d}/j.jsonl')", "file('{d}/p.parquet')",
    "file('{d}/w.csv', CSVWithNames, 'a UInt8, b String, c Nullable(Float32), d Date, e Bool')",
    "file('{d}/n.csv', CSV, 'x UInt16, y String, z Float64')",
    "file('{d}/j.jsonl', JSONEachRow, 'a Int64, e Nullable(String)')",
    "numbers(5)", "numbers(10, 3)",
])
def test_table_function_rows_and_types(db, files, call: str) -> None:
    sql = f"SELECT * FROM {call.format(d=files)}"
    order = " ORDER BY number" if call.startswith("numbers") else " ORDER BY 1"
    with _chdb_db() as (_name, ch):
        _same(db, ch, sql + order)


@chdb_mark
def test_insert_select_from_file_and_where(db, files) -> None:
    with _chdb_db() as (_name, ch):
        _both(db, ch, f"""
            CREATE TABLE f (a UInt32, b String, c Nullable(Float64), INDEX ib b TYPE bloom_filter GRANULARITY 1)
                ENGINE = MergeTree ORDER BY a SETTINGS index_granularity = 1;
            INSERT INTO f SELECT a, b, c FROM file('{files}/w*.csv') WHERE a > 1
        """)
        _same(db, ch, "SELECT * FROM f ORDER BY a")
        _same(db, ch, f"SELECT b, count() FROM file('{files}/w*.csv') WHERE a >= 2 GROUP BY b ORDER BY b")
    before = {p: p.read_bytes() for p in files.iterdir()}
    db.sql(f"SELECT count() FROM file('{files}/w*.csv')")
    assert {p: p.read_bytes() for p in files.iterdir()} == before     # reading never writes


@pytest.mark.parametrize("call,fragment", [
    ("file('/nonexistent/x*.csv')", "no file matches"),
    ("file('{d}/w.csv', Nope)", "unknown format 'Nope'"),
    ("file('{d}/w.csv', CSVWithName)", "maybe you meant 'CSVWithNames'"),
    ("file('{d}/w.csv', CSVWithNames, 'a UInt8, b Strin')", "unknown type"),
    ("numbers(-1)", "non-negative"),
    ("numbrs(3)", "maybe you meant 'numbers'"),
])
def test_table_function_errors(db, files, call: str, fragment: str) -> None:
    with pytest.raises(SkipidxError) as info:
        db.sql(f"SELECT * FROM {call.format(d=files)}")
    assert fragment in info.value.message
    assert info.value.line == 1


# ---------------------------------------------------------------------------- parameters

@chdb_mark
def test_params_match_clickhouse(db) -> None:
    with _chdb_db() as (_name, ch):
        _both(db, ch, """CREATE TABLE p (id UInt64, s String, d Date) ENGINE = MergeTree ORDER BY id;
                         INSERT INTO p VALUES (1, 'a', '2024-01-01'), (2, 'b''c', '2024-01-02'), (3, 'x', '2024-02-01')""")
        for sql, params in [
            ("SELECT * FROM p WHERE id = {v:UInt64} ORDER BY id", {"v": 2}),
            ("SELECT * FROM p WHERE s = {v:String} ORDER BY id", {"v": "b'c"}),
            ("SELECT * FROM p WHERE d >= {v:Date} ORDER BY id", {"v": "2024-01-02"}),
            ("SELECT * FROM p WHERE id IN {v:Array(UInt64)} ORDER BY id", {"v": [1, 3]}),
            ("SELECT * FROM p ORDER BY id LIMIT {n:UInt64}", {"n": 2}),
            ("SELECT {c:Identifier} FROM {t:Identifier} ORDER BY id", {"c": "s", "t": "p"}),
        ]:
            _same(db, ch, sql, params)


@pytest.mark.parametrize("value", [
    "x' OR '1'='1", "x'; DROP TABLE p; --", "\\' OR 1=1 --", "{v:String}", "'", "a\nb", "\x00", "ü' --",
])
def test_param_injection_stays_a_value(db, value: str) -> None:
    db.sql("CREATE TABLE p (id UInt64, s String) ENGINE = MergeTree ORDER BY id")
    db.insert("p", pa.table({"id": pa.array([1, 2], pa.uint64()), "s": ["x", value]}))
    assert db.sql("SELECT id FROM p WHERE s = {v:String}", params={"v": value}).fetchall() == [(2,)]
    assert db.sql("SELECT count() FROM p WHERE s != {v:String}", params={"v": value}).scalar() == 1
    assert db.tables() == ["p"]


@pytest.mark.parametrize("value", ["p; DROP TABLE p", "p p", "`p`", "1p", "", "p--", None, 5, "p.q"])
def test_identifier_param_rejects_non_names(db, value) -> None:
    db.sql("CREATE TABLE p (id UInt64) ENGINE = MergeTree ORDER BY id")
    with pytest.raises(BindError, match="Identifier"):
        db.sql("SELECT * FROM {t:Identifier}", params={"t": value})
    with pytest.raises(BindError, match="Identifier"):
        db.sql("SELECT {c:Identifier} FROM p", params={"c": value})
    assert db.tables() == ["p"]


@pytest.mark.parametrize("sql,params,fragment", [
    ("SELECT {x:UInt8}", {}, "query parameter 'x' (UInt8) has no value"),
    ("SELECT {x:UInt8}", {"x": 300}, "query parameter 'x': cannot convert 300 to UInt8"),
    ("SELECT {x:UInt8}", {"x": "abc"}, "not an integer"),
    ("SELECT {x:Date}", {"x": "2024-13-01"}, "not a date"),
    ("SELECT {x:Int8}", {"x": None}, "declare it Nullable"),
    ("SELECT {x:Array(UInt8)}", {"x": 5}, "not an array"),
    ("SELECT {x:Weird}", {"x": 1}, "unsupported parameter type"),
])
def test_param_errors_name_the_parameter(db, sql, params, fragment) -> None:
    with pytest.raises(BindError) as info:
        db.sql(sql, params=params)
    assert fragment in info.value.message
    assert (info.value.line, info.value.column) == (1, 8)


def test_param_values_convert_from_text(db) -> None:
    got = db.sql("SELECT {a:UInt8}, {b:Nullable(Int64)}, {c:Float64}, {d:Bool}, {e:String}",
                 params={"a": "42", "b": "\\N", "c": "1.5", "d": "true", "e": "it's"}).fetchall()
    assert got == [(42, None, 1.5, True, "it's")]


# ---------------------------------------------------------------------------- query settings

@pytest.fixture()
def idx_db(db):
    db.sql("""CREATE TABLE t (id UInt64, s String, INDEX i s TYPE bloom_filter GRANULARITY 1,
              INDEX j id TYPE minmax GRANULARITY 1) ENGINE = MergeTree ORDER BY tuple()
              SETTINGS index_granularity = 8""")
    db.sql("INSERT INTO t SELECT number, 'v' FROM numbers(100)")
    db.sql("INSERT INTO t VALUES (1000, 'needle')")
    return db


CH_IDX = """CREATE TABLE t (id UInt64, s String, INDEX i s TYPE bloom_filter GRANULARITY 1,
            INDEX j id TYPE minmax GRANULARITY 1) ENGINE = MergeTree ORDER BY tuple() SETTINGS index_granularity = 8;
            INSERT INTO t SELECT number, 'v' FROM numbers(100); INSERT INTO t VALUES (1000, 'needle')"""


@chdb_mark
@pytest.mark.parametrize("where,settings", [
    ("s = 'needle'", "force_data_skipping_indices = 'i'"),
    ("s = 'needle'", "force_data_skipping_indices = 'j'"),
    ("s = 'needle'", "force_data_skipping_indices = 'i,j'"),
    ("s = 'needle' AND id > 50", "force_data_skipping_indices = 'i,j'"),
    ("s = 'needle'", "force_data_skipping_indices = 'nope'"),
    ("s = 'needle'", "force_data_skipping_indices = 'i', use_skip_indexes = 0"),
    ("s = 'needle'", "force_data_skipping_indices = 'i', ignore_data_skipping_indices = 'i'"),
    ("s != 'needle'", "force_data_skipping_indices = 'i'"),
    ("id > 95", "max_rows_to_read = 20"),
    ("id > 50", "max_rows_to_read = 20"),
    ("s = 'needle'", "max_rows_to_read = 9"),
    ("s = 'needle'", "max_rows_to_read = 9, use_skip_indexes = 0"),
    ("id > 50", "max_bytes_to_read = 100"),
    ("id > 95", "max_bytes_to_read = 10000"),
    ("id > 95", "max_threads = 1, max_block_size = 3, optimize_move_to_prewhere = 0, "
                "use_skip_indexes_for_disjunctions = 0"),
])
def test_settings_match_clickhouse(idx_db, where: str, settings: str) -> None:
    sql = f"SELECT count(), max(id) FROM t WHERE {where} SETTINGS {settings}"
    with _chdb_db() as (_name, ch):
        for stmt in CH_IDX.split(";"):
            ch.query(stmt)
        try:
            theirs = ch.query(sql, "ArrowTable")
            their_err = None
        except Exception as e:
            their_err = str(e)
        try:
            mine = idx_db.sql(sql).to_arrow()
            my_err = None
        except SkipidxError as e:
            my_err = str(e)
        if their_err is not None:
            code = their_err.split("(")[-1].split(")")[0]      # INDEX_NOT_USED, TOO_MANY_ROWS, ...
            assert my_err is not None and f"({code})" in my_err, f"{sql}: chDB {their_err}; skipidx {my_err}"
        else:
            assert my_err is None, f"{sql}: skipidx {my_err}"
            assert _rows(mine) == _rows(theirs)


def test_use_skip_indexes_and_ignore_change_pruning(idx_db) -> None:
    pruned = idx_db.sql("SELECT count() FROM t WHERE s = 'needle'")
    assert pruned.scalar() == 1 and pruned.stats.granules_selected < pruned.stats.granules_total
    for s in ("use_skip_indexes = 0", "ignore_data_skipping_indices = 'i'"):
        r = idx_db.sql(f"SELECT count() FROM t WHERE s = 'needle' SETTINGS {s}")
        assert r.scalar() == 1 and r.stats.granules_selected == r.stats.granules_total
    idx_db.sql("SET use_skip_indexes = 0")
    r = idx_db.sql("SELECT count() FROM t WHERE s = 'needle'")
    assert r.stats.granules_selected == r.stats.granules_total
    r = idx_db.sql("SELECT count() FROM t WHERE s = 'needle' SETTINGS use_skip_indexes = 1")
    assert r.stats.granules_selected < r.stats.granules_total


def test_prewhere_is_an_and(idx_db) -> None:
    assert idx_db.sql("SELECT id FROM t PREWHERE s = 'needle' WHERE id > 5").fetchall() == [(1000,)]
    assert idx_db.sql("SELECT count() FROM t PREWHERE id < 10").scalar() == 10


def test_format_and_outfile_on_result(idx_db, tmp_path) -> None:
    r = idx_db.sql("SELECT id FROM t WHERE id < 2 ORDER BY id FORMAT CSVWithNames")
    assert (r.format_name, r.outfile, r.fetchall()) == ("CSVWithNames", None, [(0,), (1,)])
    # INTO OUTFILE: the engine writes the file in the format (ClickHouse's bytes) and returns no rows
    out = tmp_path / "x.csv"
    r = idx_db.sql(f"SELECT id FROM t WHERE id < 2 ORDER BY id INTO OUTFILE '{out}' FORMAT CSVWithNames")
    assert (r.format_name, r.outfile, r.fetchall()) == ("CSVWithNames", str(out), [])
    assert out.read_bytes() == b'"id"\n0\n1\n'
    with pytest.raises(SkipidxError, match="exists"):     # as ClickHouse, never overwritten
        idx_db.sql(f"SELECT id FROM t INTO OUTFILE '{out}'")
    r = idx_db.sql(f"SELECT id FROM t WHERE id < 2 ORDER BY id INTO OUTFILE '{tmp_path / 'y.tsv'}'")
    assert (tmp_path / "y.tsv").read_bytes() == b"0\n1\n"     # the format from the extension
    r = idx_db.sql("SELECT 1")
    assert (r.format_name, r.outfile) == (None, None)


@pytest.mark.parametrize("sql,fragment", [
    ("SELECT 1 SETTINGS use_skip_indexs = 0", "maybe you meant 'use_skip_indexes'"),
    ("SET max_thread = 2", "maybe you meant 'max_threads'"),
    ("SELECT 1 SETTINGS max_rows_to_read = -1", "non-negative integer"),
    ("CREATE TABLE z (a UInt8) ENGINE = MergeTree ORDER BY a SETTINGS index_granularit = 8",
     "maybe you meant 'index_granularity'"),
    ("CREATE TABLE z (a UInt8) ENGINE = MergeTree ORDER BY b", "unknown column 'b'"),
])
def test_setting_errors(db, sql: str, fragment: str) -> None:
    with pytest.raises(SkipidxError) as info:
        db.sql(sql)
    assert fragment in info.value.message
    assert info.value.line == 1


# ---------------------------------------------------------------------------- errors with their place

def test_error_shows_line_and_caret(db) -> None:
    db.sql("CREATE TABLE t (id UInt64, msg String) ENGINE = MergeTree ORDER BY id")
    with pytest.raises(BindError) as info:
        db.sql("SELECT id\nFROM t\nWHERE mssg = 'x'")
    e = info.value
    assert (e.line, e.column) == (3, 7)
    assert "maybe you meant 'msg'" in e.message
    assert str(e).endswith("WHERE mssg = 'x'\n      ^")
    with pytest.raises(ParseError) as info:
        db.sql("SELECT id FRM t")
    assert str(info.value).endswith("SELECT id FRM t\n              ^")
    with pytest.raises(SkipidxError) as info:
        db.sql("SELECT * FROM tt")
    assert "maybe you meant 't'" not in str(info.value) and str(info.value).endswith("^")
    with pytest.raises(SkipidxError) as info:
        db.sql("SELECT lowr(msg) FROM t")
    assert "maybe you meant 'lower'" in info.value.message


def test_unknown_table_hint(db) -> None:
    db.sql("CREATE TABLE events (id UInt64) ENGINE = MergeTree ORDER BY id")
    with pytest.raises(SkipidxError) as info:
        db.sql("SELECT * FROM evnets")
    assert "maybe you meant 'events'" in info.value.message
    assert (info.value.line, info.value.column) == (1, 15)


def test_insert_select_all_or_nothing(db) -> None:
    db.sql("CREATE TABLE t (a UInt8) ENGINE = MergeTree ORDER BY a")
    db.sql("INSERT INTO t SELECT number FROM numbers(3)")
    with pytest.raises(SkipidxError):
        db.sql("INSERT INTO t SELECT number FROM numbers(1000)")     # 256.. do not fit UInt8
    assert db.sql("SELECT count() FROM t").scalar() == 3
    with pytest.raises(SkipidxError):
        db.sql("CREATE TABLE c ENGINE = MergeTree ORDER BY a AS SELECT a, lowr(a) FROM t")
    assert db.tables() == ["t"]


def test_set_param_defines_a_query_parameter(db) -> None:
    db.sql("SET param_x = 'it''s'")
    assert db.sql("SELECT {x:String}").scalar() == "it's"
    assert db.sql("SELECT {x:String}", params={"x": "given"}).scalar() == "given"     # the call's params win
    with pytest.raises(SkipidxError, match="params must be a mapping"):
        db.sql("SELECT 1", params=[1])


def test_setting_that_would_change_answers_only_takes_its_default(db) -> None:
    assert db.sql("SELECT 1 SETTINGS transform_null_in = 0").scalar() == 1
    with pytest.raises(SkipidxError, match="transform_null_in = 1 is not supported"):
        db.sql("SELECT 1 SETTINGS transform_null_in = 1")


# ---------------------------------------------------------------------------- tuple-form indexes

@chdb_mark
def test_tuple_index_prunes_like_clickhouse(db) -> None:
    """ClickHouse's 00990 case: INDEX (s, lower(s)) TYPE tokenbf_v1 answers hasToken on s and
    hasTokenCaseInsensitive through lower(s); max_rows_to_read = 16 holds only if it prunes."""
    script = """CREATE TABLE bf (id UInt64, s String, INDEX tok_bf (s, lower(s)) TYPE tokenbf_v1(512, 3, 0)
                    GRANULARITY 1) ENGINE = MergeTree() ORDER BY id SETTINGS index_granularity = 8;
                INSERT INTO bf SELECT number, 'yyy,uuu' FROM numbers(1024);
                INSERT INTO bf SELECT number + 2000, 'ABC,def,zzz' FROM numbers(8);
                INSERT INTO bf SELECT number + 3000, 'abcdefzzz' FROM numbers(1024)"""
    with _chdb_db() as (name, ch):
        _both(db, ch, script)
        assert db.sql("SHOW CREATE TABLE bf").scalar() == _show_create(ch, name, "bf")
        for q in ["SELECT max(id) FROM bf WHERE hasToken(s, 'ABC')",
                  "SELECT max(id) FROM bf WHERE hasTokenCaseInsensitive(s, 'abc')",
                  "SELECT max(id) FROM bf WHERE hasToken(s, 'def') SETTINGS force_data_skipping_indices = 'tok_bf'"]:
            _same(db, ch, q + (" SETTINGS" if "SETTINGS" not in q else ",") + " max_rows_to_read = 16")
    with pytest.raises(SkipidxError, match="TOO_MANY_ROWS"):
        db.sql("SELECT max(id) FROM bf WHERE hasToken(s, 'yyy') SETTINGS max_rows_to_read = 16")
    db.sql("ALTER TABLE bf DROP INDEX tok_bf")
    assert db.table_meta("bf").indexes == []
    db.sql("ALTER TABLE bf ADD INDEX t2 (s, lower(s)) TYPE tokenbf_v1(512, 3, 0), MATERIALIZE INDEX t2")
    r = db.sql("SELECT max(id) FROM bf WHERE hasTokenCaseInsensitive(s, 'abc') SETTINGS force_data_skipping_indices = 't2'")
    assert r.scalar() == 2007 and r.stats.granules_selected < r.stats.granules_total


@pytest.mark.parametrize("ddl,fragment,column", [
    ("CREATE TABLE z (s String, INDEX i s TYPE bloom_filte GRANULARITY 1) ENGINE = MergeTree ORDER BY s",
     "maybe you meant 'bloom_filter'", 27),
    ("CREATE TABLE z (s String, INDEX i (s, s) TYPE bloom_filter) ENGINE = MergeTree ORDER BY s",
     "listed twice", 39),
    ("CREATE TABLE z (s String, INDEX i sx TYPE minmax) ENGINE = MergeTree ORDER BY s", "unknown column 'sx'", 35),
])
def test_index_ddl_errors_have_their_place(db, ddl, fragment, column) -> None:
    with pytest.raises(SkipidxError) as info:
        db.sql(ddl)
    assert fragment in info.value.message
    assert (info.value.line, info.value.column) == (1, column)


# ---------------------------------------------------------------------------- indexes on expressions

@chdb_mark
def test_expression_index_prunes_like_clickhouse(db) -> None:
    script = """CREATE TABLE ex (id UInt64, s String, INDEX twice id * 2 TYPE set(0) GRANULARITY 1,
                    INDEX len length(s) TYPE minmax GRANULARITY 1) ENGINE = MergeTree ORDER BY s
                    SETTINGS index_granularity = 4;
                INSERT INTO ex SELECT number, 'x' FROM numbers(100);
                INSERT INTO ex VALUES (7, 'a longer string')"""
    with _chdb_db() as (name, ch):
        _both(db, ch, script)
        assert db.sql("SHOW CREATE TABLE ex").scalar() == _show_create(ch, name, "ex")
        for q in ["SELECT count() FROM ex WHERE id * 2 = 14 SETTINGS force_data_skipping_indices = 'twice'",
                  "SELECT count() FROM ex WHERE length(s) > 5 SETTINGS force_data_skipping_indices = 'len', "
                  "max_rows_to_read = 4",
                  "SELECT count() FROM ex WHERE id * 2 IN (14, 16) AND s = 'x'"]:
            _same(db, ch, q)
        with pytest.raises(SkipidxError, match="INDEX_NOT_USED"):
            db.sql("SELECT count() FROM ex WHERE id = 7 SETTINGS force_data_skipping_indices = 'twice'")
        with pytest.raises(Exception, match="INDEX_NOT_USED"):
            ch.query("SELECT count() FROM ex WHERE id = 7 SETTINGS force_data_skipping_indices = 'twice'")
    r = db.sql("SELECT count() FROM ex WHERE id * 2 = 14")
    assert r.stats.granules_selected < r.stats.granules_total
    db.sql("ALTER TABLE ex ADD INDEX plus_one id + 1 TYPE minmax, MATERIALIZE INDEX plus_one")
    db.sql("OPTIMIZE TABLE ex FINAL")
    r = db.sql("SELECT count() FROM ex WHERE id + 1 < 5 SETTINGS force_data_skipping_indices = 'plus_one'")
    assert r.scalar() == 4 and r.stats.granules_selected < r.stats.granules_total
    with pytest.raises(SkipidxError, match="index plus_one|index twice"):
        db.sql("ALTER TABLE ex DROP COLUMN id")


def test_constant_index_expression_is_an_error(db) -> None:
    with pytest.raises(SkipidxError) as info:
        db.sql("CREATE TABLE c (id UInt64, INDEX t 'foo' TYPE set(2)) ENGINE = MergeTree ORDER BY id")
    assert "is a constant" in info.value.message and (info.value.line, info.value.column) == (1, 36)
