"""The function catalogue: every function skipidx knows, declared once.

One :class:`Function` entry holds everything the stages need to know about a
function: its ClickHouse name and aliases (and the SQL operators that spell
it), its argument and result types, how the binder binds it (``rule``), how a
call with constant arguments folds, the Arrow kernel that evaluates it, and
what an index can learn from it (:class:`IndexHint`). The binder, the
evaluator, the RPN builder, EXPLAIN and the Spark filter translation all read
this table; none of them keeps its own list of function names.

How to add a function
---------------------
1. Write the kernel, whole-column (numpy / ``pyarrow.compute`` / numba, no
   per-row Python), in the kernel module of its domain under
   ``skipidx/expr/kernels/`` (strings, compare, arithmetic, or a new module).
   It takes one Arrow array per argument and returns an Arrow array of the
   same length; NULL in gives NULL out. An argument declared ``const_*``
   arrives as a Python value (``bytes`` for String).
2. Add one entry to the domain's list below, e.g.::

       Function("reverse", rule="scalar", args=(STRING,), returns=SAME_AS_FIRST,
                kernel=K.reverse, doc="the bytes in reverse order"),

   ``rule="scalar"`` is the generic rule: argument count and types are checked
   against ``args`` (``variadic`` repeats the last one), the result type is
   ``returns`` (an Arrow type or a function of the argument types), the call
   is Nullable if any argument is, and a call whose arguments are all
   constants folds by running the kernel on one row (or ``fold`` if given).
   Name aliases go in ``aliases``; the result column name is ClickHouse's
   function form ``name(args)`` with the name as written (``output_name`` for
   exceptions). Set ``index=IndexHint(...)`` only if an index can answer the
   call (then the indexes must learn it too).
3. Tests: a row in the golden table of ``tests/expr/test_catalogue_chdb.py``
   (output name and type against chDB) and the kernel against chDB row by row
   (``tests/expr/test_kernels_chdb.py``). ``tests/expr/test_catalogue.py``
   checks that every scalar entry has a kernel and that every name resolves.

The other ``rule`` values name the binder's rules for functions whose typing
ClickHouse special-cases (comparisons cast their constant to the column type,
IN lists, logic folds with Kleene truth, string searches validate their
needle at bind time, arithmetic takes ClickHouse's result-type table, and
aggregates, which :mod:`skipidx.execution.aggregates` computes).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from skipidx.expr import kernels as K
from skipidx.expr.types import is_int, is_numeric, is_string, value_type

# ---------------------------------------------------------------------------
# argument types
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ArgType:
    """An argument's ClickHouse type class: ``name`` for messages and docs, ``accepts`` an Arrow type."""

    name: str
    accepts: Callable[[pa.DataType], bool]
    const: bool = False            # must be a constant; the kernel gets its Python value


def _any(t: pa.DataType) -> bool:
    return True


STRING = ArgType("String", is_string)
NUMBER = ArgType("Number", is_numeric)
INTEGER = ArgType("Integer", is_int)
ANY = ArgType("Any", _any)
CONST_STRING = ArgType("const String", is_string, const=True)
CONST_ARRAY_STRING = ArgType("const Array(String)", _any, const=True)
CONST_TOKENS = ArgType("const String or Array(String)", _any, const=True)   # a String is split into tokens
CONST_LIST = ArgType("const tuple", _any, const=True)

_BOOL = pa.uint8()                 # ClickHouse's predicate result type (UInt8)


def SAME_AS_FIRST(types: list[pa.DataType]) -> pa.DataType:
    """Result type rule: the first argument's type (LowCardinality read as its values)."""
    return value_type(types[0])


# ---------------------------------------------------------------------------
# entries
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexHint:
    """What an index can learn from a call ``f(subject, constants...)``.

    ``learns`` names the kinds of index that can answer it: ``range`` (min/max
    of a zone), ``set`` (the zone's distinct values), ``tokens`` (a bloom /
    text index: tokens every match must contain), ``nulls`` (has_null).
    ``negation_of``: the call is NOT of that positive atom (``notEquals`` of
    ``equals``), so indexes only ever answer positive atoms.
    ``case_insensitive_of``: the call is that function over ASCII-lowered
    subject and constants (an index on ``lower(col)`` answers it).
    """

    learns: frozenset[str]
    negation_of: str | None = None
    case_insensitive_of: str | None = None


