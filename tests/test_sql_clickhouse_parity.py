"""skipidx's SQL answers what ClickHouse answers, down to the result's column names.

chDB is the oracle (through ``skipidx.apps.research.chdb_session``, one session per process):

- column names: ``SELECT <expr> FROM t`` is named as ClickHouse names it
  (``a + 1`` is ``plus(a, 1)``, ``x BETWEEN 1 AND 2`` is
  ``and(greaterOrEquals(x, 1), lessOrEquals(x, 2))``, ``1.0`` is ``1.``, ...) for
  every expression form of the dialect; the goldens below were read from chDB and
  the chDB tests keep checking them, and the values and types with them;
- aliases without AS: exactly the words ClickHouse refuses as an implicit alias
  are refused (``SELECT a format FROM t`` is a syntax error with its position),
  checked against every keyword chDB lists in ``system.keywords``, and
  ``SELECT a is FROM t`` names the column ``is``;
- ``count(DISTINCT a, b)`` / ``uniqExact(a, b)`` count distinct tuples (a row
  with a NULL in any argument is skipped; floats compare by their bits);
- ``SELECT a AS b, b AS a``: ClickHouse resolves such alias cycles differently
  in the SELECT list and in WHERE, so skipidx refuses them with an error.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import math
from typing import Any, Callable, Iterator

import pyarrow as pa
import pytest

import skipidx
from skipidx.core.errors import BindError, ParseError
from skipidx.sql.ast import KEYWORDS
from skipidx.sql.parser import IMPLICIT_ALIAS_RESTRICTED, parse

DDL = ("CREATE TABLE t (a UInt32, b String, x Int64, f Float64, n Nullable(Int32), s Nullable(String), d Date, "
       "ts DateTime) ENGINE = MergeTree ORDER BY a")
ROWS = ("(1, 'x', 5, 1.5, NULL, 'q', '2024-01-01', '2024-01-01 00:00:01'), "
        "(2, 'y', -3, 2.5, 7, NULL, '2024-01-02', '2024-01-01 00:00:02'), "
        "(3, 'x', 0, 0, 7, 'r', '2024-01-03', '2024-01-01 00:00:03'), "
        "(4, 'zz', 9, -1.25, -2, 'q', '2024-02-01', '2024-03-01 10:00:00')")

#: (expression, ClickHouse's name of `SELECT <expression> FROM t`) -- one row per value.
ROW_NAMES = [
    ('a', 'a'),
    ('t.a', 'a'),
    ('`a`', 'a'),
    ('(a)', 'a'),
    ('a + 1', 'plus(a, 1)'),
    ('a - 1', 'minus(a, 1)'),
    ('a * 2', 'multiply(a, 2)'),
    ('a / 2', 'divide(a, 2)'),
    ('a % 3', 'modulo(a, 3)'),
    ('x - 1 - 2', 'minus(minus(x, 1), 2)'),
    ('x - (1 - 2)', 'minus(x, minus(1, 2))'),
    ('1 + 2 * 3', 'plus(1, multiply(2, 3))'),
    ('(a + 1) * 2', 'multiply(plus(a, 1), 2)'),
    ('-a', 'negate(a)'),
    ('-x', 'negate(x)'),
    ('- (a)', 'negate(a)'),
    ('-(a + 1)', 'negate(plus(a, 1))'),
    ('1 / -f', 'divide(1, negate(f))'),
    ('1 / -(f * 0)', 'divide(1, negate(multiply(f, 0)))'),
    ('- -x', 'negate(negate(x))'),
    ('-(1)', 'negate(1)'),
    ('-(-1)', 'negate(-1)'),
    ('-(1.5)', 'negate(1.5)'),
    ('-(200)', 'negate(200)'),
    ('-(70000)', 'negate(70000)'),
    ('-1', '-1'),
    ('- 1', '-1'),
    ('-1.5', '-1.5'),
    ('1', '1'),
    ('255', '255'),
    ('256', '256'),
    ('65536', '65536'),
    ('4294967296', '4294967296'),
    ('18446744073709551615', '18446744073709551615'),
    ('-9223372036854775808', '-9223372036854775808'),
    ('0x10', '16'),
    ('0.1', '0.1'),
    ('1.', '1.'),
    ('1.0', '1.'),
    ('1.5', '1.5'),
    ('1e3', '1000.'),
    ('1e20', '100000000000000000000.'),
    ('1e21', '1e21'),
    ('1e-7', '1e-7'),
    ('0.000001', '0.000001'),
    ('2.5e-10', '2.5e-10'),
    ('-0.0', '-0.'),
    ('inf', 'inf'),
    ('-inf', '-inf'),
    ('nan', 'nan'),
    ("'str'", "'str'"),
    ("'it''s'", "'it\\'s'"),
    ("'a\\nb'", "'a\\nb'"),
    ("'a\\\\b'", "'a\\\\b'"),
    ("'tab\\there'", "'tab\\there'"),
    ("'é東京'", "'é東京'"),
    ("'\\x01\\x07'", "'\x01\x07'"),
    ("''", "''"),
    ('NULL', 'NULL'),
    ('true', 'true'),
    ('false', 'false'),
    ('[1, 2]', '[1, 2]'),
    ('[1, -1]', '[1, -1]'),
    ('[1, 2.5]', '[1., 2.5]'),
    ("['a', 'b']", "['a', 'b']"),
    ('[NULL, 1]', '[NULL, 1]'),
    ('[]', '[]'),
    ('a = 1', 'equals(a, 1)'),
    ('a == 1', 'equals(a, 1)'),
    ('a != 1', 'notEquals(a, 1)'),
    ('a <> 1', 'notEquals(a, 1)'),
    ('a < 1', 'less(a, 1)'),
    ('a <= 1', 'lessOrEquals(a, 1)'),
    ('a > 1', 'greater(a, 1)'),
    ('a >= 1', 'greaterOrEquals(a, 1)'),
    ('1 < a', 'less(1, a)'),
    ("b = 'x'", "equals(b, 'x')"),
    ("'x' = b", "equals('x', b)"),
    ('a = -1', 'equals(a, -1)'),
    ('a = 1.5', 'equals(a, 1.5)'),
    ('f = 1', 'equals(f, 1)'),
    ("d = '2024-01-01'", "equals(d, '2024-01-01')"),
    ("ts > '2024-01-01 00:00:01'", "greater(ts, '2024-01-01 00:00:01')"),
    ("b LIKE 'x%'", "like(b, 'x%')"),
    ("b NOT LIKE 'x%'", "notLike(b, 'x%')"),
    ("b ILIKE 'X%'", "ilike(b, 'X%')"),
    ("b NOT ILIKE 'X%'", "notILike(b, 'X%')"),
    ("b LIKE '%\\%%'", "like(b, '%\\\\%%')"),
    ('a IN (1, 2)', 'in(a, (1, 2))'),
    ('a NOT IN (1, 2)', 'notIn(a, (1, 2))'),
    ('a IN (1)', 'in(a, 1)'),
    ('a IN (1,)', 'in(a, (1))'),
    ('a IN ((1), (2))', 'in(a, (1, 2))'),
    ('a IN ((1, 2))', 'in(a, (1, 2))'),
    ('a IN [1, 2]', 'in(a, [1, 2])'),
    ('a NOT IN [3]', 'notIn(a, [3])'),
    ('a IN (1, NULL)', 'in(a, (1, NULL))'),
    ('a IN (-1, 2)', 'in(a, (-1, 2))'),
    ("b IN ('x', 'y')", "in(b, ('x', 'y'))"),
    ("b IN ('x')", "in(b, 'x')"),
    ('a IS NULL', 'isNull(a)'),
    ('n IS NULL', 'isNull(n)'),
    ('n IS NOT NULL', 'isNotNull(n)'),
    ('a BETWEEN 1 AND 2', 'and(greaterOrEquals(a, 1), lessOrEquals(a, 2))'),
    ('a NOT BETWEEN 1 AND 2', 'or(less(a, 1), greater(a, 2))'),
    ('f BETWEEN -1 AND 1.5', 'and(greaterOrEquals(f, -1), lessOrEquals(f, 1.5))'),
    ('a > 1 AND a < 3', 'and(greater(a, 1), less(a, 3))'),
    ("a > 1 AND a < 3 AND b = 'x'", "and(greater(a, 1), less(a, 3), equals(b, 'x'))"),
    ('a > 1 OR a < 3', 'or(greater(a, 1), less(a, 3))'),
    ("(a > 1 AND a < 3) AND b = 'x'", "and(and(greater(a, 1), less(a, 3)), equals(b, 'x'))"),
    ("a > 1 AND (a < 3 AND b = 'x')", "and(greater(a, 1), and(less(a, 3), equals(b, 'x')))"),
    ('(a > 1) AND (a < 3)', 'and(greater(a, 1), less(a, 3))'),
    ("a > 1 OR a < 3 AND b = 'x'", "or(greater(a, 1), and(less(a, 3), equals(b, 'x')))"),
    ('NOT a > 1', 'not(greater(a, 1))'),
    ('NOT (a > 1)', 'not(greater(a, 1))'),
    ('NOT NOT a', 'not(not(a))'),
    ('NOT 1', 'not(1)'),
    ('not(a > 1)', 'not(greater(a, 1))'),
    ('and(a > 1, a < 3)', 'and(greater(a, 1), less(a, 3))'),
    ('or(a = 1, a = 2)', 'or(equals(a, 1), equals(a, 2))'),
    ('a > 1 = 1', 'equals(greater(a, 1), 1)'),
    ('n IS NULL IS NULL', 'isNull(isNull(n))'),
    ('n IS NULL OR a > 1', 'or(isNull(n), greater(a, 1))'),
    ('isNull(n)', 'isNull(n)'),
    ('isNotNull(n)', 'isNotNull(n)'),
    ('equals(a, 1)', 'equals(a, 1)'),
    ('plus(a, 1)', 'plus(a, 1)'),
    ("hasToken(b, 'x')", "hasToken(b, 'x')"),
    ("hasTokenCaseInsensitive(b, 'X')", "hasTokenCaseInsensitive(b, 'X')"),
    ("hasTokenOrNull(b, 'x')", "hasTokenOrNull(b, 'x')"),
    ("NOT hasToken(b, 'x')", "not(hasToken(b, 'x'))"),
    ("hasToken(b, 'x') AND a > 1", "and(hasToken(b, 'x'), greater(a, 1))"),
    ("startsWith(b, 'x')", "startsWith(b, 'x')"),
    ("endsWith(b, 'x')", "endsWith(b, 'x')"),
    ("multiSearchAny(b, ['x', 'zz'])", "multiSearchAny(b, ['x', 'zz'])"),
    ("match(b, 'x.*')", "match(b, 'x.*')"),
    ('lower(b)', 'lower(b)'),
    ('upper(b)', 'upper(b)'),
    ('length(b)', 'length(b)'),
    ('LOWER(b)', 'LOWER(b)'),
    ('lcase(b)', 'lcase(b)'),
    ("lower(b) = 'x'", "equals(lower(b), 'x')"),
    ("lower(b) LIKE '%x'", "like(lower(b), '%x')"),
    ("s = 'q'", "equals(s, 'q')"),
    ('n + 1', 'plus(n, 1)'),
    ('n = 7', 'equals(n, 7)'),
    ('1 = 1', 'equals(1, 1)'),
    ('NULL = 1', 'equals(NULL, 1)'),
    ('NULL IS NULL', 'isNull(NULL)'),
    ('1 + 1', 'plus(1, 1)'),
    ("'a' = 'a'", "equals('a', 'a')"),
    ('a + 1.0', 'plus(a, 1.)'),
    ('f * 1.5', 'multiply(f, 1.5)'),
    ('a / 0', 'divide(a, 0)'),
    ('1 / 0', 'divide(1, 0)'),
    ('0 / 0', 'divide(0, 0)'),
    ('-x % 3', 'modulo(negate(x), 3)'),
    ('true + 1', 'plus(true, 1)'),
    ('-(1) + 1', 'plus(negate(1), 1)'),
    ('1 + (2 + 3)', 'plus(1, plus(2, 3))'),
    ('(1 + 2) * (3 + 4)', 'multiply(plus(1, 2), plus(3, 4))'),
    ('1.5 + 2', 'plus(1.5, 2)'),
    ('5 - 1.5', 'minus(5, 1.5)'),
    ('7 % 2', 'modulo(7, 2)'),
    ('1 / 2', 'divide(1, 2)'),
    ('300 * 300 * 300 * 300', 'multiply(multiply(multiply(300, 300), 300), 300)'),
    ('-(18446744073709551615)', 'negate(18446744073709551615)'),
    ('-(9223372036854775808)', 'negate(9223372036854775808)'),
    ('[-200, 300]', '[-200, 300]'),
    ("'\\xFF'", "'�'"),
    ("b IN ('x',)", "in(b, ('x'))"),
    ('NULL = 1', 'equals(NULL, 1)'),
    ('n = NULL', 'equals(n, NULL)'),
    ('NULL AND 1', 'and(NULL, 1)'),
    ('NOT NULL', 'not(NULL)'),
    ('NULL + 1', 'plus(NULL, 1)'),
    ('NULL IN (1, 2)', 'in(NULL, (1, 2))'),
    ('lower(NULL)', 'lower(NULL)'),
    ("NULL LIKE 'x'", "like(NULL, 'x')"),
    ('NULL IS NULL', 'isNull(NULL)'),
    ('a IN (NULL)', 'in(a, NULL)'),
    ('-NULL', 'negate(NULL)'),
    ("hasToken(NULL, 'x')", "hasToken(NULL, 'x')"),
]
#: (aggregate expression, ClickHouse's name) -- one row for the whole table.
AGG_NAMES = [
    ('count()', 'count()'),
    ('count(*)', 'count()'),
    ('COUNT(*)', 'COUNT()'),
    ('count(a)', 'count(a)'),
    ('count(n)', 'count(n)'),
    ('sum(a)', 'sum(a)'),
    ('SUM(a)', 'SUM(a)'),
    ('sum(x)', 'sum(x)'),
    ('sum(f)', 'sum(f)'),
    ('sum(n)', 'sum(n)'),
    ('avg(a)', 'avg(a)'),
    ('avg(n)', 'avg(n)'),
    ('min(a)', 'min(a)'),
    ('max(b)', 'max(b)'),
    ('min(d)', 'min(d)'),
    ('max(ts)', 'max(ts)'),
    ('uniqExact(b)', 'uniqExact(b)'),
    ('uniqExact(n)', 'uniqExact(n)'),
    ('countDistinct(b)', 'countDistinct(b)'),
    ('count(DISTINCT b)', 'countDistinct(b)'),
    ('count(DISTINCT n)', 'countDistinct(n)'),
    ('count(DISTINCT a, b)', 'countDistinct(a, b)'),
    ('count(DISTINCT b, n)', 'countDistinct(b, n)'),
    ('count(DISTINCT b, s)', 'countDistinct(b, s)'),
    ('count(DISTINCT n, s)', 'countDistinct(n, s)'),
    ('uniqExact(a, b)', 'uniqExact(a, b)'),
    ('uniqExact(b, n)', 'uniqExact(b, n)'),
    ('uniqExact(DISTINCT b, n)', 'uniqExactDistinct(b, n)'),
    ('count(DISTINCT b, NULL)', 'countDistinct(b, NULL)'),
    ('sum(DISTINCT x)', 'sumDistinct(x)'),
    ('avg(DISTINCT x)', 'avgDistinct(x)'),
    ('min(DISTINCT a)', 'minDistinct(a)'),
    ('count(DISTINCT b) + 1', 'plus(countDistinct(b), 1)'),
    ('sum(a) + 1', 'plus(sum(a), 1)'),
    ('sum(a + 1)', 'sum(plus(a, 1))'),
    ('sum(x) / count()', 'divide(sum(x), count())'),
    ('count() * 2', 'multiply(count(), 2)'),
    ('sum(DISTINCT a) + max(a)', 'plus(sumDistinct(a), max(a))'),
    ('count() > 1', 'greater(count(), 1)'),
    ('max(a) - min(a)', 'minus(max(a), min(a))'),
]


@contextlib.contextmanager
def _skipidx_table(ddl: str, rows: str, table: str) -> Iterator[Any]:
    """A temporary skipidx database holding `table` (`ddl`) with `rows` (a VALUES list)."""
    d = skipidx.connect()
    try:
        d.sql(ddl)
        d.sql(f"INSERT INTO {table} VALUES {rows}")
        yield d
    finally:
        d.close()


@contextlib.contextmanager
def _chdb_table(ddl: str, rows: str, table: str, prefix: str) -> Iterator[Callable[[str], pa.Table]]:
    """The same table in a scratch chDB database; yields a function that runs a
    ``... FROM <table> ...`` query there (one thread) and returns its Arrow table."""
    pytest.importorskip("chdb")
    from skipidx.apps.research import chdb_session as _chdb

    name = _chdb.scratch_database(prefix)
    try:
        _chdb.query(ddl.replace(f"TABLE {table}", f"TABLE {name}.{table}"))
        _chdb.query(f"INSERT INTO {name}.{table} VALUES {rows}")

        def run(sql: str) -> pa.Table:
            return _chdb.query(sql.replace(f" FROM {table}", f" FROM {name}.{table}") + " SETTINGS max_threads = 1",
                               "ArrowTable")

        yield run
    finally:
        _chdb.query(f"DROP DATABASE {name}")


@pytest.fixture(scope="module")
def db():
    with _skipidx_table(DDL, ROWS, "t") as d:
        yield d


@pytest.fixture(scope="module")
def ch():
    """Runs a query on the same table in chDB; returns the Arrow table."""
    with _chdb_table(DDL, ROWS, "t", "parity") as run:
        yield run


def _norm(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float):
        return "nan" if math.isnan(v) else v
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, dt.datetime):  # chDB's Arrow output gives DateTime as epoch seconds
        return int((v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)).timestamp())
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def _rows(t: pa.Table) -> list[list[Any]]:
    t = t.rename_columns([f"c{i}" for i in range(t.num_columns)])  # a chDB name may not be UTF-8
    # chDB hands String over as Arrow utf8 even when the bytes are not UTF-8: read bytes
    cols = [(c.cast(pa.binary()) if pa.types.is_string(c.type) else c).to_pylist() for c in t.columns]
    return [[_norm(c[r]) for c in cols] for r in range(t.num_rows)]


def _type(t: pa.DataType) -> str:
    """A result type as both sides spell it in Arrow (chDB: DateTime as uint32, strings as
    binary, array items `not null`)."""
    if pa.types.is_timestamp(t):
        return "uint32"
    if pa.types.is_list(t):
        return f"list<{_type(t.value_type)}>"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_date32(t):
        return "uint16"  # chDB's Arrow output gives Date as days (UInt16)
    return str(t)


def _check_against_chdb(db, ch, sql: str) -> None:
    mine, theirs = db.sql(sql).to_arrow(), ch(sql)
    try:
        their_names = theirs.column_names
    except UnicodeDecodeError:
        # ClickHouse names `'\xFF'` with the raw byte, which pyarrow cannot read back as a
        # name; an Arrow name is UTF-8, so skipidx writes U+FFFD there (see the golden)
        their_names = None
    if their_names is not None:
        assert mine.column_names == their_names, f"{sql}: names {mine.column_names} vs chDB {their_names}"
    mine_types, their_types = [_type(t) for t in mine.schema.types], [_type(t) for t in theirs.schema.types]
    assert mine_types == their_types, f"{sql}: types {mine_types} vs chDB {their_types}"
    assert _rows(mine) == _rows(theirs), f"{sql}: rows {_rows(mine)} vs chDB {_rows(theirs)}"


# ---------------------------------------------------------------------------
# column names
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("expr,name", ROW_NAMES + AGG_NAMES, ids=[e for e, _ in ROW_NAMES + AGG_NAMES])
def test_column_name(db, expr: str, name: str) -> None:
    got = db.sql(f"SELECT {expr} FROM t").column_names
    assert got == [name], f"SELECT {expr}: column named {got}, ClickHouse names it {name!r}"


@pytest.mark.chdb
@pytest.mark.parametrize("expr", [e for e, _ in ROW_NAMES], ids=[e for e, _ in ROW_NAMES])
def test_row_expression_equals_chdb(db, ch, expr: str) -> None:
    """Name, type and every value of a per-row expression equal chDB's."""
    _check_against_chdb(db, ch, f"SELECT {expr} FROM t ORDER BY a")


