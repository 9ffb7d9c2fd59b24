"""Results as cursors and Arrow streams: fetchone/fetchmany/iteration advance,
fetch_record_batch streams a large SELECT with bounded memory (peak RSS
measured in a subprocess), DuckDB / Polars / pyarrow read results and
db.scan through the Arrow PyCapsule stream, db.scan reads only the granules
the indexes keep, DB-API cursors, module-level skipidx.sql, inserts of
dicts / Arrow C objects / files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.core.errors import SkipidxError
from skipidx.engine import streaming as dbmod


@pytest.fixture()
def db(tmp_path):
    d = skipidx.connect(str(tmp_path / "db"))
    d.sql("CREATE TABLE logs (id UInt64, svc LowCardinality(String), msg String, "
          "INDEX m msg TYPE tokenbf_v1(1024, 2, 0) GRANULARITY 1) ORDER BY id SETTINGS index_granularity = 64")
    n = 2000
    d.insert("logs", {"id": list(range(n)),
                      "svc": ["api" if i % 3 else "db" for i in range(n)],
                      "msg": [f"request {i} ok" if i % 500 else f"request {i} timeout" for i in range(n)]})
    yield d
    d.close()


def test_cursor_advances(db):
    res = db.sql("SELECT id, msg FROM logs WHERE id < 5")
    assert res.fetchone() == (0, "request 0 timeout")
    assert res.fetchone() == (1, "request 1 ok")
    assert res.fetchmany(2) == [(2, "request 2 ok"), (3, "request 3 ok")]
    assert res.fetchall() == [(4, "request 4 ok")]
    assert res.fetchone() is None and res.fetchmany(3) == [] and res.fetchall() == []
    # the whole result stays available as Arrow
    assert res.arrow().num_rows == 5 and res.to_arrow().equals(res.arrow())
    assert [r[0] for r in db.sql("SELECT id FROM logs WHERE id < 4")] == [0, 1, 2, 3]


def test_description_and_types(db):
    res = db.sql("SELECT id, svc, id + 1 AS nxt FROM logs LIMIT 1")
    assert res.columns == ["id", "svc", "nxt"]
    assert res.types[0] == "UInt64" and res.types[1] == "LowCardinality(String)"
    d = res.description
    assert [x[0] for x in d] == ["id", "svc", "nxt"] and all(len(x) == 7 for x in d)
    assert db.sql("CREATE TABLE z (a UInt8) ORDER BY a").description is None


def test_repr_previews_rows_and_says_what_happened(db):
    r = repr(db.sql("SELECT id, msg FROM logs WHERE id < 3"))
    assert "request 1 ok" in r and "3 rows x 2 columns" in r, r
    assert repr(db.sql("INSERT INTO logs VALUES (5000, 'x', 'y')")) == "Ok, 1 row inserted"
    n = db.insert("logs", {"id": [7000, 7001], "svc": ["a", "b"], "msg": ["p", "q"]})
    assert n == 2


def test_fetch_record_batch_and_capsule_consumers(db):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    want = db.sql("SELECT id, msg FROM logs WHERE hasToken(msg, 'timeout')").fetchall()
    reader = db.sql("SELECT id, msg FROM logs WHERE hasToken(msg, 'timeout')").fetch_record_batch(2)
    assert isinstance(reader, pa.RecordBatchReader)
    batches = list(reader)
    assert all(b.num_rows <= 2 for b in batches)
    assert [tuple(r.values()) for b in batches for r in b.to_pylist()] == want
    res = db.sql("SELECT id, msg FROM logs WHERE hasToken(msg, 'timeout')")
    assert duckdb.sql("SELECT id, msg FROM res ORDER BY id").fetchall() == want
    assert sorted(pl.DataFrame(res).rows()) == want
    assert pa.table(res).num_rows == len(want)
    assert res.pl().shape == (len(want), 2) and len(res.df()) == len(want)


def test_scan_reads_only_kept_granules_and_feeds_duckdb(db):
    duckdb = pytest.importorskip("duckdb")
    sres = db.scan_result("logs", where="hasToken(msg, 'timeout')", columns=["id", "msg"])
    got = sres.fetch_record_batch().read_all()
    st = sres.stats
    assert got.column_names == ["id", "msg"]
    assert got.to_pylist() == [{"id": i, "msg": f"request {i} timeout"} for i in range(0, 2000, 500)]
    assert st.granules_selected < st.granules_total
    assert st.rows_read == 64 * st.granules_selected   # only the kept granules were read
    reader = db.scan("logs", where="svc = 'db'", columns=["id"])
    n = duckdb.sql("SELECT count(*) FROM reader").fetchall()[0][0]
    assert n == db.sql("SELECT count() FROM logs WHERE svc = 'db'").scalar()
    assert db.scan("logs").read_all().num_rows == 2000
    with pytest.raises(SkipidxError):
        db.scan("logs", columns=["nope"])
    with pytest.raises(SkipidxError):
        db.scan("logs", where="hasToken(msg, ")


def test_streamed_select_is_lazy_and_exact(db, monkeypatch):
    monkeypatch.setattr(dbmod, "STREAM_MIN_ROWS", 0)
    res = db.sql("SELECT id FROM logs WHERE id % 7 = 0 LIMIT 100 OFFSET 3")
    assert res.streaming
    rows = [r[0] for r in res]
    assert rows == [i for i in range(2000) if i % 7 == 0][3:103]
    res = db.sql("SELECT id FROM logs")
    assert res.fetchmany(10) == [(i,) for i in range(10)]
    with pytest.raises(SkipidxError, match="read once"):
        res.arrow()
    assert len(res.fetchall()) == 1990
    # a streamed result read whole before any fetch is a table like any other
    res = db.sql("SELECT id FROM logs")
    assert res.arrow().num_rows == 2000 and res.fetchone() == (0,)


def test_dbapi_cursor_execute_and_module_sql(db):
    cur = db.cursor()
    cur.execute("SELECT id FROM logs WHERE id < 3")
    assert cur.description[0][0] == "id" and cur.fetchone() == (0,)
    assert cur.fetchall() == [(1,), (2,)]
    assert db.execute("SELECT count() FROM logs").scalar() == 2000
    assert skipidx.sql("SELECT 1 + 1 AS x").fetchall() == [(2,)]
    cur.close()


def test_insert_dict_capsule_dataset_and_files(tmp_path):
    pl = pytest.importorskip("polars")
    with skipidx.connect() as d:
        d.sql("CREATE TABLE t (a UInt32, b String) ORDER BY a")
        assert d.insert("t", {"a": [1, 2], "b": ["x", "y"]}) == 2
        assert d.insert("t", pl.DataFrame({"a": [3], "b": ["z"]})) == 1            # __arrow_c_stream__
        assert d.insert("t", pa.record_batch({"a": pa.array([4], pa.uint32()), "b": ["w"]})) == 1
        import pyarrow.dataset as ds
        pq.write_table(pa.table({"a": [5, 6], "b": ["p", "q"]}), tmp_path / "f1.parquet")
        pq.write_table(pa.table({"a": [7], "b": ["r"]}), tmp_path / "f2.parquet")
        assert d.insert("t", ds.dataset(str(tmp_path / "f1.parquet"))) == 2
        assert d.insert("t", str(tmp_path / "f*.parquet")) == 3
        (tmp_path / "g.csv").write_text("b,a\nk,9\nl,10\n")
        assert d.insert("t", tmp_path / "g.csv") == 2          # header detected, columns by name
        assert d.sql("SELECT count(), sum(a) FROM t").fetchone() == (11, 1 + 2 + 3 + 4 + 5 + 6 + 5 + 6 + 7 + 9 + 10)
        before = d.sql("SELECT count() FROM t").scalar()
        (tmp_path / "bad.csv").write_text("a,b\n1,x\noops,y\n")
        with pytest.raises(SkipidxError) as ei:
            d.insert("t", [str(tmp_path / "g.csv"), str(tmp_path / "bad.csv")])
        assert "bad.csv" in str(ei.value) and "line 3" in str(ei.value) and "column 1" in str(ei.value), str(ei.value)
        assert d.sql("SELECT count() FROM t").scalar() == before     # all or nothing


_RSS_SCRIPT = textwrap.dedent("""
    import json, sys
    import pyarrow as pa
    import skipidx
    from skipidx.engine import streaming as dbmod
    dbmod.STREAM_MIN_ROWS = 1000

    def rss_anon_kib():
        # anonymous resident memory: the mapped Parquet files' pages (RssFile) are the page cache's
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])

    db = skipidx.connect(sys.argv[1])
    mode = sys.argv[2]
    # warm up (lazy imports, JIT kernels, reader pool) before the baseline
    db.sql("SELECT * FROM big WHERE id < 2000").fetchall()
    for _ in db.sql("SELECT * FROM big").fetch_record_batch(8192):
        break
    pool = pa.default_memory_pool()
    base_anon, base_pool = rss_anon_kib(), pool.bytes_allocated()
    peak_anon = base_anon
    res = db.sql("SELECT * FROM big")
    rows = 0
    if mode == "stream":
        for b in res.fetch_record_batch(8192):
            rows += b.num_rows
            peak_anon = max(peak_anon, rss_anon_kib())
    else:
        t = res.arrow()
        rows = t.num_rows
        peak_anon = max(peak_anon, rss_anon_kib())
    print(json.dumps({"rows": rows, "anon_growth_kib": peak_anon - base_anon,
                      "arrow_peak_kib": (pool.max_memory() - base_pool) // 1024}))
""")


def test_streaming_select_star_has_bounded_memory(tmp_path):
    """A SELECT * of ~120 MB of decoded rows: read through fetch_record_batch,
    the peak of Arrow's allocations and of anonymous resident memory grow by a
    small fraction of that; read whole, by about all of it."""
    import numpy as np

    path = str(tmp_path / "db")
    n = 400_000
    with skipidx.connect(path) as d:
        d.sql("CREATE TABLE big (id UInt64, payload String) ORDER BY id SETTINGS index_granularity = 512")
        rng = np.random.default_rng(7)
        for off in range(0, n, 100_000):
            raw = rng.integers(0, 2**63, size=(100_000, 38), dtype=np.uint64)   # 300 random bytes a row
            pay = pa.array([r.tobytes().hex()[:300] for r in raw], pa.string())
            d.insert("big", pa.table({"id": pa.array(np.arange(off, off + 100_000, dtype=np.uint64)),
                                      "payload": pay}))
    figures = {}
    for mode in ("stream", "whole"):
        # mimalloc (Arrow's pool) returns freed pages at once: RSS then shows what is held, not cached
        env = dict(os.environ, MIMALLOC_PURGE_DELAY="0", MIMALLOC_RESET_DELAY="0")
        r = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, path, mode], capture_output=True, text=True,
                           timeout=300, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        figures[mode] = json.loads(r.stdout.strip().splitlines()[-1])
        assert figures[mode]["rows"] == n
    data_kib = n * 308 // 1024
    print(f"\nSELECT * of {data_kib / 1024:.0f} MiB: streaming peak Arrow {figures['stream']['arrow_peak_kib'] / 1024:.1f} MiB,"
          f" anon RSS +{figures['stream']['anon_growth_kib'] / 1024:.1f} MiB; whole peak Arrow "
          f"{figures['whole']['arrow_peak_kib'] / 1024:.1f} MiB, anon RSS +{figures['whole']['anon_growth_kib'] / 1024:.1f} MiB")
    for key, bound in (("arrow_peak_kib", 0.25), ("anon_growth_kib", 0.4)):
        assert figures["whole"][key] > data_kib * 0.8, figures      # the measurement sees the data
        assert figures["stream"][key] < data_kib * bound, figures   # streaming holds a few batches only


def test_pretty_converts_only_the_rows_it_shows(db, monkeypatch):
    import io

    from skipidx.engine import formats

    seen = []
    real = formats.column_texts

    def counting(arr, mode, null):
        seen.append(len(arr))
        return real(arr, mode, null)

    monkeypatch.setattr(formats, "column_texts", counting)
    res = db.sql("SELECT id, msg FROM logs LIMIT 5000000")
    buf = io.BytesIO()
    formats.write_batches(res.fetch_record_batch(100), res.schema, res.types, "PrettyCompact", buf)
    text = buf.getvalue().decode()
    assert text.endswith("Showed 1000 out of 2000 rows.\n")
    assert sum(seen) == 2 * 1000            # two columns, the 1000 rows shown (first 500, last 500)
    assert "1999 │ request 1999 ok" in text and " 499 │" in text and " 500 │" not in text and "1500 │" in text
