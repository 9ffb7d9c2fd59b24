"""Bound expressions: what the binder produces and the planner/evaluator consume.

Every node carries its ClickHouse result type as an Arrow type plus a
nullability flag. Names are resolved, functions are canonical ClickHouse
names (``equals``, ``and``, ``hasToken``...), constants are cast to the type
they are compared with (strings as ``bytes``, IN lists as tuples), and a
comparison whose constant lies outside its column's range is already folded
(:class:`BFolded`), so nothing downstream needs to know the casting rules.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import pyarrow as pa


@dataclass(frozen=True)
class BColumn:
    name: str
    type: pa.DataType
    nullable: bool = False
    ch_type: str = ""              # the declared ClickHouse type name


@dataclass(frozen=True)
class BConst:
    """A constant. ``value`` is Python (bytes for String, tuple for IN lists / arrays, None for NULL)."""

    value: Any
    type: pa.DataType
    nullable: bool = False

    @property
    def is_null(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class BCall:
    """A scalar function: comparisons, logic (and/or/not), string functions, lower..."""

    func: str
    args: tuple["BExpr", ...]
    type: pa.DataType
    nullable: bool = False
    text: str = ""                 # as written, for EXPLAIN and error messages


@dataclass(frozen=True)
class BFolded:
    """A comparison the binder decided from types alone (e.g. ``UInt8 = 300`` is false).

    It is ``value`` for every row, except NULL where ``source`` (a Nullable
    column) is NULL: ClickHouse still evaluates ``NULL = 300`` to NULL.
    """

    value: bool
    source: BColumn | None
    text: str = ""
    type: pa.DataType = pa.uint8()

    @property
    def nullable(self) -> bool:
        return self.source is not None and self.source.nullable


@dataclass(frozen=True)
class BAgg:
    """An aggregate call in the SELECT list / HAVING / ORDER BY (``count()`` has arg None;
    ``count(DISTINCT x)`` is ``uniqExact`` with the text ``countDistinct(x)``)."""

    func: str                      # count, min, max, sum, avg, uniqExact
    arg: "BExpr | None"
    type: pa.DataType
    nullable: bool = False
    text: str = ""
    distinct: bool = False         # sum/avg over the distinct values of arg (ClickHouse's -Distinct)


BExpr = Union[BColumn, BConst, BCall, BFolded, BAgg]

#: Canonical names of the comparison functions and their mirror (for `5 < x`).
COMPARISONS = {
    "equals": "equals", "notEquals": "notEquals",
    "less": "greater", "greater": "less",
    "lessOrEquals": "greaterOrEquals", "greaterOrEquals": "lessOrEquals",
}
LOGICAL = ("and", "or", "not")


def columns_of(e: BExpr | None, out: set[str] | None = None) -> set[str]:
    """Names of all columns an expression reads."""
    out = set() if out is None else out
    if e is None:
        return out
    if isinstance(e, BColumn):
        out.add(e.name)
    elif isinstance(e, BCall):
        for a in e.args:
            columns_of(a, out)
    elif isinstance(e, BFolded):
        if e.source is not None:
            out.add(e.source.name)
    elif isinstance(e, BAgg):
        columns_of(e.arg, out)
    return out


def contains_agg(e: BExpr | None) -> bool:
    if isinstance(e, BAgg):
        return True
    if isinstance(e, BCall):
        return any(contains_agg(a) for a in e.args)
    return False


@dataclass(frozen=True)
class OutputItem:
    """One column of a SELECT's result: its name (alias or ClickHouse's text) and expression."""

    name: str
    expr: BExpr


@dataclass(frozen=True)
class OrderItem:
    expr: BExpr
    descending: bool = False
    nulls_first: bool = False      # ClickHouse's default is NULLS LAST in both directions


@dataclass
class BoundSelect:
    """A SELECT after binding: everything resolved and typed."""

    table: str
    items: list[OutputItem]
    where: BExpr | None = None
    group_by: list[BExpr] = None   # type: ignore[assignment]
    order_by: list[OrderItem] = None  # type: ignore[assignment]
    limit: int | None = None
    offset: int = 0
    aggregate: bool = False        # any aggregate or GROUP BY
    having: BExpr | None = None    # filter of the aggregated rows (set only when `aggregate`)
    distinct: bool = False         # SELECT DISTINCT: one row per distinct output tuple

    def __post_init__(self) -> None:
        if self.group_by is None:
            self.group_by = []
        if self.order_by is None:
            self.order_by = []

    def output_columns(self) -> set[str]:
        """Columns needed after the WHERE filter (by the select list, GROUP BY, HAVING and ORDER BY)."""
        out: set[str] = set()
        for it in self.items:
            columns_of(it.expr, out)
        for g in self.group_by:
            columns_of(g, out)
        columns_of(self.having, out)
        for o in self.order_by:
            columns_of(o.expr, out)
        return out
