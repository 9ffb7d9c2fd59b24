"""Direct read: ``SELECT count() FROM t WHERE <token predicates>`` from an index's postings
alone, without reading the column (ClickHouse's ``ReadFromTextIndexCount``).

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
    return bool(aggs) and all(a.func == "count" and a.arg is None for a in aggs)


def exact_sources(plan: Any) -> dict[int, Any] | None:
    """atom id -> the IndexUse whose condition gives its exact rows; None when the
    query cannot be answered from the postings."""
    if not _count_only(plan.select):
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
            if u.loader is None and c is not None and getattr(c, "exact", False) and hasattr(c, "exact_rows"):
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
    rpn = plan.rpn
    has_not = any(it.op == Op.NOT for it in rpn.items)
    total = 0
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
                t = np.zeros(n, dtype=bool)
                t[rows] = True
                stack.append((t, ~t))
            elif it.op in (Op.TRUE, Op.FALSE):
                v = it.op == Op.TRUE
                stack.append((np.full(n, v), np.full(n, not v)))
            elif it.op == Op.NULL:
                stack.append((np.zeros(n, bool), np.zeros(n, bool)))
            elif it.op == Op.NOT:
                t, f = stack.pop()
                stack.append((f, t))
            elif it.op in (Op.AND, Op.OR):
                t2, f2 = stack.pop()
                t1, f1 = stack.pop()
                if it.op == Op.AND:
                    stack.append((t1 & t2, f1 | f2))
                else:
                    stack.append((t1 | t2, f1 & f2))
            else:
                return None
        if len(stack) != 1:
            return None
        total += int(np.count_nonzero(stack[0][0]))
    return total, sorted({u.name for u in sources.values()})
