"""AST of the skipidx SQL dialect: small frozen dataclasses with source positions.

Every node carries `pos` (a :class:`Pos`, 1-based line and column of the node's
first character in the SQL text). `pos` is excluded from equality and hashing,
so two nodes compare equal when they mean the same thing wherever they were
written: the binder can match an index expression ``lower(msg)`` from CREATE
TABLE against the same expression in a WHERE clause with ``==`` or a dict.

Conventions:

- String literals are ``bytes`` -- the exact bytes after unescaping
  (``'\\xFF'`` is the single byte 0xFF); identifiers are ``str``.
- Sequences are tuples, so every expression node is hashable.
- ``AND``/``OR`` chains are n-ary (:class:`BoolOp`), as ClickHouse's
  ``and(a, b, c)``: a WHERE with a thousand ORs is one flat node, not a tree a
  thousand levels deep. Only an unparenthesized chain is flattened, so
  ``(a AND b) AND c`` keeps its shape.
- A minus sign written directly before a number literal is folded into the
  literal (``-5`` is ``Literal(-5, 'int')``), as ClickHouse does; ``-(5)`` stays
  ``UnaryOp('neg', Literal(5))``.

``to_sql()`` renders any node back as SQL text that parses to an equal node
(with the fewest parentheses precedence allows); ``str(expr)`` is the same.
"""
from __future__ import annotations

import math
import re
from dataclasses import field
from typing import Callable, ClassVar, NamedTuple, TypeVar, Union

from skipidx.core.dataclass_codes import dataclass

T = TypeVar("T")


class Pos(NamedTuple):
    """A place in SQL text: 1-based line and column (column counts characters)."""

    line: int
    column: int


#: Position of nodes built by hand (not parsed).
NOPOS = Pos(0, 0)


def _pos_field() -> Pos:
    return field(default=NOPOS, compare=False, repr=False, kw_only=True)  # type: ignore[return-value]


#: Every node class is ``dataclass(frozen=True)`` (its methods' code precompiled: skipidx.core.dataclass_codes).
_node = dataclass(frozen=True)


class Node:
    """Base of every AST node."""

    __slots__ = ()
    pos: Pos

    def to_sql(self) -> str:  # pragma: no cover - every subclass overrides
        raise AssertionError(f"{type(self).__name__} has no SQL rendering")

    def __str__(self) -> str:
        return self.to_sql()


class Expr(Node):
    """Base of expression nodes. Each renders itself with its precedence level
    (``_sql_level``); ``to_sql`` is the text."""

    __slots__ = ()

    def _sql_level(self) -> tuple[str, int]:  # pragma: no cover - every subclass overrides
        raise AssertionError(f"{type(self).__name__} has no SQL rendering")

    def to_sql(self) -> str:
        return self._sql_level()[0]


class Statement(Node):
    """Base of statement nodes."""

    __slots__ = ()



def memo(node: Node, key: str, compute: "Callable[[Node], T]") -> "T":
    """``compute(node)``, computed once per node object: a fact that depends on the
    node alone (its parameters, its tables). Kept in the node's own ``__dict__`` --
    no field, so equality, hashing and rendering ignore it -- as a node is
    immutable, the fact never goes stale, and it lives only as long as the node (the
    parse cache hands the same statement object to a repeated query)."""
    d = node.__dict__
    m = d.get("_memo")
    if m is None:
        m = d["_memo"] = {}    # written into __dict__: a frozen dataclass refuses setattr
    if key in m:
        return m[key]
    v = m[key] = compute(node)
    return v


_FIELD_NAMES: "dict[type, tuple[str, ...]]" = {}


