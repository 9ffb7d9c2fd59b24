"""Parser: the second-round statements (INSERT ... SELECT, CREATE ... AS SELECT, TRUNCATE,
multi-command ALTER, SHOW CREATE, EXISTS, SET), table functions, query parameters,
SETTINGS/PREWHERE/FORMAT/INTO OUTFILE on SELECT; AST round trips and error places."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from skipidx.core.errors import ParseError
from skipidx.sql import ast as A
from skipidx.sql import parse

ROUND_TRIP = [
    "INSERT INTO t SELECT number, toString(number) FROM numbers(10)",
    "INSERT INTO TABLE t (a, b) SETTINGS max_threads = 1 VALUES (1, 2)",
    "INSERT INTO t (a) SELECT x FROM u WHERE x > 1 SETTINGS use_skip_indexes = 0",
    "CREATE TABLE t (id UInt64 DEFAULT 3, s String NOT NULL, INDEX i (s, lower(s)) TYPE tokenbf_v1(512, 3, 0) "
    "GRANULARITY 1) ENGINE = MergeTree() ORDER BY id PRIMARY KEY id SETTINGS index_granularity = 8, "
    "index_granularity_bytes = '10Mi'",
    "CREATE TABLE t ENGINE = MergeTree ORDER BY a AS SELECT number AS a FROM numbers(5)",
    "CREATE TABLE t (a UInt8, INDEX h toStartOfHour(ts) TYPE minmax, INDEX j a * 2 TYPE set(0)) ENGINE = MergeTree",
    "TRUNCATE TABLE IF EXISTS t",
    "TRUNCATE t",
    "ALTER TABLE t ADD COLUMN IF NOT EXISTS c UInt8 DEFAULT 5 AFTER b, DROP COLUMN d, MODIFY SETTING max_part_rows = 10",
    "ALTER TABLE t ADD COLUMN c String FIRST",
    "ALTER TABLE t DROP COLUMN IF EXISTS c",
    "ALTER TABLE t ADD INDEX i a TYPE minmax, MATERIALIZE INDEX i",
    "SHOW CREATE TABLE t",
    "SHOW CREATE t",
    "EXISTS TABLE t",
    "EXISTS t",
    "SET max_threads = 1, use_skip_indexes = 0",
    "SELECT * FROM {tbl:Identifier} PREWHERE a = {v:UInt8} WHERE {c:Identifier} = 'x' LIMIT {n:UInt64} "
    "SETTINGS max_threads = 1 INTO OUTFILE 'a.csv' FORMAT CSV SETTINGS use_skip_indexes = 0",
    "SELECT count() FROM file('a/*.csv', CSVWithNames, 'a UInt8, b String') FORMAT JSON",
    "SELECT number FROM numbers(2, 10) WHERE number IN ({xs:Array(UInt8)}) FORMAT TSV",
    "SELECT {s:String}, {n:Nullable(Int64)}",
    "SELECT a FROM t SETTINGS force_data_skipping_indices = 'i1,i2'",
    "SELECT a FROM t SETTINGS max_rows_to_read = {m:UInt64}",
]


@pytest.mark.parametrize("sql", ROUND_TRIP)
def test_round_trip(sql: str) -> None:
    [stmt] = parse(sql)
    again = parse(stmt.to_sql())
    assert again == [stmt], stmt.to_sql()


def test_shapes() -> None:
    [s] = parse("SELECT * FROM t PREWHERE a = 1 WHERE b = 2 LIMIT 3 SETTINGS max_threads = 2 "
                "INTO OUTFILE 'o.csv' FORMAT CSVWithNames")
    assert isinstance(s, A.Select)
    assert s.prewhere == A.BinaryOp("=", A.Column("a"), A.Literal(1, "int"))
    assert s.settings_dict() == {"max_threads": A.Literal(2, "int")}
    assert (s.format, s.outfile, s.limit) == ("CSVWithNames", "o.csv", 3)
    [s] = parse("SELECT 1 FORMAT TSV SETTINGS max_threads = 1")
    assert s.format == "TSV" and s.settings_dict() == {"max_threads": A.Literal(1, "int")}
    [s] = parse("SELECT number FROM numbers(5, 10)")
    assert s.table is None and s.table_function == A.TableFunction("numbers", (A.Literal(5, "int"), A.Literal(10, "int")))
    [s] = parse("SELECT * FROM {t:Identifier} WHERE {c:Identifier} = {v:String}")
    assert s.table == A.TableRef("", "t")
    assert s.where == A.BinaryOp("=", A.Param("c", "Identifier"), A.Param("v", "String"))
    [s] = parse("ALTER TABLE t DROP COLUMN c")
    assert s == A.AlterDropColumn(A.TableRef("t"), "c")
    [s] = parse("ALTER TABLE t DROP COLUMN c, DROP INDEX i")
    assert s == A.Alter(A.TableRef("t"), (A.AlterDropColumn(A.TableRef("t"), "c"), A.AlterDropIndex(A.TableRef("t"), "i")))
    [s] = parse("CREATE TABLE t (a int) ENGINE = MergeTree ORDER BY (a, b) PRIMARY KEY a")
    assert s.primary_key == (A.Column("a"),) and s.order_by == (A.Column("a"), A.Column("b"))
    [s] = parse("INSERT INTO t SELECT 1")
    assert isinstance(s, A.InsertSelect) and s.select == A.Select((A.SelectItem(A.Literal(1, "int")),))


@pytest.mark.parametrize("sql,fragment,line,column", [
    ("SELECT {x}", "invalid query parameter", 1, 8),
    ("SELECT {x:}", "has no type", 1, 8),
    ("SELECT count() SETTINGS FROM t", "SETTINGS cannot be an alias without AS", 1, 16),
    ("SELECT a FROM t SETTINGS a = 1, a = 2", "duplicate setting 'a'", 1, 33),
    ("ALTER TABLE t ADD COLUMN", "unexpected end of input", 1, 25),
    ("SELECT a FROM t\nINTO OUTFILE ''", "non-empty path", 2, 14),
    ("CREATE TABLE t (a UInt8) ORDER BY a ORDER BY a", "duplicate ORDER BY clause", 2 - 1, 37),
])
def test_errors(sql: str, fragment: str, line: int, column: int) -> None:
    with pytest.raises(ParseError) as info:
        parse(sql)
    assert fragment in info.value.message, info.value.message
    assert (info.value.line, info.value.column) == (line, column), info.value


_names = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
_types = st.sampled_from(["UInt8", "String", "Nullable(Int64)", "Array(String)", "DateTime('UTC')", "Identifier"])


@settings(max_examples=150, deadline=None)
@given(name=_names, type_name=_types, where=st.sampled_from(["select", "where", "limit", "setting", "table"]))
def test_param_anywhere_round_trips(name: str, type_name: str, where: str) -> None:
    p = "{" + name + ":" + type_name + "}"
    sql = {"select": f"SELECT {p} FROM t", "where": f"SELECT a FROM t WHERE a = {p}",
           "limit": f"SELECT a FROM t LIMIT {p}", "setting": f"SELECT a FROM t SETTINGS max_threads = {p}",
           "table": f"SELECT a FROM {p}"}[where]
    ident = type_name == "Identifier"
    ok = {"select": True, "where": True, "limit": not ident, "setting": not ident, "table": ident}[where]
    if not ok:
        with pytest.raises(ParseError):
            parse(sql)
        return
    [stmt] = parse(sql)
    assert parse(stmt.to_sql()) == [stmt]


@settings(max_examples=150, deadline=None)
@given(cmds=st.lists(st.sampled_from([
    "ADD COLUMN c UInt8", "ADD COLUMN IF NOT EXISTS d String DEFAULT 'x' AFTER a", "DROP COLUMN IF EXISTS e",
    "MODIFY SETTING max_part_rows = 5", "ADD INDEX i lower(s) TYPE bloom_filter GRANULARITY 2", "DROP INDEX j",
    "MATERIALIZE INDEX k", "REFRESH"]), min_size=1, max_size=5))
def test_alter_commands_any_mix(cmds: list[str]) -> None:
    [stmt] = parse("ALTER TABLE t " + ", ".join(cmds))
    commands = stmt.commands if isinstance(stmt, A.Alter) else (stmt,)
    assert len(commands) == len(cmds)
    assert all(isinstance(c, A.ALTER_COMMANDS) and c.table.name == "t" for c in commands)
    assert parse(stmt.to_sql()) == [stmt]