@pytest.mark.chdb
@pytest.mark.parametrize("expr", [e for e, _ in AGG_NAMES], ids=[e for e, _ in AGG_NAMES])
def test_aggregate_equals_chdb(db, ch, expr: str) -> None:
    _check_against_chdb(db, ch, f"SELECT {expr} FROM t")


@pytest.mark.parametrize("sql,names", [
    ("SELECT a + 1 AS z, z * 2 FROM t ORDER BY a", ["z", "multiply(z, 2)"]),
    ("SELECT a + 1 z, a + 1 FROM t ORDER BY a", ["z", "plus(a, 1)"]),
    ("SELECT a, a + 1 FROM t ORDER BY 2 DESC", ["a", "plus(a, 1)"]),
    ("SELECT b, count(), count() > 1 FROM t GROUP BY b ORDER BY b", ["b", "count()", "greater(count(), 1)"]),
    ("SELECT b, count(DISTINCT a, x) FROM t GROUP BY b ORDER BY b", ["b", "countDistinct(a, x)"]),
    ("SELECT DISTINCT a % 2 FROM t ORDER BY a % 2", ["modulo(a, 2)"]),
    ("SELECT a = 1, equals(a, 1) FROM t ORDER BY a", ["equals(a, 1)", "equals(a, 1)"]),
], ids=["alias_reference", "alias_and_expression", "order_by_position", "group_by_expression",
        "group_by_count_distinct_tuple", "distinct_expression", "same_name_twice"])
