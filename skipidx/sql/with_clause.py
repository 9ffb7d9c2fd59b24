"""ClickHouse's ``WITH`` as a rewrite of the parsed statement, before anything binds it.

* ``WITH name AS (SELECT ...)`` (a common table expression): every ``FROM name`` in
  the query -- its subqueries and later common table expressions included -- becomes
  the derived table ``FROM (SELECT ...) AS name``; the item leaves the WITH list.
  Inside its own body a name means what it meant before it (an earlier CTE or a table).
* ``WITH expr AS name``: stays on its SELECT (the binder takes it as an alias that is
  not output) and is copied onto every nested SELECT that does not define that name
  itself, as ClickHouse's WITH aliases are visible in subqueries.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from skipidx.core.errors import BindError
from skipidx.sql import ast as A

__all__ = ["inline_with", "has_with"]


def has_with(node: Any) -> bool:
    """Whether a WITH clause stands anywhere in `node`."""
    if isinstance(node, (A.Literal, A.Column)):
        return False
    if isinstance(node, A.Select) and node.with_:
        return True
    if isinstance(node, tuple):
        return any(has_with(x) for x in node if isinstance(x, (A.Node, tuple)))
    if isinstance(node, A.Node):
        return any(has_with(getattr(node, f)) for f in A.node_fields(type(node)))
    return False


def inline_with(stmt: A.Statement, table_exists: Callable[[str], bool] | None = None) -> A.Statement:
    """`stmt` with its common table expressions inlined and its WITH aliases visible in
    its subqueries (unchanged, the same object, when it has no WITH). `table_exists`: a
    table name that is neither a table nor a WITH name but close to one is an error that
    suggests it."""
    if not has_with(stmt):
        return stmt
    return _walk(stmt, {}, (), table_exists)


def _walk(node: Any, ctes: dict[str, A.Statement], aliases: tuple[A.WithItem, ...], exists: Any) -> Any:
    if isinstance(node, (A.Literal, A.Column)):
        return node
    if isinstance(node, tuple):
        items = tuple(_walk(x, ctes, aliases, exists) for x in node)
        return node if all(a is b for a, b in zip(items, node)) else items
    if isinstance(node, A.Select):
        return _select(node, ctes, aliases, exists)
    if isinstance(node, A.Node) and dataclasses.is_dataclass(node):
        changes = {}
        for f in A.node_fields(type(node)):
            v = getattr(node, f)
            if isinstance(v, (A.Node, tuple)):
                nv = _walk(v, ctes, aliases, exists)
                if nv is not v:
                    changes[f] = nv
        return dataclasses.replace(node, **changes) if changes else node
    return node


def _check_name(t: A.TableRef, ctes: dict[str, A.Statement], exists: Any) -> None:
    if exists is None or not ctes or exists(t.name):
        return
    from skipidx.core.hints import did_you_mean

    hint = did_you_mean(t.name, list(ctes))
    if hint:
        pos = t.pos
        raise BindError(f"unknown table {t.name!r}{hint} (a WITH name)", line=pos.line or None,
                        column=pos.column or None)


def _select(s: A.Select, ctes: dict[str, A.Statement], aliases: tuple[A.WithItem, ...], exists: Any) -> A.Select:
    own = {w.name for w in s.with_} | {i.alias for i in s.items if i.alias is not None}
    visible: list[A.WithItem] = [w for w in aliases if w.name not in own]
    local = dict(ctes)
    for w in s.with_:
        if w.query is not None:
            local[w.name] = _walk(w.query, local, tuple(visible), exists)
        else:
            visible.append(dataclasses.replace(w, expr=_walk(w.expr, local, tuple(visible), exists)))
    scope = tuple(visible)
    changes: dict[str, Any] = {"with_": scope}
    for f in A.node_fields(A.Select):
        if f == "with_":
            continue
        v = getattr(s, f)
        if isinstance(v, (A.Node, tuple)) and f != "table":
            nv = _walk(v, local, scope, exists)
            if nv is not v:
                changes[f] = nv
    t = s.table
    if t is not None and t.param is None and t.database is None:
        if t.name in local:
            changes["table"] = None
            changes["table_alias"] = None
            changes["subquery"] = A.Subquery(local[t.name], s.table_alias or t.name, pos=t.pos)
        else:
            _check_name(t, local, exists)
    return dataclasses.replace(s, **changes)
