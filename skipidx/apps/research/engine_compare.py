"""The bench's candidates through the public engine (``skipidx.connect``), as a cross-check.

One table ``ORDER BY tuple()`` (rows stay in file order, so granules are the
bench's) holds every candidate that has DDL; the column is inserted once with
`Database.insert` (timed: data + all indexes). Each query runs as ``SELECT
count() FROM t WHERE ...``; its ``stats.indexes`` give every index's own
``granules_after`` (the WHERE evaluated with only that index's answers), which
must equal the bench's kept count for the same candidate, and ``count()`` must
equal the bench's full-scan row count. Latency is the wall time of the whole
query with all indexes in play (``stats.granules_selected`` granules read).
"""
from __future__ import annotations

import time
from typing import Sequence

import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.apps.research.indexes import BenchResult


def run_engine(result: BenchResult, values: pa.ChunkedArray, *, names: Sequence[str] | None = None,
               show_progress: bool = True) -> dict:
    """Build the candidates (all with DDL, or those in `names`) in a temporary skipidx database and query."""
    import skipidx
    from skipidx.core.progress import Progress

    col = result.column
    cands = [r.candidate for r in result.candidates if r.candidate.has_ddl
             and (names is None or r.candidate.name in names)]
    if not cands:
        raise SkipidxError("no candidate with DDL to build in the engine")
    ddl = ",\n    ".join(c.ddl(col) for c in cands)
    out: dict = {"indexes": [{"name": c.name, "kept": []} for c in cands], "latency_ms": [],
                 "granules_selected": [], "count": [], "mismatches": []}
    with skipidx.connect() as db:
        db.sql(f"CREATE TABLE bench_t (\n    {col} String,\n    {ddl}\n) ENGINE = MergeTree ORDER BY tuple() "
               f"SETTINGS index_granularity = {result.index_granularity}")
        typ = pa.string() if not pa.types.is_large_string(values.type) else values.type
        data = pa.table({col: values.cast(typ) if values.type != typ else values})
        t0 = time.perf_counter()
        db.insert("bench_t", data)
        out["insert_s"] = time.perf_counter() - t0
        bar = Progress("engine queries", len(result.queries), unit="queries") if show_progress else None
        by_name = {r.candidate.name: r for r in result.candidates}
        for qi, info in enumerate(result.queries):
            t0 = time.perf_counter()
            res = db.sql(f"SELECT count() FROM bench_t WHERE {info.query.where}")
            out["latency_ms"].append((time.perf_counter() - t0) * 1000)
            st = res.stats
            count = int(res.fetchall()[0][0])
            out["count"].append(count)
            out["granules_selected"].append(int(st.granules_selected))
            if st.granules_total != result.granules:
                out["mismatches"].append(f"query {qi + 1}: engine has {st.granules_total} granules, "
                                         f"bench {result.granules}")
            if count != info.matching_rows:
                out["mismatches"].append(f"query {qi + 1}: engine count {count} != full scan {info.matching_rows}")
            for x, c in zip(out["indexes"], cands):
                kept = int(st.index(c.name).granules_after)
                x["kept"].append(kept)
                mine = by_name[c.name].queries[qi].kept
                if kept != mine:
                    out["mismatches"].append(f"query {qi + 1}, {c.name}: engine kept {kept}, bench {mine}")
            if bar:
                bar.update(qi + 1)
        if bar:
            bar.__exit__(None, None, None)
    out["agrees_with_bench"] = not out["mismatches"]
    return out
