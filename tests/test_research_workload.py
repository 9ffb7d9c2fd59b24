"""`skipidx advise` with a workload (a file of SELECTs or the database's query log): predicates
found by the engine's parser and binder, candidates measured on a sample by the engine, one DDL
per target; whole-value-only columns (hex trace ids) never get a token, n-gram or text index."""
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.apps.research.workload import (recommend, recommend_table, statements_from_text, workload_atoms,
                                            workload_markdown)
from skipidx.core.errors import SkipidxError


def _trace_ids(n=4096, seed=3):
    rng = np.random.default_rng(seed)
    return pa.array([f"{x:016x}{y:016x}" for x, y in rng.integers(0, 2**62, size=(n, 2))])


def _msgs(n=4096, seed=4):
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(3000)])
    return pa.array([" ".join(r) for r in words[rng.integers(0, 3000, size=(n, 5))]])


def _best(w):
    low = min(c["cost_per_query"] for c in w.candidates)
    return min((c for c in w.candidates if c["cost_per_query"] <= 1.05 * low),
               key=lambda c: (c["bytes_table"], c["cost_per_query"]))


def test_whole_value_column_gets_a_value_index_never_tokens():
    ids = _trace_ids(2048)
    sql = (f"SELECT * FROM spans WHERE trace_id = '{ids[5].as_py()}';\n"
           f"SELECT count() FROM spans WHERE trace_id IN ('{ids[7].as_py()}', '{ids[2000].as_py()}') AND x > 1;")
    w = recommend(ids, sql, column="trace_id", fpp=0.01, index_granularity=64, sample_granules=16)
    assert w.kinds == {"value": 2}
    assert "bloom_filter(0.01)" in w.ddl and all(x not in w.ddl for x in ("token", "ngram", "text"))
    assert {c["label"] for c in w.candidates} == {"bloom_filter"}       # nothing else was even measured
    assert w.tokenizer == "bloom_filter" and w.predicted_bytes > 0
    assert 1.0 <= w.predicted_kept_over_ideal < 1.2
    # a whole-value lookup of random ids: each hit reads GRANULARITY data granules, so 1 wins
    assert w.granularity == 1 and sorted(c["granularity"] for c in w.candidates) == [1, 2, 4, 8]
    assert w.unhelped == []


def test_predicates_are_found_by_the_parser_and_binder():
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (msg String, tid String, n UInt32, d Date) ORDER BY n")
        meta = db.table_meta("t")
    sql = ("SELECT 1 FROM t WHERE lower(msg) = 'abc' AND hasToken(lower(msg), 'err') AND tid IN ('a', {p:String}) "
           "AND (msg LIKE '%timeout%' OR startsWith(msg, 'GET /')) AND multiSearchAny(msg, ['alpha', 'beta']) "
           "AND position(msg, 'abcd') > 0 AND n BETWEEN 3 AND 9 AND d >= '2024-01-01' AND tid = {q:String};"
           "SELECT 1 FROM t WHERE hasTokenCaseInsensitive(msg, 'Warn') AND msg ILIKE '%Fail%' AND NOT hasToken(msg, 'x') "
           "AND msg != 'y' AND match(msg, 'a.c') AND msg LIKE '%ab%' AND tid NOT IN ('z')")
    stmts = statements_from_text(sql)
    stmts[0] = (stmts[0][0], {"p": "b"})            # a logged value for p; q has none
    atoms, skipped = workload_atoms(meta, stmts)
    assert skipped == []
    got = {(a.kind, a.target, a.needles) for a in atoms}
    assert ("value", "lower(msg)", (b"abc",)) in got
    assert ("token", "lower(msg)", (b"err",)) in got and ("token", "lower(msg)", (b"warn",)) in got
    assert ("value", "tid", (b"a", b"b")) in got
    assert ("substring", "msg", (b"timeout",)) in got and ("substring", "msg", (b"GET /",)) in got
    assert ("substring", "msg", (b"alpha", b"beta")) in got and ("substring", "msg", (b"abcd",)) in got
    assert ("substring", "lower(msg)", (b"fail",)) in got
    assert {a.target for a in atoms if a.kind == "range"} == {"n", "d"}
    unknown = [a for a in atoms if not a.known]
    assert len(unknown) == 1 and unknown[0].target == "tid"            # {q:String} has no value
    none = {a.text: a.why for a in atoms if a.kind == "none"}
    assert set(none) == {"NOT hasToken(msg, 'x')", "msg != 'y'", "match(msg, 'a.c')", "msg LIKE '%ab%'",
                         "tid NOT IN ('z')"}
    assert "negation" in none["NOT hasToken(msg, 'x')"] and "3 bytes" in none["msg LIKE '%ab%'"]


