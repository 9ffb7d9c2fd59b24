"""External tables on Spark: sidecar builds as Spark tasks, and scans of external tables.

* :func:`spark_builder` runs the build jobs of a REFRESH (one per data file)
  as one Spark job, a task per file. Each task writes its sidecars into the
  refresh's staging directory and returns their entries; the driver commits
  them all in one state change after the job succeeded, or none (a failed
  task fails the job, and the staging directory is removed). The table
  directory must be on a file system every executor sees (as for writes).
* :func:`plan_external_scan` / :func:`read_external_slices`: the ``skipidx``
  data source on an external table's directory prunes with the same
  pipeline as the embedded engine (sidecars, footer min/max, the files' own
  Bloom filters, partitions) and reads only the kept row groups; a task
  re-checks each file's identity and fails ("run the query again") if the
  file changed since planning.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError

__all__ = ["spark_builder", "plan_external_scan", "read_external_slices"]


def _run_job(d: dict) -> dict:
    from skipidx.store.external import BuildJob, run_build_job

    return run_build_job(BuildJob(**d))


def _run_jobs(ds: Iterator[dict]) -> Iterator[dict]:
    for d in ds:
        yield _run_job(d)


def _task_groups(jobs: list, slots: int) -> list[list]:
    """Jobs dealt into about two tasks per task slot, largest files first (longest
    processing time first), so the slots finish together with few task launches."""
    n = max(1, min(len(jobs), 2 * max(1, slots)))
    groups: list[list] = [[] for _ in range(n)]
    load = [0] * n
    for j in sorted(jobs, key=lambda j: -int(j.identity.get("size", 0))):
        k = load.index(min(load))
        groups[k].append(j)
        load[k] += int(j.identity.get("size", 0)) or 1
    return [g for g in groups if g]


def spark_builder(spark: Any) -> Callable[[list], list[dict]]:
    """A REFRESH builder that runs the build jobs (one per data file) as Spark tasks, about
    two per task slot. A task builds its files one after the other with
    ``spark.task.cpus`` threads: Spark already runs a task on every core, and more threads
    per build only contend for them."""
    def run(jobs: list) -> list[dict]:
        if not jobs:
            return []
        sc = spark.sparkContext
        cpus = int(sc.getConf().get("spark.task.cpus", "1") or 1)
        groups = _task_groups(jobs, sc.defaultParallelism // max(1, cpus))
        flat = [{**asdict(j), "threads": cpus} for g in groups for j in g]
        # one partition per group: the slices of `flat` follow the group sizes
        bounds = np.cumsum([0] + [len(g) for g in groups])
        rdd = sc.parallelize(range(len(groups)), len(groups)).flatMap(
            lambda i, _f=flat, _b=bounds.tolist(): _f[_b[i]:_b[i + 1]])
        return rdd.mapPartitions(_run_jobs).collect()
    return run


def plan_external_scan(table_dir: str, where: Any, cache: Any = None):
    """Prune an external table's files with `where` (unbound AST, None: all): a
    :class:`skipidx.apps.spark._plan.ScanPlan` whose slices name data files (``part``),
    their identity key (``manifest_hash``) and the kept row groups (``ranges``)."""
    from skipidx.apps.spark._plan import ScanPlan, TaskSlice
    from skipidx.expr.binder import bind_where
    from skipidx.expr.select import BoundSelect
    from skipidx.planner.plan import plan_query, prune_plan
    from skipidx.planner.stats import QueryStats
    from skipidx.store.external import ExternalTable

    t = ExternalTable(table_dir)
    with t.snapshot() as snap:
        meta = snap.meta
        bound = bind_where(meta, where) if where is not None else None
        plan = plan_query(snap, BoundSelect(meta.name, [], bound), cache)
        qs = QueryStats(table=meta.name)
        sels = prune_plan(plan, qs)
        slices = []
        rows = 0
        for sel in sels:
            f = sel.part
            marks = np.asarray(f.marks, dtype=np.int64)
            rows += int(sum(int(marks[b] - marks[a]) for a, b in sel.ranges))
            slices.append(TaskSlice(f.data_path, f.num_rows, f.identity.key, tuple(sel.ranges)))
        stats = qs.as_dict()
        stats["rows_selected"] = rows
        stats["where"] = where.to_sql() if where is not None else None
        return ScanPlan(snap.state.version, slices, meta.to_json(), stats)


def read_external_slices(reader: Any, slices: list) -> Iterator[pa.RecordBatch]:
    """The rows of the planned row groups passing the reader's exact filter."""
    from skipidx.apps.spark.arrow_types import spark_arrow_schema, to_spark
    from skipidx.apps.spark.filters import exact_filter
    from skipidx.execution.scan import read_filter_first, row_mask, split_ranges
    from skipidx.store.external import ExternalTable

    meta = reader._meta()
    schema = spark_arrow_schema(meta)
    bound, first, rest = exact_filter(meta, reader.pushed if reader.prefilter else [], reader.where or None)
    t = ExternalTable(reader.table_dir)
    with t.snapshot(only=[sl.part for sl in slices]) as snap:
        files = {f.data_path: f for f in snap.parts}
        for sl in slices:
            f = files.get(sl.part)
            if f is None or f.identity.key != sl.manifest_hash:
                raise SkipidxError(f"data file {sl.part} changed or vanished after the scan was planned; "
                                   "run the query again")
            for batch in split_ranges(list(sl.ranges), reader.read_granules):
                if bound is None:
                    tab = f.read(meta.column_names, batch)
                elif first and rest:
                    tab = read_filter_first(f, batch, bound, first, rest, meta.column_names)
                else:
                    tab = f.read(meta.column_names, batch)
                    m = row_mask(bound, tab)
                    tab = tab if m is None else tab.filter(pa.array(m, type=pa.bool_()))
                if tab is not None and tab.num_rows:
                    yield from to_spark(tab, schema).to_batches()