def test_names_in_whole_queries(db, ch, sql: str, names: list[str]) -> None:
    assert db.sql(sql).column_names == names
    _check_against_chdb(db, ch, sql)


# ---------------------------------------------------------------------------
# aliases without AS
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("word", sorted(IMPLICIT_ALIAS_RESTRICTED), ids=sorted(IMPLICIT_ALIAS_RESTRICTED))
def test_restricted_word_is_no_implicit_alias(word: str) -> None:
    sql = f"SELECT a {word.lower()} FROM t"
    with pytest.raises(ParseError) as info:
        parse(sql)
    if word not in KEYWORDS:
        # not a keyword of the dialect: refused at the word itself, saying why
        assert (info.value.line, info.value.column) == (1, 10), f"{sql}: {info.value}"
        assert f"{word} cannot be an alias without AS" in info.value.message, info.value.message


@pytest.mark.parametrize("sql,hint", [
    ("SELECT a format FROM t", "FORMAT cannot be an alias without AS; write AS `format`"),
    ("SELECT count() SETTINGS FROM t", "SETTINGS cannot be an alias without AS; write AS `SETTINGS`"),
    ("SELECT a, b\n  final FROM t", "FINAL cannot be an alias without AS"),
], ids=["format", "settings_after_call", "final_second_line"])
def test_restricted_alias_error_says_why(sql: str, hint: str) -> None:
    with pytest.raises(ParseError) as info:
        parse(sql)
    assert hint in info.value.message, info.value.message
    assert info.value.line == sql.count("\n", 0, sql.index(sql.split()[-3])) + 1


