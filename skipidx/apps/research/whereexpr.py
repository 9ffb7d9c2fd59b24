"""The bench's WHERE clauses, read by the engine: SQL parser -> binder -> bound tree.

The bench measures token indexes, so it takes the predicates a token index can
learn from (the catalogue's functions whose :class:`~skipidx.expr.catalogue.IndexHint`
names ``tokens``: ``hasToken``, ``LIKE``, ``=``, ``IN``, ``multiSearchAny``, ...),
each over a column and constants, combined with AND / OR / NOT. The text is
parsed by :func:`skipidx.sql.parse_expression` and bound by the engine's binder
(:func:`bind`), so the same text means the same thing in the engine, in
ClickHouse (chDB) and here; the planner builds its RPN from the bound tree and
the engine's evaluator answers it exactly (:func:`evaluate_exact`).

:class:`Atom` / :class:`And` / :class:`Or` / :class:`Not` are a read-only
summary of a bound clause (:func:`parse_where`), for listing atoms and columns;
nothing evaluates them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
import pyarrow as pa

from skipidx.core.errors import ParseError, SkipidxError
from skipidx.expr.binder import bind_where
from skipidx.expr.bound import BCall, BColumn, BConst, BExpr
from skipidx.expr.catalogue import CATALOGUE
from skipidx.sql import ast as A
from skipidx.sql.parser import parse_expression

#: What the bench can ask a token index: every function a token index learns from.
BENCH_FUNCTIONS = CATALOGUE.learning("tokens")


@dataclass(frozen=True)
class Atom:
    """``func(column, *args)``; args are bytes (a tuple of bytes for IN / multiSearchAny)."""

    func: str
    column: str
    args: tuple


@dataclass(frozen=True)
class And:
    items: tuple


@dataclass(frozen=True)
class Or:
    items: tuple


@dataclass(frozen=True)
class Not:
    item: object


Expr = Union[Atom, And, Or, Not]


def quote(value: bytes | str) -> str:
    """``value`` as a ClickHouse string literal (backslash and quote escaped)."""
    s = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


# --------------------------------------------------------------------------- the subset

def _operator_pos(text: str, node: A.BinaryOp) -> A.Pos:
    """Where the operator of `node` is written: the characters before its right operand."""
    lines = text.split("\n")
    line, col = node.right.pos
    s = lines[line - 1]
    end = col - 1
    while end > 0 and s[end - 1] in " \t\r":
        end -= 1
    start = end
    while start > 0 and s[start - 1] in "<>=!":
        start -= 1
    return A.Pos(line, start + 1)


def _unsupported(what: str, pos: A.Pos) -> ParseError:
    return ParseError(f"{what} is not supported by the bench (it asks token indexes: "
                      f"{', '.join(sorted(BENCH_FUNCTIONS))})", line=pos.line, column=pos.column)


def _constant(node: A.Expr) -> bool:
    if isinstance(node, A.Literal):
        return True
    if isinstance(node, (A.ArrayLiteral, A.TupleLiteral)):
        return all(_constant(i) for i in node.items)
    return False


def _check(node: A.Expr, text: str, columns: dict[str, None]) -> None:
    """Raise ParseError (with its place) unless `node` is in the bench's subset; collect its columns."""
    if isinstance(node, A.BoolOp):
        for a in node.args:
            _check(a, text, columns)
        return
    if isinstance(node, A.UnaryOp) and node.op == "not":
        _check(node.operand, text, columns)
        return
    if isinstance(node, A.FunctionCall):
        fn, subject, rest, pos = CATALOGUE.lookup(node.name), node.args[:1], node.args[1:], node.pos
        what = f"function {node.name!r}"
    elif isinstance(node, A.BinaryOp):
        fn, subject, rest, pos = CATALOGUE.operator(node.op), (node.left,), (node.right,), _operator_pos(text, node)
        what = f"operator {node.op!r}"
    elif isinstance(node, A.Like):
        op = ("NOT " if node.negated else "") + ("ILIKE" if node.case_insensitive else "LIKE")
        fn, subject, rest, pos, what = CATALOGUE.operator(op), (node.expr,), (node.pattern,), node.pos, op
    elif isinstance(node, A.InList):
        fn = CATALOGUE["notIn" if node.negated else "in"]
        subject, rest, pos, what = (node.expr,), node.items, node.pos, "IN"
    else:
        raise ParseError(f"expected a predicate, found {node.to_sql()!r}", line=node.pos.line, column=node.pos.column)
    if fn is None or fn.name not in BENCH_FUNCTIONS:
        raise _unsupported(what, pos)
    if not subject or not isinstance(subject[0], A.Column):
        at = subject[0].pos if subject else pos
        raise ParseError("the bench's predicates read a column as their first argument",
                         line=at.line, column=at.column)
    for r in rest:
        if not _constant(r):
            raise ParseError(f"expected a constant, found {r.to_sql()!r}", line=r.pos.line, column=r.pos.column)
    columns[subject[0].name] = None


