"""skipidx on PySpark: the ``skipidx`` data source (read with index pruning,
write parts atomically) and the Spark build pipeline (:mod:`skipidx.apps.pipeline`).

One line registers the source on a session; this runs as written::

    from pyspark.sql import SparkSession
    import skipidx.spark

    spark = SparkSession.builder.master("local[2]").getOrCreate()
    skipidx.spark.register(spark)
    df = spark.createDataFrame([(1, "connection timeout"), (2, "all good")], "id long, msg string")
    (df.write.format("skipidx").mode("append")
       .option("order_by", "id")
       .option("indexes", "INDEX msg_tokens msg TYPE tokenbf_v1(1024, 2, 0) GRANULARITY 1")
       .save("demo_db/logs"))
    spark.read.format("skipidx").option("where", "hasToken(msg, 'timeout')").load("demo_db/logs").show()

A table that does not exist is created by the first write from the
DataFrame's schema and the options ``order_by``, ``indexes`` (``INDEX ...``
clauses separated by ``;``, or ``none``), ``index_granularity``,
``column_types`` and ``settings``; without ``indexes`` the write is an error
(a skipidx table without skip indexes is seldom what was meant).

``register`` also makes the workers run the driver's Python (where skipidx
is installed): on a local master it points the session's Python workers at
``sys.executable``; on a cluster it checks that the workers can import
skipidx and otherwise says how to set ``spark.pyspark.python``.

Spark 4.1+ (Python data sources with filter pushdown) and Java 17 are needed.
"""
from __future__ import annotations

from typing import Any, Iterable

__all__ = ["register", "explain", "PUSHDOWN_CONF"]

#: Spark refuses a Python source that implements pushFilters unless this is on.
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any, *, check_workers: bool | None = None) -> None:
    """Register ``format("skipidx")`` on `spark`, enable Python filter pushdown,
    and make the Python workers run this interpreter (see the module doc).

    `check_workers` (default: on a non-local master) runs a one-task job that
    imports skipidx on a worker, so a worker without it fails here, with the
    fix in the message, and not in the middle of a write."""
    import os
    import sys

    from skipidx.apps.spark.source import SkipidxDataSource

    sc = spark.sparkContext
    master = str(sc.master or "")
    local = master.startswith("local")
    if local and getattr(sc, "pythonExec", None) != sys.executable:
        # the data source's Python functions are pickled with sc.pythonExec as their
        # interpreter: the driver's has skipidx installed, a bare `python3` may not
        sc.pythonExec = sys.executable
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark.dataSource.register(SkipidxDataSource)
    spark.conf.set(PUSHDOWN_CONF, "true")
    if check_workers if check_workers is not None else not local:
        _check_workers(sc)


def _check_workers(sc: Any) -> None:
    from skipidx.core.errors import SkipidxError

    def probe(_: Any) -> str:
        import skipidx

        return skipidx.__version__

    try:
        sc.parallelize([0], 1).map(probe).collect()
    except Exception as e:   # Py4J / PySpark: the workers' interpreter lacks skipidx
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SkipidxError(
            f"the Spark workers cannot import skipidx ({first[:200]}); run them with a Python that has it: "
            "SparkSession.builder.config('spark.pyspark.python', '/path/to/python') (or PYSPARK_PYTHON) "
            "before the session starts, or install skipidx on every worker") from None


def explain(*args: Any, where: str | None = None, filters: Iterable[Any] = ()) -> dict:
    """The pruning a Spark scan of a table would do, computed in this process.

    Called as ``explain(path, ...)`` or ``explain(spark, path, ...)`` (the
    session is not needed: planning reads only the table directory).

    `where` is the ``where`` option's text, `filters` Spark's pushed filter
    objects (``pyspark.sql.datasource.EqualTo(("col",), 5)``...). Returns the
    figures the reader's ``stats_path`` option writes: ``granules_total``,
    ``granules_selected``, ``rows_total``, ``rows_selected``, ``parts_*``,
    per-index figures under ``indexes``, and ``pushed_filters`` (the filters
    that took part in pruning).
    """
    from skipidx.core.errors import SkipidxError
    from skipidx.apps.spark._plan import plan_scan, resolve_table_dir
    from skipidx.apps.spark.filters import conjunction, filters_to_exprs
    from skipidx.sql.parser import parse_expression
    from skipidx.store.commit import read_state

    if len(args) == 1 and isinstance(args[0], str):
        path = args[0]
    elif len(args) == 2 and isinstance(args[1], str):
        path = args[1]
    else:
        raise SkipidxError("explain(path, where=..., filters=...) or explain(spark, path, ...)")
    table_dir = resolve_table_dir(path)
    meta = read_state(table_dir).meta
    pushed, texts = [], []
    for f in filters:
        e = filters_to_exprs([f], meta)
        if e:
            pushed.extend(e)
            texts.append(repr(f))
    w = parse_expression(where) if where is not None and where.strip() else None
    plan = plan_scan(table_dir, conjunction(pushed + ([w] if w is not None else [])))
    st = dict(plan.stats)
    st["pushed_filters"] = texts
    return st
