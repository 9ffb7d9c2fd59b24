"""ClickHouse's `system` tables as SQL tables, and `database.table` names (engine/system_tables.py).

chDB is the oracle for the column names and types (`DESCRIBE system.X`) and for what a
table's DDL shows in system.tables / system.data_skipping_indices; the contents are
checked against the database itself (count(), SHOW CREATE, SHOW PARTS, the query log).
"""
import json

import pytest

import skipidx
from skipidx.engine.system_tables import SYSTEM_TABLES

DDL = ("CREATE TABLE t (id UInt64, msg String DEFAULT 'x', code LowCardinality(String) CODEC(ZSTD(3)), "
       "INDEX i_msg msg TYPE tokenbf_v1(1024, 3, 0) GRANULARITY 2, "
       "INDEX i_code code TYPE bloom_filter(0.01), INDEX i_id id TYPE minmax, INDEX i_set code TYPE set(10) "
       "GRANULARITY 4, INDEX i_ng lower(msg) TYPE ngrambf_v1(3, 512, 2, 7)) "
       "ENGINE = MergeTree PRIMARY KEY id ORDER BY (id, code) SETTINGS index_granularity = 4")

# the documented columns of ClickHouse's system.query_log (chDB keeps no query log to DESCRIBE)
QUERY_LOG_TYPES = {
    "type": "Enum8('QueryStart' = 1, 'QueryFinish' = 2, 'ExceptionBeforeStart' = 3, 'ExceptionWhileProcessing' = 4)",
    "event_date": "Date", "event_time": "DateTime", "event_time_microseconds": "DateTime64(6)",
    "query_start_time": "DateTime", "query_start_time_microseconds": "DateTime64(6)",
    "query_duration_ms": "UInt64", "read_rows": "UInt64", "result_rows": "UInt64", "current_database": "String",
    "query": "String", "query_kind": "LowCardinality(String)", "databases": "Array(LowCardinality(String))",
    "tables": "Array(LowCardinality(String))", "exception_code": "Int32", "exception": "String",
    "query_id": "String",
}


def _fill(d):
    d.sql(DDL)
    d.sql("INSERT INTO t SELECT number, concat('msg ', toString(number)), toString(number % 3) FROM numbers(30)")
    d.sql("INSERT INTO t VALUES (100, 'last one', 'z')")
    d.sql("CREATE TABLE u (a UInt8) ENGINE = MergeTree ORDER BY tuple()")


@pytest.fixture(scope="module")
def ro(tmp_path_factory):
    """A database the tests only read (no SELECT that logs: the query log test has its own)."""
    with skipidx.connect(tmp_path_factory.mktemp("systables") / "db") as d:
        _fill(d)
        d.sql("SET log_queries = 0")
        yield d


@pytest.fixture()
def db(tmp_path):
    with skipidx.connect(tmp_path / "db") as d:
        _fill(d)
        yield d


def _describe(db, name):
    return [tuple(r[:2]) for r in db.sql(f"DESCRIBE TABLE system.{name}").fetchall()]


@pytest.mark.parametrize("name", sorted(set(SYSTEM_TABLES) - {"query_log"}))
def test_columns_are_clickhouses(ro, chdb, name):
    ours = _describe(ro, name)
    theirs = {}
    for line in str(chdb.query(f"DESCRIBE system.{name}", "TSV")).splitlines():
        f = line.split("\t")
        theirs[f[0]] = f[1].replace("\\'", "'")
    assert ours, name
    for col, typ in ours:
        assert col in theirs, f"system.{name}.{col} is not a ClickHouse column"
        assert typ == theirs[col], (name, col)
    # in ClickHouse's order
    order = list(theirs)
    assert [c for c, _ in ours] == sorted((c for c, _ in ours), key=order.index)
    # the result's declared types are those DESCRIBE gives
    res = ro.sql(f"SELECT * FROM system.{name}")
    assert list(zip(res.columns, res.types)) == ours


