"""External tables with Spark: a lake written by Spark (parquet-java), sidecars built by
Spark tasks (``skipidx build --external --engine spark``), and the ``skipidx`` data source
reading an external table with the same pruning. Oracle: DuckDB on the same files."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspark")
duckdb = pytest.importorskip("duckdb")

import skipidx  # noqa: E402
from conftest import get_spark  # noqa: E402,F401  (conftest also gives the shared `spark` fixture)
from test_external import _fingerprints  # noqa: E402

pytestmark = pytest.mark.spark

WORDS = ["alpha", "beta", "gamma", "delta", "error", "timeout", "disk", "user"]


@pytest.fixture(scope="module")
def spark_lake(tmp_path_factory):
    sp = get_spark()
    root = str(tmp_path_factory.mktemp("sparklake") / "lake")
    from pyspark.sql import functions as F

    n = 30_000
    df = (sp.range(n).withColumnRenamed("id", "id")
          .withColumn("msg", F.concat_ws(" ", F.element_at(F.array(*[F.lit(w) for w in WORDS]),
                                                            (F.col("id") % 8 + 1).cast("int")),
                                         F.when(F.col("id") % 9973 == 17, F.lit("kraken")).otherwise(F.lit("ok"))))
          .withColumn("trace_id", F.concat(F.lit("tr"), (F.col("id") * 7919 % 100003).cast("string")))
          .withColumn("note", F.when(F.col("id") % 11 == 0, F.lit(None)).otherwise(F.lit("x")))
          .withColumn("region", F.when(F.col("id") % 3 == 0, F.lit("eu")).otherwise(F.lit("us"))))
    (df.repartition(3).write.option("parquet.block.size", 64 * 1024)
       .option("parquet.bloom.filter.enabled#trace_id", "true")
       .partitionBy("region").parquet(root))
    return root


def _duck(root, where):
    return duckdb.sql(f"SELECT count(*) FROM read_parquet('{root}/**/*.parquet', hive_partitioning = true) "
                      f"WHERE {where}").fetchall()[0][0]


def test_spark_lake_spark_build_and_source(spark_lake, tmp_path, spark):  # noqa: F811
    from skipidx.apps.pipeline import build

    root = spark_lake
    before = _fingerprints(root)
    dbdir = str(tmp_path / "db")
    s = build(dbdir, "logs", f"{root}/**/*.parquet", engine="spark", external=True, quiet=True,
              indexes=["INDEX tok msg TYPE tokenbf_v1(2048, 3, 0)", "INDEX ad msg TYPE sbbf('ngram', n = 3)"])
    assert len(s["report"]["indexed"]) == s["files"] >= 6
    db = skipidx.connect(dbdir)
    cases = [("hasToken(msg, 'kraken')", "msg LIKE '% kraken'"), ("msg LIKE '%rake%'", "msg LIKE '%rake%'"),
             ("trace_id = 'tr7919'", "trace_id = 'tr7919'"), ("id BETWEEN 100 AND 300", "id BETWEEN 100 AND 300"),
             ("note IS NULL AND region = 'eu'", "note IS NULL AND region = 'eu'"),
             ("trace_id IN ('tr7919', 'tr15838', 'nope')", "trace_id IN ('tr7919', 'tr15838', 'nope')")]
    for where, dw in cases:
        r = db.sql(f"SELECT count() FROM logs WHERE {where}")
        assert r.fetchall()[0][0] == _duck(root, dw), where
    r = db.sql("SELECT count() FROM logs WHERE hasToken(msg, 'kraken')")
    assert r.stats.granules_selected < r.stats.granules_total
    # REFRESH on Spark: nothing changed, nothing built
    s2 = build(dbdir, "logs", None, engine="spark", quiet=True)
    assert s2["report"]["indexed"] == [] and s2["report"]["unchanged"] == s["files"]
    # the data source reads the external table with the same pruning, exactly
    tdir = os.path.join(dbdir, "logs")
    stats = str(tmp_path / "stats.json")
    got = (spark.read.format("skipidx").option("where", "hasToken(msg, 'kraken')").option("stats_path", stats)
           .load(tdir).count())
    assert got == _duck(root, "msg LIKE '% kraken'")
    import json
    st = json.load(open(stats))
    assert st["granules_selected"] < st["granules_total"]
    df = spark.read.format("skipidx").load(tdir)
    assert df.filter("region = 'eu' AND id < 1000").count() == _duck(root, "region = 'eu' AND id < 1000")
    with pytest.raises(Exception):
        df.limit(1).write.format("skipidx").mode("append").save(tdir)
    db.close()
    assert _fingerprints(root) == before