class _Meta:
    """The table the binder sees: the clause's columns, each of one string type."""

    class _Col:
        def __init__(self, name: str, ctype) -> None:
            self.name, self.type = name, ctype

    def __init__(self, names, column_type: pa.DataType) -> None:
        from skipidx.core.types import parse_type

        ctype = parse_type("String")
        if not (pa.types.is_string(column_type) or pa.types.is_large_string(column_type)):
            ctype = _BinaryString(ctype, column_type)
        self.name = "bench"
        self.columns = [self._Col(n, ctype) for n in names]


class _BinaryString:
    """A String column whose Arrow values are binary (ClickHouse's String holds any bytes)."""

    def __init__(self, ctype, arrow_type: pa.DataType) -> None:
        self.name, self.nullable, self.arrow_type = ctype.name, ctype.nullable, arrow_type


def bind(text: str, column_type: pa.DataType = pa.string()) -> BExpr:
    """The WHERE clause `text` (without the word WHERE) bound as the engine binds it, over
    String columns of Arrow type `column_type`. ParseError with a place for text outside
    the subset; BindError for bad constants (a hasToken needle with a separator)."""
    if not isinstance(text, str):
        raise SkipidxError(f"WHERE clause must be text, got {type(text).__name__}")
    node = parse_expression(text)
    columns: dict[str, None] = {}
    _check(node, text, columns)
    bound = bind_where(_Meta(columns, column_type), node)
    assert bound is not None
    return bound


def summary(e: BExpr) -> Expr:
    """The bound clause as Atom / And / Or / Not."""
    if isinstance(e, BCall) and e.func in ("and", "or"):
        items = tuple(summary(a) for a in e.args)
        return And(items) if e.func == "and" else Or(items)
    if isinstance(e, BCall) and e.func == "not":
        return Not(summary(e.args[0]))
    if isinstance(e, BCall) and e.args and isinstance(e.args[0], BColumn) \
            and all(isinstance(a, BConst) for a in e.args[1:]):
        return Atom(e.func, e.args[0].name, tuple(a.value for a in e.args[1:]))
    raise SkipidxError(f"not a bench predicate: {getattr(e, 'text', e)!r}")


def parse_where(text: str) -> Expr:
    """Parse and bind a WHERE clause of the subset above; its summary tree (ParseError with a place)."""
    return summary(bind(text))


def atoms(e: Expr) -> list[Atom]:
    """Every atom of the tree, left to right."""
    if isinstance(e, Atom):
        return [e]
    if isinstance(e, Not):
        return atoms(e.item)
    return [a for it in e.items for a in atoms(it)]


def columns(e: Expr) -> set[str]:
    return {a.column for a in atoms(e)}


def evaluate_exact(e: BExpr | str, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Row mask (bool numpy) of the rows where the WHERE clause (bound, or its text) is true
    (NULL counts as false), by the engine's evaluator."""
    import pyarrow.compute as pc

    from skipidx.expr.evaluate import where_mask
    from skipidx.expr.visitors import columns_of

    if isinstance(e, str):
        e = bind(e, values.type)
    cols = sorted(columns_of(e)) or ["c"]
    m = where_mask(e, pa.table({c: values for c in cols}))
    if m is None:
        return np.ones(len(values), dtype=bool)
    if isinstance(m, pa.ChunkedArray):
        m = m.combine_chunks() if m.num_chunks else pa.array([], pa.bool_())
    return np.asarray(pc.fill_null(m, False).to_numpy(zero_copy_only=False), dtype=bool)