def test_query_log_columns_are_clickhouses(db):
    ours = _describe(db, "query_log")
    assert dict(ours) == {c: QUERY_LOG_TYPES[c] for c, _ in ours}
    db.sql("SELECT count() FROM t")
    res = db.sql("SELECT * FROM system.query_log")
    assert list(zip(res.columns, res.types)) == ours


def test_parts(db):
    rows = db.sql("SELECT sum(rows), count(), sum(marks) FROM system.parts WHERE table = 't'").fetchall()
    assert rows == [(31, 2, 8 + 1)]
    assert db.sql("SELECT count() FROM t").fetchall()[0][0] == 31
    shown = db.sql("SHOW PARTS t").to_arrow()
    got = db.sql("SELECT name, rows, marks, bytes_on_disk, level, active, modification_time FROM system.parts "
                 "WHERE database = 'default' AND table = 't' ORDER BY name").to_arrow()
    shown = shown.sort_by("name")
    for c in ("name", "rows", "marks", "bytes_on_disk", "level", "active", "modification_time"):
        assert got.column(c).to_pylist() == shown.column(c).to_pylist(), c
    for r in db.sql("SELECT bytes_on_disk, data_compressed_bytes, secondary_indices_compressed_bytes, files, "
                    "partition, partition_id, engine, path, data_uncompressed_bytes FROM system.parts").fetchall():
        assert r[0] > r[1] + r[2] and r[1] > 0 and r[2] > 0 and r[3] == 6 and r[8] > 0
        assert r[4:7] == ("tuple()", "all", "MergeTree") and r[7].endswith("/")
    # the column bytes add up to the parts' (both from the data files' footers) and the table's
    for c in ("data_compressed_bytes", "data_uncompressed_bytes"):
        total = db.sql(f"SELECT sum({c}) FROM system.parts WHERE table = 't'").fetchall()[0][0]
        assert db.sql(f"SELECT sum({c}) FROM system.columns WHERE table = 't'").fetchall()[0][0] == total
    assert db.sql("SELECT total_bytes_uncompressed FROM system.tables WHERE name = 't'").fetchall()[0][0] == total
    # the sizes are read (from the footers) when the query names them, in WHERE too
    assert db.sql("SELECT name FROM system.columns WHERE table = 't' AND data_compressed_bytes > 0").fetchall() \
        == [("id",), ("msg",), ("code",)]
    db.sql("OPTIMIZE TABLE default.t FINAL")
    assert db.sql("SELECT rows, level FROM system.parts WHERE table = 't'").fetchall() == [(31, 1)]
    assert db.sql("SELECT count() FROM system.parts WHERE table = 'u'").fetchall() == [(0,)]


def test_tables_and_columns_match_chdb(ro, chdb):
    dbname = chdb.scratch_database("st")
    chdb.query(DDL.replace("CREATE TABLE t", f"CREATE TABLE {dbname}.t"))
    want = str(chdb.query(f"SELECT create_table_query, engine_full, sorting_key, primary_key, partition_key "
                          f"FROM system.tables WHERE database = '{dbname}' AND name = 't'", "JSONCompact"))
    want = json.loads(want)["data"][0]
    got = ro.sql("SELECT create_table_query, engine_full, sorting_key, primary_key, partition_key "
                 "FROM system.tables WHERE name = 't'").fetchall()[0]
    assert got[0] == want[0].replace(f"{dbname}.", "default.")
    assert list(got[1:]) == want[1:]
    q = ("SELECT name, type, position, default_kind, default_expression, is_in_sorting_key, is_in_primary_key, "
         "compression_codec FROM system.columns WHERE database = '{}' AND table = 't' ORDER BY position")
    want = json.loads(str(chdb.query(q.format(dbname), "JSONCompact")))["data"]
    got = ro.sql(q.format("default")).fetchall()
    assert [list(r) for r in got] == [[int(x) if isinstance(x, str) and x.isdigit() else x for x in r] for r in want]
    t = ro.sql("SELECT total_rows, parts, active_parts, total_marks, engine FROM system.tables WHERE name = 't'")
    assert t.fetchall() == [(31, 2, 2, 9, "MergeTree")]
    assert ro.sql("SELECT name FROM system.tables ORDER BY name").fetchall() == [("t",), ("u",)]


