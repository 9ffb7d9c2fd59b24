"""EXPLAIN of a SELECT whose FROM is a table function (``numbers(3)``, ``values(...)``,
``file(...)``) or a derived table (``FROM (SELECT ...)``).

The query is bound against the source's columns (so a wrong column is the same error
as when it runs), then the plan is printed in the shape of skipidx's other EXPLAINs:
``Expression``, the ``Filter``, the read step under ClickHouse's step name
(``ReadFromSystemNumbers``, ``ReadFromStorage``, ``ReadFromFile``), the columns
read. A derived table is a ``ReadFromSubquery`` step with the inner query's plan under it
(ClickHouse merges the two plans into one; here the inner one is kept whole). Nothing is
pruned: these sources have no indexes. numbers() is not materialized for its EXPLAIN;
file() and values() are read for their columns' types.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from skipidx.core.errors import BindError
from skipidx.sql import ast as A

__all__ = ["explain_source_lines", "explain_union_lines"]

_STEPS = {"numbers": "ReadFromSystemNumbers", "values": "ReadFromStorage", "file": "ReadFromFile"}


def _source_meta(db: Any, q: A.Select, indexes: bool) -> tuple[Any, list[str], str]:
    """(columns of q's FROM as a TableMeta or None, the read step's lines, its title)."""
    from skipidx.engine.system_tables import is_system, local_ref, system_meta

    if q.table_function is not None:
        from skipidx.engine.table_functions import table_function_meta

        tf = q.table_function
        step = _STEPS.get(tf.name.lower(), "ReadFromStorage")
        call = f"{tf.name}({', '.join(a.to_sql() for a in tf.args)})"
        return table_function_meta(tf), [], f"{step} ({call})"
    if q.subquery is not None:
        sub = q.subquery
        if isinstance(sub.query, A.Union):
            inner_lines, (names, types) = _union_lines(db, sub.query, indexes)
            return _columns_meta(sub, names, types), inner_lines, f"ReadFromSubquery ({sub.alias or '_subquery'})"
        if not isinstance(sub.query, A.Select):
            pos = sub.pos
            raise BindError("EXPLAIN of FROM (EXPLAIN ...) is not supported",
                            line=pos.line or None, column=pos.column or None)
        inner_lines, inner_bs = _plan_lines(db, sub.query, indexes)
        return _derived_meta(sub, inner_bs), inner_lines, f"ReadFromSubquery ({sub.alias or '_subquery'})"
    if q.table is None:
        return None, [], ""
    ref = local_ref(q.table)
    if is_system(ref):
        return system_meta(ref.name), [], ""
    with db._table(ref).snapshot() as snap:
        return snap.meta, [], ""


def _bound_columns(bs: Any) -> tuple[list[str], list[str]]:
    """(output names, ClickHouse types) of a bound SELECT."""
    from skipidx.engine.formats import ch_type_name

    types = []
    for it in bs.items:
        e = it.expr
        types.append(getattr(e, "ch_type", "") or ch_type_name(e.type, bool(getattr(e, "nullable", False))))
    return [it.name for it in bs.items], types


def _union_lines(db: Any, u: A.Union, indexes: bool) -> tuple[list[str], tuple[list[str], list[str]]]:
    """(EXPLAIN lines, (names, ClickHouse types)) of a UNION: each query's plan under ``Union``."""
    from skipidx.engine.union import union_columns

    lines = ["Union" + (" (DISTINCT)" if u.distinct else "")]
    parts = []
    for q in u.queries:
        if isinstance(q, A.Union):
            inner, cols = _union_lines(db, q, indexes)
        else:
            inner, bs = _plan_lines(db, q, indexes)
            cols = _bound_columns(bs)
        lines.extend("  " + x for x in inner)
        parts.append(cols)
    return lines, union_columns(u, parts)


def explain_union_lines(db: Any, u: A.Union, indexes: bool) -> list[str]:
    """EXPLAIN lines of a UNION ALL / UNION DISTINCT."""
    return _union_lines(db, u, indexes)[0]


