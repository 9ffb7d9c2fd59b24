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

from dataclasses import field
from skipidx.core.dataclass_codes import dataclass
from typing import Any, Callable, Iterable

import pyarrow as pa
from skipidx.core.lazy import compute as pc

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
_CONST_INT = ArgType("const Integer", is_int, const=True)

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
    scalar_args: tuple[int, ...] = ()          # ...or only these arguments do, when constant
    fold: Callable[..., Any] | None = None     # Python values -> Python value (else: kernel on one row)
    validate: Callable[[Any], Any] | None = None   # checks a constant argument at bind time
    index: IndexHint | None = None
    aliases: tuple[str, ...] = ()              # other names, case-insensitive
    operators: tuple[str, ...] = ()            # SQL operators that mean this function
    nullable: str = "propagate"                # propagate | always | never
    output_name: Callable[[str, list[str]], str] | None = None   # (name as written, arg names)
    doc: str = ""
    # rule "typed": (argument types, constant values or None) -> (result type, nullable or None to propagate)
    typed: Callable[[list[pa.DataType], list[Any]], tuple[pa.DataType, bool | None]] | None = None
    min_args: int | None = None                # trailing arguments are optional down to this many
    constant: bool = False                     # the binder always folds a call (no row kernel)
    #: a new value on every row (generateUUIDv4, rand): never folded; the kernel takes
    #: the row count only (the optional argument just keeps identical calls apart)
    per_row: bool = False
    #: a new value for every query (now, today): folded when the query is bound, so a
    #: plan that holds one is bound again by the next query instead of reused
    per_query: bool = False

    @property
    def folds(self) -> bool:
        """A call whose arguments are all constants is a constant (not for per-row functions,
        nor arrayJoin, which makes rows)."""
        return not self.per_row and self.name != "arrayJoin"
    #: an index may be declared on f(column) (``INDEX i lower(msg) ...``): the store runs
    #: the kernel over the column, the planner the fold over query constants
    index_expression: bool = False

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
        lo = n if self.min_args is None else self.min_args
        return (lo, None) if self.variadic else (lo, n)


#: The binder's rules (skipidx.expr.binder.Binder._bind_<rule>).
RULES = ("scalar", "comparison", "logical", "not", "null_test", "membership", "search", "string_map",
         "arithmetic", "negate", "aggregate", "typed", "conditional", "interval", "type_of", "tuple_element",
         "higher_order", "array")


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
    K.like(pa.nulls(0, pa.string()), v)


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
    Function("hasTokenCaseInsensitiveOrNull", "search", (STRING, CONST_STRING),
             kernel=lambda a, v: K.has_token_or_null(a, v, case_insensitive=True), scalars=True, nullable="always",
             index=_hint("tokens", case_insensitive_of="hasTokenOrNull")),
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
             validate=_validate_like, operators=("ILIKE",), index=_hint("tokens", case_insensitive_of="like")),
    Function("notILike", "search", (STRING, CONST_STRING), kernel=_like(True, True), scalars=True,
             validate=_validate_like, operators=("NOT ILIKE",)),
    Function("match", "search", (STRING, CONST_STRING), kernel=K.match, scalars=True, validate=_validate_match,
             index=_hint("tokens")),
    Function("multiSearchAny", "search", (STRING, CONST_ARRAY_STRING), kernel=K.multi_search_any, scalars=True,
             index=_hint("tokens")),
    Function("lower", "string_map", (STRING,), returns=SAME_AS_FIRST, kernel=K.lower, fold=_ascii_map(True),
             aliases=("lcase",), index_expression=True),
    Function("upper", "string_map", (STRING,), returns=SAME_AS_FIRST, kernel=K.upper, fold=_ascii_map(False),
             aliases=("ucase",)),
    Function("length", "string_map", (STRING,), returns=_U64, kernel=lambda a: _length(a), fold=len),
]

ARITHMETIC_FUNCTIONS = [
    Function("plus", "arithmetic", (NUMBER, NUMBER), kernel=_arith("+"), scalars=True, operators=("+",)),
    Function("minus", "arithmetic", (NUMBER, NUMBER), kernel=_arith("-"), scalars=True, operators=("-",)),
    Function("multiply", "arithmetic", (NUMBER, NUMBER), kernel=_arith("*"), scalars=True, operators=("*",)),
    Function("divide", "arithmetic", (NUMBER, NUMBER), kernel=_arith("/"), scalars=True, operators=("/",)),
    Function("modulo", "arithmetic", (NUMBER, NUMBER), kernel=_arith("%"), scalars=True, operators=("%",)),
    Function("negate", "negate", (NUMBER,), kernel=K.negate),
    Function("intDiv", "typed", (NUMBER, NUMBER), typed=lambda ts, cs: (_int_div_type(ts), None),
             kernel=lambda a, b: _int_div(a, b), doc="integer division, rounding toward zero"),
    Function("identity", "typed", (ANY,), typed=lambda ts, cs: (ts[0], None), kernel=lambda a: a),
]


# --- strings beyond search (kernels: skipidx.expr.kernels.text) ---------------

_STR = pa.string()
_TEXT_OR_NUMBER = ArgType("String or number", lambda t: is_string(t) or is_numeric(t) or pa.types.is_date(t)
                          or pa.types.is_timestamp(t))
_TEMPORAL = ArgType("Date or DateTime", lambda t: pa.types.is_date(t) or pa.types.is_timestamp(t))
_TO_DATE_SRC = ArgType("String, number, Date or DateTime",
                       lambda t: is_string(t) or is_numeric(t) or pa.types.is_date(t) or pa.types.is_timestamp(t))


def _canonical_name(name: str) -> Callable[[str, list[str]], str]:
    return lambda written, arg_names: f"{name}({', '.join(arg_names)})"