@pytest.mark.parametrize("sql,alias", [
    ("SELECT a is FROM t", "is"),
    ("SELECT a IS", "IS"),
    ("SELECT a type FROM t", "type"),
    ("SELECT a null FROM t", "null"),
    ("SELECT a desc FROM t", "desc"),
    ("SELECT a select FROM t", "select"),
    ("SELECT a AS format FROM t", "format"),
    ("SELECT a `from` FROM t", "from"),
], ids=["is", "is_at_end", "type", "null", "desc", "select", "format_with_as", "quoted_from"])
def test_accepted_aliases(sql: str, alias: str) -> None:
    assert parse(sql)[0].items[0].alias == alias


def test_is_null_is_still_the_operator(db) -> None:
    assert db.sql("SELECT a IS NULL, n is not null FROM t ORDER BY a").column_names == ["isNull(a)", "isNotNull(n)"]


@pytest.mark.chdb
def test_implicit_aliases_match_every_clickhouse_keyword(ch) -> None:
    """For every word of every keyword chDB lists (upper and lower case), `SELECT a WORD FROM t`
    is accepted by skipidx exactly when ClickHouse accepts it, with the same alias."""
    from skipidx.apps.research import chdb_session as _chdb

    kws = _chdb.query("SELECT keyword FROM system.keywords", "TabSeparatedRaw").bytes().decode().split("\n")
    words = sorted({w for k in kws for w in k.split() if w.isidentifier()})
    assert len(words) > 300, "system.keywords looks empty"
    differ = []
    for w in words:
        for word in (w, w.lower()):
            sql = f"SELECT a {word} FROM t"
            try:
                theirs = ch(sql).column_names[0]
            except Exception:  # chDB raises its own exception type for a syntax error
                theirs = None
            try:
                ours = parse(sql)[0].items[0].alias
            except ParseError:
                ours = None
            if theirs != ours:
                differ.append((word, theirs, ours))
    assert not differ, f"(word, chDB alias, skipidx alias) differ: {differ}"


