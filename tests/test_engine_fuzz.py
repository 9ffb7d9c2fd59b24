"""Fuzzing the whole engine: mutated SQL either runs or raises SkipidxError, nothing else.

Valid statements are cut into tokens and mutated (tokens dropped, swapped,
duplicated, replaced by other tokens, identifiers, literals of every type
or random characters); each mutant runs against a real table with indexes.
Whatever the binder, planner, scan or aggregation make of it, only
``SkipidxError`` may escape, and afterwards the database still answers.
"""
from __future__ import annotations

import re

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.core.errors import SkipidxError

DDL = """CREATE TABLE f (
    id UInt64, msg String, n Nullable(Int32), ts DateTime, d Date, x Float64, lc LowCardinality(String),
    INDEX tok msg TYPE tokenbf_v1(512, 2, 0) GRANULARITY 1,
    INDEX ng lower(msg) TYPE ngrambf_v1(3, 512, 2, 0) GRANULARITY 2,
    INDEX mm n TYPE minmax GRANULARITY 1,
    INDEX st lc TYPE set(10) GRANULARITY 1,
    INDEX sb msg TYPE sbbf('token', fpp = 0.01) GRANULARITY 1
) ENGINE = MergeTree ORDER BY ts SETTINGS index_granularity = 8"""

BASE = [
    "SELECT count() FROM f WHERE hasToken(msg, 'alpha') AND n > 3",
    "SELECT id, lower(msg) AS m FROM f WHERE msg LIKE '%al_ha%' OR lc IN ('a', 'b') ORDER BY id DESC LIMIT 3",
    "SELECT lc, count(), sum(n), avg(x), min(ts), max(d), uniqExact(msg) FROM f GROUP BY lc ORDER BY lc",
    "SELECT count() FROM f WHERE NOT (startsWith(msg, 'be') OR endsWith(msg, 'ta')) AND n IS NOT NULL",
    "SELECT id FROM f WHERE multiSearchAny(msg, ['ga', 'del']) AND ts >= '2024-01-01 00:00:05' LIMIT 2 OFFSET 1",
    "SELECT count() FROM f WHERE match(msg, 'a+l') OR hasTokenCaseInsensitive(msg, 'BETA') OR id BETWEEN 2 AND 5",
    "EXPLAIN indexes = 1 SELECT count() FROM f WHERE hasToken(msg, 'gamma') OR n = 4",
    "SELECT x * 2, id % 3, n + 1 FROM f WHERE x > 1.5 AND d = '2024-01-02' ORDER BY x NULLS FIRST",
    "INSERT INTO f (id, msg, n, ts, d, x, lc) VALUES (100, 'zeta eta', NULL, '2024-02-01 00:00:00', '2024-02-01', 0.5, 'c')",
    "DESCRIBE TABLE f",
]
TOKEN = re.compile(r"'(?:[^'\\]|\\.)*'|\d+\.\d+|\d+|[A-Za-z_][A-Za-z_0-9]*|<=|>=|!=|[(),;*=<>%+\-/\[\]]")
EXTRA = ["SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "NULL", "IN", "LIKE", "(", ")", ",", "'", "''", "[", "]",
         "id", "msg", "n", "ts", "d", "x", "lc", "nosuch", "hasToken", "count", "sum", "lower", "1", "-1", "1e400",
         "18446744073709551616", "'a b'", "'\\x'", "'%'", "'2024-13-45'", "NULL", "*", "GROUP", "BY", "ORDER",
         "LIMIT", "999999999999999999999", "0.5", "'abc'", "f", "DESC", "ASC", "IS", "BETWEEN", "tuple", "[]"]


def rows() -> pa.Table:
    import datetime as dt

    words = ["alpha", "beta", "gamma", "delta", "Alpha BETA", "alpha-beta", "gamma delta alpha", "", "ümlaut beta"]
    n = 60
    return pa.table({
        "id": pa.array(range(n), pa.uint64()),
        "msg": [words[i % len(words)] for i in range(n)],
        "n": pa.array([None if i % 4 == 0 else i - 10 for i in range(n)], pa.int32()),
        "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i) for i in range(n)], pa.timestamp("s")),
        "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 3) for i in range(n)], pa.date32()),
        "x": [float(i) / 7 if i % 9 else float("nan") for i in range(n)],
        "lc": [["a", "b", "c"][i % 3] for i in range(n)],
    })


@pytest.fixture(scope="module")
def db():
    with skipidx.connect() as d:
        d.sql(DDL)
        d.insert("f", rows())
        yield d


LITERALS = ["0", "1", "-1", "3.5", "-2.5", "300", "70000", "-129", "18446744073709551615", "1e10", "nan", "inf",
            "NULL", "''", "'alpha'", "'a b'", "'%a%'", "'\\'", "'2024-01-02'", "'2024-01-01 00:00:07'", "'x_y'",
            "'('", "'ümlaut'", "'5'", "true"]
NAMES = ["id", "msg", "n", "ts", "d", "x", "lc", "nosuch", "lower", "hasToken", "startsWith", "count", "sum", "avg",
         "min", "uniqExact", "isNull", "like", "equals", "plus", "f"]
KEYWORDS = {"SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "NULL", "IN", "LIKE", "GROUP", "BY", "ORDER", "LIMIT",
            "OFFSET", "AS", "DESC", "ASC", "NULLS", "FIRST", "LAST", "IS", "BETWEEN", "EXPLAIN", "INSERT", "INTO",
            "VALUES", "DESCRIBE", "TABLE", "indexes"}


def _is_literal(t: str) -> bool:
    return t.startswith("'") or t[0].isdigit()


def _is_name(t: str) -> bool:
    return (t[0].isalpha() or t[0] == "_") and t not in KEYWORDS


mutation = st.tuples(st.sampled_from(["lit", "lit", "lit", "name", "name", "drop", "dup", "swap", "replace",
                                      "insert", "chars"]),
                     st.integers(0, 200), st.integers(0, 200), st.sampled_from(EXTRA),
                     st.text(alphabet="'\"()[],;%_\\ab1 -+*=<>\x00é", max_size=4))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(BASE), muts=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_sql_raises_only_skipidx_error(db, base: str, muts) -> None:
    toks = TOKEN.findall(base)
    for kind, i, j, extra, chars in muts:
        if not toks:
            break
        i %= len(toks)
        j %= len(toks)
        if kind in ("lit", "name"):
            # keep the syntax, change the meaning: another literal / another name
            want = _is_literal if kind == "lit" else _is_name
            spots = [k for k, t in enumerate(toks) if want(t)]
            if spots:
                k = spots[i % len(spots)]
                pool = LITERALS if kind == "lit" else NAMES
                toks[k] = pool[j % len(pool)]
        elif kind == "drop":
            del toks[i]
        elif kind == "dup":
            toks.insert(i, toks[i])
        elif kind == "swap":
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == "replace":
            toks[i] = extra
        elif kind == "insert":
            toks.insert(i, extra)
        else:
            toks[i] = toks[i] + chars
    sql = " ".join(toks)
    try:
        db.sql(sql)
    except SkipidxError:
        pass
    # still answering, and no row lost (mutants may only INSERT)
    n = db.sql("SELECT count() FROM f").fetchall()[0][0]
    assert n >= 60, sql
