"""A SELECT after binding: output items, WHERE, GROUP BY, HAVING, ORDER BY, LIMIT."""
from __future__ import annotations

from skipidx.core.dataclass_codes import dataclass

from skipidx.expr.bound import BExpr
from skipidx.expr.visitors import columns_of


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
    per_query: bool = False        # holds a value folded for this query only (now()): never reused

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