def _columns_meta(sub: A.Subquery, names: list[str], types: list[str]) -> Any:
    from skipidx.core.types import parse_type
    from skipidx.store.metadata import ColumnMeta, TableMeta

    if len(set(names)) != len(names):
        pos = sub.pos
        raise BindError("a derived table needs distinct column names (give the repeated one an alias)",
                        line=pos.line or None, column=pos.column or None)
    return TableMeta(name=sub.alias or "_subquery", columns=[ColumnMeta(n, parse_type(t)) for n, t in zip(names, types)])


def _derived_meta(sub: A.Subquery, bs: Any) -> Any:
    """The derived table's columns: the inner SELECT's output names and ClickHouse types."""
    from skipidx.core.types import parse_type
    from skipidx.store.metadata import ColumnMeta, TableMeta

    cols = [ColumnMeta(n, parse_type(t)) for n, t in zip(*_bound_columns(bs))]
    if len({c.name for c in cols}) != len(cols):
        pos = sub.pos
        raise BindError("a derived table needs distinct column names (give the repeated one an alias)",
                        line=pos.line or None, column=pos.column or None)
    return TableMeta(name=sub.alias or "_subquery", columns=cols)


def _plan_lines(db: Any, q: A.Select, indexes: bool) -> tuple[list[str], Any]:
    """(EXPLAIN lines, bound select) of SELECT `q` over any source."""
    from skipidx.engine.statements import _with_prewhere
    from skipidx.expr.binder import bind_select
    from skipidx.expr.visitors import columns_of

    q = _with_prewhere(q)
    if q.limit_by is not None:
        # LIMIT BY (and the LIMIT after it) on top of the query without them (engine/limit_by.py)
        from skipidx.engine.limit_by import limit_by_query

        lb = q.limit_by
        run, positions = limit_by_query(q)      # the query that runs: the keys as hidden columns
        lines, bs = _plan_lines(db, run, indexes)
        hidden = sum(p is None for p in positions)
        bs = dataclasses.replace(bs, items=bs.items[:len(bs.items) - hidden])
        top = [f"LimitBy {lb.limit}" + (f" offset {lb.offset}" if lb.offset else "")
               + f" by {', '.join(e.to_sql() for e in lb.exprs)}"]
        if q.limit is not None:
            top.insert(0, f"Limit {q.limit}" + (f" offset {q.offset}" if q.offset else ""))
        return top + lines, bs
    if q.table_function is None and q.subquery is None:
        # a table, a system table or no FROM: the database's own EXPLAIN
        from skipidx.engine.system_tables import is_system, local_ref, system_meta

        res = db._explain(A.Explain(select=q, indexes=indexes))
        lines = [str(x) for x in res.to_arrow().column("explain").to_pylist()]
        if q.table is None:
            bs = bind_select(None, q)
        else:
            ref = local_ref(q.table)
            meta = system_meta(ref.name) if is_system(ref) else _table_meta(db, ref)
            bs = bind_select(meta, dataclasses.replace(q, table=None) if is_system(ref) else q)
        return lines, bs
    meta, inner, title = _source_meta(db, q, indexes)
    bs = bind_select(meta, dataclasses.replace(q, table_function=None, subquery=None))
    lines = ["Expression"]
    if q.where is not None:
        lines.append(f"  Filter: {q.where.to_sql()}")
    lines.append(f"  {title}")
    needed = bs.output_columns()
    columns_of(bs.where, needed)
    cols = [c.name for c in meta.columns if c.name in needed]
    if cols:
        lines.append(f"    Columns: {', '.join(cols)}")
    lines.extend("    " + x for x in inner)
    return lines, bs


def _table_meta(db: Any, ref: A.TableRef) -> Any:
    with db._table(ref).snapshot() as snap:
        return snap.meta


def explain_source_lines(db: Any, q: A.Select, indexes: bool) -> list[str]:
    """EXPLAIN lines of a SELECT over a table function or a derived table."""
    return _plan_lines(db, q, indexes)[0]