def node_fields(cls: type) -> tuple[str, ...]:
    """The child field names of node class `cls` (its dataclass fields but ``pos``),
    looked up once per class: ``dataclasses.fields()`` rebuilds its answer per call."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        import dataclasses

        names = tuple(f.name for f in dataclasses.fields(cls) if f.name != "pos") \
            if dataclasses.is_dataclass(cls) else ()
        _FIELD_NAMES[cls] = names
    return names

# ---------------------------------------------------------------- rendering helpers

# Binding strength of each expression form, weakest first. A child is put in
# parentheses when its level is lower than the level its slot requires.
LEVEL_OR = 1
LEVEL_AND = 2
LEVEL_NOT = 3
LEVEL_PREDICATE = 4  # IS [NOT] NULL, [NOT] BETWEEN
LEVEL_COMPARISON = 5  # = != < <= > >= [NOT] [I]LIKE [NOT] IN
LEVEL_ADDITIVE = 6
LEVEL_MULTIPLICATIVE = 7
LEVEL_UNARY = 8
LEVEL_ATOM = 9

_PLAIN_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")

#: Words the lexer may read as keywords; an identifier spelled like one is
#: rendered quoted so that it never turns into the keyword when re-parsed.
KEYWORDS = frozenset(
    """
    ADD ALTER AND AS ASC BETWEEN BY CREATE DESC DESCRIBE DISTINCT DROP ENGINE EXISTS EXPLAIN
    FALSE FINAL FIRST FORMAT FROM GRANULARITY GROUP HAVING IF ILIKE IN INDEX INFILE INSERT INTO
    IS LAST LIKE LIMIT MATERIALIZE NOT NULL NULLS OFFSET OPTIMIZE OR ORDER PLAN REFRESH SELECT SETTINGS SHOW
    TABLE TABLES TRUE TYPE VALUES WHERE INF INFINITY NAN WITH UNION ALL
    AFTER COLUMN DEFAULT KEY MODIFY OUTFILE PREWHERE PRIMARY SET SETTING TRUNCATE
    """.split()
)

_NAMED_ESCAPES = {0x00: "\\0", 0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v",
                  0x0C: "\\f", 0x0D: "\\r", 0x1B: "\\e"}


#: Keywords that may start an expression; a column or function spelled like one
#: is quoted inside expressions. (Other keywords are read as keywords only where
#: an expression cannot start, so ``type`` or ``index`` need no quotes there.)
#: SELECT is one because ``(select)`` would read as a subquery, CASE because a word
#: after it (``case DESC``, ``case NOT IN``) reads as its operand.
EXPRESSION_KEYWORDS = frozenset({"AND", "OR", "NOT", "NULL", "TRUE", "FALSE", "DISTINCT", "INF", "INFINITY", "NAN",
                                 "SELECT", "CASE"})
#: A left operand of ``-`` printed with ``interval`` last (``interval - 1`` reads as INTERVAL -1).
_ENDS_IN_INTERVAL = re.compile(r"(?:^|[^\w`])interval\Z", re.IGNORECASE)


def quote_identifier(name: str, *, in_expression: bool = False) -> str:
    """`name` as SQL: bare when it is a plain word that cannot read as a keyword
    there, else in backquotes."""
    reserved = EXPRESSION_KEYWORDS if in_expression else KEYWORDS
    if _PLAIN_IDENT.match(name) and name.upper() not in reserved:
        return name
    return "`" + _escape_text(name.encode("utf-8"), "`") + "`"


def quote_string(value: bytes) -> str:
    """`value` as a SQL string literal that unescapes to exactly these bytes."""
    return "'" + _escape_text(value, "'") + "'"


_NEEDS_ESCAPE = {q: re.compile("[\x00-\x1f\x7f\\\\" + q + "]") for q in ("'", "`")}


def _escape_text(value: bytes, quote: str) -> str:
    # Valid UTF-8 stays readable; every other byte becomes \xHH. Surrogate
    # escapes mark exactly the bytes that are not part of valid UTF-8.
    if quote in _NEEDS_ESCAPE:
        # the common case in one C-level pass (a 1 MB literal: ~3 s per byte below)
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and not _NEEDS_ESCAPE[quote].search(text):
            return text
    out = []
    for ch in value.decode("utf-8", "surrogateescape"):
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:
            out.append(f"\\x{o - 0xDC00:02X}")
        elif ch == quote or ch == "\\":
            out.append("\\" + ch)
        elif o < 0x20 or o == 0x7F:
            out.append(_NAMED_ESCAPES.get(o, f"\\x{o:02X}"))
        else:
            out.append(ch)
    return "".join(out)


def _wrap(node: Expr, min_level: int) -> str:
    text, level = node._sql_level()
    return f"({text})" if level < min_level else text


# ---------------------------------------------------------------- expressions

LiteralValue = Union[bytes, int, float, bool, None]


@_node
class Literal(Expr):
    """A constant. `kind` is 'string' (value: bytes), 'int' (int), 'float' (float),
    'bool' (bool) or 'null' (None)."""

    value: LiteralValue
    kind: str
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        k = self.kind
        if k == "string":
            return quote_string(self.value), LEVEL_ATOM  # type: ignore[arg-type]
        if k == "null":
            return "NULL", LEVEL_ATOM
        if k == "bool":
            return ("true" if self.value else "false"), LEVEL_ATOM
        if k == "int":
            v = int(self.value)  # type: ignore[arg-type]
            return str(v), (LEVEL_UNARY if v < 0 else LEVEL_ATOM)
        v = float(self.value)  # type: ignore[arg-type]
        if math.isnan(v):
            return "nan", LEVEL_ATOM
        if math.isinf(v):
            return ("-inf", LEVEL_UNARY) if v < 0 else ("inf", LEVEL_ATOM)
        text = repr(v)  # shortest text that reads back as the same double
        if "." not in text and "e" not in text:
            text += "."
        return text, (LEVEL_UNARY if text.startswith("-") else LEVEL_ATOM)


@_node
class ArrayLiteral(Expr):
    """``[a, b, ...]`` (items are any expressions)."""

    items: tuple[Expr, ...]
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        return "[" + ", ".join(_wrap(i, LEVEL_OR) for i in self.items) + "]", LEVEL_ATOM


@_node
class TupleLiteral(Expr):
    """``(a, b, ...)``, ``(a,)`` or ``()`` (items are any expressions)."""

    items: tuple[Expr, ...]
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        inner = ", ".join(_wrap(i, LEVEL_OR) for i in self.items)
        if len(self.items) == 1:
            inner += ","
        return "(" + inner + ")", LEVEL_ATOM


@_node
class Column(Expr):
    """A column reference, optionally qualified by a table name (``t.col``)."""

    name: str
    table: str | None = None
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        text = quote_identifier(self.name, in_expression=True)
        if self.table is not None:
            text = quote_identifier(self.table) + "." + text
        return text, LEVEL_ATOM


@_node
class Param(Expr):
    """A query parameter ``{name:Type}`` (ClickHouse's placeholder): bound to a
    value of `type_name` before binding (:mod:`skipidx.sql.params`); with the
    type ``Identifier`` it stands for a column name."""

    name: str
    type_name: str
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        return "{" + self.name + ":" + self.type_name + "}", LEVEL_ATOM


@_node
class Star(Expr):
    """``*``: a whole-row select item, or the argument of ``count(*)``."""

    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        return "*", LEVEL_ATOM


@_node
class FunctionCall(Expr):
    """``name(args)``; any name parses (the binder checks it). ``count(*)`` has
    args ``(Star(),)``; ``count(DISTINCT x)`` has ``distinct=True``."""

    name: str
    args: tuple[Expr, ...]
    distinct: bool = False
    pos: Pos = _pos_field()
    params: tuple[Expr, ...] | None = None     # quantile(0.5)(x): the parameters

    def _sql_level(self) -> tuple[str, int]:
        args = ", ".join(_wrap(a, LEVEL_OR) for a in self.args)
        if self.distinct:
            args = "DISTINCT " + args
        head = quote_identifier(self.name, in_expression=True)
        if head.upper() == "INTERVAL" or (head.upper() == "CAST" and (len(self.args) != 2 or self.distinct
                                                                       or self.params is not None)):
            head = "`" + self.name + "`"   # CAST( and INTERVAL( start their own forms; CAST(x, 'T') reads back
        if self.params is not None:
            head += "(" + ", ".join(_wrap(p, LEVEL_OR) for p in self.params) + ")"
        return f"{head}({args})", LEVEL_ATOM


@_node
class WindowCall(Expr):
    """``f(args) OVER ([PARTITION BY ...] [ORDER BY ...])``: a window function with
    ClickHouse's default frame (the engine computes it: engine/window.py)."""

    func: FunctionCall
    partition_by: tuple[Expr, ...] = ()
    order_by: "tuple[OrderItem, ...]" = ()
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        spec = []
        if self.partition_by:
            spec.append("PARTITION BY " + ", ".join(_wrap(e, LEVEL_OR) for e in self.partition_by))
        if self.order_by:
            spec.append("ORDER BY " + ", ".join(o.to_sql() for o in self.order_by))
        return f"{self.func.to_sql()} OVER ({' '.join(spec)})", LEVEL_ATOM


#: BinaryOp operators (canonical spelling; ``==`` reads as ``=``, ``<>`` as ``!=``).
COMPARISON_OPS = frozenset({"=", "!=", "<", "<=", ">", ">="})
ADDITIVE_OPS = frozenset({"+", "-"})
MULTIPLICATIVE_OPS = frozenset({"*", "/", "%"})


@_node
class BinaryOp(Expr):
    """Comparison or arithmetic: `op` is one of ``= != < <= > >= + - * / %``."""

    op: str
    left: Expr
    right: Expr
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        if self.op in COMPARISON_OPS:
            level = LEVEL_COMPARISON
        elif self.op in ADDITIVE_OPS:
            level = LEVEL_ADDITIVE
        elif self.op in MULTIPLICATIVE_OPS:
            level = LEVEL_MULTIPLICATIVE
        else:
            raise AssertionError(f"unknown binary operator {self.op!r}")
        # Left-associative: the right operand must bind tighter than the operator.
        left = _wrap(self.left, level)
        if self.op == "-" and _ENDS_IN_INTERVAL.search(left):
            left = f"({left})"
        return f"{left} {self.op} {_wrap(self.right, level + 1)}", level


@_node
class BoolOp(Expr):
    """``a AND b AND ...`` or ``a OR b OR ...``: `op` is 'and' or 'or', two or more `args`."""

    op: str
    args: tuple[Expr, ...]
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        level = LEVEL_AND if self.op == "and" else LEVEL_OR
        sep = " AND " if self.op == "and" else " OR "
        # An argument of the same operator gets parentheses: the parser only
        # nests same-operator BoolOps when they were written in parentheses.
        return sep.join(_wrap(a, level + 1) for a in self.args), level


@_node
class UnaryOp(Expr):
    """``NOT x`` (op 'not') or ``-x`` (op 'neg')."""

    op: str
    operand: Expr
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        if self.op == "not":
            return "NOT " + _wrap(self.operand, LEVEL_NOT), LEVEL_NOT
        text, level = self.operand._sql_level()
        # "-5" would read back as the literal -5 and "--x" as a comment.
        if level < LEVEL_UNARY or text.startswith("-") or (
            isinstance(self.operand, Literal) and self.operand.kind in ("int", "float")
        ):
            text = f"({text})"
        return "-" + text, LEVEL_UNARY


@_node
class Like(Expr):
    """``expr [NOT] LIKE pattern`` / ``expr [NOT] ILIKE pattern``."""

    expr: Expr
    pattern: Expr
    negated: bool = False
    case_insensitive: bool = False
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        op = ("NOT " if self.negated else "") + ("ILIKE" if self.case_insensitive else "LIKE")
        return f"{_wrap(self.expr, LEVEL_COMPARISON)} {op} {_wrap(self.pattern, LEVEL_ADDITIVE)}", LEVEL_COMPARISON


@_node
class InList(Expr):
    """``expr [NOT] IN (item, ...)``; the items are written as is (``x IN ((1, 2))``
    has one item, the tuple ``(1, 2)``)."""

    expr: Expr
    items: tuple[Expr, ...]
    negated: bool = False
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        op = "NOT IN" if self.negated else "IN"
        if len(self.items) == 1 and isinstance(self.items[0], Subquery):
            return f"{_wrap(self.expr, LEVEL_COMPARISON)} {op} {self.items[0].to_sql()}", LEVEL_COMPARISON
        items = ", ".join(_wrap(i, LEVEL_OR) for i in self.items)
        return f"{_wrap(self.expr, LEVEL_COMPARISON)} {op} ({items})", LEVEL_COMPARISON


@_node
class Subquery(Expr):
    """``(SELECT ...)``: the list of ``x [NOT] IN (SELECT ...)`` (the engine runs it
    first and the IN takes its values), or a derived table ``FROM (SELECT ...)``."""

    query: Statement
    alias: str | None = None
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        return f"({self.query.to_sql()})", LEVEL_ATOM

    def to_sql(self) -> str:
        return f"({self.query.to_sql()})" + (f" AS {quote_identifier(self.alias)}" if self.alias else "")


@_node
class Lambda(Expr):
    """``x -> body`` / ``(x, y) -> body``: a function argument of arrayMap, arrayFilter,
    arrayExists, arrayCount (the parameters are the arrays' elements)."""

    params: tuple[str, ...]
    body: Expr
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        names = [quote_identifier(p, in_expression=True) for p in self.params]
        head = names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
        return f"{head} -> {_wrap(self.body, LEVEL_OR)}", LEVEL_OR


@_node
class ScalarSubquery(Expr):
    """``(SELECT ...)`` as a value (ClickHouse's scalar subquery): the engine runs it
    once, before the outer query is bound, and puts a :class:`ScalarValue` in its place."""

    query: Statement
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        return f"({self.query.to_sql()})", LEVEL_ATOM


@_node
class ScalarValue(Expr):
    """The value of a scalar subquery, run before binding: `value` as Python (bytes for
    a String, a tuple for an Array, None for NULL), `type_name` its ClickHouse type
    (``Nullable(UInt64)``) and `name` the column name ClickHouse gives it
    (``_subquery_1``). Never parsed; rendered as the CAST of its value."""

    value: object
    type_name: str
    name: str
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        return f"CAST({_value_sql(self.value)} AS {self.type_name})", LEVEL_ATOM


def _value_sql(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        return quote_string(v)
    if isinstance(v, (int, float)):
        return Literal(v, "int" if isinstance(v, int) else "float").to_sql()
    if isinstance(v, tuple):
        return "[" + ", ".join(_value_sql(x) for x in v) + "]"
    return quote_string(str(v).encode("utf-8"))


@_node
class IsNull(Expr):
    """``expr IS [NOT] NULL``."""

    expr: Expr
    negated: bool = False
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        op = "IS NOT NULL" if self.negated else "IS NULL"
        return f"{_wrap(self.expr, LEVEL_PREDICATE)} {op}", LEVEL_PREDICATE


@_node
class Between(Expr):
    """``expr [NOT] BETWEEN low AND high`` (inclusive bounds)."""

    expr: Expr
    low: Expr
    high: Expr
    negated: bool = False
    pos: Pos = _pos_field()

    def _sql_level(self) -> tuple[str, int]:
        op = "NOT BETWEEN" if self.negated else "BETWEEN"
        return (
            f"{_wrap(self.expr, LEVEL_PREDICATE)} {op} {_wrap(self.low, LEVEL_COMPARISON)}"
            f" AND {_wrap(self.high, LEVEL_COMPARISON)}",
            LEVEL_PREDICATE,
        )


# ---------------------------------------------------------------- pieces of statements


@_node
class TableRef(Node):
    """The name of a table, where it was written; `param` names the query
    parameter ``{param:Identifier}`` written in its place (then `name` is '');
    `database` is the ``db`` of ``db.table`` (None when not written)."""

    name: str
    param: str | None = None
    pos: Pos = _pos_field()
    database: str | None = None

    def to_sql(self) -> str:
        if self.param is not None:
            return "{" + self.param + ":Identifier}"
        if self.database is not None:
            return f"{quote_identifier(self.database)}.{quote_identifier(self.name)}"
        return quote_identifier(self.name)


@_node
class TableFunction(Node):
    """A table function in FROM: ``file('data/*.csv', CSVWithNames)``,
    ``numbers(10)``. Arguments are expressions as written (a bare name such as
    a format is a :class:`Column`)."""

    name: str
    args: tuple[Expr, ...] = ()
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return f"{quote_identifier(self.name)}({', '.join(a.to_sql() for a in self.args)})"


@_node
class TypeExpr(Node):
    """A column type as written: ``String`` is ``TypeExpr('String', ())``,
    ``Nullable(String)`` is ``TypeExpr('Nullable', (TypeExpr('String', ()),))``;
    arguments are types or literals (``DateTime('UTC')``). The binder decides
    which types exist."""

    name: str
    args: tuple[Union["TypeExpr", Literal, "EnumValue"], ...] = ()
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        if not self.args:
            return quote_identifier(self.name)
        return f"{quote_identifier(self.name)}({', '.join(a.to_sql() for a in self.args)})"


@_node
class EnumValue(Node):
    """One ``'name' = number`` argument of an Enum type."""

    name: Literal
    value: Literal
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return f"{self.name.to_sql()} = {self.value.to_sql()}"


@_node
class CodecSpec(Node):
    """One codec of a ``CODEC(...)`` list as written: ``ZSTD(3)`` is
    ``CodecSpec('ZSTD', (Literal(3),))``, ``LZ4`` is ``CodecSpec('LZ4', ())``.
    The DDL planner decides which codecs and arguments exist."""

    name: str
    args: tuple[Literal, ...] = ()
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        if not self.args:
            return quote_identifier(self.name)
        return f"{quote_identifier(self.name)}({', '.join(a.to_sql() for a in self.args)})"


@_node
class ColumnDef(Node):
    """``name Type [NULL | NOT NULL] [DEFAULT expr] [CODEC(codec, ...)]`` in CREATE
    TABLE or ALTER ... ADD COLUMN; `codec` is empty when no CODEC clause is written,
    `default` None without DEFAULT; `null` is True for NULL, False for NOT NULL,
    None when not written."""

    name: str
    type: TypeExpr
    codec: tuple[CodecSpec, ...] = ()
    default: Expr | None = None
    null: bool | None = None
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        text = f"{quote_identifier(self.name)} {self.type.to_sql()}"
        if self.null is not None:
            text += " NULL" if self.null else " NOT NULL"
        if self.default is not None:
            text += f" DEFAULT {self.default.to_sql()}"
        if self.codec:
            text += f" CODEC({', '.join(c.to_sql() for c in self.codec)})"
        return text


@_node
class KeywordArg(Node):
    """``name = value``: an index-type argument (``n = 4``), a SETTINGS entry or an
    EXPLAIN option. `value` is a literal (string values are bytes), or in a
    SETTINGS clause a :class:`Param`."""

    name: str
    value: Literal | Param
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return f"{quote_identifier(self.name)} = {self.value.to_sql()}"


@_node
class IndexClause(Node):
    """``INDEX name expr TYPE type_name(args, key = value, ...) [GRANULARITY n]``.

    `args` are the positional literals, `kwargs` the ``key = value`` ones in
    written order (names unique); `granularity` is None when not written.
    ``TYPE minmax`` and ``TYPE minmax()`` both have empty args."""

    name: str
    expr: Expr
    type_name: str
    args: tuple[Literal, ...] = ()
    kwargs: tuple[KeywordArg, ...] = ()
    granularity: int | None = None
    pos: Pos = _pos_field()

    def kwargs_dict(self) -> dict[str, Literal]:
        """The keyword arguments as a dict (name -> literal)."""
        return {k.name: k.value for k in self.kwargs}

    def to_sql(self) -> str:
        parts = [a.to_sql() for a in self.args] + [k.to_sql() for k in self.kwargs]
        text = f"INDEX {quote_identifier(self.name)} {self.expr.to_sql()} TYPE {quote_identifier(self.type_name)}"
        if parts:
            text += "(" + ", ".join(parts) + ")"
        if self.granularity is not None:
            text += f" GRANULARITY {self.granularity}"
        return text


@_node
class SelectItem(Node):
    """One item of a SELECT list: an expression (or :class:`Star`) and its alias."""

    expr: Expr
    alias: str | None = None
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        text = self.expr.to_sql()
        return text if self.alias is None else f"{text} AS {quote_identifier(self.alias)}"


@_node
class OrderItem(Node):
    """``expr [ASC|DESC] [NULLS FIRST|LAST]``; `nulls_first` is None when not written
    (the executor applies ClickHouse's default)."""

    expr: Expr
    desc: bool = False
    nulls_first: bool | None = None
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        text = self.expr.to_sql() + (" DESC" if self.desc else "")
        if self.nulls_first is not None:
            text += " NULLS FIRST" if self.nulls_first else " NULLS LAST"
        return text


# ---------------------------------------------------------------- statements


def _table_sql(t: TableRef) -> str:
    return t.to_sql()


@_node
class CreateTable(Statement):
    """``CREATE TABLE [IF NOT EXISTS] t (columns..., indexes...) [ENGINE = e[()]]
    [ORDER BY key] [SETTINGS k = v, ...]``.

    `order_by` is None when not written, ``()`` for ``ORDER BY tuple()``, else the
    key expressions (``ORDER BY (a, b)`` gives two); `primary_key` likewise for
    ``PRIMARY KEY``. Column and index names are unique. `as_select` is the query of
    ``CREATE TABLE t [(...)] ENGINE = ... AS SELECT ...`` (then `columns` may be
    empty); `engine_args` the literals of ``ENGINE = E(args)``."""

    table: TableRef
    columns: tuple[ColumnDef, ...]
    indexes: tuple[IndexClause, ...] = ()
    engine: str | None = None
    order_by: tuple[Expr, ...] | None = None
    settings: tuple[KeywordArg, ...] = ()
    if_not_exists: bool = False
    primary_key: tuple[Expr, ...] | None = None
    as_select: "Select | None" = None
    pos: Pos = _pos_field()
    #: the engine's arguments: ``ENGINE = ParquetFiles('lake/**/*.parquet')``
    engine_args: tuple[Literal, ...] = ()
    #: whether the ``(columns, indexes)`` list was written (an external table may infer its columns)
    has_elements: bool = True
    #: ``PARTITION BY expr`` (recorded; skipidx does not split parts by it)
    partition_by: Expr | None = None

    def settings_dict(self) -> dict[str, Literal]:
        """SETTINGS as a dict (name -> literal)."""
        return {s.name: s.value for s in self.settings}

    def to_sql(self) -> str:
        elements = [c.to_sql() for c in self.columns] + [i.to_sql() for i in self.indexes]
        text = "CREATE TABLE " + ("IF NOT EXISTS " if self.if_not_exists else "")
        text += _table_sql(self.table) + (f" ({', '.join(elements)})" if self.has_elements or elements else "")
        if self.engine is not None:
            text += f" ENGINE = {quote_identifier(self.engine)}"
            if self.engine_args:
                text += f"({', '.join(a.to_sql() for a in self.engine_args)})"
        if self.partition_by is not None:
            text += f" PARTITION BY {self.partition_by.to_sql()}"
        for word, key in (("ORDER BY", self.order_by), ("PRIMARY KEY", self.primary_key)):
            if key is None:
                continue
            if len(key) == 1 and not isinstance(key[0], TupleLiteral):
                text += f" {word} {key[0].to_sql()}"
            else:
                text += f" {word} tuple({', '.join(e.to_sql() for e in key)})"
        if self.settings:
            text += " SETTINGS " + ", ".join(s.to_sql() for s in self.settings)
        if self.as_select is not None:
            text += " AS " + self.as_select.to_sql()
        return text


@_node
class DropTable(Statement):
    """``DROP TABLE [IF EXISTS] t``."""

    table: TableRef
    if_exists: bool = False
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return "DROP TABLE " + ("IF EXISTS " if self.if_exists else "") + _table_sql(self.table)


def _columns_sql(columns: tuple[str, ...] | None) -> str:
    return "" if columns is None else " (" + ", ".join(quote_identifier(c) for c in columns) + ")"


@_node
class InsertValues(Statement):
    """``INSERT INTO t [(cols)] VALUES (...), (...)``; each row is a tuple of
    expressions (the binder evaluates them as constants)."""

    table: TableRef
    columns: tuple[str, ...] | None
    rows: tuple[tuple[Expr, ...], ...]
    settings: tuple[KeywordArg, ...] = ()
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        rows = ", ".join("(" + ", ".join(e.to_sql() for e in r) + ")" for r in self.rows)
        return (f"INSERT INTO {_table_sql(self.table)}{_columns_sql(self.columns)}{_settings_sql(self.settings)}"
                f" VALUES {rows}")


def _settings_sql(settings: tuple[KeywordArg, ...]) -> str:
    return " SETTINGS " + ", ".join(s.to_sql() for s in settings) if settings else ""


@_node
class InsertSelect(Statement):
    """``INSERT INTO t [(cols)] [SETTINGS ...] SELECT ...``: the query's rows, all or none."""

    table: TableRef
    columns: tuple[str, ...] | None
    select: "Select"
    settings: tuple[KeywordArg, ...] = ()
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return (f"INSERT INTO {_table_sql(self.table)}{_columns_sql(self.columns)}{_settings_sql(self.settings)} "
                + self.select.to_sql())


#: Formats accepted by ``INSERT ... FROM INFILE ... FORMAT f`` (names as ClickHouse spells them).
INFILE_FORMATS = ("Parquet", "CSV", "CSVWithNames", "JSONEachRow")


@_node
class InsertFile(Statement):
    """``INSERT INTO t [(cols)] FROM INFILE 'path' [FORMAT f]``; `format` is one of
    :data:`INFILE_FORMATS` or None (the reader infers it from the file name)."""

    table: TableRef
    columns: tuple[str, ...] | None
    path: str
    format: str | None = None
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        text = (f"INSERT INTO {_table_sql(self.table)}{_columns_sql(self.columns)} FROM INFILE "
                f"{quote_string(self.path.encode('utf-8'))}")
        return text if self.format is None else f"{text} FORMAT {self.format}"


@_node
class AlterAddIndex(Statement):
    """``ALTER TABLE t ADD INDEX [IF NOT EXISTS] name expr TYPE ... [GRANULARITY n]``."""

    table: TableRef
    index: IndexClause
    if_not_exists: bool = False
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        clause = self.index.to_sql()
        if self.if_not_exists:
            clause = "INDEX IF NOT EXISTS " + clause[len("INDEX "):]
        return f"ALTER TABLE {_table_sql(self.table)} ADD {clause}"


@_node
class AlterDropIndex(Statement):
    """``ALTER TABLE t DROP INDEX [IF EXISTS] name``."""

    table: TableRef
    name: str
    if_exists: bool = False
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return (f"ALTER TABLE {_table_sql(self.table)} DROP INDEX "
                + ("IF EXISTS " if self.if_exists else "") + quote_identifier(self.name))


@_node
class AlterMaterializeIndex(Statement):
    """``ALTER TABLE t MATERIALIZE INDEX name``: build the index for existing parts."""

    table: TableRef
    name: str
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return f"ALTER TABLE {_table_sql(self.table)} MATERIALIZE INDEX {quote_identifier(self.name)}"


@_node
class _OnTable(Statement):
    """A statement whose only operand is a table: ``_SQL`` with ``{}`` for the table."""

    _SQL: ClassVar[str] = ""
    table: TableRef
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return self._SQL.format(_table_sql(self.table))


@_node
class AlterRefresh(_OnTable):
    """``ALTER TABLE t REFRESH``: an external table indexes its new data files and
    drops the sidecars of removed or changed ones."""

    _SQL = "ALTER TABLE {} REFRESH"


@_node
class Optimize(Statement):
    """``OPTIMIZE TABLE t [FINAL]``: merge parts."""

    table: TableRef
    final: bool = False
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return f"OPTIMIZE TABLE {_table_sql(self.table)}" + (" FINAL" if self.final else "")


def _limit_sql(v: object) -> str:
    return v.to_sql() if isinstance(v, Node) else str(v)


@_node
class LimitBy(Node):
    """ClickHouse's ``LIMIT limit [OFFSET offset] BY exprs``: after ORDER BY, at most `limit`
    rows (after skipping `offset`) of each distinct value of `exprs`; `limit` / `offset` as
    :class:`Select`'s (an int, a :class:`Param` where written as one; `offset` None when
    not written). An integer literal among `exprs` is a position in the SELECT list."""

    exprs: tuple[Expr, ...]
    limit: "int | Param | Expr"
    offset: "int | Param | Expr | None" = None
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        text = f"LIMIT {_limit_sql(self.limit)}" + (f" OFFSET {_limit_sql(self.offset)}" if self.offset is not None else "")
        return text + " BY " + ", ".join(e.to_sql() for e in self.exprs)


@_node
class WithItem(Node):
    """One item of ClickHouse's ``WITH``: ``expr AS name`` (`expr` set: an alias the
    query may use, as a SELECT-list alias that is not output) or ``name AS (SELECT ...)``
    (`query` set: a common table expression, a table name for the query)."""

    name: str
    expr: Expr | None = None
    query: "Statement | None" = None
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        if self.query is not None:
            return f"{quote_identifier(self.name)} AS ({self.query.to_sql()})"
        return f"{_wrap(self.expr, LEVEL_OR)} AS {quote_identifier(self.name)}"


@_node
class Select(Statement):
    """``SELECT [DISTINCT] items [FROM t] [WHERE e] [GROUP BY ...] [HAVING e]
    [ORDER BY ...] [LIMIT n [OFFSET m]]``; ``LIMIT m, n`` reads as offset m, limit n.
    `table` is None without FROM (and for a table function, which is
    `table_function`); `limit`/`offset` are None when not written (a
    :class:`Param` where written as one). `prewhere` is ``PREWHERE e``;
    `settings` the query-level ``SETTINGS`` (those after FORMAT included);
    `format` and `outfile` ClickHouse's ``FORMAT name`` and ``INTO OUTFILE 'p'``."""

    items: tuple[SelectItem, ...]
    table: TableRef | None = None
    where: Expr | None = None
    group_by: tuple[Expr, ...] = ()
    having: Expr | None = None
    order_by: tuple[OrderItem, ...] = ()
    #: an Expr where written as a constant expression (`LIMIT k` of `WITH 2 AS k`, `LIMIT 1 + 1`):
    #: the engine folds it to an int before running the query (expr.binder.resolve_limits)
    limit: "int | Param | Expr | None" = None
    offset: "int | Param | Expr | None" = None
    distinct: bool = False
    table_function: TableFunction | None = None
    prewhere: Expr | None = None
    settings: tuple[KeywordArg, ...] = ()
    format: str | None = None
    outfile: str | None = None
    #: ``FROM (SELECT ...) [AS alias]``: a derived table (or ``FROM (EXPLAIN ...)``)
    subquery: "Subquery | None" = None
    pos: Pos = _pos_field()
    #: ``WITH ...`` before SELECT: aliases and common table expressions, in written order
    with_: tuple[WithItem, ...] = ()
    #: ``LIMIT n [OFFSET m] BY ...`` (applied after ORDER BY, before LIMIT)
    limit_by: LimitBy | None = None
    #: ``FROM t AS alias``: columns may be qualified by the alias (or the table's name)
    table_alias: str | None = None

    def settings_dict(self) -> dict[str, Literal | Param]:
        """SETTINGS as a dict (name -> literal)."""
        return {s.name: s.value for s in self.settings}

    def to_sql(self) -> str:
        text = "SELECT " + ("DISTINCT " if self.distinct else "") + ", ".join(i.to_sql() for i in self.items)
        if self.with_:
            text = "WITH " + ", ".join(w.to_sql() for w in self.with_) + " " + text
        if self.table is not None:
            text += f" FROM {_table_sql(self.table)}"
            if self.table_alias is not None:
                text += f" AS {quote_identifier(self.table_alias)}"
        elif self.table_function is not None:
            text += f" FROM {self.table_function.to_sql()}"
        elif self.subquery is not None:
            text += f" FROM {self.subquery.to_sql()}"
        if self.prewhere is not None:
            text += f" PREWHERE {self.prewhere.to_sql()}"
        if self.where is not None:
            text += f" WHERE {self.where.to_sql()}"
        if self.group_by:
            text += " GROUP BY " + ", ".join(e.to_sql() for e in self.group_by)
        if self.having is not None:
            text += f" HAVING {self.having.to_sql()}"
        if self.order_by:
            text += " ORDER BY " + ", ".join(o.to_sql() for o in self.order_by)
        if self.limit_by is not None:
            text += " " + self.limit_by.to_sql()
        if self.limit is not None:
            text += f" LIMIT {_limit_sql(self.limit)}"
            if self.offset is not None:
                text += f" OFFSET {_limit_sql(self.offset)}"
        elif self.offset is not None:
            # No bare OFFSET in the dialect; an offset without a limit is "LIMIT all".
            text += f" LIMIT {2**64 - 1} OFFSET {_limit_sql(self.offset)}"
        text += _settings_sql(self.settings)
        if self.outfile is not None:
            text += f" INTO OUTFILE {quote_string(self.outfile.encode('utf-8'))}"
        if self.format is not None:
            text += f" FORMAT {quote_identifier(self.format)}"
        return text


@_node
class Union(Statement):
    """``q UNION ALL q ...`` (`distinct` False) or ``q UNION DISTINCT q ...`` (True): the
    rows of every query, columns named as the first one's and typed as their least
    supertype. A query is a :class:`Select` or, where the mode changes, a Union (left-
    associative, as ClickHouse). `format` and `outfile`: the whole union's output clauses."""

    queries: tuple[Statement, ...]
    distinct: bool = False
    format: str | None = None
    outfile: str | None = None
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        sep = " UNION DISTINCT " if self.distinct else " UNION ALL "
        text = sep.join(q.to_sql() for q in self.queries)
        if self.outfile is not None:
            text += f" INTO OUTFILE {quote_string(self.outfile.encode('utf-8'))}"
        if self.format is not None:
            text += f" FORMAT {quote_identifier(self.format)}"
        return text


@_node
class Explain(Statement):
    """``EXPLAIN [PLAN] [indexes = 0|1] SELECT ...`` (PLAN is ClickHouse's default kind)."""

    select: Select
    indexes: bool = False
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return "EXPLAIN " + ("indexes = 1 " if self.indexes else "") + self.select.to_sql()


@_node
class Truncate(Statement):
    """``TRUNCATE [TABLE] [IF EXISTS] t``: remove every row, keep the table."""

    table: TableRef
    if_exists: bool = False
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return "TRUNCATE TABLE " + ("IF EXISTS " if self.if_exists else "") + _table_sql(self.table)


@_node
class AlterAddColumn(Statement):
    """``ALTER TABLE t ADD COLUMN [IF NOT EXISTS] c Type [DEFAULT e] [AFTER x | FIRST]``."""

    table: TableRef
    column: ColumnDef
    if_not_exists: bool = False
    after: str | None = None
    first: bool = False
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        text = (f"ALTER TABLE {_table_sql(self.table)} ADD COLUMN " + ("IF NOT EXISTS " if self.if_not_exists else "")
                + self.column.to_sql())
        if self.after is not None:
            text += f" AFTER {quote_identifier(self.after)}"
        elif self.first:
            text += " FIRST"
        return text


@_node
class AlterDropColumn(Statement):
    """``ALTER TABLE t DROP COLUMN [IF EXISTS] c``."""

    table: TableRef
    name: str
    if_exists: bool = False
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return (f"ALTER TABLE {_table_sql(self.table)} DROP COLUMN " + ("IF EXISTS " if self.if_exists else "")
                + quote_identifier(self.name))


@_node
class AlterModifySetting(Statement):
    """``ALTER TABLE t MODIFY SETTING k = v, ...``."""

    table: TableRef
    settings: tuple[KeywordArg, ...]
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return f"ALTER TABLE {_table_sql(self.table)} MODIFY SETTING " + ", ".join(s.to_sql() for s in self.settings)


@_node
class Alter(Statement):
    """``ALTER TABLE t cmd, cmd, ...`` with two or more commands (one command
    parses as its own statement node). Each command is an Alter* statement
    naming the same table; they run in order."""

    table: TableRef
    commands: tuple[Statement, ...]
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        prefix = f"ALTER TABLE {_table_sql(self.table)} "
        return prefix + ", ".join(c.to_sql()[len(prefix):] for c in self.commands)


@_node
class AlterAttachParts(_OnTable):
    """``ALTER TABLE t ATTACH PARTS``: repair -- a damaged table state is
    rebuilt from its backup copy and the parts' manifests."""

    _SQL = "ALTER TABLE {} ATTACH PARTS"


@_node
class ShowParts(_OnTable):
    """``SHOW PARTS [FROM] t``: one row per active part (as system.parts)."""

    _SQL = "SHOW PARTS FROM {}"


@_node
class ShowMerges(Statement):
    """``SHOW MERGES [FROM t]``: the merges running now (as system.merges)."""

    table: TableRef | None = None
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return "SHOW MERGES" + (f" FROM {_table_sql(self.table)}" if self.table is not None else "")


#: Statement types that may be one command of an :class:`Alter`.
ALTER_COMMANDS = (AlterAddIndex, AlterDropIndex, AlterMaterializeIndex, AlterAddColumn, AlterDropColumn,
                  AlterModifySetting, AlterRefresh, AlterAttachParts)


@_node
class ShowCreate(_OnTable):
    """``SHOW CREATE [TABLE] t``."""

    _SQL = "SHOW CREATE TABLE {}"


@_node
class ExistsTable(_OnTable):
    """``EXISTS [TABLE] t``: one row, column `result` (UInt8), 1 if the table exists."""

    _SQL = "EXISTS TABLE {}"


@_node
class SetStatement(Statement):
    """``SET k = v, ...``: session settings of the database connection."""

    settings: tuple[KeywordArg, ...]
    pos: Pos = _pos_field()

    def to_sql(self) -> str:
        return "SET " + ", ".join(s.to_sql() for s in self.settings)


@_node
class ShowTables(Statement):
    """``SHOW TABLES [FROM db]``."""

    pos: Pos = _pos_field()
    database: str | None = None

    def to_sql(self) -> str:
        return "SHOW TABLES" + (f" FROM {quote_identifier(self.database)}" if self.database is not None else "")


@_node
class Describe(_OnTable):
    """``DESCRIBE [TABLE] t`` / ``DESC t``."""

    _SQL = "DESCRIBE TABLE {}"


__all__ = [
    "Pos", "NOPOS", "Node", "Expr", "Statement", "Literal", "ArrayLiteral", "TupleLiteral", "Column",
    "Star", "FunctionCall", "WindowCall", "BinaryOp", "BoolOp", "UnaryOp", "Like", "InList", "IsNull", "Between",
    "TableRef", "TypeExpr", "CodecSpec", "ColumnDef", "KeywordArg", "IndexClause", "SelectItem", "OrderItem",
    "CreateTable", "DropTable", "InsertValues", "InsertFile", "AlterAddIndex", "AlterDropIndex",
    "AlterMaterializeIndex", "AlterRefresh", "Optimize", "Select", "Explain", "ShowTables", "Describe",
    "Param", "TableFunction", "InsertSelect", "Truncate", "AlterAddColumn", "AlterDropColumn", "AlterModifySetting",
    "Alter", "ALTER_COMMANDS", "ShowCreate", "ExistsTable", "SetStatement", "ScalarSubquery", "ScalarValue", "WithItem", "Union", "LimitBy", "Lambda",
    "COMPARISON_OPS", "ADDITIVE_OPS", "MULTIPLICATIVE_OPS", "INFILE_FORMATS", "KEYWORDS",
    "quote_identifier", "quote_string", "memo", "node_fields",
]
