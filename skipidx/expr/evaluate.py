"""Exact evaluation of bound expressions over an Arrow table (the rows a scan read).

Every function's kernel comes from the catalogue (:mod:`skipidx.expr.catalogue`;
ClickHouse semantics, checked against chDB); this module only walks the bound tree. Results are
Arrow arrays of the table's length; boolean results are three-valued (NULL
where ClickHouse gives NULL), and :func:`where_mask` turns the WHERE result
into the row filter (a row passes iff its value is true).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.arrays import from_numpy
from skipidx.expr import kernels as F
from skipidx.expr.catalogue import CATALOGUE, as_bool
from skipidx.expr.bound import BAgg, BCall, BColumn, BConst, BExpr, BFolded

def _plain(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    return a


#: A subtree over one dictionary-read column is evaluated on its distinct
#: values when they number at most this fraction of the rows (else decoded:
#: gathering the answers back would cost about what it saves).
DICT_EVAL_MAX_RATIO = 0.5


def _is_per_row(e: BCall) -> bool:
    fn = CATALOGUE.get(e.func)
    return fn is not None and fn.per_row


def _single_column(e: BExpr, memo: dict[int, str | None]) -> str | None:
    """The one column `e` reads, or None (no column, or several)."""
    k = id(e)
    if k in memo:
        return memo[k]
    if isinstance(e, BColumn):
        r: str | None = e.name
    elif isinstance(e, BFolded):
        r = e.source.name if e.source is not None else None
    elif isinstance(e, BCall) and _is_per_row(e):
        r = None       # a value per row, not per distinct value
    elif isinstance(e, BCall):
        names = {_single_column(a, memo) if not isinstance(a, BConst) else "" for a in e.args}
        names.discard("")
        r = names.pop() if len(names) == 1 and None not in names else None
    else:
        r = None
    memo[k] = r
    return r


def _on_dictionary(e: BExpr, col: pa.ChunkedArray, name: str) -> pa.Array | None:
    """`e` (a row-wise expression of column `name` alone) evaluated once per
    distinct value of the dictionary-encoded `col` and gathered back by the
    indices; None when the dictionaries are too large for that to pay.

    Exact for any row-wise function: every chunk's dictionary is evaluated
    (concatenated, one evaluation), plus one NULL value that the rows whose
    index is NULL point to -- so ``isNull(x)``, ``hasTokenOrNull`` or a
    three-valued result come out as on decoded rows.
    """
    chunks = col.chunks
    n = len(col)
    sizes = [len(c.dictionary) for c in chunks]
    total = sum(sizes)
    if not chunks or total + 1 > DICT_EVAL_MAX_RATIO * n:
        return None
    vt = col.type.value_type
    # the NULL value only when some row's index is NULL (a NULL-free input
    # keeps the functions on their NULL-free paths)
    has_null = any(c.indices.null_count for c in chunks)
    # the dictionaries as chunks of one column, not concatenated (a copy of every value per query)
    values = pa.chunked_array([c.dictionary for c in chunks] + ([pa.nulls(1, vt)] if has_null else []), type=vt)
    per_value = evaluate(e, pa.table({name: values}))
    # the rows' positions in `values`: each chunk's indices moved past the
    # dictionaries before it; NULL rows point to the trailing NULL value
    pos = np.empty(n, dtype=np.int32)
    row = base = 0
    for c, size in zip(chunks, sizes):
        ind = c.indices
        m = len(ind)
        if m:
            if ind.type != pa.int32():
                ind = ind.cast(pa.int32())
            out = pos[row:row + m]
            buf = ind.buffers()[1]
            if buf is None:   # all NULL, no values buffer
                out[:] = total
            else:
                np.add(np.frombuffer(buf, dtype=np.int32, count=ind.offset + m)[ind.offset:], base, out=out)
                if ind.null_count:
                    out[np.asarray(ind.is_null(), dtype=np.bool_)] = total
        row += m
        base += size
    return _plain(pc.take(per_value, from_numpy(pos)))


def _const_array(value: Any, typ: pa.DataType, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, typ if not pa.types.is_null(typ) else pa.bool_())
    if pa.types.is_boolean(typ):
        return pa.array(np.full(n, bool(value)))
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        return pa.array(np.full(n, value, dtype=typ.to_pandas_dtype()), typ)
    if isinstance(value, (tuple, list)) and pa.types.is_null(typ):
        # an array literal the binder left untyped (it is typed where a function needs it)
        return pa.repeat(pa.array([list(value)])[0], n)
    return pa.repeat(pa.scalar(value, typ), n)


def evaluate(e: BExpr, table: pa.Table, per_row: dict[str, pa.Array] | None = None) -> pa.Array:
    """The value of `e` for every row of `table` (an Array of ``table.num_rows``).

    Columns of `table` may be Arrow dictionaries (read so by the scan, see
    ``Part.read(dictionary=...)``): a subtree reading one such column alone is
    evaluated on the dictionary values, anything else sees decoded values.
    """
    # identical per-row calls (rand()...) share their values, as ClickHouse's common subexpressions:
    # within `e`, and across the calls that pass the same `per_row` for the same rows
    if per_row is None:
        per_row = {}
    if any(pa.types.is_dictionary(t) for t in table.schema.types):
        return _evaluate_dict(e, table, {}, per_row)
    return _evaluate(e, table, per_row=per_row)


def _decoded(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A column's values as one plain Array (a dictionary decoded chunk by chunk:
    Arrow cannot concatenate dictionaries that hold a NULL value)."""
    if pa.types.is_dictionary(a.type):
        vt = a.type.value_type
        chunks = a.chunks if isinstance(a, pa.ChunkedArray) else [a]
        a = pa.chunked_array([c.dictionary_decode() for c in chunks], type=vt)
    return _plain(a)