def _text_k(name: str, **kw: Any) -> Callable[..., Any]:
    from skipidx.expr.kernels import text as T

    return getattr(T, name) if not kw else (lambda *a: getattr(T, name)(*a, **kw))


_ARRAY = ArgType("Array", lambda t: pa.types.is_list(t) or pa.types.is_large_list(t))
CONST_LIST_OR_ARRAY = ArgType("const Array", _any, const=True)

TEXT_FUNCTIONS = [
    Function("concat", "typed", (_TEXT_OR_NUMBER, _TEXT_OR_NUMBER), variadic=True,
             typed=lambda ts, cs: (_STR, None),
             kernel=lambda *a: _text_k("concat")(*[_as_text(x) for x in a]), operators=("||",),
             doc="the arguments' text joined (numbers as toString writes them)"),
    Function("lengthUTF8", "scalar", (STRING,), returns=_U64, kernel=_text_k("length_utf8"),
             aliases=("char_length", "character_length")),
    Function("upperUTF8", "scalar", (STRING,), returns=_STR, kernel=_text_k("upper_utf8")),
    Function("lowerUTF8", "scalar", (STRING,), returns=_STR, kernel=_text_k("lower_utf8")),
    Function("substring", "scalar", (STRING, INTEGER, INTEGER), returns=_STR, min_args=2,
             kernel=lambda a, o, n=None: _text_k("substring")(a, _int_or_array(o), None if n is None else _int_or_array(n)),
             aliases=("substr", "mid")),
    Function("position", "scalar", (STRING, CONST_STRING), returns=_U64,
             kernel=lambda a, nd: _text_k("position")(a, nd), aliases=("locate",)),
    Function("positionCaseInsensitive", "scalar", (STRING, CONST_STRING), returns=_U64,
             kernel=lambda a, nd: _text_k("position")(a, nd, True)),
    Function("replaceAll", "scalar", (STRING, CONST_STRING, CONST_STRING), returns=_STR,
             kernel=_text_k("replace_all"), aliases=("replace",)),
    Function("replaceRegexpAll", "scalar", (STRING, CONST_STRING, CONST_STRING), returns=_STR,
             kernel=_text_k("replace_regexp_all"), aliases=("REGEXP_REPLACE",)),
    Function("extract", "scalar", (STRING, CONST_STRING), returns=_STR, kernel=_text_k("extract")),
    # ClickHouse's parser rewrites trim/ltrim/rtrim, so the column is named by the canonical name
    Function("trimBoth", "scalar", (STRING,), returns=_STR, kernel=_text_k("trim"), aliases=("trim",),
             output_name=_canonical_name("trimBoth")),
    Function("trimLeft", "scalar", (STRING,), returns=_STR, kernel=_text_k("trim", left=True, right=False),
             aliases=("ltrim",), output_name=_canonical_name("trimLeft")),
    Function("trimRight", "scalar", (STRING,), returns=_STR, kernel=_text_k("trim", left=False, right=True),
             aliases=("rtrim",), output_name=_canonical_name("trimRight")),
    Function("reverse", "scalar", (STRING,), returns=_STR, kernel=_text_k("reverse"),
             doc="the bytes in reverse order"),
    Function("hex", "scalar", (ArgType("String, FixedString or integer", lambda t: is_string(t) or is_int(t)
                                       or pa.types.is_fixed_size_binary(t)),), returns=_STR, kernel=_text_k("hex_")),
    Function("unhex", "scalar", (STRING,), returns=_STR, kernel=_text_k("unhex")),
    Function("countSubstrings", "scalar", (STRING, CONST_STRING), returns=_U64, kernel=_text_k("count_substrings")),
    Function("splitByString", "scalar", (CONST_STRING, STRING), returns=pa.list_(pa.field("item", _STR, nullable=False)),
             kernel=_text_k("split_by_string")),
    *(Function(f"{side}{'UTF8' if utf8 else ''}", "scalar", (STRING, _CONST_INT), returns=_STR,
               kernel=(lambda r, u: lambda a, n: _text_k("left_right")(a, n, r, u))(side == "right", utf8))
      for side in ("left", "right") for utf8 in (False, True)),
    Function("repeat", "scalar", (STRING, INTEGER), returns=_STR, kernel=_text_k("repeat"), scalar_args=(1,)),
    Function("arrayStringConcat", "scalar", (_ARRAY, CONST_STRING), returns=_STR, min_args=1,
             kernel=_text_k("array_string_concat"), doc="the items' text joined by a separator"),
    Function("splitByChar", "scalar", (CONST_STRING, STRING), returns=pa.list_(pa.field("item", _STR, nullable=False)),
             kernel=_text_k("split_by_char")),
    Function("has", "scalar", (_ARRAY, ANY), kernel=lambda a, v: _text_k("has")(a, v), scalar_args=(1,),
             index=_hint("set", "tokens"), doc="x is an element of the array (indexes answer it per element)"),
    Function("hasAny", "scalar", (_ARRAY, CONST_LIST_OR_ARRAY), kernel=lambda a, v: _text_k("has_any")(a, v),
             index=_hint("set", "tokens")),
    Function("hasAll", "scalar", (_ARRAY, CONST_LIST_OR_ARRAY), kernel=lambda a, v: _text_k("has_all")(a, v),
             index=_hint("set", "tokens")),
    Function("arrayJoin", "typed", (_ARRAY,), typed=lambda ts, cs: (ts[0].value_type, ts[0].value_field.nullable),
             kernel=lambda a: _array_join_elsewhere(),
             doc="one row per element; the SELECT runner expands the rows (skipidx.execution.select)"),
    Function("arrayElement", "typed", (_ARRAY, INTEGER), typed=lambda ts, cs: _array_element_type(ts, cs),
             kernel=lambda a, i: _array_element(a, i),
             doc="arr[i]: 1-based, negative from the end; out of range, the element type's default"),
    # constant: the binder replaces the call by the element's own expression (no row kernel)
    Function("tupleElement", "tuple_element", (ANY, _CONST_INT), constant=True,
             doc="t.N: the N-th element (negative: from the end) of a tuple written in the query"),
    *(Function(name, "higher_order", (ANY, _ARRAY), variadic=True, kernel=lambda *a: _lambda_elsewhere(), doc=doc)
      for name, doc in (("arrayMap", "the lambda's value for each element (of several arrays: element-wise)"),
                        ("arrayFilter", "the elements of the first array for which the lambda is true"),
                        ("arrayExists", "1 if the lambda is true for some element"),
                        ("arrayCount", "how many elements the lambda is true for"))),
    Function("array", "array", (ANY,), variadic=True, kernel=lambda *a: _build_array(*a), scalar_args=(0,),
             doc="[a, b, ...] of row values: one array per row, items of the arguments' least supertype"),
    # bound by the binder for (a, b) IN ((...), ...) (never called by name: rule "membership" needs 2 args)
    Function("tupleIn", "membership", (ANY, ANY), variadic=True, kernel=lambda rows, *c: _tuple_in(rows, *c),
             scalar_args=(0,), doc="the row's tuple of the columns is one of the listed tuples"),
    Function("empty", "scalar", (STRING,), kernel=_text_k("empty")),
    Function("notEmpty", "scalar", (STRING,), kernel=_text_k("not_empty")),
]