def test_data_skipping_indices_match_chdb(ro, chdb):
    dbname = chdb.scratch_database("st")
    chdb.query(DDL.replace("CREATE TABLE t", f"CREATE TABLE {dbname}.t"))
    q = ("SELECT name, type, type_full, expr, granularity FROM system.data_skipping_indices "
         "WHERE database = '{}' AND table = 't' ORDER BY name")
    want = json.loads(str(chdb.query(q.format(dbname), "JSONCompact")))["data"]
    got = ro.sql(q.format("default")).fetchall()
    assert [list(r) for r in got] == [[int(x) if isinstance(x, str) and x.isdigit() else x for x in r] for r in want]
    # type_full as SHOW CREATE shows it
    create = ro.sql("SHOW CREATE TABLE t").fetchall()[0][0]
    for name, type_full, gran in ro.sql("SELECT name, type_full, granularity FROM system.data_skipping_indices"
                                        " WHERE table = 't'").fetchall():
        assert f"INDEX {name} " in create and f"TYPE {type_full} GRANULARITY {gran}" in create
    # sizes: every materialized index has bytes, and they add up to the parts' index bytes
    sizes = ro.sql("SELECT sum(data_compressed_bytes), min(data_compressed_bytes) FROM system.data_skipping_indices "
                   "WHERE table = 't'").fetchall()[0]
    assert sizes[1] > 0
    assert sizes[0] == ro.sql("SELECT sum(secondary_indices_compressed_bytes) FROM system.parts").fetchall()[0][0]


def test_query_log(db):
    db.sql("SELECT count() FROM t WHERE hasToken(msg, 'one')")
    db.sql("SELECT id FROM default.t WHERE id < {n:UInt64} ORDER BY id", params={"n": 5})
    db.sql("SELECT count() FROM system.parts")
    res = db.sql("SELECT query, type, query_kind, read_rows, result_rows, tables, databases, current_database, "
                 "query_duration_ms, exception_code, query_id, event_time = toDateTime(event_time_microseconds), "
                 "query_start_time <= event_time, event_date FROM system.query_log ORDER BY event_time_microseconds")
    rows = res.fetchall()
    assert [r[0] for r in rows] == ["SELECT count() FROM t WHERE hasToken(msg, 'one')",
                                    "SELECT id FROM default.t WHERE id < {n:UInt64} ORDER BY id",
                                    "SELECT count() FROM system.parts"]
    first, second, third = rows
    assert first[1:3] == ("QueryFinish", "Select")
    assert first[4] == 1 and second[4] == 5 and third[4] == 1
    # hasToken read the granules its index kept: fewer rows than the table, at least the match
    assert 1 <= first[3] < 31 and second[3] >= 5
    assert first[5] == ["default.t"] and second[5] == ["default.t"] and third[5] == ["system.parts"]
    assert third[6] == ["system"] and first[7] == "default"
    assert all(r[8] >= 0 and r[9] == 0 and len(r[10]) == 36 and r[11] and r[12] for r in rows)
    assert len({r[10] for r in rows}) == 3
    # the same log as db.query_log(), which advise reads
    assert db.query_log().column("query").to_pylist()[:3] == [r[0] for r in rows]
    # a normal table for SQL: aggregates, LIMIT, FORMAT
    assert db.sql("SELECT count(), max(result_rows) FROM system.query_log WHERE has(tables, 'default.t')"
                  ).fetchall() == [(2, 5)]
    out = db.sql("SELECT query FROM system.query_log ORDER BY event_time_microseconds LIMIT 1 FORMAT JSONEachRow")
    assert out.format_name == "JSONEachRow" and out.fetchall() == [(rows[0][0],)]


