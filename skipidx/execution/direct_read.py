"""Direct read: ``SELECT count() FROM t WHERE <token predicates>`` from an index's postings
alone, without reading the column (ClickHouse's ``ReadFromTextIndexCount``), and any other
SELECT with such a WHERE: the rows come from the postings, so only the columns the
SELECT outputs are read (:func:`direct_rows`).

It applies when the query aggregates nothing but ``count()`` (no GROUP BY, no
column anywhere but in the WHERE) and every atom of the WHERE has a condition
that knows its exact rows (``exact_rows``: the text index's whole-token and
whole-value atoms). Each part's WHERE is then evaluated over row sets with
SQL's three-valued logic: an atom's false rows are the rows without it, so a
NOT needs a part whose indexed column holds no NULL (else the query scans).
Anything missing -- a part without the index, a damaged file, an atom no
index answers exactly -- falls back to the scan, whose answer is the same.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from skipidx.core.errors import SkipidxError
from skipidx.execution.select import collect_aggs
from skipidx.planner.rpn import Op

#: ClickHouse's setting; SETTINGS query_plan_direct_read_from_text_index = 0 turns it off
SETTING = "query_plan_direct_read_from_text_index"


def _count_only(bs: Any) -> bool:
    if not bs.aggregate or bs.group_by or bs.distinct or bs.output_columns() or bs.where is None:
        return False
    aggs = collect_aggs(bs)
    return bool(aggs) and all(a.func == "count" and a.arg is None and a.cond is None for a in aggs)


def exact_sources(plan: Any, count_only: bool = True) -> dict[int, Any] | None:
    """atom id -> the IndexUse whose condition gives its exact rows; None when the
    query cannot be answered from the postings."""
    if count_only and not _count_only(plan.select):
        return None
    if plan.select.where is None:
        return None
    rpn = plan.rpn
    # only atoms and logic: a constant item may stand for a folded expression whose
    # NULL handling the scan applies (n = 1 OR n != 1 is TRUE in the RPN, not for NULL n)
    if not rpn.atoms or any(it.op not in (Op.ATOM, Op.NOT, Op.AND, Op.OR) for it in rpn.items):
        return None
    out: dict[int, Any] = {}
    for i in range(len(rpn.atoms)):
        for u in plan.uses:
            c = u.conditions.get(i)
            if u.loader is None and c is not None and c.exact:
                out[i] = u
                break
        else:
            return None
    return out


def direct_count(plan: Any, parts: list[Any]) -> tuple[int, list[str]] | None:
    """(count, names of the indexes read) of a count-only query from the postings, or
    None (scan instead)."""
    sources = exact_sources(plan)
    if sources is None:
        return None
    got = _where_rows(plan, parts, sources, count_only=True)
    if got is None:
        return None
    # a part's answer: a bool mask of its rows, or (one atom) the sorted rows themselves
    return (sum(int(np.count_nonzero(m)) if m.dtype == np.bool_ else int(m.shape[0]) for m in got),
            sorted({u.name for u in sources.values()}))


def direct_rows(plan: Any, parts: list[Any]) -> tuple[list[np.ndarray], list[str]] | None:
    """Per part, the bool mask of its rows where the WHERE is true, from the postings
    (None: the WHERE is not made of exactly answered atoms), and the indexes read."""
    sources = exact_sources(plan, count_only=False)
    if sources is None:
        return None
    got = _where_rows(plan, parts, sources)
    return None if got is None else (got, sorted({u.name for u in sources.values()}))


def _where_rows(plan: Any, parts: list[Any], sources: dict[int, Any],
                count_only: bool = False) -> list[np.ndarray] | None:
    rpn = plan.rpn
    has_not = any(it.op == Op.NOT for it in rpn.items)
    # counted atoms under AND/OR only: sorted row lists are combined, no per-row mask
    # (a mask per atom costs three passes over the part's rows whatever the atom's rows)
    as_rows = count_only and all(it.op in (Op.ATOM, Op.AND, Op.OR) for it in rpn.items)
    out: list[np.ndarray] = []
    for part in parts:
        n = int(part.num_rows)
        granules: dict[str, Any] = {}
        for u in {u.name: u for u in sources.values()}.values():
            if not part.has_index(u.name):
                return None
            try:
                granules[u.name] = (plan.cache.load(part, u.name) if plan.cache is not None
                                    else part.load_index(u.name))
            except SkipidxError:
                return None
            if has_not and int(np.asarray(granules[u.name].null_count).sum()):
                return None
        stack: list[tuple[np.ndarray, np.ndarray]] = []
        for it in rpn.items:
            if it.op == Op.ATOM:
                u = sources[it.atom]
                rows = u.conditions[it.atom].exact_rows(granules[u.name])
                if rows is None:
                    return None
                if as_rows:
                    stack.append((rows, rows))
                    continue
                t = np.zeros(n, dtype=bool)
                t[rows] = True
                stack.append((t, ~t if has_not else t))
            elif it.op in (Op.TRUE, Op.FALSE):
                v = it.op == Op.TRUE
                stack.append((np.full(n, v), np.full(n, not v)))
            elif it.op == Op.NULL:
                stack.append((np.zeros(n, bool), np.zeros(n, bool)))
            elif it.op == Op.NOT:
                t, f = stack.pop()
                stack.append((f, t))
            elif as_rows:
                a = stack.pop()[0]
                b = stack.pop()[0]
                r = _and_rows(a, b) if it.op == Op.AND else _or_rows(a, b, n)
                stack.append((r, r))
            elif it.op in (Op.AND, Op.OR):
                t2, f2 = stack.pop()
                t1, f1 = stack.pop()
                # without NOT the false side is never read: not computed
                if it.op == Op.AND:
                    stack.append((t1 & t2, f1 | f2 if has_not else t1))
                else:
                    stack.append((t1 | t2, f1 & f2 if has_not else t1))
            else:
                return None
        if len(stack) != 1:
            return None
        out.append(stack[0][0])
    return out


def _and_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sorted distinct rows in both: the shorter list's rows looked up in the longer."""
    if a.shape[0] > b.shape[0]:
        a, b = b, a
    i = np.searchsorted(b, a)
    hit = i < b.shape[0]
    hit[hit] = b[i[hit]] == a[hit]
    return a[hit]