def _hint(*learns: str, negation_of: str | None = None, case_insensitive_of: str | None = None) -> IndexHint:
    return IndexHint(frozenset(learns), negation_of, case_insensitive_of)


@dataclass(frozen=True)
class Function:
    """One function. See the module docstring for how the fields are used."""

    name: str                                  # canonical ClickHouse name (BCall.func)
    rule: str                                  # the binder's rule (RULES)
    args: tuple[ArgType, ...] = ()             # ClickHouse argument types
    variadic: bool = False                     # the last argument repeats (at least once)
    returns: pa.DataType | Callable[[list[pa.DataType]], pa.DataType] | None = None
    kernel: Callable[..., Any] | None = None   # Arrow kernel: one argument per argument
    scalars: bool = False                      # the kernel takes Python values for constant arguments
    fold: Callable[..., Any] | None = None     # Python values -> Python value (else: kernel on one row)
    validate: Callable[[Any], Any] | None = None   # checks a constant argument at bind time
    index: IndexHint | None = None
    aliases: tuple[str, ...] = ()              # other names, case-insensitive
    operators: tuple[str, ...] = ()            # SQL operators that mean this function
    nullable: str = "propagate"                # propagate | always | never
    output_name: Callable[[str, list[str]], str] | None = None   # (name as written, arg names)
    doc: str = ""

    def result_type(self, types: list[pa.DataType]) -> pa.DataType:
        r = self.returns
        if r is None:
            return _BOOL
        return r if isinstance(r, pa.DataType) else r(types)

    def column_name(self, written: str, arg_names: list[str]) -> str:
        """The result column ClickHouse names a call: its function form, the name as written."""
        if self.output_name is not None:
            return self.output_name(written, arg_names)
        return f"{written}({', '.join(arg_names)})"

    def arg_type(self, i: int) -> ArgType:
        """The declared type of argument i (a variadic tail repeats the last)."""
        return self.args[min(i, len(self.args) - 1)]

    def arity(self) -> tuple[int, int | None]:
        n = len(self.args)
        return (n, None) if self.variadic else (n, n)


#: The binder's rules (skipidx.expr.binder.Binder._bind_<rule>).
RULES = ("scalar", "comparison", "logical", "not", "null_test", "membership", "search", "string_map",
         "arithmetic", "negate", "aggregate")


def _cmp(op: str) -> Callable[..., Any]:
    return lambda a, b: K.compare(op, a, b)


def _arith(op: str) -> Callable[..., Any]:
    return lambda a, b: K.arithmetic(op, a, b)


def as_bool(a: pa.Array) -> pa.Array:
    """A logical operand: numbers are true iff non-zero (NULL stays NULL)."""
    t = a.type
    if pa.types.is_boolean(t):
        return a
    if pa.types.is_null(t):
        return pa.nulls(len(a), pa.bool_())
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return pc.not_equal(a, pa.scalar(0, t))
    from skipidx.core.errors import SkipidxError

    raise SkipidxError(f"Illegal type {t} of argument of a logical function")


def _ascii_map(to_lower: bool) -> Callable[[bytes], bytes]:
    src, dst = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz"
    table = bytes.maketrans(src, dst) if to_lower else bytes.maketrans(dst, src)
    return lambda v: v.translate(table)


def _validate_like(v: bytes) -> None:
    K.like(pa.array([], pa.string()), v)


def _validate_match(v: bytes) -> None:
    K.match(pa.array([], pa.string()), v)


_U64 = pa.uint64()

