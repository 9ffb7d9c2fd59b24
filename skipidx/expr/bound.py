"""Bound expressions: what the binder produces and the planner/evaluator consume.

Every node carries its ClickHouse result type as an Arrow type plus a
nullability flag. Names are resolved, functions are canonical ClickHouse
names (``equals``, ``and``, ``hasToken``...), constants are cast to the type
they are compared with (strings as ``bytes``, IN lists as tuples), and a
comparison whose constant lies outside its column's range is already folded
(:class:`BFolded`), so nothing downstream needs to know the casting rules.
"""
from __future__ import annotations

from skipidx.core.dataclass_codes import dataclass
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
    cond: "BExpr | None" = None    # the -If combinator's condition (rows where it is not true are skipped)
    by: "BExpr | None" = None      # argMin/argMax: the value compared
    params: tuple = ()             # parametric aggregates: quantile(0.9)(x) has (0.9,)


BExpr = Union[BColumn, BConst, BCall, BFolded, BAgg]

#: Canonical names of the comparison functions and their mirror (for `5 < x`).
COMPARISONS = {
    "equals": "equals", "notEquals": "notEquals",
    "less": "greater", "greater": "less",
    "lessOrEquals": "greaterOrEquals", "greaterOrEquals": "lessOrEquals",
}
LOGICAL = ("and", "or", "not")