def _or_rows(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Sorted distinct rows in either (through a mask of the part's rows when they are many)."""
    if a.shape[0] + b.shape[0] < n // 16:
        return np.union1d(a, b)
    m = np.zeros(n, dtype=bool)
    m[a] = True
    m[b] = True
    return np.flatnonzero(m)


#: Above this many kept ranges the rows come from the ordinary scan (one read per range here).
MAX_DIRECT_RANGES = 256


def too_many_ranges(selections: list[Any]) -> bool:
    """The kept ranges are too many for the direct read (the scan reads them instead)."""
    return sum(len(s.ranges) for s in selections) > MAX_DIRECT_RANGES


def direct_scan(plan: Any, selections: list[Any], stats: Any, columns: list[str]):
    """The rows of a SELECT whose WHERE the postings answer: only `columns` (those the
    SELECT outputs) are read, range by range, and filtered by the postings' row masks.
    None when the postings cannot answer it (the caller scans as usual)."""
    if too_many_ranges(selections):
        return None
    got = direct_rows(plan, [s.part for s in selections])
    if got is None:
        return None
    masks, names = got
    import pyarrow as pa

    from skipidx.execution.scan import scan
    from skipidx.planner.prune import PartSelection

    def chunks():
        for sel, mask in zip(selections, masks):
            marks = sel.part.marks
            for g0, g1 in sel.ranges:
                r0, r1 = int(marks[g0]), int(marks[g1])
                m = mask[r0:r1]
                if not m.any():
                    continue
                off = 0
                for t in scan([PartSelection(sel.part, sel.kept, [(g0, g1)])], columns, None, stats, keep=columns):
                    piece = m[off:off + t.num_rows]
                    off += t.num_rows
                    stats.rows_matched -= t.num_rows - int(np.count_nonzero(piece))
                    yield t.filter(pa.array(piece))

    return chunks(), names


def where_indexes(plan: Any, selections: list[Any] | None = None) -> list[str] | None:
    """Names of the indexes whose postings answer the WHERE exactly (None: they cannot, or
    the pruning kept too many ranges for :func:`direct_scan`), for EXPLAIN."""
    if selections is not None and too_many_ranges(selections):
        return None
    src = exact_sources(plan, count_only=False)
    return None if src is None else sorted({u.name for u in src.values()})


def row_filter_rows(plan: Any, selections: list[Any]) -> tuple[list[np.ndarray], list[str]] | None:
    """For a WHERE that is scanned (direct read off, or not applicable to this SELECT):
    per selection its part's rows where the WHERE is true, from the postings (a bool mask
    of the part's rows, or their sorted row numbers), so the scan reads its columns but evaluates nothing per row; None when
    the postings cannot answer it, ``text_index_row_filter = 0``, or a PREWHERE other
    than the WHERE itself decides the first read."""
    if not plan.row_filter or not selections or plan.snapshot.kind == "external":
        return None
    if plan.prewhere_explicit or (plan.prewhere is not None and plan.prewhere is not plan.select.where):
        return None
    sources = exact_sources(plan, count_only=False)
    if sources is None:
        return None
    # atoms under AND/OR: sorted row lists (no mask of the part's rows per atom; the scan
    # marks the rows of each batch it reads)
    got = _where_rows(plan, [s.part for s in selections], sources, count_only=True)
    return None if got is None else (got, sorted({u.name for u in sources.values()}))


def row_filter_indexes(plan: Any, selections: list[Any] | None = None) -> list[str] | None:
    """EXPLAIN: the indexes whose postings would give a scanned WHERE's rows (None: evaluated per row);
    with the pruning's `selections`, exactly as :func:`row_filter_rows` decides for them."""
    if selections is not None:
        got = row_filter_rows(plan, selections)
        return None if got is None else got[1]
    if not plan.row_filter or plan.snapshot.kind == "external":
        return None
    if plan.prewhere_explicit or (plan.prewhere is not None and plan.prewhere is not plan.select.where):
        return None
    # the postings decide (a NOT over a column holding NULLs, a part without the index: evaluated)
    got = direct_rows(plan, list(plan.snapshot.parts))
    return None if got is None else got[1]