def _evaluate_dict(e: BExpr, table: pa.Table, memo: dict[int, str | None],
                   per_row: dict[str, pa.Array]) -> pa.Array:
    """evaluate() over a table with dictionary columns: the largest subtrees of
    one dictionary column run on its dictionary; the rest on decoded columns."""
    if isinstance(e, (BCall, BFolded)):
        name = _single_column(e, memo)
        if name is not None and pa.types.is_dictionary(table.schema.field(name).type):
            col = table.column(name)
            r = _on_dictionary(e, col, name)
            if r is not None:
                return r
            return _evaluate(e, table.select([name]).set_column(0, name, _decoded(col)), per_row=per_row)
    if isinstance(e, BColumn):
        return _decoded(table.column(e.name))
    if isinstance(e, BCall):
        return _evaluate(e, table, lambda a, t: _evaluate_dict(a, t, memo, per_row), per_row)
    return _evaluate(e, table, per_row=per_row)


#: An OR of at least this many ``col = constant`` terms on one column is
#: evaluated as one ``col IN (...)`` (one hash-set lookup instead of a
#: comparison per term).
FOLD_OR_EQUALS_MIN = 8


def _fold_or_equals(args: list, table: pa.Table) -> tuple[list, list]:
    """Split OR operands into ([(column, values)], rest): the ``col = c``
    terms of an integer or String column with constants of that kind, grouped
    by column, where a group is long enough to fold. ``x = a OR x = b`` is
    ``x IN (a, b)`` exactly: a NULL x gives NULL in both, and IN compares the
    constants with the column's type as ``=`` does."""
    groups: dict[str, list] = {}
    for i, a in enumerate(args):
        if not (isinstance(a, BCall) and a.func == "equals" and len(a.args) == 2):
            continue
        x, y = a.args
        if isinstance(x, BConst) and isinstance(y, BColumn):
            x, y = y, x
        if not (isinstance(x, BColumn) and isinstance(y, BConst)) or x.name not in table.column_names:
            continue
        t = table.schema.field(x.name).type
        t = t.value_type if pa.types.is_dictionary(t) else t
        v = y.value
        ok = ((pa.types.is_integer(t) and isinstance(v, int) and not isinstance(v, bool))
              or ((pa.types.is_string(t) or pa.types.is_large_string(t)) and isinstance(v, str)))
        if ok:
            groups.setdefault(x.name, []).append((i, x, v))
    folded, used = [], set()
    for items in groups.values():
        if len(items) >= FOLD_OR_EQUALS_MIN:
            folded.append((items[0][1], [v for _, _, v in items]))
            used.update(i for i, _, _ in items)
    return folded, [a for i, a in enumerate(args) if i not in used]


def _evaluate(e: BExpr, table: pa.Table,
              sub: Callable[[BExpr, pa.Table], pa.Array] | None = None,
              per_row: dict[str, pa.Array] | None = None) -> pa.Array:
    """evaluate() over plain columns; `sub` evaluates the arguments (default: this function);
    `per_row` holds the values of the per-row calls (generateUUIDv4...) evaluated so far."""
    if per_row is None:
        per_row = {}
    if sub is None:
        def sub(a: BExpr, t: pa.Table) -> pa.Array:
            return _evaluate(a, t, per_row=per_row)
    n = table.num_rows
    if isinstance(e, BColumn):
        return _plain(table.column(e.name))
    if isinstance(e, BConst):
        return _const_array(e.value, e.type, n)
    if isinstance(e, BFolded):
        out = pa.array(np.full(n, e.value))
        if e.source is not None and e.source.nullable:
            src = _plain(table.column(e.source.name))
            if src.null_count:
                out = pc.if_else(src.is_valid(), out, pa.scalar(None, pa.bool_()))
        return out
    if isinstance(e, BAgg):
        raise AssertionError("aggregates are computed by skipidx.execution.select, not evaluated per row")
    if not isinstance(e, BCall):
        raise AssertionError(f"unexpected bound node {e!r}")
    f = e.func
    if f in ("and", "or"):
        # Kleene logic over all operands; no short-circuit is needed for
        # correctness: every constant argument was validated at bind time.
        # Accumulated into one mask operand by operand: a chain of 100k terms
        # holds two masks, not 100k.
        args = list(e.args)
        acc = None
        if f == "or":
            folded, args = _fold_or_equals(args, table)
            for col, values in folded:
                v = F.is_in(sub(col, table), values)
                acc = v if acc is None else F.or_(acc, v)
        for a in args:
            v = as_bool(sub(a, table))
            acc = v if acc is None else (F.and_(acc, v) if f == "and" else F.or_(acc, v))
        return acc
    if f == "not":
        return F.not_(as_bool(sub(e.args[0], table)))
    fn = CATALOGUE.get(e.func)
    if fn is None or fn.kernel is None:
        raise AssertionError(f"no kernel for bound function {e.func!r}")
    if fn.per_row:
        key = repr((e.func, e.args))
        if key not in per_row:
            per_row[key] = fn.kernel(n)
        return per_row[key]
    # constants go to the kernel as Python values where it takes them (a compare's
    # right side, a LIKE pattern), else as arrays of the table's length
    vals = [a.value if isinstance(a, BConst) and (fn.scalars or fn.arg_type(i).const or i in fn.scalar_args)
            else sub(a, table) for i, a in enumerate(e.args)]
    return _plain(fn.kernel(*vals))


def where_mask(e: BExpr | None, table: pa.Table) -> pa.Array | None:
    """The row filter of a WHERE expression (None: every row passes)."""
    if e is None:
        return None
    if isinstance(e, BConst) and e.value is not None and e.value:
        return None
    return _plain(F.where_mask(evaluate(e, table)))