def test_token_substring_and_range_workloads():
    t = pa.table({"msg": _msgs(2048), "n": pa.array(np.arange(2048, dtype=np.int64))})
    sql = ("SELECT 1 FROM t WHERE hasToken(msg, 'w12') OR msg = 'w1 w2 w3 w4 w5';"
           "SELECT 1 FROM t WHERE hasToken(msg, 'w7');"
           "SELECT 1 FROM t WHERE n BETWEEN 1000 AND 1060")
    got, skipped = recommend_table(t, statements_from_text(sql), fpp=0.01, index_granularity=64,
                                   sample_granules=16)
    by = {w.column: w for w in got}
    assert skipped == [] and set(by) == {"msg", "n"}
    w = by["msg"]
    assert w.kinds == {"token": 2, "value": 1}
    assert {c["label"] for c in w.candidates} == {"sbbf token", "text splitByNonAlpha"}
    assert w.ddl.endswith(f"TYPE {_best(w)['type_sql']} GRANULARITY {_best(w)['granularity']}")
    text = [c for c in w.candidates if c["label"].startswith("text")][0]
    assert text["kept"] == text["ideal"] > 0              # row postings: exact
    # the range on a sorted column: minmax, and each coarser GRANULARITY keeps more
    r = by["n"]
    assert "TYPE minmax" in r.ddl
    kept = [c["kept"] for c in sorted(r.candidates, key=lambda c: c["granularity"])]
    assert kept == sorted(kept) and kept[0] >= r.candidates[0]["ideal"] > 0
    byg = [c["bytes_table"] for c in sorted(r.candidates, key=lambda c: c["granularity"])]
    assert byg == sorted(byg, reverse=True)
    sub = recommend(_msgs(), "SELECT 1 FROM t WHERE msg LIKE '%w12 w%' AND msg != 'x' AND NOT msg LIKE '%a%' "
                    "AND msg LIKE '%w99%'", column="msg", index_granularity=128, sample_granules=16)
    labels = {c["label"] for c in sub.candidates}
    assert labels == {"sbbf ngram3", "sbbf ngram4 min_n=3", "text ngrams(3)"}   # 'w99' is 3 bytes: min_n
    assert any(x in sub.ddl for x in ("sbbf('ngram'", "text(tokenizer = ngrams(3))"))
    md = workload_markdown(sub)
    assert "no index can help" in md and "msg != 'x'" in md and "NOT msg LIKE '%a%'" in md


def test_no_predicate_and_bad_input():
    w = recommend(pa.array(["a"] * 10), "SELECT 1 FROM t WHERE d = 'x'", column="c", index_granularity=4)
    assert w.ddl is None and "no index recommended" in workload_markdown(w)
    with pytest.raises(SkipidxError, match="fpp"):
        recommend(pa.array(["a"] * 10), "SELECT 1 FROM t WHERE c = 'x'", column="c", fpp=2.0)
    with pytest.raises(SkipidxError):
        statements_from_text("SELEC 1")


def test_real_corpus_stdlib():
    """Python's standard library source (real text): tokens and substrings, measured by the engine."""
    from skipidx.apps.research.corpora import load_corpus

    lines, _ = load_corpus("stdlib", 8192, seed=2)
    sql = ("SELECT count() FROM code WHERE hasToken(line, 'self');"
           "SELECT count() FROM code WHERE hasToken(line, 'isinstance') AND line LIKE '%return%';"
           "SELECT count() FROM code WHERE line LIKE '%raise ValueError%'")
    got, _ = recommend_table(pa.table({"line": lines}), statements_from_text(sql), index_granularity=256,
                             sample_granules=16)
    w = got[0]
    assert w.column == "line" and w.kinds == {"token": 2, "substring": 2} and w.ddl
    for c in w.candidates:
        assert c["kept"] >= c["ideal"] > 0          # never below the ideal: pruning keeps every match
    assert w.predicted_kept_over_ideal >= 1.0