# ---------------------------------------------------------------------------
# count(DISTINCT a, b), uniqExact(a, b)
# ---------------------------------------------------------------------------

TUPLE_DDL = "CREATE TABLE u (a Nullable(Int32), b String, c Float64, k UInt8) ENGINE = MergeTree ORDER BY tuple()"
TUPLE_ROWS = ("(1, 'x', 0, 1), (1, 'x', -0., 1), (NULL, 'x', nan, 1), (NULL, 'y', -nan, 2), (2, 'y', nan, 2), "
              "(2, 'y', nan, 2), (NULL, 'z', 1, 3)")

# (id, sql, names, rows) -- rows read from chDB (ClickHouse 26.9), re-checked below
TUPLE_GOLDEN = [
    ("count_distinct_pair", "SELECT count(DISTINCT a, b) FROM u", ["countDistinct(a, b)"], [[2]]),
    ("uniq_exact_pair", "SELECT uniqExact(a, b) FROM u", ["uniqExact(a, b)"], [[2]]),
    ("float_bits", "SELECT count(DISTINCT b, c) FROM u", ["countDistinct(b, c)"], [[6]]),
    ("three", "SELECT uniqExact(b, c, a) FROM u", ["uniqExact(b, c, a)"], [[3]]),
    ("null_constant", "SELECT count(DISTINCT b, NULL) FROM u", ["countDistinct(b, NULL)"], [[0]]),
    ("same_column_twice", "SELECT uniqExact(b, b) FROM u", ["uniqExact(b, b)"], [[3]]),
    ("constant_member", "SELECT count(DISTINCT a, 1) FROM u", ["countDistinct(a, 1)"], [[2]]),
    ("distinct_combinator", "SELECT uniqExact(DISTINCT a, b) FROM u", ["uniqExactDistinct(a, b)"], [[2]]),
    ("group_by", "SELECT k, count(DISTINCT a, b), uniqExact(b, c) FROM u GROUP BY k ORDER BY k",
     ["k", "countDistinct(a, b)", "uniqExact(b, c)"], [[1, 1, 3], [2, 1, 2], [3, 0, 1]]),
    ("empty", "SELECT count(DISTINCT a, b) FROM u WHERE 0", ["countDistinct(a, b)"], [[0]]),
    ("empty_group_by", "SELECT k, count(DISTINCT a, b) FROM u WHERE 0 GROUP BY k", ["k", "countDistinct(a, b)"],
     []),
    ("with_single", "SELECT count(DISTINCT a), count(DISTINCT a, b), sum(DISTINCT a), count() FROM u",
     ["countDistinct(a)", "countDistinct(a, b)", "sumDistinct(a)", "count()"], [[2, 2, 3, 7]]),
    ("having", "SELECT k FROM u GROUP BY k HAVING count(DISTINCT b, c) > 1 ORDER BY k", ["k"], [[1], [2]]),
    ("order_by", "SELECT k FROM u GROUP BY k ORDER BY uniqExact(b, c), k", ["k"], [[3], [2], [1]]),
]