def _array_element_type(ts: list[pa.DataType], cs: list[Any]) -> tuple[pa.DataType, bool | None]:
    from skipidx.core.errors import SkipidxError

    if cs[0] is None and cs[1] is not None and not isinstance(cs[1], bool) and cs[1] == 0:
        # ClickHouse refuses a constant 0 over a column (a constant array reads the default)
        raise SkipidxError("Array indices are 1-based (ZERO_ARRAY_OR_TUPLE_INDEX)")
    t = ts[0]
    return t.value_type, (True if t.value_field.nullable else None)


def _array_element(a: Any, i: Any) -> Any:
    from skipidx.expr.kernels.arrays import array_element

    return array_element(a, i)


def _build_array(nullable: Any, *items: Any) -> Any:
    """One list per row of the item arrays (each already of the element type): row i holds
    items[0][i], items[1][i], ... -- a single take over the concatenated items. `nullable`
    (the binder's first, constant argument): whether the items are Nullable."""
    import numpy as np

    cols = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in items]
    n, k = len(cols[0]), len(cols)
    flat = pa.concat_arrays(cols) if k > 1 else cols[0]
    order = (np.arange(k, dtype=np.int64)[None, :] * n + np.arange(n, dtype=np.int64)[:, None]).ravel()
    values = flat.take(pa.array(order))
    offsets = pa.array(np.arange(n + 1, dtype=np.int32) * k)
    t = pa.list_(pa.field("item", values.type, nullable=bool(nullable)))
    return pa.ListArray.from_arrays(offsets, values, type=t)


def _tuple_in(rows: Any, *cols: Any) -> Any:
    """1 where the row's values of `cols` equal one of `rows` (tuples of values coerced to the
    columns' types), else 0 (NULL components too): each column coded by its index in its
    distinct listed values, codes combined in mixed radix (re-densified before they could
    overflow), then one isin."""
    import numpy as np

    code = np.zeros(len(cols[0]), dtype=np.int64)
    valid = np.ones(len(cols[0]), dtype=bool)
    rcode = np.zeros(len(rows), dtype=np.int64)
    size = 1
    for j, c in enumerate(cols):
        c = c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
        if pa.types.is_dictionary(c.type):
            c = c.cast(c.type.value_type)
        distinct = list(dict.fromkeys(r[j] for r in rows))
        pos = {v: i for i, v in enumerate(distinct)}
        idx = pc.index_in(c, value_set=pa.array(distinct, c.type))
        valid &= idx.is_valid().to_numpy(zero_copy_only=False)
        code = code * len(distinct) + idx.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        rcode = rcode * len(distinct) + np.array([pos[r[j]] for r in rows], dtype=np.int64)
        size *= len(distinct)
        if size > 1 << 40:
            uniq, inv = np.unique(np.concatenate([rcode, code]), return_inverse=True)
            rcode, code, size = inv[:len(rcode)].astype(np.int64), inv[len(rcode):].astype(np.int64), len(uniq)
    return pa.array((valid & np.isin(code, rcode)).astype(np.uint8))


def _lambda_elsewhere() -> Any:
    raise AssertionError("a function with a lambda is evaluated by skipidx.expr.evaluate (higher_order)")


def _array_join_elsewhere() -> Any:
    from skipidx.core.errors import SkipidxError

    raise SkipidxError("arrayJoin is supported in the SELECT list, GROUP BY, HAVING and ORDER BY, not here")


def _length(a: Any) -> Any:
    """length of a String (bytes) or of an Array (elements)."""
    t = a.type.value_type if pa.types.is_dictionary(a.type) else a.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _text_k("array_length")(a)
    return K.length(a)


def _int_or_array(v: Any) -> Any:
    return v


def _as_text(a: Any) -> Any:
    """concat's non-String arguments as their text."""
    from skipidx.expr.kernels import convert as C

    t = a.type.value_type if pa.types.is_dictionary(a.type) else a.type
    return a if is_string(t) else C.to_string(a)


# --- dates and times (kernels: skipidx.expr.kernels.datetime) -------------------