def test_query_log_failures(db):
    with pytest.raises(skipidx.SkipidxError):
        db.sql("SELECT nope FROM t")
    with pytest.raises(skipidx.SkipidxError, match="TOO_MANY_ROWS"):
        db.sql("SELECT * FROM t WHERE id > 0 SETTINGS max_rows_to_read = 2")
    db.sql("SELECT 1")
    rows = db.sql("SELECT query, type, exception_code, exception != '', tables FROM system.query_log "
                  "WHERE type != 'QueryFinish' ORDER BY event_time_microseconds").fetchall()
    assert rows == [("SELECT nope FROM t", "ExceptionBeforeStart", 0, True, ["default.t"]),
                    ("SELECT * FROM t WHERE id > 0 SETTINGS max_rows_to_read = 2", "ExceptionWhileProcessing",
                     158, True, ["default.t"])]
    assert "nope" in db.sql("SELECT exception FROM system.query_log WHERE exception != '' LIMIT 1").fetchall()[0][0]
    # db.query_log() (what advise reads) keeps the SELECTs that ran
    assert db.query_log().column("query").to_pylist()[0] == "SELECT 1"


def test_settings(db, chdb):
    db.sql("SET max_rows_to_read = 1000")
    got = {r[0]: r[1:] for r in db.sql("SELECT name, value, changed, type, default FROM system.settings "
                                       "SETTINGS use_skip_indexes = 0").fetchall()}
    assert got["max_rows_to_read"][:2] == ("1000", 1)
    assert got["use_skip_indexes"][:2] == ("0", 1)
    assert got["force_primary_key"][:2] == ("0", 0)
    names = "', '".join(got)
    theirs = json.loads(str(chdb.query(f"SELECT name, type FROM system.settings WHERE name IN ('{names}')",
                                       "JSONCompact")))["data"]
    assert len(theirs) > 30
    for name, typ in theirs:
        assert got[name][2] == typ, name
    # a default that ClickHouse has too is written as ClickHouse writes it
    theirs = dict(json.loads(str(chdb.query(
        "SELECT name, default FROM system.settings WHERE name IN ('use_skip_indexes', 'max_block_size', "
        "'force_data_skipping_indices', 'send_logs_level', 'optimize_move_to_prewhere')", "JSONCompact")))["data"])
    for name, d in theirs.items():
        assert got[name][3] == d, name


def test_table_uuid_is_its_identity(db):
    (u1,) = db.sql("SELECT toString(uuid) FROM system.tables WHERE name = 'u'").fetchall()[0]
    assert len(u1) == 36 and u1 != "00000000-0000-0000-0000-000000000000"
    assert db.sql("SELECT toString(uuid) FROM system.tables WHERE name = 'u'").fetchall()[0][0] == u1
    db.sql("DROP TABLE u")
    db.sql("CREATE TABLE u (a UInt8) ENGINE = MergeTree ORDER BY tuple()")
    (u2,) = db.sql("SELECT toString(uuid) FROM system.tables WHERE name = 'u'").fetchall()[0]
    assert u2 != u1 and db.sql("SELECT count(DISTINCT toString(uuid)) FROM system.tables").fetchall() == [(2,)]


def test_merges_and_databases(ro):
    assert ro.sql("SELECT count() FROM system.merges").fetchall() == [(0,)]
    rows = ro.sql("SELECT name, engine FROM system.databases ORDER BY name").fetchall()
    assert rows == [("default", "Atomic"), ("system", "Memory")]


