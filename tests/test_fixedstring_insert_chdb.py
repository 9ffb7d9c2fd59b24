"""LowCardinality(FixedString(n)) columns and INSERT ... VALUES into FixedString, vs chDB."""
from __future__ import annotations

import pytest

import skipidx
from skipidx.apps.research import chdb_session as ch

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

DDL = ("CREATE TABLE {t} (id UInt8, f FixedString(3), l LowCardinality(FixedString(4)), "
       "nl LowCardinality(Nullable(FixedString(2)))) ENGINE = MergeTree ORDER BY id")
INS = "INSERT INTO {t} VALUES (1, 'abc', 'ab', NULL), (2, 'a', 'abcd', 'x'), (3, '', '', 'yz')"


def test_lowcardinality_fixedstring_like_chdb():
    name = ch.scratch_database("fs")
    try:
        ch.query(DDL.format(t=f"{name}.t"))
        ch.query(INS.format(t=f"{name}.t"))
        with skipidx.connect() as db:
            db.sql(DDL.format(t="t"))
            db.sql(INS.format(t="t"))
            q = "SELECT * FROM {t} ORDER BY id"
            theirs = ch.query(q.format(t=f"{name}.t"), "ArrowTable")
            types = [line.split("\t")[1] for line in ch.query(f"DESCRIBE TABLE {name}.t", "TabSeparated")
                     .bytes().decode().splitlines()]
            mine = db.sql(q.format(t="t"))
            assert mine.types == types
            assert mine.fetchall() == [tuple(r.values()) for r in theirs.to_pylist()]
            with pytest.raises(skipidx.SkipidxError, match="too large"):
                db.sql("INSERT INTO t VALUES (4, 'abcd', '', NULL)")
        with pytest.raises(Exception):
            ch.query(f"INSERT INTO {name}.t VALUES (4, 'abcd', '', NULL)")
    finally:
        ch.query(f"DROP DATABASE IF EXISTS {name}")