def _dt_k(name: str, *fixed: Any) -> Callable[..., Any]:
    from skipidx.expr.kernels import datetime as D

    fn = getattr(D, name)
    return (lambda *a: fn(*a, *fixed)) if fixed else fn


def _start_of_interval_type(ts: list[pa.DataType], cs: list[Any]) -> tuple[pa.DataType, None]:
    iv = cs[1]
    if not (isinstance(iv, tuple) and len(iv) == 2 and isinstance(iv[0], str)):
        raise _bind_error("toStartOfInterval: the second argument must be INTERVAL n unit")
    unit = iv[0]
    if unit in ("week", "month", "quarter", "year"):
        return _DATE, None
    if unit not in ("second", "minute", "hour", "day"):
        raise _bind_error(f"toStartOfInterval: unsupported interval unit {unit}")
    t = value_type(ts[0])
    if pa.types.is_date(t):
        if unit != "day":
            raise _bind_error(f"toStartOfInterval: illegal interval kind {unit} for a Date")
        return pa.timestamp("s"), None
    return pa.timestamp("s", t.tz if pa.types.is_timestamp(t) else None), None


def _same_zone_seconds(ts: list[pa.DataType]) -> tuple[pa.DataType, None]:
    t = ts[0]
    return pa.timestamp("s", t.tz if pa.types.is_timestamp(t) else None), None


def _part(which: str, out: pa.DataType, name: str, *aliases: str) -> Function:
    return Function(name, "scalar", (_TEMPORAL,), returns=out, kernel=_dt_k("part", which), aliases=aliases)


_DATE = pa.date32()
DATETIME_FUNCTIONS = [
    _part("year", pa.uint16(), "toYear", "YEAR"),
    _part("quarter", pa.uint8(), "toQuarter", "QUARTER"),
    _part("month", pa.uint8(), "toMonth", "MONTH"),
    _part("day", pa.uint8(), "toDayOfMonth", "DAY", "DAYOFMONTH"),
    _part("day_of_week", pa.uint8(), "toDayOfWeek", "DAYOFWEEK"),
    _part("day_of_year", pa.uint16(), "toDayOfYear", "DAYOFYEAR"),
    _part("hour", pa.uint8(), "toHour", "HOUR"),
    _part("minute", pa.uint8(), "toMinute", "MINUTE"),
    _part("second", pa.uint8(), "toSecond", "SECOND"),
    _part("yyyymm", pa.uint32(), "toYYYYMM"),
    _part("yyyymmdd", pa.uint32(), "toYYYYMMDD"),
    Function("toStartOfMinute", "typed", (_TEMPORAL,), typed=lambda ts, cs: _same_zone_seconds(ts),
             kernel=_dt_k("start_of", "minute")),
    Function("toStartOfHour", "typed", (_TEMPORAL,), typed=lambda ts, cs: _same_zone_seconds(ts),
             kernel=_dt_k("start_of", "hour")),
    Function("toStartOfDay", "typed", (_TEMPORAL,), typed=lambda ts, cs: _same_zone_seconds(ts),
             kernel=_dt_k("start_of", "day")),
    Function("toStartOfWeek", "scalar", (_TEMPORAL,), returns=_DATE, kernel=_dt_k("start_of", "week")),
    Function("toStartOfMonth", "scalar", (_TEMPORAL,), returns=_DATE, kernel=_dt_k("start_of", "month")),
    Function("toStartOfQuarter", "scalar", (_TEMPORAL,), returns=_DATE, kernel=_dt_k("start_of", "quarter")),
    Function("toStartOfYear", "scalar", (_TEMPORAL,), returns=_DATE, kernel=_dt_k("start_of", "year")),
    Function("dateDiff", "scalar", (CONST_STRING, _TEMPORAL, _TEMPORAL), returns=pa.int64(),
             kernel=lambda u, a, b: _dt_k("date_diff")(u, a, b), validate=lambda u: _check_unit(u),
             aliases=("date_diff", "timestampDiff"), output_name=_canonical_name("dateDiff")),
    Function("toUnixTimestamp", "scalar", (_TO_DATE_SRC,), returns=pa.uint32(), kernel=_dt_k("to_unix_timestamp"),
             doc="seconds since the epoch"),
    Function("toMonday", "scalar", (_TEMPORAL,), returns=_DATE, kernel=_dt_k("to_monday")),
    Function("toStartOfInterval", "typed", (_TEMPORAL, CONST_LIST), typed=lambda ts, cs: _start_of_interval_type(ts, cs),
             kernel=lambda a, iv: _dt_k("start_of_interval")(a, *iv),
             doc="toStartOfInterval(t, INTERVAL n unit): the start of t's interval of n units"),
    Function("toLastDayOfMonth", "scalar", (_TEMPORAL,), returns=_DATE, kernel=_dt_k("to_last_day_of_month"),
             aliases=("LAST_DAY",)),
    Function("toISOWeek", "scalar", (_TEMPORAL,), returns=pa.uint8(), kernel=_dt_k("iso_part", "week")),
    Function("toISOYear", "scalar", (_TEMPORAL,), returns=pa.uint16(), kernel=_dt_k("iso_part", "year")),
    Function("minusTemporal", "typed", (_TEMPORAL, _TEMPORAL), typed=lambda ts, cs: (pa.int32(), None),
             kernel=lambda a, b: _dt_k("minus_temporal")(a, b),
             doc="Date - Date (days), DateTime - DateTime (seconds): Int32 (the binder makes it from minus)"),
    Function("formatDateTime", "scalar", (_TEMPORAL, CONST_STRING, CONST_STRING), returns=_STR, min_args=2,
             kernel=_dt_k("format_datetime"), validate=lambda f: _dt_k("format_pieces")(f),
             aliases=("DATE_FORMAT",), doc="the value's text by ClickHouse's (MySQL-style) %-specifiers"),
    *(Function(f"toStartOf{word}Minutes", "typed", (_TEMPORAL,), typed=lambda ts, cs: _same_zone_seconds(ts),
               kernel=(lambda k, nm: lambda a: _dt_k("start_of_minutes")(a, k, nm))(k, f"toStartOf{word}Minutes"),
               aliases=(f"toStartOf{word}Minute",) if word == "Five" else ())
      for word, k in (("Five", 5), ("Ten", 10), ("Fifteen", 15))),
    Function("now", "scalar", (), returns=pa.timestamp("s"), fold=lambda: _dt_k("now")(),
             kernel=lambda: _dt_k("now")(), aliases=("current_timestamp",), per_query=True),
    Function("today", "scalar", (), returns=_DATE, fold=lambda: _dt_k("today")(), kernel=lambda: _dt_k("today")(),
             aliases=("curdate", "current_date"), per_query=True),
    # a connection's database is ClickHouse's current database, `default` (engine/system_tables.py)
    Function("currentDatabase", "scalar", (), returns=_STR, fold=lambda: "default", kernel=lambda: "default",
             aliases=("database", "current_database"), doc="the current database: 'default'"),
    Function("addInterval", "interval", (_TEMPORAL, CONST_LIST), kernel=lambda a, iv: _dt_k("add_interval")(a, *iv),
             doc="d + INTERVAL n unit (the binder makes it from plus/minus)"),
]