def test_database_qualified_names(db):
    assert db.sql("SELECT count() FROM default.t").fetchall() == [(31,)]
    assert db.sql("SELECT count() FROM `default`.`t`").fetchall() == [(31,)]
    db.sql("INSERT INTO default.u VALUES (1)")
    db.sql("ALTER TABLE default.u ADD COLUMN b UInt8, ADD COLUMN c UInt8")
    assert db.sql("DESCRIBE TABLE default.u").fetchall()[1][:2] == ("b", "UInt8")
    assert db.sql("EXISTS TABLE default.u").fetchall() == [(1,)]
    assert db.sql("SHOW CREATE TABLE default.u").fetchall()[0][0].startswith("CREATE TABLE default.u")
    db.sql("CREATE TABLE default.v (a UInt8) ORDER BY a")
    db.sql("TRUNCATE TABLE default.u")
    db.sql("DROP TABLE default.v")
    assert db.sql("SHOW TABLES").fetchall() == [("t",), ("u",)]
    assert db.sql("SHOW TABLES FROM default").fetchall() == [("t",), ("u",)]
    assert ("query_log",) in db.sql("SHOW TABLES IN system").fetchall()
    with pytest.raises(skipidx.SkipidxError, match="Database nope does not exist"):
        db.sql("SHOW TABLES FROM nope")
    assert db.sql("SELECT count() FROM t WHERE id IN (SELECT rows FROM system.parts WHERE table = 't')"
                  ).fetchall() == [(1,)]
    assert db.sql("SELECT n FROM (SELECT count() AS n FROM system.columns WHERE table = 't')").fetchall() == [(3,)]
    assert db.sql("EXISTS TABLE system.parts").fetchall() == [(1,)]
    assert db.sql("EXISTS TABLE system.nope").fetchall() == [(0,)]
    with pytest.raises(skipidx.SkipidxError, match="There is no metadata of table parts in database system"):
        db.sql("SHOW CREATE TABLE system.parts")       # as ClickHouse
    lines = [r[0] for r in db.sql("EXPLAIN SELECT name FROM system.parts WHERE rows > 1").fetchall()]
    assert "  ReadFromSystemPartsBase (system.parts)" in lines and "    Columns: name, rows" in lines
    # ClickHouse's compound {x:Identifier}
    assert db.sql("SELECT count() FROM {x:Identifier} WHERE table = 't'", params={"x": "system.parts"}
                  ).fetchall() == [(2,)]
    assert db.sql("SELECT count() FROM {x:Identifier}", params={"x": "default.t"}).fetchall() == [(31,)]
    db.sql("INSERT INTO u SELECT toUInt8(rows), 0, 0 FROM system.parts WHERE table = 't'")
    assert db.sql("SELECT count() FROM u").fetchall() == [(2,)]
    # a snapshot of a system table, with its ClickHouse types
    db.sql("CREATE TABLE snap ORDER BY name AS SELECT name, rows, modification_time FROM system.parts "
           "WHERE table = 't'")
    assert db.sql("DESCRIBE snap").fetchall()[1][:2] == ("rows", "UInt64")
    assert db.sql("SELECT sum(rows) FROM snap").fetchall() == [(31,)]


@pytest.mark.parametrize("sql, words", [
    ("INSERT INTO system.parts VALUES (1)", "read-only system table: INSERT"),
    ("INSERT INTO system.parts SELECT * FROM system.parts", "read-only system table: INSERT"),
    ("DROP TABLE system.query_log", "read-only system table: DROP TABLE"),
    ("DROP TABLE IF EXISTS system.query_log", "read-only system table: DROP TABLE"),
    ("TRUNCATE TABLE system.query_log", "read-only system table: TRUNCATE"),
    ("ALTER TABLE system.parts ADD INDEX k name TYPE minmax", "read-only system table: ALTER"),
    ("ALTER TABLE system.parts DROP COLUMN a, DROP COLUMN b", "read-only system table: ALTER"),
    ("OPTIMIZE TABLE system.parts", "read-only system table: OPTIMIZE"),
    ("SHOW PARTS system.parts", "read-only system table"),
    ("CREATE TABLE system.x (a UInt8) ORDER BY a", "system database is read-only"),
    ("SELECT * FROM system.part", "unknown table system.part; maybe you meant 'parts'"),
    ("SELECT * FROM system.querylog", "maybe you meant 'query_log'"),
    ("SELECT * FROM sytem.parts", "Database sytem does not exist; maybe you meant 'system'"),
    ("SELECT * FROM other.t", "Database other does not exist"),
    ("INSERT INTO other.t VALUES (1)", "Database other does not exist"),
    ("SELECT nope FROM system.parts", "nope"),
])
def test_refusals(ro, sql, words):
    with pytest.raises(skipidx.SkipidxError) as e:
        ro.sql(sql)
    assert words in str(e.value)
    assert ro.sql("SHOW TABLES").fetchall() == [("t",), ("u",)]


