"""Visitors over the bound tree (pyiceberg's ``expressions/visitors.py`` is the model).

:class:`BoundVisitor` is a post-order visitor: each ``visit_*`` method gets
the node and its children's results, so a new analysis is one small class
and never another hand-written ``isinstance`` walk. :func:`transform` is the
matching rewriter. The analyses the stages share live here too.
"""
from __future__ import annotations

import abc
import dataclasses
from typing import Callable, Generic, TypeVar

from skipidx.expr.bound import BAgg, BCall, BColumn, BConst, BExpr, BFolded

T = TypeVar("T")


class BoundVisitor(abc.ABC, Generic[T]):
    """Override the visit_* methods; :func:`visit` calls them bottom-up."""

    @abc.abstractmethod
    def visit_column(self, e: BColumn) -> T:
        ...

    @abc.abstractmethod
    def visit_const(self, e: BConst) -> T:
        ...

    @abc.abstractmethod
    def visit_call(self, e: BCall, args: list[T]) -> T:
        ...

    @abc.abstractmethod
    def visit_folded(self, e: BFolded, source: T | None) -> T:
        ...

    @abc.abstractmethod
    def visit_agg(self, e: BAgg, arg: T | None) -> T:
        ...


def visit(e: BExpr, v: BoundVisitor[T]) -> T:
    """`v` applied to `e` bottom-up."""
    if isinstance(e, BColumn):
        return v.visit_column(e)
    if isinstance(e, BConst):
        return v.visit_const(e)
    if isinstance(e, BCall):
        return v.visit_call(e, [visit(a, v) for a in e.args])
    if isinstance(e, BFolded):
        return v.visit_folded(e, None if e.source is None else visit(e.source, v))
    if isinstance(e, BAgg):
        return v.visit_agg(e, None if e.arg is None else visit(e.arg, v))
    raise TypeError(f"not a bound expression: {e!r}")


def transform(e: BExpr, fn: Callable[[BExpr], BExpr | None]) -> BExpr:
    """`e` rewritten top-down: where `fn(node)` returns an expression it replaces the
    node (not descended into); None keeps the node and rewrites its children."""
    r = fn(e)
    if r is not None:
        return r
    if isinstance(e, BCall):
        args = tuple(transform(a, fn) for a in e.args)
        return e if args == e.args else BCall(e.func, args, e.type, e.nullable, e.text)
    if isinstance(e, BAgg):
        arg, cond, by = (None if x is None else transform(x, fn) for x in (e.arg, e.cond, e.by))
        if arg is e.arg and cond is e.cond and by is e.by:
            return e
        return dataclasses.replace(e, arg=arg, cond=cond, by=by)
    return e


#: Bound lambda parameters are columns named with this prefix (of the arrays' elements,
#: never read from a table).
LAMBDA_PARAM_PREFIX = "\x00lambda:"


class _Columns(BoundVisitor[frozenset]):
    """Names of the columns an expression reads."""

    def visit_column(self, e: BColumn) -> frozenset:
        return frozenset() if e.name.startswith(LAMBDA_PARAM_PREFIX) else frozenset((e.name,))

    def visit_const(self, e: BConst) -> frozenset:
        return frozenset()

    def visit_call(self, e: BCall, args: list[frozenset]) -> frozenset:
        return frozenset().union(*args)

    def visit_folded(self, e: BFolded, source: frozenset | None) -> frozenset:
        return source or frozenset()

    def visit_agg(self, e: BAgg, arg: frozenset | None) -> frozenset:
        out = arg or frozenset()
        for x in (e.cond, e.by):       # the -If condition, argMin/argMax's compared value
            if x is not None:
                out = out | visit(x, self)
        return out


class _HasAgg(BoundVisitor[bool]):
    """Whether an aggregate call occurs (not looking inside BFolded)."""

    def visit_column(self, e: BColumn) -> bool:
        return False

    def visit_const(self, e: BConst) -> bool:
        return False

    def visit_call(self, e: BCall, args: list[bool]) -> bool:
        return any(args)

    def visit_folded(self, e: BFolded, source: bool | None) -> bool:
        return False

    def visit_agg(self, e: BAgg, arg: bool | None) -> bool:
        return True


_COLUMNS = _Columns()
_HAS_AGG = _HasAgg()


def all_column_names(e: BExpr | None, out: set[str] | None = None) -> set[str]:
    """Names of every column `e` refers to, lambda parameters included."""
    out = set() if out is None else out
    if isinstance(e, BColumn):
        out.add(e.name)
    elif isinstance(e, BCall):
        for a in e.args:
            all_column_names(a, out)
    elif isinstance(e, BFolded) and e.source is not None:
        out.add(e.source.name)
    elif isinstance(e, BAgg):
        for x in (e.arg, e.cond, e.by):
            all_column_names(x, out)
    return out


def columns_of(e: BExpr | None, out: set[str] | None = None) -> set[str]:
    """Names of all columns an expression reads (added to `out` when given)."""
    out = set() if out is None else out
    if e is not None:
        out.update(visit(e, _COLUMNS))
    return out


def contains_agg(e: BExpr | None) -> bool:
    return e is not None and visit(e, _HAS_AGG)


def source_column(e: BExpr) -> BColumn | None:
    """The first column (depth first) an expression reads, if any."""
    if isinstance(e, BColumn):
        return e
    if isinstance(e, BCall):
        for a in e.args:
            c = source_column(a)
            if c is not None:
                return c
    return None


def text_of(e: BExpr) -> str:
    """An expression as written (calls, folded comparisons, aggregates keep their text), else
    the column's name or the node kind."""
    if isinstance(e, (BCall, BFolded, BAgg)) and e.text:
        return e.text
    if isinstance(e, BColumn):
        return e.name
    return type(e).__name__