def _add_units_type(ts: list[pa.DataType], unit: str) -> tuple[pa.DataType, None]:
    """A Date plus a sub-day unit is a DateTime; anything else keeps its type."""
    t = value_type(ts[0])
    if pa.types.is_date(t) and unit in ("second", "minute", "hour"):
        return pa.timestamp("s"), None
    return t, None


def _add_units(verb: str, unit: str) -> Function:
    sign = 1 if verb == "add" else -1
    return Function(f"{verb}{unit.capitalize()}s", "typed", (_TEMPORAL, INTEGER),
                    typed=lambda ts, cs: _add_units_type(ts, unit), scalar_args=(1,),
                    kernel=lambda a, n: _dt_k("add_units")(a, n, unit, sign),
                    doc=f"{'plus' if sign > 0 else 'minus'} n {unit}s (Date/DateTime {'+' if sign > 0 else '-'} n "
                        f"is {verb}{'Days' if unit == 'day' else 'Seconds'})")


ADD_UNITS_FUNCTIONS = [_add_units(verb, unit) for verb in ("add", "subtract")
                       for unit in ("second", "minute", "hour", "day", "week", "month", "quarter", "year")]

_INTERVAL_UNITS = ("Nanosecond", "Microsecond", "Millisecond", "Second", "Minute", "Hour", "Day", "Week", "Month",
                   "Quarter", "Year")
INTERVAL_FUNCTIONS = [
    Function(f"toInterval{u}", "interval", (INTEGER,), constant=True, doc=f"INTERVAL n {u.upper()}")
    for u in _INTERVAL_UNITS
]


def _check_unit(u: Any) -> None:
    from skipidx.expr.kernels import datetime as D

    D.date_diff(u, pa.array([0], pa.timestamp("s")), pa.array([0], pa.timestamp("s")))


# --- conversions (kernels: skipidx.expr.kernels.convert / datetime) -------------

def _conv(kind: str, type_name: str = "", on_error: str = "raise") -> Callable[..., Any]:
    from skipidx.expr.kernels import convert as C
    from skipidx.expr.kernels import datetime as D

    if kind == "int":
        return lambda a: C.to_int(a, type_name, on_error)
    if kind == "float":
        return lambda a: C.to_float(a, type_name, on_error)
    if kind == "date":
        return lambda a: _or_error(a, on_error, lambda x: D.to_date(x), lambda x: D.parse_datetime(
            x, "toDate", date_only=True, on_error=on_error))
    raise AssertionError(kind)


def _or_error(a: Any, on_error: str, plain: Callable, text: Callable) -> Any:
    t = a.type.value_type if pa.types.is_dictionary(a.type) else a.type
    return text(a) if (is_string(t) and on_error != "raise") else plain(a)


def _ints() -> list[Function]:
    out = []
    for name, t in (("Int8", pa.int8()), ("Int16", pa.int16()), ("Int32", pa.int32()), ("Int64", pa.int64()),
                    ("UInt8", pa.uint8()), ("UInt16", pa.uint16()), ("UInt32", pa.uint32()),
                    ("UInt64", pa.uint64())):
        out += [Function(f"to{name}", "scalar", (ANY,), returns=t, kernel=_conv("int", name)),
                Function(f"to{name}OrZero", "scalar", (STRING,), returns=t, kernel=_conv("int", name, "zero")),
                Function(f"to{name}OrNull", "scalar", (STRING,), returns=t, kernel=_conv("int", name, "null"),
                         nullable="always")]
    for name, t in (("Float32", pa.float32()), ("Float64", pa.float64())):
        out += [Function(f"to{name}", "scalar", (ANY,), returns=t, kernel=_conv("float", name)),
                Function(f"to{name}OrZero", "scalar", (STRING,), returns=t, kernel=_conv("float", name, "zero")),
                Function(f"to{name}OrNull", "scalar", (STRING,), returns=t, kernel=_conv("float", name, "null"),
                         nullable="always")]
    return out