def test_cli(tmp_path, capsys):
    from skipidx.apps.cli import main

    path = str(tmp_path / "db")
    with skipidx.connect(path) as d:
        d.sql("CREATE TABLE t (a UInt64) ORDER BY a")
        d.sql("INSERT INTO t VALUES (1), (2), (3)")
    assert main(["sql", path, "-q", "SELECT table, rows FROM system.parts", "--format", "CSV"]) == 0
    assert capsys.readouterr().out == '"t",3\n'
    assert main(["sql", path, "-q", "SELECT * FROM system.prts"]) != 0
    err = capsys.readouterr().err
    assert "maybe you meant 'parts'" in err and "Traceback" not in err
    assert main(["sql", path, "-q", "SELECT 1", "-f", "x.sql"]) != 0
    assert "give the SQL once" in capsys.readouterr().err


def test_external_table(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "lake").mkdir()
    pq.write_table(pa.table({"a": [1, 2, 3], "s": ["x", "y", "z"]}), tmp_path / "lake" / "f1.parquet")
    with skipidx.connect(tmp_path / "db") as d:
        d.sql(f"CREATE TABLE lake (a Int64, s String, INDEX i s TYPE bloom_filter) "
              f"ENGINE = ParquetFiles('{tmp_path}/lake/*.parquet')")
        row = d.sql("SELECT engine, total_rows, parts, has_own_data, engine_full FROM system.tables").fetchall()[0]
        assert row == ("ParquetFiles", None, None, 0, f"ParquetFiles('{tmp_path}/lake/*.parquet')")
        # its data files are not parts; its sidecar indexes have sizes
        assert d.sql("SELECT count() FROM system.parts").fetchall() == [(0,)]
        row = d.sql("SELECT name, type, data_compressed_bytes > 0 FROM system.data_skipping_indices").fetchall()
        assert row == [("i", "bloom_filter", True)]
        assert d.sql("SELECT name, type FROM system.columns").fetchall() == [("a", "Int64"), ("s", "String")]


def test_functions_formats_one(ro, chdb):
    ours = {r[0]: r[1:] for r in ro.sql("SELECT name, is_aggregate, alias_to FROM system.functions").fetchall()}
    assert {"hasToken", "count", "lower", "lcase"} <= set(ours) and ours["lcase"] == (0, "lower")
    names = "', '".join(ours)
    theirs = json.loads(str(chdb.query(f"SELECT name, is_aggregate FROM system.functions WHERE name IN ('{names}')",
                                       "JSONCompact")))["data"]
    assert len(theirs) > 100
    for name, agg in theirs:
        assert ours[name][0] == int(agg), name
    assert ro.sql("SELECT is_input, is_output FROM system.formats WHERE name = 'Parquet'").fetchall() == [(1, 1)]
    assert ro.sql("SELECT name FROM system.table_functions ORDER BY name").fetchall() == [
        ("file",), ("numbers",), ("values",)]
    assert ro.sql("SELECT dummy, count() FROM system.one GROUP BY dummy").fetchall() == [(0, 1)]


@pytest.mark.parametrize("text, database, name", [
    ("SELECT 1 FROM system.parts", "system", "parts"),
    ("SELECT 1 FROM `default`.`t`", "default", "t"),
    ("SELECT 1 FROM db . t", "db", "t"),
    ("SELECT 1 FROM `my db`.`a b`", "my db", "a b"),
    ("INSERT INTO d.t VALUES (1)", "d", "t"),
    ("SHOW CREATE TABLE system.merges", "system", "merges"),
    ("SELECT 1 FROM t", None, "t"),
])
def test_parse_database_table(text, database, name):
    from skipidx.sql.parser import parse

    (s,) = parse(text)
    assert (s.table.database, s.table.name) == (database, name)
    (again,) = parse(s.to_sql())
    assert again.table == s.table