@pytest.fixture(scope="module")
def tuples_db():
    with _skipidx_table(TUPLE_DDL, TUPLE_ROWS, "u") as d:
        yield d


@pytest.mark.parametrize("sql,names,rows", [g[1:] for g in TUPLE_GOLDEN], ids=[g[0] for g in TUPLE_GOLDEN])
def test_count_distinct_tuples(tuples_db, sql: str, names: list[str], rows: list[list[Any]]) -> None:
    got = tuples_db.sql(sql).to_arrow()
    assert got.column_names == names, f"{sql}: names {got.column_names}"
    assert _rows(got) == rows, f"{sql}: rows {_rows(got)}, ClickHouse gives {rows}"


@pytest.mark.chdb
def test_count_distinct_tuple_goldens_are_clickhouses() -> None:
    pytest.importorskip("chdb")
    from skipidx.apps.research import chdb_session as _chdb

    name = _chdb.scratch_database("tuples")
    _chdb.query(TUPLE_DDL.replace("TABLE u", f"TABLE {name}.u"))
    _chdb.query(f"INSERT INTO {name}.u VALUES {TUPLE_ROWS}")
    try:
        for gid, sql, names, rows in TUPLE_GOLDEN:
            theirs = _chdb.query(sql.replace(" FROM u", f" FROM {name}.u"), "ArrowTable")
            assert theirs.column_names == names, f"{gid}: chDB names {theirs.column_names}"
            assert _rows(theirs) == rows, f"{gid}: chDB rows {_rows(theirs)}"
    finally:
        _chdb.query(f"DROP DATABASE {name}")


