"""A small parser for the WHERE clauses the bench runs, and their exact evaluation.

The bench measures indexes straight on tokenizers and SBBF banks (no table,
no engine), so it needs the WHERE clause as a tree of atoms it can hand to a
tokenizer's ``requirement(func, args)``. The accepted subset is the
predicate part of the skipidx/ClickHouse dialect over one string column::

    expr    := or
    or      := and ('OR' and)*
    and     := not ('AND' not)*
    not     := 'NOT' not | '(' expr ')' | atom
    atom    := FUNC '(' col ',' const ')'            hasToken, hasTokenOrNull,
                                                      hasTokenCaseInsensitive,
                                                      startsWith, endsWith,
                                                      multiSearchAny (array const), match
             | col ['NOT'] 'LIKE' string
             | col ('=' | '==' | '!=' | '<>') string
             | col ['NOT'] 'IN' '(' string, ... ')'

The same text runs unchanged in ClickHouse (chDB) and in the skipidx engine.
Exact evaluation (the "ideal": granules that truly hold a match) is the
engine's evaluator over the equivalent bound tree (:func:`to_bound`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

import numpy as np
import pyarrow as pa

from skipidx.core.errors import ParseError, SkipidxError
from skipidx.expr.bound import BCall, BColumn, BConst, BExpr
from skipidx.expr.catalogue import CATALOGUE

_FUNCS = {
    "hastoken": "hasToken",
    "hastokenornull": "hasTokenOrNull",
    "hastokencaseinsensitive": "hasTokenCaseInsensitive",
    "startswith": "startsWith",
    "endswith": "endsWith",
    "multisearchany": "multiSearchAny",
    "match": "match",
    "like": "like",
    "notlike": "notLike",
}


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

_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>'(?:[^'\\]|\\.|'')*')
  | (?P<num>-?\d+(?:\.\d+)?)
  | (?P<op>==|!=|<>|=|\(|\)|\[|\]|,)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)
""", re.VERBOSE | re.DOTALL)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", "b": "\b", "f": "\f",
            "a": "\a", "v": "\v"}


