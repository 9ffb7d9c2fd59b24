"""The ``skipidx`` Spark reader's per-query machinery, in-process (no Spark session):
reading the filter's columns first, spreading a scan over tasks, the planner's
index cache and the garbage-collector freeze of reused workers.

The reader is driven exactly as Spark drives it (``reader()``, ``pushFilters``,
``partitions()``, a pickled reader's ``read()``); the oracle for whole rows is
the embedded engine's ``SELECT *`` with the same condition, typed as Spark
receives it.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import datasource as D  # noqa: E402

import skipidx  # noqa: E402
from skipidx.apps.datagen import RARE_TOKEN, SCHEMA_SQL, generate_table  # noqa: E402
from skipidx.apps.spark._plan import TaskSlice, planner_cache, split_tasks  # noqa: E402
from skipidx.apps.spark.arrow_types import spark_arrow_schema as _spark_arrow_schema, to_spark as _to_spark  # noqa: E402
from skipidx.apps.spark.source import SkipidxDataSource  # noqa: E402

pytestmark = pytest.mark.spark

ROWS = 20_000
GRANULARITY = 256
INDEXES = """,
    INDEX msg_tokens msg TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX level_set level TYPE set(10) GRANULARITY 1"""


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark_reader")
    data = generate_table(ROWS, seed=11)
    db = skipidx.connect(str(root / "db"))
    db.sql(SCHEMA_SQL.format(table="logs", indexes=INDEXES) + f" SETTINGS index_granularity = {GRANULARITY}")
    # two inserts: two parts, so reads and tasks cross part boundaries
    db.insert("logs", data.slice(0, ROWS // 2))
    db.insert("logs", data.slice(ROWS // 2))
    yield {"db": db, "path": str(root / "db" / "logs"), "data": data}
    db.close()


def _scan(path: str, filters=(), **options) -> tuple[pa.Table, list, object]:
    """Every row the reader hands Spark, as Spark plans and runs it."""
    ds = SkipidxDataSource({"path": path, **{k: str(v) for k, v in options.items()}})
    reader = ds.reader(ds.schema())
    assert list(reader.pushFilters(list(filters))) == list(filters), "every filter goes back to Spark"
    parts = reader.partitions()
    schema = _spark_arrow_schema(reader._meta())
    remote = pickle.loads(pickle.dumps(reader))
    batches = [b for p in parts for b in remote.read(pickle.loads(pickle.dumps(p)))]
    return pa.Table.from_batches(batches, schema=schema), parts, reader


def _engine_rows(db, where: str, schema: pa.Schema) -> pa.Table:
    return _to_spark(db.sql(f"SELECT * FROM logs WHERE {where}").to_arrow(), schema)


def _trace(data: pa.Table, i: int) -> str:
    return data.column("trace_id")[i].as_py()


# (id, `where` option, pushed Spark filters (built from the data), the same condition as SQL)
CASES = [
    ("hasToken_some_granules", f"hasToken(msg, '{RARE_TOKEN}')", None, f"hasToken(msg, '{RARE_TOKEN}')"),
    ("hasToken_none", "hasToken(msg, 'zyzzyva')", None, "hasToken(msg, 'zyzzyva')"),
    ("level_every_granule", "level = 'ERROR'", None, "level = 'ERROR'"),
    ("eq_pushed_bloom_false_positives", None, "eq", "trace_id = '{t}'"),
    ("where_and_pushed", "hasToken(msg, 'timeout')", "level", "hasToken(msg, 'timeout') AND level = 'WARN'"),
    # no index on id: every granule is read; a few granules of each read hold a match,
    # some adjacent (one tail range), some apart
    ("sparse_no_index", "id IN (5, 300, 301, 700, 9000, 19999)", None, "id IN (5, 300, 301, 700, 9000, 19999)"),
    ("constant_true", "1 = 1", None, "1 = 1"),
    ("all_columns", "id >= 0 AND ts > 0 AND level != '' AND service != '' AND trace_id != '' "
     "AND user_id >= 0 AND (http_status IS NULL OR http_status > 0) AND msg != 'x'", None,
     "id >= 0 AND ts > 0 AND level != '' AND service != '' AND trace_id != '' "
     "AND user_id >= 0 AND (http_status IS NULL OR http_status > 0) AND msg != 'x'"),
]


@pytest.mark.parametrize("name,where,pushed,sql", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("read_granules", [1, 16], ids=["read1", "read16"])
def test_filter_columns_first_gives_whole_rows_of_a_full_read(logs, name, where, pushed, sql, read_granules):
    """Reading the filter's columns first and the rest only for granules with a
    match returns exactly the rows (every column, every type) of the engine's
    SELECT * -- whether no granule, some or all granules of a read match."""
    t = _trace(logs["data"], 4321)
    filters = {None: [], "eq": [D.EqualTo(("trace_id",), t)], "level": [D.EqualTo(("level",), "WARN")]}[pushed]
    opts = {"read_granules": read_granules}
    if where is not None:
        opts["where"] = where
    got, _, reader = _scan(logs["path"], filters, **opts)
    want = _engine_rows(logs["db"], sql.format(t=t), got.schema)
    assert got.num_rows == want.num_rows, f"{sql}: {got.num_rows} rows read, the engine has {want.num_rows}"
    assert got.sort_by("id").equals(want.sort_by("id")), f"{sql}: rows differ from the engine's SELECT *"
    if name == "eq_pushed_bloom_false_positives":
        assert got.num_rows >= 1


def test_filter_first_reads_fewer_bytes_and_agrees_with_prefilter_off(logs):
    """prefilter=false hands Spark every row of the kept granules (no filter
    here): a superset that contains exactly the filtered rows."""
    t = _trace(logs["data"], 77)
    got, _, _ = _scan(logs["path"], [D.EqualTo(("trace_id",), t)])
    raw, _, _ = _scan(logs["path"], [D.EqualTo(("trace_id",), t)], prefilter="false")
    assert raw.num_rows > got.num_rows >= 1
    ids = set(got.column("id").to_pylist())
    assert ids <= set(raw.column("id").to_pylist())
    assert {r["id"] for r in raw.to_pylist() if r["trace_id"] == t} == ids


def _sizes(tasks) -> list[int]:
    return [sum(b - a for s in t for a, b in s.ranges) for t in tasks]


def _covered(tasks) -> list[tuple[str, int]]:
    return sorted((s.part, g) for t in tasks for s in t for a, b in s.ranges for g in range(a, b))


@pytest.mark.parametrize("total,max_g,par,min_g,want", [
    (57, 128, 2, 16, [29, 28]),          # a selective scan: both cores, not one
    (13, 128, 2, 16, [13]),              # too small to be worth a second task
    (31, 128, 2, 16, [31]),              # two tasks would hold < 16 granules each
    (32, 128, 2, 16, [16, 16]),
    (1000, 128, 2, 16, [125] * 8),       # big: bounded by granules_per_task, balanced
    (1000, 128, 64, 16, [17] * 8 + [16] * 54),  # many cores: tasks of >= 16 granules
    (129, 128, 1, 16, [65, 64]),
    (5, 128, 1, 16, [5]),
], ids=["57_two_cores", "13_one_task", "31_one_task", "32_two", "1000_bounded", "1000_many_cores",
        "129_balanced", "5_single"])
def test_split_tasks_spreads_and_bounds(total, max_g, par, min_g, want):
    # the granules as three parts with gaps, so pieces of several parts share tasks
    a = total // 3
    slices = [TaskSlice("p1", 10**6, "h", ((0, a // 2), (a // 2 + 3, a + 3))),
              TaskSlice("p2", 10**6, "h", ((5, 5 + a),)),
              TaskSlice("p3", 10**6, "h", ((0, total - 2 * a),))]
    tasks = split_tasks(slices, max_g, par, min_g)
    assert _sizes(tasks) == want, f"{total} granules, max {max_g}, parallelism {par}: {_sizes(tasks)}"
    assert _covered(tasks) == _covered([slices]), "every selected granule is read exactly once"


def test_split_tasks_nothing_selected_is_no_task():
    assert split_tasks([], 128, 4, 16) == []
    assert split_tasks([TaskSlice("p", 10, "h", ())], 128, 4, 16) == []
    with pytest.raises(skipidx.SkipidxError, match="granules_per_task"):
        split_tasks([], 0)


def test_absent_value_plans_no_partition(logs):
    _, parts, _ = _scan(logs["path"], where="hasToken(msg, 'zyzzyva')")
    assert parts == [], "nothing selected: Spark gets no partition (it runs one empty task of its own)"


def test_planner_cache_keeps_indexes_between_queries_and_sees_new_parts(logs, tmp_path):
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql(SCHEMA_SQL.format(table="logs", indexes=INDEXES) + f" SETTINGS index_granularity = {GRANULARITY}")
    db.insert("logs", logs["data"].slice(0, 5000))
    path = str(tmp_path / "db" / "logs")
    cache = planner_cache()
    where = f"hasToken(msg, '{RARE_TOKEN}')"
    got1, parts1, _ = _scan(path, where=where)
    hits = cache.hits
    got2, parts2, _ = _scan(path, where=where)
    assert cache.hits > hits, "the second query's pruning loads no index file again"
    assert got1.equals(got2) and [p.slices for p in parts1] == [p.slices for p in parts2]
    # a new part (an insert after the first query) is pruned and read too
    db.insert("logs", logs["data"].slice(5000, 15000))
    got3, _, _ = _scan(path, where=where)
    want = _engine_rows(db, where, got3.schema)
    assert got3.sort_by("id").equals(want.sort_by("id")) and got3.num_rows > got1.num_rows
    db.close()
    assert planner_cache(0) is None, "index_cache_mb = 0: no cache"
    got4, _, _ = _scan(path, where=where, index_cache_mb=0)
    assert got4.sort_by("id").equals(want.sort_by("id"))


@pytest.mark.parametrize("reuse,frozen", [("1", True), (None, False)], ids=["reused_worker", "own_process"])
def test_gc_freeze_only_in_reused_spark_workers(logs, reuse, frozen):
    """In a reused Spark worker (SPARK_REUSE_WORKER, after which Spark's daemon runs
    gc.collect() each call) the imported modules' objects are frozen; in any
    other process nothing changes."""
    code = textwrap.dedent(f"""
        import gc
        from skipidx.apps.spark.source import SkipidxDataSource
        ds = SkipidxDataSource({{"path": {logs['path']!r}, "where": "hasToken(msg, 'timeout')"}})
        r = ds.reader(ds.schema())
        parts = r.partitions()
        n = sum(b.num_rows for p in parts for b in r.read(p))
        print(gc.get_freeze_count(), n)
    """)
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REUSE_WORKER"}
    if reuse is not None:
        env["SPARK_REUSE_WORKER"] = reuse
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    count, n = map(int, out.stdout.split())
    assert (count > 0) == frozen, f"freeze count {count} with SPARK_REUSE_WORKER={reuse}"
    assert n > 0
