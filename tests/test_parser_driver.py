"""The LALR driver (skipidx.sql._lalr) against Lark over the same tables and Lark built from
the grammar: the same AST (positions included) for every text that parses, the same
ParseError (message, line, column, expected) for every one that does not.

Every other parser test runs through the driver (it is what ``parse`` uses).
"""
from __future__ import annotations

import dataclasses
import glob
import math
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skipidx.core.errors import ParseError
from skipidx.sql import _lalr, ast as A, parser as P

CORPUS = [
    "SELECT count() FROM logs WHERE hasToken(msg, 'kraken')",
    "SELECT count() FROM logs WHERE hasToken(msg, 'x') AND (a IN (1, 2) OR b LIKE '%y%')",
    "CREATE TABLE IF NOT EXISTS logs (ts DateTime, level LowCardinality(String), msg String, "
    "trace_id Nullable(String), INDEX tok msg TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1, "
    "INDEX ngr lower(msg) TYPE ngrambf_v1(3, 65536, 2, 0), INDEX ad msg TYPE sbbf('ngram', n = 4, fpp = 0.01)) "
    "ENGINE = MergeTree() ORDER BY (level, ts) SETTINGS index_granularity = 8192",
    "CREATE TABLE t (a UInt64 CODEC(LZ4), b String CODEC(ZSTD(3)) DEFAULT 'x', c Int8 CODEC(Delta, ZSTD)) ORDER BY a",
    "INSERT INTO t (a, b) VALUES (1, 'x\\x41'), (-2, NULL) (3, [1, 2])",
    "INSERT INTO t FROM INFILE '/tmp/x.parquet' FORMAT Parquet",
    "INSERT INTO t SELECT * FROM s WHERE a > {p:UInt8}",
    "ALTER TABLE t ADD INDEX IF NOT EXISTS i lower(msg) TYPE set(100) GRANULARITY 2, DROP COLUMN c",
    "ALTER TABLE t DROP INDEX IF EXISTS i; ALTER TABLE t MATERIALIZE INDEX i;",
    "OPTIMIZE TABLE t FINAL",
    "SELECT DISTINCT level, count() AS n, uniqExact(user_id) FROM logs PREWHERE ts >= 10 WHERE hasToken(msg, 'x') "
    "OR NOT msg NOT ILIKE '%a\\_b%' GROUP BY level HAVING n > 1 ORDER BY n DESC NULLS FIRST, level LIMIT 10 OFFSET 5",
    "SELECT * FROM t WHERE a NOT BETWEEN -1 AND 2.5e3 AND b NOT IN (1, 2) AND c IS NOT NULL -- comment\n",
    "EXPLAIN indexes = 1 SELECT count(*) FROM t WHERE multiSearchAny(msg, ['a', 'b']) /* c */",
    "SHOW TABLES; DESCRIBE TABLE t; DESC t; SHOW CREATE TABLE t; EXISTS t; SET a = 1, b = 'x'",
    "SELECT `type`, \"index\", (1, 'a'), -(5) * (a + b) % 3, t.a, db.t.c FROM db.t LIMIT 5, 10",
    "SELECT CAST(a AS String), a::UInt8, CASE WHEN a THEN 1 ELSE 2 END, INTERVAL 3 DAY, quantile(0.5)(x), "
    "a || 'b', [1, 2][1], (1,), () FROM t FORMAT JSON SETTINGS max_threads = 2",
    "SELECT a is FROM t", "SELECT and(a, b), or(1) FROM t", "SELECT a x, b FROM (SELECT 1 AS a, 2 AS b)",
    "SELECT * FROM file('x.parquet') WHERE a IN (SELECT b FROM t)",
    "SELECT a FROM t WHERE", "SELECT FROM WHERE", "CREATE TABLE (", "SELECT a b c FROM t", "SELECT (1",
    "INSERT INTO t VALUES (1,", "SELECT a, FROM t", "SELECT a format FROM t", "SELECT count() SETTINGS FROM t",
    "SELECT a FORM t", "SELECT 'unterminated", "SELECT 1 /* open", "SELECT 0x", "SELECT 99999999999999999999999",
    "", ";", "SELECT", "SELECT a FROM t WHERE NOT", "SELECT * FROM t ORDER BY", "DROP", "ALTER TABLE t",
]
for _p in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "sql_examples", "*.sql"))):
    with open(_p, encoding="utf-8") as _f:
        CORPUS.append(_f.read())