def _datetime_type(ts: list[pa.DataType], cs: list[Any], precision_arg: int | None) -> tuple[pa.DataType, None]:
    p = None
    tz_i = 1
    if precision_arg is not None:
        p = cs[precision_arg]
        if not isinstance(p, int) or not 0 <= p <= 9:
            raise _bind_error("toDateTime64: the precision must be a constant 0..9")
        tz_i = 2
    tz = cs[tz_i] if len(cs) > tz_i else None
    if isinstance(tz, bytes):
        tz = tz.decode()
    unit = "s" if not p else "ms" if p <= 3 else "us" if p <= 6 else "ns"
    return pa.timestamp(unit, tz), None


def _bind_error(msg: str) -> Exception:
    from skipidx.core.errors import SkipidxError

    return SkipidxError(msg)


def _to_datetime(on_error: str, precision: bool, best_effort: bool = False) -> Callable[..., Any]:
    from skipidx.expr.kernels import datetime as D

    def k(a: Any, *consts: Any) -> Any:
        p = consts[0] if precision else None
        tz = consts[1 if precision else 0] if len(consts) > (1 if precision else 0) else None
        tz = tz.decode() if isinstance(tz, bytes) else tz
        t = a.type.value_type if pa.types.is_dictionary(a.type) else a.type
        if is_string(t) and (on_error != "raise" or best_effort):
            unit = "s" if not p else "ms" if p <= 3 else "us" if p <= 6 else "ns"
            naive = D.parse_datetime(a, "parseDateTimeBestEffort" if best_effort else "toDateTime", unit=unit,
                                     on_error=on_error, best_effort=best_effort)
            return D.to_datetime(naive, tz, p)
        return D.to_datetime(a, tz, p, "toDateTime64" if precision else "toDateTime")
    return k




def _datetimes() -> list[Function]:
    out = [Function("toDate", "scalar", (_TO_DATE_SRC,), returns=_DATE, kernel=_conv("date"), aliases=("DATE",)),
           Function("toDateOrZero", "scalar", (STRING,), returns=_DATE, kernel=_conv("date", on_error="zero")),
           Function("toDateOrNull", "scalar", (STRING,), returns=_DATE, kernel=_conv("date", on_error="null"),
                    nullable="always")]
    for suffix, mode, nullable in (("", "raise", "propagate"), ("OrZero", "zero", "propagate"),
                                   ("OrNull", "null", "always")):
        src = _TO_DATE_SRC if not suffix else STRING
        out.append(Function(f"toDateTime{suffix}", "typed", (src, CONST_STRING),
                            typed=lambda ts, cs: _datetime_type(ts, cs, None), kernel=_to_datetime(mode, False),
                            nullable=nullable, min_args=1))
        out.append(Function(f"toDateTime64{suffix}", "typed", (src, _CONST_INT, CONST_STRING),
                            typed=lambda ts, cs: _datetime_type(ts, cs, 1), kernel=_to_datetime(mode, True),
                            nullable=nullable, min_args=2))
        out.append(Function(f"parseDateTimeBestEffort{suffix}", "typed", (STRING, CONST_STRING),
                            typed=lambda ts, cs: _datetime_type(ts, cs, None),
                            kernel=_to_datetime("raise" if not suffix else mode, False, best_effort=True),
                            nullable=nullable, min_args=1))
    return out


def _cast_type(ts: list[pa.DataType], cs: list[Any]) -> tuple[pa.DataType, bool]:
    from skipidx.core.types import parse_type

    target = cs[1]
    if not isinstance(target, (bytes, str)):
        raise _bind_error("CAST: the type must be a constant string")
    ct = parse_type(target.decode() if isinstance(target, bytes) else target)
    return ct.arrow_type, ct.nullable


def _cast_kernel(a: Any, target: Any) -> Any:
    from skipidx.core.types import cast_to, parse_type
    from skipidx.expr.kernels import convert as C
    from skipidx.expr.kernels import datetime as D

    ct = parse_type(target.decode() if isinstance(target, bytes) else target)
    base = ct.base_name if not ct.low_cardinality else "String"
    if base in C.INT_TYPES:
        return C.to_int(a, base)
    if base in C.FLOAT_TYPES:
        return C.to_float(a, base)
    if base == "String":
        return C.to_string(a)
    if base == "Date":
        return D.to_date(a)
    t = ct.arrow_type
    if pa.types.is_timestamp(t):
        return D.to_datetime(a, t.tz, ct.precision, "CAST")
    return cast_to(ct, a, "CAST")


def _to_string_type(ts: list[pa.DataType], cs: list[Any]) -> tuple[pa.DataType, None]:
    return _STR, None