# ---------------------------------------------------------------------------
# alias cycles
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("sql,chain,column", [
    ("SELECT a AS b, b AS a FROM t", "b -> a -> b", 8),
    ("SELECT a AS x, x AS y, y AS a FROM t", "x -> a -> y -> x", 8),
    ("SELECT b AS a, a AS b FROM t WHERE b = 'x'", "a -> b -> a", 8),
], ids=["swap", "three_cycle", "swap_used_in_where"])
def test_alias_cycles_are_errors(db, sql: str, chain: str, column: int) -> None:
    """ClickHouse accepts these but resolves the cycle per context: in `SELECT a AS b, b AS a
    FROM t WHERE b = 'x'` the select list's `b` is the column b while WHERE's `b` is the
    column a (chDB: "Cannot convert string 'x' to type UInt32"). One name, two meanings:
    skipidx refuses the query instead of picking one."""
    with pytest.raises(BindError) as info:
        db.sql(sql)
    assert "cyclic aliases" in info.value.message and chain in info.value.message, info.value.message
    assert info.value.line == 1


# ---------------------------------------------------------------------------
# found by differential fuzzing against chDB
# ---------------------------------------------------------------------------

FUZZ_DDL = ("CREATE TABLE g (a UInt32, x Int64, f Float64, h Float32, bo Bool) ENGINE = MergeTree ORDER BY a "
            "SETTINGS index_granularity = 4")
_H = ["0.1", "-0.", "2.5", "3.4e38", "1e-3", "nan", "7.75"]
FUZZ_ROWS = ", ".join(f"({i}, {i % 5 - 2}, {i / 4}, {_H[i % len(_H)]}, {'true' if i % 3 else 'false'})"
                      for i in range(40))

FUZZ_CASES = [
    # (id, sql): same names, types and rows as chDB
    ("same_column_twice_many_granules", "SELECT a, a, x FROM g ORDER BY a"),
    ("same_name_twice_unordered", "SELECT x + 1, plus(x, 1) FROM g WHERE a < 20"),
    ("float_modulo_zero_is_nan", "SELECT f % 0 FROM g ORDER BY a LIMIT 3"),
    ("integer_modulo_zero_no_rows", "SELECT x % 0 FROM g WHERE a > 100"),
    ("modulo_zero_limit_0", "SELECT x % x FROM g LIMIT 0"),
    ("modulo_zero_ordered_limit_0", "SELECT x % 0, a FROM g ORDER BY a LIMIT 0"),
    ("aggregate_of_modulo_zero_no_rows", "SELECT sum(x % 0) FROM g WHERE 0"),
    ("in_single_tuple", "SELECT count() FROM g WHERE x IN ((1, 2))"),
    ("in_array", "SELECT count() FROM g WHERE x NOT IN [1, 2]"),
    ("in_trailing_comma", "SELECT count() FROM g WHERE x IN (1,)"),
    ("and_function", "SELECT count() FROM g WHERE and(x > 0, a < 30)"),
    ("or_function", "SELECT count() FROM g WHERE or(x = 1, a = 3)"),
    ("constant_fold_keeps_types", "SELECT 1 + 2 * 3, -(1) + 1, -(-1), -(200) FROM g LIMIT 1"),
    ("negate_keeps_sign_of_zero", "SELECT 1 / -(f * 0), -f, 1 / -f FROM g ORDER BY a LIMIT 3"),
    ("float_modulo_is_not_fmod", "SELECT h % 2.5, f % 0.1, 1 % 0.1, 1e20 % 3, -0. % 0.1, bo % 0.1 FROM g ORDER BY a"),
    ("bool_compared_with_numbers", "SELECT a FROM g WHERE bo <= x OR a = bo ORDER BY a"),
    ("bool_compared_in_select", "SELECT bo < a, x >= bo FROM g ORDER BY a LIMIT 6"),
    ("count_distinct_pair_many_granules", "SELECT count(DISTINCT x, f > 5), uniqExact(x, a % 3) FROM g"),
]