COMPARISON_FUNCTIONS = [
    Function("equals", "comparison", (ANY, ANY), kernel=_cmp("="), scalars=True, operators=("=", "=="),
             index=_hint("range", "set", "tokens")),
    Function("notEquals", "comparison", (ANY, ANY), kernel=_cmp("!="), scalars=True, operators=("!=", "<>"),
             index=_hint("range", "set", "tokens", negation_of="equals")),
    Function("less", "comparison", (ANY, ANY), kernel=_cmp("<"), scalars=True, operators=("<",),
             index=_hint("range")),
    Function("lessOrEquals", "comparison", (ANY, ANY), kernel=_cmp("<="), scalars=True, operators=("<=",),
             index=_hint("range")),
    Function("greater", "comparison", (ANY, ANY), kernel=_cmp(">"), scalars=True, operators=(">",),
             index=_hint("range")),
    Function("greaterOrEquals", "comparison", (ANY, ANY), kernel=_cmp(">="), scalars=True, operators=(">=",),
             index=_hint("range")),
    Function("in", "membership", (ANY, CONST_LIST), kernel=lambda a, v: K.is_in(a, v), scalars=True,
             index=_hint("range", "set", "tokens")),
    Function("notIn", "membership", (ANY, CONST_LIST), kernel=lambda a, v: K.is_in(a, v, negated=True),
             scalars=True, index=_hint("range", "set", "tokens", negation_of="in")),
    Function("isNull", "null_test", (ANY,), kernel=K.is_null, nullable="never", index=_hint("nulls")),
    Function("isNotNull", "null_test", (ANY,), kernel=K.is_not_null, nullable="never",
             index=_hint("nulls", negation_of="isNull")),
]

LOGICAL_FUNCTIONS = [
    Function("and", "logical", (NUMBER, NUMBER), variadic=True, kernel=lambda *a: K.and_(*map(as_bool, a))),
    Function("or", "logical", (NUMBER, NUMBER), variadic=True, kernel=lambda *a: K.or_(*map(as_bool, a))),
    Function("not", "not", (NUMBER,), kernel=lambda a: K.not_(as_bool(a))),
]


def _like(negated: bool, ci: bool) -> Callable[..., Any]:
    return lambda a, p: K.like(a, p, negated=negated, case_insensitive=ci)


STRING_FUNCTIONS = [
    Function("hasToken", "search", (STRING, CONST_STRING), kernel=K.has_token, scalars=True,
             validate=K.check_token_needle, index=_hint("tokens")),
    Function("hasTokenOrNull", "search", (STRING, CONST_STRING), kernel=K.has_token_or_null, scalars=True,
             nullable="always", index=_hint("tokens")),
    Function("hasTokenCaseInsensitive", "search", (STRING, CONST_STRING), kernel=K.has_token_case_insensitive,
             scalars=True, validate=K.check_token_needle,
             index=_hint("tokens", case_insensitive_of="hasToken")),
    Function("hasAnyTokens", "search", (STRING, CONST_TOKENS), kernel=lambda a, v: K.has_tokens(a, v, False),
             scalars=True, index=_hint("tokens")),
    Function("hasAllTokens", "search", (STRING, CONST_TOKENS), kernel=lambda a, v: K.has_tokens(a, v, True),
             scalars=True, index=_hint("tokens")),
    Function("startsWith", "search", (STRING, CONST_STRING), kernel=K.starts_with, scalars=True,
             index=_hint("tokens", "range")),
    Function("endsWith", "search", (STRING, CONST_STRING), kernel=K.ends_with, scalars=True,
             index=_hint("tokens")),
    Function("like", "search", (STRING, CONST_STRING), kernel=_like(False, False), scalars=True,
             validate=_validate_like, operators=("LIKE",), index=_hint("tokens")),
    Function("notLike", "search", (STRING, CONST_STRING), kernel=_like(True, False), scalars=True,
             validate=_validate_like, operators=("NOT LIKE",), index=_hint("tokens", negation_of="like")),
    Function("ilike", "search", (STRING, CONST_STRING), kernel=_like(False, True), scalars=True,
             validate=_validate_like, operators=("ILIKE",)),
    Function("notILike", "search", (STRING, CONST_STRING), kernel=_like(True, True), scalars=True,
             validate=_validate_like, operators=("NOT ILIKE",)),
    Function("match", "search", (STRING, CONST_STRING), kernel=K.match, scalars=True, validate=_validate_match,
             index=_hint("tokens")),
    Function("multiSearchAny", "search", (STRING, CONST_ARRAY_STRING), kernel=K.multi_search_any, scalars=True,
             index=_hint("tokens")),
    Function("lower", "string_map", (STRING,), returns=SAME_AS_FIRST, kernel=K.lower, fold=_ascii_map(True),
             aliases=("lcase",)),
    Function("upper", "string_map", (STRING,), returns=SAME_AS_FIRST, kernel=K.upper, fold=_ascii_map(False),
             aliases=("ucase",)),
    Function("length", "string_map", (STRING,), returns=_U64, kernel=K.length, fold=len),
]