FRAGMENTS = [
    "SELECT", "FROM", "WHERE", "PREWHERE", "AND", "OR", "NOT", "LIKE", "ILIKE", "IN", "IS", "NULL", "BETWEEN",
    "CREATE", "TABLE", "INDEX", "TYPE", "GRANULARITY", "CODEC", "ORDER", "BY", "GROUP", "HAVING", "LIMIT",
    "OFFSET", "VALUES", "INSERT", "INTO", "AS", "DISTINCT", "CAST", "CASE", "WHEN", "THEN", "ELSE", "END",
    "INTERVAL", "FORMAT", "SETTINGS", "EXPLAIN", "ALTER", "ADD", "DROP", "SHOW", "IF", "EXISTS", "(", ")", "[",
    "]", ",", ";", ".", "::", "||", "'str'", "''", "`q`", "\"q\"", "1", "-1", "0x1F", "1e3", "1.5", "inf",
    "nan", "a", "b", "t", "x", "format", "type", "count()", "*", "=", "==", "!=", "<>", "<", ">=", "+", "-",
    "/", "%", "{p:UInt8}", "{t:Identifier}", "/*", "*/", "--", "\n",
]


def _deep(x):
    """`x` as nested tuples of plain values: node classes and every field, `pos` included."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__,) + tuple((f.name, _deep(getattr(x, f.name))) for f in dataclasses.fields(x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__,) + tuple(_deep(v) for v in x)
    if isinstance(x, float) and math.isnan(x):
        return ("float", "nan")
    return (type(x).__name__, x)


def _outcome(parser, text: str, start: str):
    saved = P._parser_obj
    P._parser_obj = parser
    try:
        return ("ok", _deep(P._run(text, start)))
    except ParseError as e:
        return ("error", str(e), e.line, e.column, e.expected)
    except Exception as e:   # noqa: BLE001  (compared: none is expected from either)
        return ("raised", type(e).__name__, str(e))
    finally:
        P._parser_obj = saved


@pytest.fixture(scope="module")
def parsers():
    driver = P._load_driver()
    assert isinstance(driver, _lalr.Parser), "the generated tables are stale"
    loaded = P._load_tables()
    return driver, loaded


def test_the_process_parses_with_the_driver():
    assert isinstance(P._lark(), _lalr.Parser)


def test_driver_equals_lark_on_the_corpus(parsers):
    driver, loaded = parsers
    built = P._build_from_grammar()
    kinds = set()
    for text in CORPUS:
        for start in ("start", "expr_only"):
            want = _outcome(loaded, text, start)
            kinds.add(want[0])
            assert _outcome(driver, text, start) == want, (text, start)
            assert _outcome(built, text, start) == want, (text, start)
    assert kinds == {"ok", "error"}


@st.composite
def _mutated(draw: st.DrawFn) -> str:
    """A corpus text with a few fragments inserted, characters deleted or runs swapped."""
    text = draw(st.sampled_from(CORPUS[:30]))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(("insert", "delete", "swap")))
        if op == "insert":
            text = text[:i] + " " + draw(st.sampled_from(FRAGMENTS)) + " " + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 8)):]
        else:
            j = draw(st.integers(0, len(text)))
            a, b = sorted((i, j))
            text = text[b:] + text[a:b] + text[:a]
    return text


_texts = st.one_of(
    _mutated(),
    st.lists(st.sampled_from(FRAGMENTS), max_size=25).map(" ".join),
    st.text(alphabet="abcSELECTFROMWHERE _019'\"`()[],;.=<>!+-*/%{}:\n", max_size=60),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts, st.sampled_from(("start", "expr_only")))
def test_driver_equals_lark(parsers, text, start):
    driver, loaded = parsers
    assert _outcome(driver, text, start) == _outcome(loaded, text, start)


def test_driver_tokens_behave_as_larks():
    from lark import Token as LarkToken

    a, b = _lalr.Token("IDENT", "x", 3, 1, 4, 1, 5, 4), LarkToken("IDENT", "x", 3, 1, 4, 1, 5, 4)
    assert (a == "x", a == _lalr.Token("STRING", "x"), hash(a), repr(a), a.value, a.end_pos) == \
        (b == "x", b == LarkToken("STRING", "x"), hash(b), repr(b), b.value, b.end_pos)
    end = _lalr.Token.new_borrow_pos("$END", "", a)
    assert (end.type, end.line, end.column, end.end_line, end.end_column) == ("$END", 1, 4, 1, 5)
    assert "lark" in sys.modules   # (this test imports it; the query path does not: test_startup.py)
