"""What a repeated query reuses (per-statement facts, plans by table metadata) and that
every reuse sees the changes another connection makes (inserts, ALTER, DROP)."""
from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

import skipidx
from skipidx.sql import ast as A
from skipidx.sql.params import statement_params
from skipidx.sql.parser import parse
from skipidx.engine.system_tables import statement_tables
from skipidx.engine.statements import _has_subquery_in


def test_statement_facts_are_kept_on_the_node_and_ignored_by_equality():
    text = "SELECT count() FROM logs WHERE a = {v:UInt8} AND b IN (SELECT x FROM other)"
    s = parse(text)[0]
    fresh = parse(text + " ")[0]            # another text: another object, not memoized
    assert s is not fresh and s == fresh and hash(s) == hash(fresh)
    ps = statement_params(s)
    assert [p.name for p in ps] == ["v"]
    ps.append("junk")                        # a caller's list is its own
    assert [p.name for p in statement_params(s)] == ["v"]
    assert statement_tables(s) == ["default.logs", "default.other"]
    assert _has_subquery_in(s) and A.memo(s, "has_subquery_in", _has_subquery_in)
    assert s == fresh and hash(s) == hash(fresh) and s.to_sql() == fresh.to_sql()
    back = pickle.loads(pickle.dumps(s))
    assert back == s and [p.name for p in statement_params(back)] == ["v"]
    assert not _has_subquery_in(parse("SELECT 1 FROM t WHERE a IN (1, 2)")[0])


def test_repeated_statement_binds_each_call_s_params(tmp_path):
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE t (a UInt32, s String) ENGINE = MergeTree ORDER BY a")
        db.insert("t", pa.table({"a": pa.array(range(100), pa.uint32()), "s": [str(i) for i in range(100)]}))
        q = "SELECT count() FROM t WHERE a < {n:UInt32}"
        assert [db.sql(q, params={"n": n}).fetchall()[0][0] for n in (5, 50, 5)] == [5, 50, 5]
        q2 = "SELECT count() FROM t WHERE a IN (SELECT a FROM t WHERE a < 3)"
        assert db.sql(q2).fetchall() == [(3,)]
        db.insert("t", pa.table({"a": pa.array([1], pa.uint32()), "s": ["x"]}))
        assert db.sql(q2).fetchall() == [(4,)]   # rows 0, 1, 2 and the new 1
