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
from skipidx.core.lru import LRU
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
    fast = _membership_on_hashes(e, chunks, name, total)
    if fast is None:
        # the dictionaries as chunks of one column, not concatenated (a copy of every value per query)
        values = pa.chunked_array([c.dictionary for c in chunks] + ([pa.nulls(1, vt)] if has_null else []),
                                  type=vt)
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
    if fast is not None:
        # (the gather in numpy: the answers have no NULL but the NULL rows')
        got = fast[np.minimum(pos, total - 1)] if total else np.zeros(n, dtype=np.bool_)
        if has_null:
            return pa.array(got, type=pa.bool_(), mask=pos == total)
        return from_numpy(got)
    return _plain(pc.take(per_value, from_numpy(pos)))


#: 64-bit hashes of the values of dictionaries the store decodes once and hands out again
#: (store/part_pages.py), by their buffers (the array is held, so the addresses stay its own)
_STABLE_DICTIONARIES = LRU(16384, "expr.stable_dictionaries",
                           "xxh64 of the values of dictionaries the store keeps, by their buffers (and 96 MiB "
                           "with the dictionaries)", max_bytes=96 << 20)
#: the hashes of the constants of a membership test, by the constants
_NEEDLE_HASHES = LRU(256, "expr.constant_hashes",
                     "xxh64 of the String constants of IN lists / comparisons, by the constants")
#: membership tests over stable dictionaries: equality with constants, or (NOT) IN a constant list
_MEMBERSHIP = {"in": False, "equals": False, "notIn": True, "notEquals": True}


def _dictionary_key(dic: pa.Array) -> tuple:
    b = dic.buffers()
    return (dic.type, len(dic), dic.offset, b[1].address if b[1] is not None else 0,
            b[2].address if len(b) > 2 and b[2] is not None else 0)


def register_stable_dictionary(dic: pa.Array) -> None:
    """Note that `dic` (a String / Binary dictionary without NULLs) will be handed out again
    as the dictionary of later reads: its values' hashes are kept, and a membership test over
    it (``x IN (...)``, ``x = c``) compares hashes first and the bytes only where they match."""
    from skipidx.core.hashing import xxh64_array

    if dic.null_count or not (pa.types.is_string(dic.type) or pa.types.is_binary(dic.type)):
        return
    h = xxh64_array(dic.view(pa.binary()) if pa.types.is_string(dic.type) else dic)
    b = dic.buffers()
    offsets = np.frombuffer(b[1], dtype=np.int32, count=dic.offset + len(dic) + 1)[dic.offset:]
    data = memoryview(b[2]) if b[2] is not None else memoryview(b"")
    _STABLE_DICTIONARIES.put(_dictionary_key(dic), (dic, h, offsets, data), h.nbytes + dic.nbytes)


#: at most this many values whose hash matches a constant's are compared byte by byte here
#: (more: a hash collision storm or a huge list; the general evaluation answers)
MEMBERSHIP_MAX_CANDIDATES = 256


def _membership_on_hashes(e: BExpr, chunks: list, name: str, total: int) -> np.ndarray | None:
    """`e` on every dictionary value (bool per value of the chunks' dictionaries, in order)
    for _on_dictionary, when `e` is a byte-equality membership test of the column against
    String constants (``x IN (...)``, ``x NOT IN``, ``x = c``, ``x != c``) and every
    dictionary is stable (:func:`register_stable_dictionary`): a value whose hash is no
    constant's hash is no constant; the few whose hash matches are compared byte by byte.
    No Arrow kernel runs (each costs more than this whole test on a few dictionaries).
    None where this does not apply."""
    if not (isinstance(e, BCall) and e.func in _MEMBERSHIP and len(e.args) == 2):
        return None
    col, const = e.args
    if e.func in ("equals", "notEquals") and isinstance(col, BConst):
        col, const = const, col
    if not (isinstance(col, BColumn) and col.name == name and isinstance(const, BConst)
            and (pa.types.is_string(col.type) or pa.types.is_binary(col.type))):
        return None
    consts = const.value if e.func in ("in", "notIn") else (const.value,)
    if not isinstance(consts, (tuple, list)) or not consts:
        return None
    needles = []
    for v in consts:
        if isinstance(v, bytes):
            needles.append(v)
        elif v is not None or e.func in ("equals", "notEquals"):
            return None     # (x = NULL is NULL on every row; a NULL in an IN list matches nothing)
    entries = []
    for c in chunks:
        hit = _STABLE_DICTIONARIES.get(_dictionary_key(c.dictionary))
        if hit is None:
            return None
        entries.append(hit)
    key = tuple(needles)
    want = _NEEDLE_HASHES.get(key)
    if want is None:
        from skipidx.core.hashing import xxh64_array

        want = (xxh64_array(pa.array(needles, pa.binary())) if needles else np.empty(0, np.uint64),
                frozenset(needles))
        _NEEDLE_HASHES.put(key, want)
    hashes, needle_set = want
    h = entries[0][1] if len(entries) == 1 else np.concatenate([x[1] for x in entries])
    hit_mask = np.zeros(h.shape[0], dtype=np.bool_)
    for n in hashes:
        hit_mask |= h == n
    cand = np.flatnonzero(hit_mask)
    if cand.shape[0] > MEMBERSHIP_MAX_CANDIDATES:
        return None
    negated = _MEMBERSHIP[e.func]
    out = np.full(total, negated, dtype=np.bool_)
    if cand.shape[0]:
        ends = np.cumsum([x[1].shape[0] for x in entries]).tolist()
        j = 0
        for i in cand.tolist():
            while i >= ends[j]:
                j += 1
            _dic, _h, offsets, data = entries[j]
            k = i - (ends[j - 1] if j else 0)
            a, b = int(offsets[k]), int(offsets[k + 1])
            out[i] = (data[a:b].tobytes() in needle_set) != negated
    return out


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
    if e.args and isinstance(e.args[0], BCall) and e.args[0].func == "lambda":
        return _higher_order(e, table, sub)
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


