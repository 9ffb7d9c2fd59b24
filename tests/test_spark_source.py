"""The ``skipidx`` PySpark data source against real Spark (local[2]).

Oracles: Spark itself reading a plain Parquet copy of the same rows (for the
pushed filters), the embedded engine (for the ``where`` option, which has
ClickHouse semantics), and the original DataFrame (round trip).
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

import skipidx  # noqa: E402
from conftest import get_spark  # noqa: E402  (conftest also gives the shared `spark` fixture)
from skipidx.apps.datagen import RARE_TOKEN, SCHEMA_SQL, generate_table  # noqa: E402

pytestmark = pytest.mark.spark

ROWS = 20_000
GRANULARITY = 256
INDEXES = """,
    INDEX msg_tokens msg TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX msg_ngrams msg TYPE ngrambf_v1(4, 8192, 2, 0) GRANULARITY 1,
    INDEX msg_lower lower(msg) TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX user_bf user_id TYPE bloom_filter GRANULARITY 1,
    INDEX level_set level TYPE set(10) GRANULARITY 1,
    INDEX status_set http_status TYPE set(100) GRANULARITY 4"""


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """The log table built by the embedded engine, and a plain Parquet copy of its rows."""
    root = tmp_path_factory.mktemp("spark_logs")
    data = generate_table(ROWS, seed=7)
    db = skipidx.connect(str(root / "db"))
    db.sql(SCHEMA_SQL.format(table="logs", indexes=INDEXES) + f" SETTINGS index_granularity = {GRANULARITY}")
    db.insert("logs", data)
    # ts as a UTC instant (Spark TIMESTAMP, as the source maps DateTime), the rest as generated
    copy = data.set_column(1, "ts", pc.cast(data.column("ts"), pa.timestamp("us", tz="UTC")))
    pq.write_table(copy, str(root / "plain.parquet"), row_group_size=4096)
    yield {"db": db, "path": str(root / "db" / "logs"), "parquet": str(root / "plain.parquet"),
           "data": data, "root": root}
    db.close()


def _ids(df) -> list[int]:
    return sorted(int(r[0]) for r in df.select("id").collect())


def _load(spark, path, stats_path=None, **options):
    r = spark.read.format("skipidx")
    for k, v in options.items():
        r = r.option(k, v)
    if stats_path is not None:
        r = r.option("stats_path", str(stats_path))
    return r.load(path)


def _stats(path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _needles(data: pa.Table) -> dict:
    tids = data.column("trace_id")
    return {"t1": tids[1234].as_py(), "t2": tids[17777].as_py(), "u": int(data.column("user_id")[4321].as_py())}


# (id, Spark SQL condition, selective: the source must read fewer granules than the table holds)
PUSHDOWN = [
    ("eq", "trace_id = '{t1}'", True),
    ("in", "trace_id IN ('{t1}', '{t2}', 'nope')", True),
    ("eq_decimal", "user_id = {u}", True),
    ("contains", f"msg LIKE '%{RARE_TOKEN}%'", True),
    ("ends_with", f"msg LIKE '%{RARE_TOKEN} sighted'", True),
    ("starts_with", "trace_id LIKE 'ab%'", False),
    ("is_null", "http_status IS NULL", True),
    ("and", "trace_id = '{t1}' AND level IN ('INFO', 'DEBUG', 'WARN', 'ERROR')", True),
    ("and_not", f"msg LIKE '%{RARE_TOKEN}%' AND NOT (level = 'DEBUG')", True),
    ("not_eq", "NOT (trace_id = '{t1}')", False),
    ("not_in", "level NOT IN ('DEBUG', 'INFO', 'WARN')", False),
    ("is_not_null", "http_status IS NOT NULL AND http_status = 404", False),
    ("null_safe", "http_status <=> 503", False),
    ("not_null_safe", "NOT (http_status <=> 200)", False),
    ("or", "trace_id = '{t1}' OR trace_id = '{t2}'", False),
    ("ts_range", "ts >= timestamp'2024-01-01 00:10:00' AND ts < timestamp'2024-01-01 00:12:00'", True),
    ("ts_fraction", "ts > timestamp'2024-01-01 00:10:00.5' AND ts <= timestamp'2024-01-01 00:10:30'", True),
    ("id_cmp", "id < 300 OR id >= 19990", False),
]


@pytest.fixture(scope="module")
def plain_answers(logs):
    """Spark's answer on the plain Parquet copy for every PUSHDOWN condition, in one job
    (a filter keeps the rows where the condition is TRUE; the select computes the same value)."""
    from pyspark.sql import functions as F

    conds = [c.format(**_needles(logs["data"])) for _, c, _ in PUSHDOWN]
    df = get_spark().read.parquet(logs["parquet"])
    rows = df.select("id", *[F.expr(c).alias(f"c{i}") for i, c in enumerate(conds)]).collect()
    return {c: sorted(int(r[0]) for r in rows if r[i + 1] is True) for i, c in enumerate(conds)}


@pytest.mark.parametrize("name,cond,selective", PUSHDOWN, ids=[p[0] for p in PUSHDOWN])
def test_pushdown_equals_spark_on_plain_parquet(spark, logs, plain_answers, tmp_path, name, cond, selective):
    cond = cond.format(**_needles(logs["data"]))
    stats_path = tmp_path / "stats.json"
    got = _ids(_load(spark, logs["path"], stats_path, granules_per_task=16).filter(cond))
    want = plain_answers[cond]
    assert got == want, f"{cond}: {len(got)} rows through skipidx, {len(want)} from plain Parquet"
    st = _stats(stats_path)
    assert st["granules_total"] == math.ceil(ROWS / GRANULARITY)
    if selective:
        assert st["pushed_filters"], f"{cond}: Spark pushed nothing"
        assert st["granules_selected"] < st["granules_total"], f"{cond}: no pruning: {st}"
        assert st["rows_selected"] < st["rows_total"]
        assert len(want) <= st["rows_selected"]


WHERE = [
    ("hasToken", f"hasToken(msg, '{RARE_TOKEN}')", True),
    ("hasToken_absent", "hasToken(msg, 'zyzzyva')", True),
    ("like", f"msg LIKE '%{RARE_TOKEN} sigh%'", True),
    ("like_words", "msg LIKE '%timeout%connection%'", False),
    ("or_two_indexes", "hasToken(msg, '{rare}') OR trace_id = '{t1}'", True),
    ("multiSearchAny", "multiSearchAny(msg, ['zyzzyva', '{rare} s'])", True),
    ("match", "match(msg, '{rare} s[i]ghted$')", True),
    ("lower_like", "lower(msg) LIKE '%zürich%' AND level = 'ERROR'", False),
    ("not_hasToken", "NOT hasToken(msg, 'timeout') AND http_status IS NULL", True),
]


@pytest.mark.parametrize("name,where,selective", WHERE, ids=[w[0] for w in WHERE])
def test_where_option_equals_embedded_engine(spark, logs, tmp_path, name, where, selective):
    where = where.format(rare=RARE_TOKEN, **_needles(logs["data"]))
    stats_path = tmp_path / "stats.json"
    got = _ids(_load(spark, logs["path"], stats_path, where=where))
    want = [int(r[0]) for r in logs["db"].sql(f"SELECT id FROM logs WHERE {where} ORDER BY id").fetchall()]
    assert got == want, f"{where}: {len(got)} rows through Spark, {len(want)} from the embedded engine"
    st = _stats(stats_path)
    if selective:
        assert st["granules_selected"] < st["granules_total"], f"{where}: no pruning: {st}"


def test_where_option_and_spark_filter_together(spark, logs, tmp_path):
    stats_path = tmp_path / "stats.json"
    df = _load(spark, logs["path"], stats_path, where="hasToken(msg, 'timeout')").filter("level = 'ERROR'")
    got = _ids(df)
    want = [int(r[0]) for r in logs["db"].sql(
        "SELECT id FROM logs WHERE hasToken(msg, 'timeout') AND level = 'ERROR' ORDER BY id").fetchall()]
    assert got == want and want
    st = _stats(stats_path)
    assert any("level" in f for f in st["pushed_filters"]), st["pushed_filters"]


def test_prefilter_off_gives_the_same_rows(spark, logs):
    cond = f"msg LIKE '%{RARE_TOKEN}%' AND NOT (level = 'DEBUG')"
    a = _ids(_load(spark, logs["path"], prefilter="false").filter(cond))
    b = _ids(_load(spark, logs["path"], prefilter="true").filter(cond))
    assert a == b and a


def test_bad_where_is_a_skipidx_error(spark, logs):
    with pytest.raises(Exception, match="nosuch"):
        _load(spark, logs["path"], where="hasToken(nosuch, 'x')").count()
    with pytest.raises(Exception, match="separator|token"):
        _load(spark, logs["path"], where="hasToken(msg, 'a b')").count()


def test_explain_reports_pruning_without_spark(logs):
    from pyspark.sql.datasource import EqualTo, Not

    import skipidx.apps.spark

    tid = _needles(logs["data"])["t1"]
    st = skipidx.apps.spark.explain(logs["path"], filters=[EqualTo(("trace_id",), tid)])
    assert st["granules_selected"] < st["granules_total"] == math.ceil(ROWS / GRANULARITY)
    st_not = skipidx.apps.spark.explain(logs["path"], filters=[Not(EqualTo(("trace_id",), tid))])
    assert st_not["granules_selected"] == st_not["granules_total"], "a bloom filter cannot prune a negation"
    st_w = skipidx.apps.spark.explain(None, logs["path"], where=f"hasToken(msg, '{RARE_TOKEN}')")
    assert 0 < st_w["granules_selected"] < st_w["granules_total"]


# ---------------------------------------------------------------- writing
def _all_types_df(spark):
    from pyspark.sql import types as T

    schema = T.StructType([
        T.StructField("id", T.LongType(), False),
        T.StructField("i8", T.ByteType()), T.StructField("i16", T.ShortType()),
        T.StructField("i32", T.IntegerType()), T.StructField("i64", T.LongType()),
        T.StructField("u8", T.ShortType()), T.StructField("u16", T.IntegerType()),
        T.StructField("u32", T.LongType()), T.StructField("u64", T.DecimalType(20, 0)),
        T.StructField("f32", T.FloatType()), T.StructField("f64", T.DoubleType()),
        T.StructField("b", T.BooleanType()), T.StructField("s", T.StringType()),
        T.StructField("lc", T.StringType()), T.StructField("d", T.DateType()),
        T.StructField("t", T.TimestampType()),
    ])
    utc = dt.timezone.utc
    D = decimal.Decimal
    rows = [
        (0, -128, -32768, -2**31, -2**63, 0, 0, 0, D(0), -1.5, -2.25, False, "", "a",
         dt.date(1970, 1, 1), dt.datetime(1970, 1, 1, tzinfo=utc)),
        (1, 127, 32767, 2**31 - 1, 2**63 - 1, 255, 65535, 2**32 - 1, D(2**64 - 1), 3.5, 1e300, True,
         "東京 café 😀", "b", dt.date(2149, 6, 6), dt.datetime(2106, 2, 7, 6, 28, 15, tzinfo=utc)),
        (2, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None),
        (3, 5, 6, 7, 8, 9, 10, 11, D(12), float("inf"), float("-inf"), True, "x'y\\z", "a",
         dt.date(2024, 2, 29), dt.datetime(2024, 2, 29, 12, 0, 1, tzinfo=utc)),
    ]
    rows += [(i, i % 100, i, i * 3, i * 1000, i % 256, i, i, D(i), i / 4, i / 8, i % 2 == 0, f"row {i}",
              "abc"[i % 3], dt.date(2024, 1, 1) + dt.timedelta(days=i % 300),
              dt.datetime(2024, 1, 1, tzinfo=utc) + dt.timedelta(seconds=i)) for i in range(4, 300)]
    return spark.createDataFrame(rows, schema)   # local[2]: two slices, no shuffle


def _normalize(rows) -> list[tuple]:
    out = []
    for r in rows:
        vals = []
        for v in r:
            if isinstance(v, dt.datetime):
                v = v.timestamp()   # collect() gives naive local times; compare instants
            vals.append(v)
        out.append(tuple(vals))
    return sorted(out, key=lambda t: t[0])


def test_round_trip_every_type_and_nulls(spark, tmp_path):
    df = _all_types_df(spark)
    path = str(tmp_path / "db" / "types")
    (df.write.format("skipidx").mode("append")
       .option("column_types", "u8 Nullable(UInt8), u16 Nullable(UInt16), u32 Nullable(UInt32), "
                               "lc LowCardinality(Nullable(String))")
       .option("order_by", "id").option("index_granularity", "64")
       .option("indexes", "INDEX s_tok s TYPE sbbf('token') GRANULARITY 1; INDEX u64_bf u64 TYPE bloom_filter")
       .save(path))
    with skipidx.connect(str(tmp_path / "db")) as db:
        types = {r[0]: r[1] for r in db.sql("DESCRIBE TABLE types").fetchall()}
        assert types["id"] == "Int64" and types["u64"] == "Nullable(UInt64)" and types["u8"] == "Nullable(UInt8)"
        assert types["lc"] == "LowCardinality(Nullable(String))" and types["t"] == "Nullable(DateTime)"
        assert db.sql("SELECT max(u64), min(i64), count() FROM types").fetchall() == [(2**64 - 1, -2**63, 300)]
        assert db.sql("SELECT count() FROM types WHERE i8 IS NULL").fetchall() == [(1,)]
        assert db.sql("SELECT id FROM types WHERE hasToken(s, 'café')").fetchall() == [(1,)]
        # each task wrote one part
        parts = db.catalog.table("types").state.parts
        assert len(parts) == df.rdd.getNumPartitions() >= 2, parts
    back = _load(spark, path)
    assert back.schema == df.schema
    assert _normalize(back.collect()) == _normalize(df.collect())


@pytest.fixture()
def copy_table(logs, tmp_path):
    """A fresh copy of the log table (same DDL) filled through Spark from the Parquet copy."""
    db = skipidx.connect(str(tmp_path / "db2"))
    db.sql(SCHEMA_SQL.format(table="logs", indexes=INDEXES) + f" SETTINGS index_granularity = {GRANULARITY}")
    yield db, str(tmp_path / "db2" / "logs")
    db.close()


def _disk_state(table_dir: str) -> dict:
    """Everything a reader or a later writer could see: state, parts, staged dirs."""
    out = {}
    for root, dirs, files in os.walk(table_dir):
        rel = os.path.relpath(root, table_dir)
        if rel.startswith("readers"):
            continue   # shared pin files of readers, not table content
        for f in files:
            if f.endswith(".lock"):
                continue
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.join(rel, f)] = hash(fh.read())
        for d in dirs:
            out.setdefault(os.path.join(rel, d) + "/", None)
    return out


def test_failed_task_leaves_table_exactly_as_before(spark, logs, copy_table):
    from pyspark.sql import functions as F

    db, path = copy_table
    src = spark.read.parquet(logs["parquet"])
    src.write.format("skipidx").mode("append").save(path)
    before = _disk_state(path)
    rows_before = db.sql("SELECT count(), sum(id) FROM logs").fetchall()
    bad_id = int(logs["data"].column("id")[ROWS - 5].as_py())

    def boom(i):
        if i == bad_id:
            raise ValueError(f"planted failure at id {i}")
        return i

    udf = F.udf(boom, "decimal(20,0)")
    failing = src.repartition(4).withColumn("id", udf("id"))
    with pytest.raises(Exception, match="planted failure"):
        failing.write.format("skipidx").mode("append").save(path)
    assert _disk_state(path) == before, "the failed job left files behind or changed the table"
    assert db.sql("SELECT count(), sum(id) FROM logs").fetchall() == rows_before
    with pytest.raises(Exception, match="planted failure"):
        failing.write.format("skipidx").mode("overwrite").save(path)
    assert _disk_state(path) == before


def test_append_commits_one_part_per_task_and_overwrite_replaces_all(spark, logs, copy_table):
    db, path = copy_table
    src = spark.read.parquet(logs["parquet"])
    src.repartition(3).write.format("skipidx").mode("append").save(path)
    src.filter("id < 1000").repartition(2).write.format("skipidx").mode("append").save(path)
    t = db.catalog.table("logs")
    assert len(t.state.parts) == 5
    assert db.sql("SELECT count() FROM logs").fetchall() == [(ROWS + 1000,)]
    old = {p.name for p in t.state.parts}
    src.filter("level = 'ERROR'").coalesce(2).write.format("skipidx").mode("overwrite").save(path)
    st = t.state
    assert not old & {p.name for p in st.parts}
    n_error = pc.sum(pc.equal(logs["data"].column("level"), "ERROR")).as_py()
    assert db.sql("SELECT count(), uniqExact(level) FROM logs").fetchall() == [(n_error, 1)]
    assert sorted(os.listdir(os.path.join(path, "parts"))) == sorted(p.name for p in st.parts)
    assert [n for n in os.listdir(os.path.join(path, "tmp")) if not n.endswith(".lock")] == []


def test_write_errors_are_clear(spark, logs, tmp_path, copy_table):
    db, path = copy_table
    src = spark.read.parquet(logs["parquet"])
    with pytest.raises(Exception, match="missing columns: msg"):
        src.drop("msg").write.format("skipidx").mode("append").save(path)
    with pytest.raises(Exception, match="Append|Overwrite"):
        src.write.format("skipidx").mode("errorifexists").save(path)
    with pytest.raises(Exception, match="out of range|UInt16"):
        src.withColumn("http_status", src["http_status"] + 70000).write.format("skipidx").mode("append").save(path)
    assert db.sql("SELECT count() FROM logs").fetchall() == [(0,)]