def _unquote(lit: str) -> bytes:
    """A ClickHouse string literal to bytes: backslash escapes, ``\\xNN`` raw bytes, ``''``.

    ``\\%`` and ``\\_`` keep their backslash: they are LIKE escapes, which the
    pattern (not the literal) interprets, as in ClickHouse.
    """
    body = lit[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n in ("%", "_"):
                out += b"\\" + n.encode()
            elif n == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", body[i + 2:i + 4]):
                out.append(int(body[i + 2:i + 4], 16))
                i += 4
                continue
            else:
                out += _ESCAPES.get(n, n).encode("utf-8")
            i += 2
            continue
        if c == "'" and i + 1 < len(body) and body[i + 1] == "'":
            out += b"'"
            i += 2
            continue
        out += c.encode("utf-8")
        i += 1
    return bytes(out)


def quote(value: bytes | str) -> str:
    """``value`` as a ClickHouse string literal (backslash and quote escaped)."""
    s = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN_RE.match(text, pos)
            if not m:
                raise self._err(f"unexpected character {text[pos]!r}", pos)
            kind = m.lastgroup
            if kind != "ws":
                self.toks.append((kind, m.group(), pos))
            pos = m.end()
        self.i = 0

    def _err(self, msg: str, pos: int) -> ParseError:
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return ParseError(msg, line=line, column=col)

    def peek(self, k: int = 0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ("eof", "", len(self.text))

    def kw(self, word: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t[0] == "ident" and t[1].upper() == word

    def take(self, kind: str, value: str | None = None):
        t = self.peek()
        if t[0] != kind or (value is not None and t[1] != value):
            want = value or kind
            raise self._err(f"expected {want!r}, found {t[1] or 'end of input'!r}", t[2])
        self.i += 1
        return t

    def parse(self) -> Expr:
        if not self.toks:
            raise self._err("empty WHERE clause", 0)
        e = self.expr()
        t = self.peek()
        if t[0] != "eof":
            raise self._err(f"unexpected {t[1]!r}", t[2])
        return e

    def expr(self) -> Expr:
        items = [self.and_()]
        while self.kw("OR"):
            self.i += 1
            items.append(self.and_())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def and_(self) -> Expr:
        items = [self.not_()]
        while self.kw("AND"):
            self.i += 1
            items.append(self.not_())
        return items[0] if len(items) == 1 else And(tuple(items))

    def not_(self) -> Expr:
        if self.kw("NOT"):
            self.i += 1
            return Not(self.not_())
        if self.peek()[0] == "op" and self.peek()[1] == "(":
            self.i += 1
            e = self.expr()
            self.take("op", ")")
            return e
        return self.atom()

    def _col(self) -> str:
        t = self.take("ident")
        return t[1].strip("`")

    def _string(self) -> bytes:
        t = self.peek()
        if t[0] != "str":
            raise self._err(f"expected a string literal, found {t[1] or 'end of input'!r}", t[2])
        self.i += 1
        return _unquote(t[1])

    def _string_list(self, open_: str, close: str) -> tuple:
        self.take("op", open_)
        vals = [self._string()]
        while self.peek()[1] == ",":
            self.i += 1
            vals.append(self._string())
        self.take("op", close)
        return tuple(vals)

    def atom(self) -> Expr:
        t = self.peek()
        if t[0] != "ident":
            raise self._err(f"expected a predicate, found {t[1] or 'end of input'!r}", t[2])
        nxt = self.peek(1)
        if nxt[0] == "op" and nxt[1] == "(":
            name = _FUNCS.get(t[1].lower())
            if name is None:
                raise self._err(f"function {t[1]!r} is not supported by the bench", t[2])
            self.i += 2
            col = self._col()
            self.take("op", ",")
            if name == "multiSearchAny":
                args: tuple = (self._string_list("[", "]"),)
            else:
                args = (self._string(),)
            self.take("op", ")")
            return Atom(name, col, args)
        col = self._col()
        if self.kw("NOT") and self.kw("LIKE", 1):
            self.i += 2
            return Atom("notLike", col, (self._string(),))
        if self.kw("LIKE"):
            self.i += 1
            return Atom("like", col, (self._string(),))
        if self.kw("NOT") and self.kw("IN", 1):
            self.i += 2
            return Atom("notIn", col, (self._string_list("(", ")"),))
        if self.kw("IN"):
            self.i += 1
            return Atom("in", col, (self._string_list("(", ")"),))
        op = self.take("op")
        if op[1] in ("=", "=="):
            return Atom("equals", col, (self._string(),))
        if op[1] in ("!=", "<>"):
            return Atom("notEquals", col, (self._string(),))
        raise self._err(f"unsupported operator {op[1]!r}", op[2])


def parse_where(text: str) -> Expr:
    """Parse a WHERE clause (without the word WHERE) of the subset above; ParseError with a place."""
    if not isinstance(text, str):
        raise SkipidxError(f"WHERE clause must be text, got {type(text).__name__}")
    return _Parser(text).parse()


def atoms(e: Expr) -> list[Atom]:
    """Every atom of the tree, left to right."""
    if isinstance(e, Atom):
        return [e]
    if isinstance(e, Not):
        return atoms(e.item)
    return [a for it in e.items for a in atoms(it)]


def columns(e: Expr) -> set[str]:
    return {a.column for a in atoms(e)}


def to_bound(e: Expr, column_type: pa.DataType) -> BExpr:
    """The tree as the engine's bound expression over a String column of `column_type`,
    so the engine's evaluator (and its catalogue of kernels) answers it."""
    if isinstance(e, (And, Or)):
        return BCall("and" if isinstance(e, And) else "or", tuple(to_bound(i, column_type) for i in e.items),
                     pa.uint8())
    if isinstance(e, Not):
        return BCall("not", (to_bound(e.item, column_type),), pa.uint8())
    if CATALOGUE.get(e.func) is None:
        raise SkipidxError(f"cannot evaluate {e.func}")
    const = e.args[0]
    return BCall(e.func, (BColumn(e.column, column_type), BConst(tuple(const) if isinstance(const, (list, tuple))
                                                                 else const, pa.string())), pa.uint8())


def evaluate_exact(e: Expr, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Row mask (bool numpy) of the rows where the WHERE clause is true (NULL counts as false)."""
    import pyarrow.compute as pc

    from skipidx.expr.evaluate import where_mask

    col = atoms(e)[0].column if atoms(e) else "c"
    m = where_mask(to_bound(e, values.type), pa.table({col: values}))
    if m is None:
        return np.ones(len(values), dtype=bool)
    if isinstance(m, pa.ChunkedArray):
        m = m.combine_chunks() if m.num_chunks else pa.array([], pa.bool_())
    return np.asarray(pc.fill_null(m, False).to_numpy(zero_copy_only=False), dtype=bool)