def _higher_order(e: BCall, table: pa.Table, sub: Callable[[BExpr, pa.Table], pa.Array]) -> pa.Array:
    """arrayMap / arrayFilter / arrayExists / arrayCount: the lambda's body evaluated once over
    all the arrays' elements (a table of the flattened elements, the outer columns it reads
    repeated per element), then regrouped by row."""
    from skipidx.core.errors import SkipidxError
    from skipidx.expr.visitors import all_column_names

    lam, arrays = e.args[0], [_plain(sub(a, table)) for a in e.args[1:]]
    params, body = lam.args[0].value, lam.args[1]
    n = table.num_rows
    lengths = [pc.fill_null(pc.list_value_length(a), 0).to_numpy(zero_copy_only=False).astype(np.int64)
               for a in arrays]
    for i, ln in enumerate(lengths[1:], 2):
        if not np.array_equal(ln, lengths[0]):
            raise SkipidxError(f"Arrays passed to {e.func} must have equal size. Argument {i + 1} has a size "
                               "which differs with the size of another argument (SIZES_OF_ARRAYS_DONT_MATCH)")
    counts = lengths[0]
    parents = np.repeat(np.arange(n, dtype=np.int64), counts)
    cols = {p: _plain(pc.list_flatten(a)) for p, a in zip(params, arrays)}
    idx = pa.array(parents)
    names = set(table.column_names)
    for name in all_column_names(body):      # outer columns and outer lambdas' parameters
        if name not in cols and name in names:
            cols[name] = _plain(table.column(name)).take(idx)
    inner = pa.table(cols) if cols else pa.table({"_": pa.nulls(len(parents), pa.bool_())})
    vals = _plain(sub(body, inner)) if len(parents) else pa.array([], _value_type_of(body))
    if len(vals) != len(parents):       # a constant body evaluated over no column
        vals = _const_array(getattr(body, "value", None), body.type, len(parents))
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    if e.func == "arrayMap":
        item = e.type.value_type
        if pa.types.is_null(item):
            vals = pa.nulls(len(vals), pa.null())
        elif vals.type != item:
            vals = vals.cast(item)
        return pa.ListArray.from_arrays(pa.array(offsets), vals, type=e.type)
    truth = as_bool(vals)
    keep = pc.fill_null(truth, False).to_numpy(zero_copy_only=False).astype(bool) if len(truth) else \
        np.zeros(0, dtype=bool)
    per_row = np.bincount(parents[keep], minlength=n) if n else np.zeros(0, dtype=np.int64)
    if e.func == "arrayCount":
        return pa.array(per_row.astype(np.uint32), pa.uint32())
    if e.func == "arrayExists":
        return pa.array(per_row > 0)
    kept = cols[params[0]].filter(pa.array(keep))
    offs = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(per_row, out=offs[1:])
    return pa.ListArray.from_arrays(pa.array(offs), kept, type=e.type)


def _value_type_of(e: BExpr) -> pa.DataType:
    t = e.type
    return pa.bool_() if pa.types.is_null(t) else t


def where_mask(e: BExpr | None, table: pa.Table) -> pa.Array | None:
    """The row filter of a WHERE expression (None: every row passes)."""
    if e is None:
        return None
    if isinstance(e, BConst) and e.value is not None and e.value:
        return None
    return _plain(F.where_mask(evaluate(e, table)))