def _db_with_log(path):
    ids = _trace_ids(2048)
    with skipidx.connect(path) as db:
        db.sql("CREATE TABLE spans (trace_id String, msg String, n UInt32) ORDER BY n "
               "SETTINGS index_granularity = 128")
        db.insert("spans", pa.table({"trace_id": ids, "msg": _msgs(2048),
                                     "n": pa.array(np.arange(2048), pa.uint32())}))
        for i in (3, 700, 1500):
            db.sql("SELECT * FROM spans WHERE trace_id = {t:String}", params={"t": ids[i].as_py()})
        db.sql("SELECT count() FROM spans WHERE hasToken(msg, 'w7') AND msg != 'x'")
        db.sql("SELECT count() FROM spans WHERE n > 100")
        db.sql("SELECT count() FROM spans WHERE n > 100 SETTINGS log_queries = 0")
    return ids


def test_advise_reads_the_query_log(tmp_path, capsys):
    from skipidx.apps.research.cli import advise_main

    _db_with_log(tmp_path / "db")
    assert advise_main([str(tmp_path / "db"), "--table", "spans", "--index-granularity", "128"]) == 0
    out = capsys.readouterr().out
    assert "5 SELECTs of the workload" in out
    parts = {p.split("`", 1)[0]: p for p in out.split("## Recommended for the workload: `")[1:]}
    tid = parts["trace_id"]
    assert "value: 3" in tid and "bloom_filter(0.01)" in tid
    assert all(x not in tid for x in ("sbbf(", "text(", "ngram"))
    assert "no index can help: `msg != 'x'" in parts["msg"] and "TYPE" in parts["msg"]
    assert "no index recommended: it leads the table's ORDER BY key" in parts["n"]
    # advise's own reads are not logged as workload
    with skipidx.connect(tmp_path / "db") as db:
        assert db.query_log().num_rows == 5


def test_cli_advise_workload_file_and_errors(tmp_path, capsys):
    from skipidx.apps.research.cli import advise_main

    ids = _trace_ids(1024)
    pq.write_table(pa.table({"trace_id": ids, "msg": _msgs(1024)}), tmp_path / "t.parquet")
    (tmp_path / "w.sql").write_text(f"SELECT * FROM t WHERE trace_id = '{ids[3].as_py()}';\n"
                                    "SELECT * FROM t WHERE hasToken(msg, 'w7')")
    assert advise_main([str(tmp_path / "t.parquet"), "--column", "trace_id,msg", "--workload",
                        str(tmp_path / "w.sql"), "--index-granularity", "128"]) == 0
    out = capsys.readouterr().out
    tid, msg = out.split("## Recommended for the workload: `msg`")
    assert "bloom_filter" in tid and "ngram" not in tid and "token" not in tid.split("`INDEX")[1]
    assert "sbbf('token'" in msg or "splitByNonAlpha" in msg
    with pytest.raises(SkipidxError, match="cannot read the workload"):
        advise_main([str(tmp_path / "t.parquet"), "--column", "trace_id", "--workload", str(tmp_path / "no.sql")])
    with pytest.raises(SkipidxError, match="no column"):
        advise_main([str(tmp_path / "t.parquet"), "--column", "nope", "--workload", str(tmp_path / "w.sql")])
    empty = tmp_path / "empty"
    with skipidx.connect(empty) as db:
        db.sql("CREATE TABLE t (a String) ORDER BY a")
    with pytest.raises(SkipidxError, match="query log .* holds no SELECT"):
        advise_main([str(empty)])
    with pytest.raises(SkipidxError, match="no table 'u'"):
        advise_main([str(empty), "--table", "u"])


def test_cli_prints_error_and_exits_non_zero(tmp_path):
    r = subprocess.run([sys.executable, "-m", "skipidx", "advise", str(tmp_path / "missing.parquet"),
                        "--workload", str(tmp_path / "w.sql")], capture_output=True, text=True,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert r.returncode != 0 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr
