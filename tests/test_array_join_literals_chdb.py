"""arrayJoin over array literals, with and without FROM, through derived tables
(WHERE, GROUP BY, ORDER BY on the joined column) and array literals as function
arguments: names, types and rows against chDB."""
from __future__ import annotations

import json

import pytest

import skipidx

pytestmark = pytest.mark.chdb

QUERIES = {
    "no-from": "SELECT arrayJoin(['a', 'b']) AS x",
    "derived": "SELECT x FROM (SELECT arrayJoin(['a', 'b']) AS x)",
    "derived-where": "SELECT x FROM (SELECT arrayJoin(['a', 'b', 'a']) AS x) WHERE x = 'a'",
    "derived-group": "SELECT x, count() FROM (SELECT arrayJoin(['a', 'b', 'a']) AS x) GROUP BY x ORDER BY x",
    "derived-numbers": "SELECT x FROM (SELECT arrayJoin([1, 2, 3]) AS x) WHERE x > 1 ORDER BY x",
    "derived-expr": "SELECT upper(x) AS u, count() AS c FROM (SELECT arrayJoin(['a', 'b', 'a']) AS x) "
                    "WHERE x IN ('a', 'b') GROUP BY u ORDER BY c DESC",
    "derived-count": "SELECT count() FROM (SELECT arrayJoin(['a', 'b']) AS x) WHERE x != 'a'",
    "constant-function": "SELECT x FROM (SELECT arrayJoin(splitByChar(',', 'a,b,c')) AS x) ORDER BY x",
    "type-name": "SELECT x, toTypeName(x) FROM (SELECT arrayJoin(['a', 'b']) AS x)",
    "nullable-items": "SELECT arrayJoin([1, NULL]) AS x, toTypeName(x)",
    "signed-items": "SELECT arrayJoin([1, -1]) AS x, toTypeName(x)",
    "float-items": "SELECT arrayJoin([1.5, 2]) AS x",
    "with-from": "SELECT number, arrayJoin(['a', 'b']) AS x FROM numbers(2) ORDER BY number, x",
    "order-by": "SELECT arrayJoin(['b', 'a', 'c']) AS x ORDER BY x DESC",
    "literal-args": "SELECT length([1, 2]), length(['a']), has([1, 2, 3], 2), hasAny(['a'], ['a', 'b'])",
    "literal-types": "SELECT [1, 2], ['a'], [1, NULL], [], toTypeName([1, 2]), toTypeName([NULL, 'a']), "
                     "toTypeName([])",
    "split-type": "SELECT toTypeName(splitByChar(',', s)) FROM (SELECT 'a,b' AS s)",
}


@pytest.mark.parametrize("q", list(QUERIES.values()), ids=list(QUERIES))
def test_array_join_of_literals_matches_clickhouse(chdb, q):
    with skipidx.connect() as db:
        r = db.sql(q)
        ours = (r.columns, r.types, [[_text(v) for v in row] for row in r.fetchall()])
    got = json.loads(chdb.query(q, "JSONCompact").bytes())
    theirs = ([m["name"] for m in got["meta"]], [m["type"] for m in got["meta"]],
              [[_text(v) for v in row] for row in got["data"]])
    assert ours == theirs


def _text(v):
    if isinstance(v, list):
        return [_text(x) for x in v]
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return None if v is None else str(v)