def test_parse_errors_at_the_dot():
    from skipidx.sql.parser import parse

    for text in ("SELECT 1 FROM system.", "SELECT 1 FROM a.b.c", "SELECT 1 FROM .t"):
        with pytest.raises(skipidx.SkipidxError) as e:
            parse(text)
        assert e.value.line == 1 and e.value.column


def test_merges_lists_a_running_merge(tmp_path, monkeypatch):
    from skipidx.store import merge as merge_mod

    with skipidx.connect(tmp_path / "db") as d:
        d.sql("CREATE TABLE m (a UInt64) ORDER BY a SETTINGS background_merges = 0")
        for i in range(3):
            d.sql(f"INSERT INTO m VALUES ({i})")
        names = sorted(r[0] for r in d.sql("SELECT name FROM system.parts WHERE table = 'm'").fetchall())
        seen = {}
        orig = merge_mod.merged_chunks

        def spy(*args, **kwargs):
            # a query of system.merges while the merge runs (what SHOW MERGES shows)
            seen["system"] = d.sql("SELECT database, table, num_parts, source_part_names, result_part_name, "
                                   "elapsed >= 0, is_mutation FROM system.merges").fetchall()
            seen["show"] = d.sql("SHOW MERGES").fetchall()
            yield from orig(*args, **kwargs)

        monkeypatch.setattr(merge_mod, "merged_chunks", spy)
        d.sql("OPTIMIZE TABLE m FINAL")
        [(db_name, table, n, sources, result, elapsed_ok, mutation)] = seen["system"]
        assert (db_name, table, n, sorted(sources), elapsed_ok, mutation) == ("default", "m", 3, names, True, 0)
        [show] = seen["show"]
        assert (show[1], show[3]) == (result, sources)
        assert d.sql("SELECT name FROM system.parts WHERE table = 'm'").fetchall() == [(result,)]
        assert d.sql("SELECT count() FROM system.merges").fetchall() == [(0,)]


def test_current_database(ro, chdb):
    q = "SELECT currentDatabase(), DATABASE(), current_database()"
    res = ro.sql(q)
    want = str(chdb.query(q, "TSVWithNamesAndTypes")).splitlines()
    assert [res.columns, res.types] == [want[0].split("\t"), want[1].split("\t")]
    assert res.fetchall() == [("default",) * 3]
    assert ro.sql("SELECT count() FROM system.tables WHERE database = currentDatabase()").fetchall() == [(2,)]


def test_detached_parts_after_a_repair(tmp_path):
    import os
    import shutil

    from skipidx.store import commit as _commit

    with skipidx.connect(tmp_path / "db") as d:
        d.sql("CREATE TABLE r (a UInt64) ORDER BY a SETTINGS background_merges = 0")
        d.sql("INSERT INTO r VALUES (1), (2)")
        assert d.sql("SELECT count() FROM system.detached_parts").fetchall() == [(0,)]
        (part,) = d.sql("SELECT name FROM system.parts").fetchall()[0]
        tdir = os.path.join(d.path, "r")
        # a part directory the state does not list (e.g. left by a crash), then a lost state
        shutil.copytree(os.path.join(tdir, "parts", part), os.path.join(tdir, "parts", "p_stray_0"))
        os.remove(os.path.join(tdir, "state.json"))
        _commit.clear_state_cache()
        assert "moved to detached/" in d.sql("ALTER TABLE r ATTACH PARTS").message
        rows = d.sql("SELECT database, table, name, bytes_on_disk, disk, path FROM system.detached_parts").fetchall()
        size = sum(os.path.getsize(os.path.join(tdir, "detached", "p_stray_0", f))
                   for f in os.listdir(os.path.join(tdir, "detached", "p_stray_0")))
        assert rows == [("default", "r", "p_stray_0", size, "default",
                         os.path.join(tdir, "detached", "p_stray_0") + os.sep)]
        assert d.sql("SELECT count() FROM r").fetchall() == [(2,)]
