"""EXPLAIN names the read path the query takes: the text index's direct read
(ReadFromTextIndex) only where the query reads that way -- not above
MAX_DIRECT_RANGES kept ranges (the scan reads them, with the postings' row
filter), not for a SELECT whose rows stream from the scan -- checked against
the path each query ran (its stats notes)."""
from __future__ import annotations

import pytest

import skipidx
from skipidx.execution.direct_read import MAX_DIRECT_RANGES

QUERIES = [
    "SELECT count() FROM t WHERE hasToken(msg, 'hit')",
    "SELECT id FROM t WHERE hasToken(msg, 'hit') ORDER BY id",
    "SELECT id FROM t WHERE hasToken(msg, 'hit') ORDER BY id LIMIT 5",
    "SELECT sum(id), max(msg) FROM t WHERE hasToken(msg, 'hit')",
    "SELECT DISTINCT msg FROM t WHERE hasToken(msg, 'hit')",
    "SELECT DISTINCT msg FROM t WHERE hasToken(msg, 'hit') LIMIT 1",
    "SELECT id FROM t WHERE hasToken(msg, 'hit')",
    "SELECT id FROM t WHERE hasToken(msg, 'hit') LIMIT 5",
]
SETTINGS = ["", " SETTINGS query_plan_direct_read_from_text_index = 0",
            " SETTINGS query_plan_direct_read_from_text_index = 0, text_index_row_filter = 0"]


@pytest.fixture(scope="module", params=[40, 400], ids=["500-ranges", "50-ranges"])
def db(request):
    every = request.param
    with skipidx.connect() as d:
        d.sql("CREATE TABLE t (id UInt32, msg String, INDEX tx msg TYPE text(tokenizer = 'splitByNonAlpha') "
              "GRANULARITY 1) ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 16")
        d.sql(f"INSERT INTO t SELECT number, if(number % {every} = 0, 'hit here', 'miss there') "
              "FROM numbers(20000)")
        yield d, 20000 // every


def _ran(notes: list[str]) -> str:
    for n in notes:
        if n.startswith("count() read from the postings"):
            return "count"
        if n.startswith("WHERE answered by the postings"):
            return "direct"
        if n.startswith("WHERE rows from the postings"):
            return "filter"
    return "scan"


def _explained(lines: list[str]) -> str:
    paths = [p for key, p in (("ReadFromTextIndexCount (", "count"), ("ReadFromTextIndex (", "direct"),
                              ("FilterFromTextIndex (", "filter")) if any(key in x for x in lines)]
    assert len(paths) <= 1, lines
    return paths[0] if paths else "scan"


@pytest.mark.parametrize("setting", SETTINGS, ids=["default", "direct-off", "both-off"])
@pytest.mark.parametrize("q", QUERIES)
def test_explain_names_the_path_the_query_took(db, q, setting):
    d, ranges = db
    r = d.sql(q + setting)
    rows = r.fetchall()
    lines = [x[0] for x in d.sql(f"EXPLAIN indexes = 1 {q}{setting}").fetchall()]
    assert f"      Ranges: {ranges}" in lines, lines
    assert _explained(lines) == _ran(r.stats.notes), (lines, r.stats.notes)
    # the answer does not depend on the path
    assert sorted(rows) == sorted(d.sql(q + SETTINGS[2]).fetchall())


def test_too_many_ranges_fall_back_and_explain_says_so(db):
    d, ranges = db
    q = "SELECT id FROM t WHERE hasToken(msg, 'hit') ORDER BY id"
    lines = [x[0] for x in d.sql(f"EXPLAIN indexes = 1 {q}").fetchall()]
    if ranges > MAX_DIRECT_RANGES:
        assert not any("ReadFromTextIndex (" in x for x in lines), lines
        assert any("FilterFromTextIndex (t)" in x for x in lines), lines
        assert _ran(d.sql(q).stats.notes) == "filter"
    else:
        assert any("ReadFromTextIndex (t)" in x and "columns read: id" in x for x in lines), lines
        assert _ran(d.sql(q).stats.notes) == "direct"