ARITHMETIC_FUNCTIONS = [
    Function("plus", "arithmetic", (NUMBER, NUMBER), kernel=_arith("+"), scalars=True, operators=("+",)),
    Function("minus", "arithmetic", (NUMBER, NUMBER), kernel=_arith("-"), scalars=True, operators=("-",)),
    Function("multiply", "arithmetic", (NUMBER, NUMBER), kernel=_arith("*"), scalars=True, operators=("*",)),
    Function("divide", "arithmetic", (NUMBER, NUMBER), kernel=_arith("/"), scalars=True, operators=("/",)),
    Function("modulo", "arithmetic", (NUMBER, NUMBER), kernel=_arith("%"), scalars=True, operators=("%",)),
    Function("negate", "negate", (NUMBER,), kernel=K.negate),
]


def _count_name(written: str, arg_names: list[str]) -> str:
    """``COUNT(*)`` is named ``COUNT()``."""
    if written.lower() == "count" and arg_names == ["*"]:
        arg_names = []
    return f"{written}({', '.join(arg_names)})"


#: Computed by skipidx.execution.aggregates (no row kernel): the binder types them.
AGGREGATE_FUNCTIONS = [
    Function("count", "aggregate", (ANY,), returns=_U64, output_name=_count_name),
    Function("sum", "aggregate", (NUMBER,)),
    Function("avg", "aggregate", (NUMBER,), returns=pa.float64()),
    Function("min", "aggregate", (ANY,), returns=SAME_AS_FIRST),
    Function("max", "aggregate", (ANY,), returns=SAME_AS_FIRST),
    Function("uniqExact", "aggregate", (ANY,), variadic=True, returns=_U64, aliases=("countDistinct",)),
]

#: The BCall function holding the arguments of a multi-argument uniqExact (only there).
TUPLE_FUNC = "tuple"


# ---------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------


@dataclass
class Catalogue:
    """Functions by canonical name, by lower-case name or alias, and by SQL operator."""

    functions: dict[str, Function] = field(default_factory=dict)
    _by_key: dict[str, Function] = field(default_factory=dict)
    _by_operator: dict[str, Function] = field(default_factory=dict)

    def add(self, fn: Function) -> Function:
        if fn.rule not in RULES:
            raise ValueError(f"function {fn.name}: unknown rule {fn.rule!r}; rules: {', '.join(RULES)}")
        for key in (fn.name, *fn.aliases):
            k = key.lower()
            if k in self._by_key:
                raise ValueError(f"function name {key!r} is declared twice")
            self._by_key[k] = fn
        for op in fn.operators:
            self._by_operator[op] = fn
        self.functions[fn.name] = fn
        return fn

    def extend(self, fns: Iterable[Function]) -> None:
        for fn in fns:
            self.add(fn)

    def lookup(self, name: str) -> Function | None:
        """The function a name (any case, or an alias) means; None if unknown."""
        return self._by_key.get(name.lower())

    def __getitem__(self, canonical: str) -> Function:
        return self.functions[canonical]

    def get(self, canonical: str) -> Function | None:
        return self.functions.get(canonical)

    def operator(self, op: str) -> Function:
        return self._by_operator[op]

    def __iter__(self):
        return iter(self.functions.values())

    def names(self) -> list[str]:
        return sorted(self.functions)

    def atoms(self) -> frozenset[str]:
        """Functions an index can answer as a positive atom."""
        return frozenset(f.name for f in self if f.index is not None and f.index.negation_of is None)

    def negations(self) -> dict[str, str]:
        """Negated functions and the positive atom they are NOT of."""
        return {f.name: f.index.negation_of for f in self if f.index is not None and f.index.negation_of}

    def learning(self, kind: str) -> frozenset[str]:
        """Functions (positive and negated) from which an index of `kind` can learn."""
        return frozenset(f.name for f in self if f.index is not None and kind in f.index.learns)


CATALOGUE = Catalogue()
for _group in (COMPARISON_FUNCTIONS, LOGICAL_FUNCTIONS, STRING_FUNCTIONS, ARITHMETIC_FUNCTIONS,
               AGGREGATE_FUNCTIONS):
    CATALOGUE.extend(_group)


def lookup(name: str) -> Function | None:
    return CATALOGUE.lookup(name)
