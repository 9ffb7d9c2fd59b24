"""``skipidx build`` on both engines, and interop: a table built by Spark and one
built in-process from the same files answer the same queries identically
(through the embedded engine and through the Spark source)."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.apps.datagen import RARE_TOKEN, generate_table
from skipidx.apps.pipeline import build, build_main

ROWS = 24_000
INDEX_ARGS = [
    "INDEX msg_tokens msg TYPE sbbf('token', fpp = 0.01) GRANULARITY 1",
    "INDEX msg_ngrams msg TYPE ngrambf_v1(3, 8192, 2, 0) GRANULARITY 1",
    "INDEX trace_bf trace_id TYPE bloom_filter(0.01) GRANULARITY 1",
    "INDEX user_bf user_id TYPE bloom_filter GRANULARITY 2",
]
LOG_COLUMNS = ("id UInt64, ts DateTime, level LowCardinality(String), service LowCardinality(String), "
               "trace_id String, user_id UInt64, http_status Nullable(UInt16), msg String")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("build_src")
    data = generate_table(ROWS, seed=11)
    d = root / "parquet"
    d.mkdir()
    for i in range(3):   # a directory of files, as Spark or a data lake leaves them
        pq.write_table(data.slice(i * 8000, 8000), str(d / f"part-{i:05d}.parquet"))
    (d / "_SUCCESS").write_bytes(b"")
    return {"root": root, "data": data, "parquet": str(d)}


def _queries(data: pa.Table) -> list[str]:
    t1, t2 = data.column("trace_id")[100].as_py(), data.column("trace_id")[20000].as_py()
    u = data.column("user_id")[555].as_py()
    return [
        "SELECT count(), sum(id), min(ts), max(ts) FROM {t}",
        f"SELECT id FROM {{t}} WHERE hasToken(msg, '{RARE_TOKEN}') ORDER BY id",
        f"SELECT id, trace_id FROM {{t}} WHERE trace_id IN ('{t1}', '{t2}') ORDER BY id",
        "SELECT level, count(), uniqExact(service) FROM {t} GROUP BY level ORDER BY level",
        "SELECT count() FROM {t} WHERE http_status IS NULL",
        f"SELECT id FROM {{t}} WHERE msg LIKE '%{RARE_TOKEN} sighted' ORDER BY id",
        f"SELECT count() FROM {{t}} WHERE hasToken(msg, 'timeout') OR user_id = {u}",
        "SELECT count() FROM {t} WHERE NOT hasToken(msg, 'timeout') AND level = 'WARN'",
        "SELECT min(ts), max(ts), count() FROM {t} WHERE service = 'api' AND http_status = 500",
        "SELECT id, ts, msg FROM {t} ORDER BY ts, id LIMIT 7",
        "SELECT count() FROM {t} WHERE multiSearchAny(msg, ['zyzzyva', 'Zürich']) OR match(msg, 'caf[eé]')",
    ]


@pytest.mark.spark
def test_spark_build_and_embedded_build_answer_identically(source, tmp_path):
    from conftest import get_spark

    spark = get_spark()
    dbdir = str(tmp_path / "db")
    common = ["--from", source["parquet"], "--columns", LOG_COLUMNS, "--order-by", "ts",
              "--index-granularity", "512"] + [x for i in INDEX_ARGS for x in ("--index", i)]
    assert build_main([dbdir, "logs_emb"] + common) == 0
    assert build_main([dbdir, "logs_spark"] + common + ["--engine", "spark", "--master", "local[2]",
                                                        "--partitions", "4"]) == 0
    with skipidx.connect(dbdir) as db:
        emb, spk = db.catalog.table("logs_emb"), db.catalog.table("logs_spark")
        assert len(spk.state.parts) == 4, "one part per Spark task"
        assert emb.meta.indexes == spk.meta.indexes
        for q in _queries(source["data"]):
            a = db.sql(q.format(t="logs_emb"))
            b = db.sql(q.format(t="logs_spark"))
            assert a.fetchall() == b.fetchall(), q
        # pruning works on the Spark-built parts (sorted by ts, indexes present)
        res = db.sql(f"SELECT count() FROM logs_spark WHERE hasToken(msg, '{RARE_TOKEN}')")
        assert res.stats.granules_selected < res.stats.granules_total
        for p in spk.snapshot().parts:
            ts = p.read(["ts"]).column("ts")
            assert pc.all(pc.greater_equal(ts.slice(1), ts.slice(0, len(ts) - 1))).as_py(), "part not sorted"
    # and the Spark source reads both the same way
    t1 = source["data"].column("trace_id")[100].as_py()
    for cond in (f"trace_id = '{t1}'", f"msg LIKE '%{RARE_TOKEN}%'", "http_status IS NULL AND level = 'ERROR'"):
        ids = []
        for t in ("logs_emb", "logs_spark"):
            df = spark.read.format("skipidx").load(os.path.join(dbdir, t)).filter(cond)
            ids.append(sorted(int(r[0]) for r in df.select("id").collect()))
        assert ids[0] == ids[1], cond


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["csv", "csvwithnames", "json"])
def test_text_formats_build_the_same_table_on_both_engines(source, tmp_path, fmt):
    from conftest import get_spark

    get_spark()
    data = source["data"].slice(0, 1500)
    path = str(tmp_path / f"in.{ 'json' if fmt == 'json' else 'csv'}")
    if fmt == "json":
        with open(path, "w", encoding="utf-8") as fh:
            import json

            for r in data.to_pylist():
                r["ts"] = r["ts"].strftime("%Y-%m-%d %H:%M:%S")
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    else:
        pcsv.write_csv(data, path, write_options=pcsv.WriteOptions(include_header=fmt == "csvwithnames"))
    dbdir = str(tmp_path / "db")
    for engine in ("embedded", "spark"):
        s = build(dbdir, f"t_{engine}", path, fmt=fmt, engine=engine, master="local[2]", columns=LOG_COLUMNS,
                  order_by="id", quiet=True)
        assert s["rows"] == 1500, (engine, s)
    with skipidx.connect(dbdir) as db:
        a = db.sql("SELECT * FROM t_embedded ORDER BY id").to_arrow()
        b = db.sql("SELECT * FROM t_spark ORDER BY id").to_arrow()
        assert a.equals(b), fmt
        want = data.sort_by("id").cast(a.schema)
        assert a.equals(want), fmt


def test_build_errors_are_user_errors(source, tmp_path, capsys):
    from skipidx.apps.cli import main

    dbdir = str(tmp_path / "db")
    assert main(["build", dbdir, "t", "--from", str(tmp_path / "missing.parquet")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main(["build", dbdir, "t", "--from", source["parquet"], "--order-by", "nosuch"]) == 1
    assert "nosuch" in capsys.readouterr().err
    csv = tmp_path / "x.csv"
    csv.write_text("1,2\n")
    # a text file without a table: the schema is inferred, and said (was: an error asking for --columns)
    assert main(["build", dbdir, "t_csv", "--from", str(csv)]) == 0
    assert "c1 Int64, c2 Int64" in capsys.readouterr().out
    assert main(["build", dbdir, "t", "--from", source["parquet"]]) == 0
    out = capsys.readouterr().out
    assert f"{ROWS:,} rows" in out and "index bytes" in out
    assert main(["build", dbdir, "t", "--from", source["parquet"], "--index-granularity", "64"]) == 1
    assert "only apply when the build creates it" in capsys.readouterr().err
    assert main(["build", dbdir, "t", "--from", source["parquet"], "--engine", "nope"]) == 2
    assert "invalid choice" in capsys.readouterr().err