_UUID_SRC = ArgType("String or UUID", lambda t: is_string(t) or pa.types.is_null(t) or (
    isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid"))

CONVERSION_FUNCTIONS = [
    *_ints(),
    *_datetimes(),
    Function("toString", "typed", (ANY,), typed=_to_string_type, kernel=lambda a: _conv_string(a)),
    *(Function(f"toUUID{suffix}", "scalar", (_UUID_SRC,), returns=pa.uuid(), nullable=nullable,
               kernel=(lambda mode: lambda a: _conv_uuid(a, mode))(mode))
      for suffix, mode, nullable in (("", "raise", "propagate"), ("OrZero", "zero", "propagate"),
                                     ("OrNull", "null", "always"))),
    Function("toTypeName", "type_of", (ANY,), returns=_STR, constant=True, kernel=lambda a, name: name,
             doc="the argument's ClickHouse type (a constant; over an aggregate, the binder adds it as a "
                 "second argument so the call stays per group)"),
    Function("CAST", "typed", (ANY, CONST_STRING), typed=_cast_type, kernel=_cast_kernel,
             aliases=("_CAST",)),
]


def _conv_uuid(a: Any, mode: str) -> Any:
    from skipidx.expr.kernels import convert as C

    return C.to_uuid(a, mode)


def _conv_string(a: Any) -> Any:
    from skipidx.expr.kernels import convert as C

    return C.to_string(a)


# --- conditionals (the binder unifies the branches' types) ----------------------

def _cond_k(name: str) -> Callable[..., Any]:
    from skipidx.expr.kernels import convert as C

    return getattr(C, name)


CONDITIONAL_FUNCTIONS = [
    Function("if", "conditional", (ANY, ANY, ANY), kernel=lambda c, a, b: _cond_k("if_")(c, a, b)),
    Function("multiIf", "conditional", (ANY, ANY, ANY), variadic=True, kernel=lambda *a: _cond_k("multi_if")(*a)),
    Function("caseWithExpression", "conditional", (ANY, ANY, ANY, ANY), variadic=True,
             kernel=lambda *a: _cond_k("multi_if")(*a)),
    Function("coalesce", "conditional", (ANY,), variadic=True, kernel=lambda *a: _cond_k("coalesce")(*a)),
    Function("ifNull", "conditional", (ANY, ANY), kernel=lambda *a: _cond_k("coalesce")(*a)),
    Function("nullIf", "conditional", (ANY, ANY), kernel=lambda a, b: _cond_k("null_if")(a, b)),
    Function("assumeNotNull", "conditional", (ANY,), kernel=lambda a: _cond_k("assume_not_null")(a)),
]


def _per_row(name: str, kernel: str, returns: pa.DataType, doc: str, *aliases: str) -> Function:
    from skipidx.expr.kernels import volatile as V

    return Function(name, "scalar", (ANY,), min_args=0, returns=returns, kernel=getattr(V, kernel), per_row=True,
                    nullable="never", aliases=aliases, doc=doc)


#: ClickHouse merges identical calls within a query (``rand() = rand()`` is 1); an
#: argument (any, ignored) tells calls apart: ``generateUUIDv4(1) != generateUUIDv4(2)``
PER_ROW_FUNCTIONS = [
    _per_row("generateUUIDv4", "generate_uuid_v4", pa.uuid(), "a random version 4 UUID per row"),
    _per_row("rand", "rand32", pa.uint32(), "a random UInt32 per row", "rand32"),
    _per_row("rand64", "rand64", pa.uint64(), "a random UInt64 per row"),
    _per_row("randCanonical", "rand_canonical", pa.float64(), "a random Float64 in [0, 1) per row"),
]


def _num_k(name: str, **kw: Any) -> Callable[..., Any]:
    from skipidx.expr.kernels import numeric as N

    fn = getattr(N, name)
    return (lambda *a: fn(*a, **kw)) if kw else fn


def _abs_type(ts: list[pa.DataType], cs: list[Any]) -> tuple[pa.DataType, None]:
    from skipidx.expr.kernels import numeric as N

    return N.abs_result_type(value_type(ts[0])), None


def _rounding(name: str, mode: str, *aliases: str) -> Function:
    return Function(name, "typed", (NUMBER, _CONST_INT), min_args=1, typed=lambda ts, cs: (value_type(ts[0]), None),
                    kernel=_num_k("rounding", mode=mode), aliases=aliases,
                    doc=f"{mode} at a number of decimal places (negative: tens, hundreds...)")


_F64 = pa.float64()


def _float_fn(name: str, arity: int, *aliases: str) -> Function:
    return Function(name, "scalar", (NUMBER,) * arity, returns=_F64, aliases=aliases,
                    kernel=lambda *a: _num_k("float_fn")(name if name != "ln" else "log", *a))


MATH_FUNCTIONS = [
    _float_fn("sqrt", 1), _float_fn("exp", 1), _float_fn("log", 1, "ln"), _float_fn("log2", 1),
    _float_fn("log10", 1), _float_fn("pow", 2, "power"),
    *(Function(name, "scalar", (NUMBER,), returns=_STR, kernel=(lambda k: lambda a: _num_k("readable")(a, k))(kind),
               doc=f"the number with a {kind} unit, two decimals")
      for name, kind in (("formatReadableSize", "size"), ("formatReadableDecimalSize", "decimal"),
                         ("formatReadableQuantity", "quantity"))),
    Function("pi", "scalar", (), returns=_F64, fold=lambda: 3.141592653589793, kernel=lambda: 3.141592653589793),
    Function("e", "scalar", (), returns=_F64, fold=lambda: 2.718281828459045, kernel=lambda: 2.718281828459045),
    _rounding("round", "round"),
    _rounding("floor", "floor"),
    _rounding("ceil", "ceil", "ceiling"),
    _rounding("trunc", "trunc", "truncate"),
    Function("abs", "typed", (NUMBER,), typed=_abs_type, kernel=_num_k("abs_")),
    Function("greatest", "conditional", (ANY, ANY), variadic=True,
             kernel=lambda *a: pc.max_element_wise(*a, skip_nulls=True), doc="the largest argument (NULLs skipped)"),
    Function("least", "conditional", (ANY, ANY), variadic=True,
             kernel=lambda *a: pc.min_element_wise(*a, skip_nulls=True), doc="the smallest argument (NULLs skipped)"),
]


HASH_FUNCTIONS = [
    Function("cityHash64", "scalar", (ANY,), variadic=True, returns=_U64, kernel=lambda *a: _cond_k("city_hash64")(*a)),
    Function("xxHash64", "scalar", (ANY,), returns=_U64, kernel=lambda a: _cond_k("xx_hash64")(a)),
]


def _int_div_type(ts: list[pa.DataType]) -> pa.DataType:
    """ClickHouse's intDiv result: the wider of the two integer widths, signed if either is."""
    a, b = (value_type(t) for t in ts)
    w = max(8 if pa.types.is_boolean(t) or pa.types.is_floating(t) and t.bit_width < 8 else
            (t.bit_width if is_int(t) else 64) for t in (a, b))
    signed = any(pa.types.is_signed_integer(t) or pa.types.is_floating(t) for t in (a, b))
    return {(8, False): pa.uint8(), (16, False): pa.uint16(), (32, False): pa.uint32(), (64, False): pa.uint64(),
            (8, True): pa.int8(), (16, True): pa.int16(), (32, True): pa.int32(), (64, True): pa.int64()}[(w, signed)]


def _int_div(a: Any, b: Any) -> Any:
    import numpy as np

    from skipidx.core.errors import SkipidxError

    out = _int_div_type([a.type, b.type])
    x = a.cast(pa.float64()) if pa.types.is_floating(a.type) else a
    y = b.cast(pa.float64()) if pa.types.is_floating(b.type) else b
    xv = np.asarray(x.fill_null(1).to_numpy(zero_copy_only=False))
    yv = np.asarray(y.fill_null(1).to_numpy(zero_copy_only=False))
    if np.any(yv == 0):
        raise SkipidxError("Division by zero (intDiv)")
    if xv.dtype.kind == "f" or yv.dtype.kind == "f":
        q = np.trunc(xv.astype(np.float64) / yv.astype(np.float64)).astype(np.int64)
    else:
        q = np.abs(xv.astype(object)) // np.abs(yv.astype(object))
        q = np.array([int(v) for v in q], dtype=object) * np.sign(xv.astype(object) * yv.astype(object))
        q = np.array([int(v) for v in q], dtype=np.int64 if out in (pa.int8(), pa.int16(), pa.int32(), pa.int64())
                     else np.uint64)
    mask = None
    if a.null_count or b.null_count:
        mask = np.asarray(pc.or_(a.is_null(), b.is_null()).to_numpy(zero_copy_only=False))
    return pa.array(q.astype(out.to_pandas_dtype()), out, mask=mask)


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
    Function("uniq", "aggregate", (ANY,), variadic=True, returns=_U64,
             doc="distinct non-NULL values, counted exactly (ClickHouse's is approximate above ~65k)"),
    Function("any", "aggregate", (ANY,), returns=SAME_AS_FIRST, doc="the first non-NULL value"),
    Function("anyLast", "aggregate", (ANY,), returns=SAME_AS_FIRST, doc="the last non-NULL value"),
    Function("argMin", "aggregate", (ANY, ANY), returns=SAME_AS_FIRST,
             doc="the first argument at the row of the least second one (rows with a NULL skipped)"),
    Function("argMax", "aggregate", (ANY, ANY), returns=SAME_AS_FIRST,
             doc="the first argument at the row of the greatest second one (rows with a NULL skipped)"),
    Function("quantile", "aggregate", (NUMBER,), returns=pa.float64(), aliases=("median",),
             doc="quantile(level)(x): linear interpolation at level * (n - 1) (ClickHouse's reservoir "
                 "sample is exact up to 8192 values; skipidx is exact always)"),
    Function("quantileExact", "aggregate", (NUMBER,), returns=SAME_AS_FIRST, aliases=("medianExact",),
             doc="quantileExact(level)(x): the value at floor(level * n) of the sorted values"),
    Function("quantiles", "aggregate", (NUMBER,), doc="quantiles(l1, ...)(x): Array(Float64)"),
    Function("quantilesExact", "aggregate", (NUMBER,), doc="quantilesExact(l1, ...)(x): Array(T)"),
    Function("groupArray", "aggregate", (ANY,), doc="the non-NULL values as an array, in input order"),
]

#: Aggregate combinators: ``sumIf(x, cond)`` is sum over the rows where cond is true.
AGGREGATE_COMBINATORS = ("If",)


def aggregate_combinator(name: str) -> tuple[Function, str] | None:
    """``(aggregate, combinator)`` for a combined name such as ``countIf`` / ``uniqIf``
    (the suffix is case-sensitive, as in ClickHouse); None otherwise."""
    for suffix in AGGREGATE_COMBINATORS:
        if name.endswith(suffix) and len(name) > len(suffix):
            fn = CATALOGUE.lookup(name[: -len(suffix)])
            if fn is not None and fn.rule == "aggregate":
                return fn, suffix
    return None

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

    def index_expressions(self) -> frozenset[str]:
        """Functions an index may apply to its column (``INDEX i lower(msg) ...``)."""
        return frozenset(f.name for f in self if f.index_expression)

    def case_insensitive(self) -> dict[str, str]:
        """Case-insensitive functions and the function they are over ASCII-lowered arguments."""
        return {f.name: f.index.case_insensitive_of for f in self
                if f.index is not None and f.index.case_insensitive_of}

    def learning(self, kind: str) -> frozenset[str]:
        """Functions (positive and negated) from which an index of `kind` can learn."""
        return frozenset(f.name for f in self if f.index is not None and kind in f.index.learns)


CATALOGUE = Catalogue()
for _group in (COMPARISON_FUNCTIONS, LOGICAL_FUNCTIONS, STRING_FUNCTIONS, ARITHMETIC_FUNCTIONS,
               TEXT_FUNCTIONS, DATETIME_FUNCTIONS, INTERVAL_FUNCTIONS, ADD_UNITS_FUNCTIONS, CONVERSION_FUNCTIONS, CONDITIONAL_FUNCTIONS,
               HASH_FUNCTIONS, PER_ROW_FUNCTIONS, MATH_FUNCTIONS,
               AGGREGATE_FUNCTIONS):
    CATALOGUE.extend(_group)


def lookup(name: str) -> Function | None:
    return CATALOGUE.lookup(name)
