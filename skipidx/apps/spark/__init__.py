"""skipidx on PySpark: the ``skipidx`` data source (read with index pruning,
write parts atomically) and the Spark build pipeline (:mod:`skipidx.apps.pipeline`).

One line registers the source on a session::

    import skipidx.spark; skipidx.spark.register(spark)

    df.write.format("skipidx").mode("append").save("DBDIR/logs")
    spark.read.format("skipidx").option("where", "hasToken(msg, 'timeout')").load("DBDIR/logs")

Spark 4.1+ (Python data sources with filter pushdown) and Java 17 are needed.
"""
from __future__ import annotations

from typing import Any, Iterable

__all__ = ["register", "explain", "PUSHDOWN_CONF"]

#: Spark refuses a Python source that implements pushFilters unless this is on.
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Register ``format("skipidx")`` on `spark` and enable Python filter pushdown."""
    from skipidx.apps.spark.source import SkipidxDataSource

    spark.dataSource.register(SkipidxDataSource)
    spark.conf.set(PUSHDOWN_CONF, "true")


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