@pytest.fixture(scope="module")
def fuzz_pair():
    with _skipidx_table(FUZZ_DDL, FUZZ_ROWS, "g") as d, _chdb_table(FUZZ_DDL, FUZZ_ROWS, "g", "fuzzcases") as run:
        yield d, run


@pytest.mark.chdb
@pytest.mark.parametrize("sql", [c[1] for c in FUZZ_CASES], ids=[c[0] for c in FUZZ_CASES])
def test_fuzz_found_cases(fuzz_pair, sql: str) -> None:
    d, run = fuzz_pair
    mine, theirs = d.sql(sql).to_arrow(), run(sql)
    assert mine.column_names == theirs.column_names, f"{sql}: {mine.column_names} vs {theirs.column_names}"
    if " ORDER BY " in sql or mine.num_rows <= 1:
        assert _rows(mine) == _rows(theirs), f"{sql}: {_rows(mine)} vs chDB {_rows(theirs)}"
    else:
        assert sorted(map(repr, _rows(mine))) == sorted(map(repr, _rows(theirs))), sql
    assert [_type(t) for t in mine.schema.types] == [_type(t) for t in theirs.schema.types], sql


def test_integer_modulo_zero_still_raises_on_a_row(db) -> None:
    with pytest.raises(skipidx.SkipidxError, match="Division by zero"):
        db.sql("SELECT x % 0 FROM t").fetchall()
    with pytest.raises(skipidx.SkipidxError, match="Division by zero") as info:
        db.sql("SELECT 1 % 0 FROM t")            # constants: at analysis, with the place
    assert (info.value.line, info.value.column) == (1, 8)


# ---------------------------------------------------------------------------
# unary minus: ClickHouse's negate, with its types and wrapping
# ---------------------------------------------------------------------------

NEG_DDL = ("CREATE TABLE t (id UInt32, i Int32, j Int8, h Float32, u UInt64, v UInt8, b Bool, "
           "n Nullable(Int16), f Float64) ENGINE = MergeTree ORDER BY id")
NEG_ROWS = ("(1, -2147483648, -128, 0.1, 18446744073709551615, 255, true, NULL, 0.), "
            "(2, 5, 3, -0., 9223372036854775808, 0, false, -32768, -0.)")
#: IntN stays IntN (the smallest value negates to itself), UIntN/Bool widen to the
#: signed type twice as wide (UInt64 wraps through Int64), Float32 stays Float32,
#: -(0.) is -0.; `0 - x` (what skipidx bound before) got Int64/Int16/Float64.
NEG_EXPRESSIONS = ["-i", "-j", "-h", "-u", "-v", "-b", "-n", "-f", "1 / -f", "-(i + 1)", "- -j",
                   "-i > 0", "-u = 1", "sum(-j)", "min(-h)"]


@pytest.fixture(scope="module")
def neg_tables():
    with _skipidx_table(NEG_DDL, NEG_ROWS, "t") as d, _chdb_table(NEG_DDL, NEG_ROWS, "t", "negate") as run:
        yield d, run


@pytest.mark.chdb
@pytest.mark.parametrize("expr", NEG_EXPRESSIONS, ids=NEG_EXPRESSIONS)
def test_negate_types_and_values_equal_chdb(neg_tables, expr: str) -> None:
    d, run = neg_tables
    order = "" if expr.startswith(("sum(", "min(")) else " ORDER BY id"
    _check_against_chdb(d, run, f"SELECT {expr} FROM t{order}")


def test_negate_of_a_string_is_a_type_error(neg_tables) -> None:
    d, _ = neg_tables
    d.sql("CREATE TABLE IF NOT EXISTS s (id UInt32, w String) ENGINE = MergeTree ORDER BY id")
    with pytest.raises(BindError, match="illegal type String of argument of function negate"):
        d.sql("SELECT -w FROM s")
