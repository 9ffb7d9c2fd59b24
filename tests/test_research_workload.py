"""`skipidx advise --workload`: one index per column chosen by the workload; whole-value-only
columns (hex trace ids) never get a token or n-gram index."""
import numpy as np
import pyarrow as pa
import pytest

from skipidx.apps.research.workload import classify, recommend, workload_markdown


def _trace_ids(n=4096, seed=3):
    rng = np.random.default_rng(seed)
    return pa.array([f"{x:016x}{y:016x}" for x, y in rng.integers(0, 2**62, size=(n, 2))])


def _msgs(n=4096, seed=4):
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(3000)])
    return pa.array([" ".join(r) for r in words[rng.integers(0, 3000, size=(n, 5))]])


def test_whole_value_column_gets_a_value_index_never_tokens():
    ids = _trace_ids()
    sql = (f"SELECT * FROM spans WHERE trace_id = '{ids[5].as_py()}';\n"
           f"SELECT count() FROM spans WHERE trace_id IN ('{ids[7].as_py()}', '{ids[4000].as_py()}') AND x > 1;")
    w = recommend(ids, sql, column="trace_id", fpp=0.01, index_granularity=256)
    assert w.kinds == {"value": 3}
    assert "bloom_filter(0.01)" in w.ddl and "token" not in w.ddl and "ngram" not in w.ddl
    assert w.tokenizer == "value" and w.predicted_bytes > 0
    assert 1.0 <= w.predicted_kept_over_ideal < 1.2
    assert w.unhelped == []


def test_token_and_substring_workloads():
    msgs = _msgs()
    w = recommend(msgs, "SELECT 1 FROM t WHERE hasToken(msg, 'w12') OR msg = 'w1 w2 w3 w4 w5'", column="msg",
                  index_granularity=512)
    assert "sbbf('token'" in w.ddl and w.kinds == {"value": 1, "token": 1}
    w = recommend(msgs, "SELECT 1 FROM t WHERE msg LIKE '%w12 w%' AND msg != 'x' AND NOT msg LIKE '%a%'",
                  column="msg", index_granularity=512)
    assert "sbbf('ngram', n = 4" in w.ddl
    md = workload_markdown(w)
    assert "no index can help" in md and "msg != 'x'" in md and "NOT msg LIKE '%a%'" in md


def test_classify_and_no_predicate():
    found, unhelped = classify("SELECT * FROM t WHERE match(c, 'a.*b') AND c >= 'm' AND d = 'x'", "c")
    assert not any(found.values()) and len(unhelped) == 2
    w = recommend(pa.array(["a"] * 10), "SELECT 1 FROM t WHERE d = 'x'", column="c", index_granularity=4)
    assert w.ddl is None and "no index recommended" in workload_markdown(w)


def test_cli_advise_workload(tmp_path, capsys):
    import pyarrow.parquet as pq

    from skipidx.apps.research.cli import advise_main
    from skipidx.core.errors import SkipidxError

    ids = _trace_ids(1024)
    pq.write_table(pa.table({"trace_id": ids, "msg": _msgs(1024)}), tmp_path / "t.parquet")
    (tmp_path / "w.sql").write_text(f"SELECT * FROM t WHERE trace_id = '{ids[3].as_py()}';\n"
                                    "SELECT * FROM t WHERE hasToken(msg, 'w7')")
    assert advise_main([str(tmp_path / "t.parquet"), "--column", "trace_id,msg", "--workload",
                        str(tmp_path / "w.sql"), "--index-granularity", "128"]) == 0
    out = capsys.readouterr().out
    tid, msg = out.split("## Recommended for the workload: `msg`")
    assert "bloom_filter" in tid and "ngram" not in tid and "token" not in tid.split("`INDEX")[1]
    assert "sbbf('token'" in msg
    with pytest.raises(SkipidxError):
        advise_main([str(tmp_path / "t.parquet"), "--column", "trace_id", "--workload", str(tmp_path / "no.sql")])
