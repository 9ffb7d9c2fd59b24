"""Projection, aggregation, GROUP BY, HAVING, DISTINCT, ORDER BY and LIMIT/OFFSET over scanned chunks.

Chunks arrive already filtered by the exact WHERE. The select keeps only
what it needs from each chunk (aggregate inputs and group keys, or the
projected/ordering columns), so a non-selective query never holds the wide
columns it filtered on. A LIMIT without ORDER BY or aggregation stops the
scan as soon as it has enough rows -- with DISTINCT, enough *distinct*
rows; a LIMIT with ORDER BY keeps only the best ``offset + limit`` rows per
chunk (a running top-k; with DISTINCT, the best distinct ones, only when
each tuple's first row is also its best: the ORDER BY keys follow from the
output row, or the ORDER BY is the order the table is read in).

Order of operations, as SQL and ClickHouse: WHERE (the scan), GROUP BY and
aggregates, HAVING, the SELECT list, DISTINCT, ORDER BY, LIMIT/OFFSET.
DISTINCT compares whole output rows: NULL equals NULL, and floats compare
by their bits as in ClickHouse's hash tables (0 and -0 are two rows, a NaN
one). As ClickHouse, DISTINCT runs *before* ORDER BY: each tuple keeps its
first row in the order the table is read -- parts, then granules, in order;
a part in its sort-key order -- and those rows are sorted; this decides the
answer when ORDER BY names a column outside the SELECT list. An ORDER BY
that starts with the table's sort key makes ClickHouse read in that order
(backwards for DESC), so that stream decides instead. After sorting,
ClickHouse deduplicates again in order (``optimize_distinct_in_order``):
the longest prefix of the ORDER BY made of DISTINCT columns compares by
value (0 = -0, NaN = NaN), the other DISTINCT columns by bits --
``SELECT DISTINCT c ... ORDER BY c`` over 0, -0, NaN, -NaN is 0, NaN.
Not followed: ClickHouse also reads in order for a DISTINCT over a prefix of
the sort key *without* a matching ORDER BY and then compares a float key by
value within each read stream (a part, or a slice of one: it depends on its
threads); skipidx compares by bits there.

Aggregates follow ClickHouse's types and empty-input rules:

===========  ==========================  =====================================
function     result type                 no rows (no GROUP BY)
===========  ==========================  =====================================
count()      UInt64                      0
count(x)     UInt64 (non-NULL x only)    0
sum(x)       UInt64 / Int64 / Float64    0, or NULL for a Nullable x
avg(x)       Float64                     nan, or NULL for a Nullable x
min/max(x)   x's type (NaN skipped)      the type's default, or NULL
uniqExact(x) UInt64 (NULLs skipped)      0
===========  ==========================  =====================================

``count(DISTINCT x)`` is ``uniqExact(x)`` (named ``countDistinct(x)``);
``sum``/``avg(DISTINCT x)`` aggregate the distinct values of x per group
(ClickHouse's -Distinct combinator, same result types and empty answers).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Iterator

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.arrays import from_numpy
from skipidx.core.errors import SkipidxError
from skipidx.core.types import is_uuid, uuid_array, uuid_order_key
from skipidx.execution.aggregates import aggregate
from skipidx.expr.evaluate import evaluate, where_mask
from skipidx.execution.scan import zero_column_table
from skipidx.expr.catalogue import TUPLE_FUNC
from skipidx.expr.bound import BAgg, BCall, BColumn, BConst, BExpr, BFolded
from skipidx.expr.select import BoundSelect, OrderItem, OutputItem
from skipidx.expr.visitors import LAMBDA_PARAM_PREFIX, columns_of, transform


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _plain(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    if pa.types.is_dictionary(a.type):
        a = a.dictionary_decode()
    return a


def _keyable(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A column as Arrow's hash grouping takes it: UUID (an extension type it refuses) as its bytes."""
    a = _plain(a)
    return a.storage if is_uuid(a.type) else a


def _concat(tables: list[pa.Table], schema_from: pa.Table | None = None) -> pa.Table:
    tables = [t for t in tables if t is not None]
    if not tables:
        return schema_from.slice(0, 0) if schema_from is not None else pa.table({})
    if len(tables) == 1:
        return tables[0]
    names = tables[0].column_names
    if len(set(names)) < len(names):
        # `SELECT a, a`: Arrow unifies schemas by name and refuses duplicate names,
        # so concatenate under positional names and put the names back
        tmp = [f"_{i}" for i in range(len(names))]
        out = pa.concat_tables([t.rename_columns(tmp) for t in tables], promote_options="permissive")
        return out.rename_columns(names)
    return pa.concat_tables(tables, promote_options="permissive")


def collect_aggs(bs: BoundSelect) -> list[BAgg]:
    """Distinct aggregate calls of the select list, HAVING and ORDER BY, in order of appearance."""
    out: list[BAgg] = []

    def walk(e: BExpr | None) -> None:
        if isinstance(e, BAgg):
            if e not in out:
                out.append(e)
        elif isinstance(e, BCall):
            for a in e.args:
                walk(a)

    for it in bs.items:
        walk(it.expr)
    walk(bs.having)
    for o in bs.order_by:
        walk(o.expr)
    return out


def _rewrite(e: BExpr, repl: dict[Any, BColumn]) -> BExpr:
    """Replace aggregate calls and GROUP BY expressions by columns of the aggregated table."""
    def step(x: BExpr) -> BExpr | None:
        if x in repl:
            return repl[x]
        if isinstance(x, BColumn) and x.name.startswith(LAMBDA_PARAM_PREFIX):
            return x       # a lambda's parameter (an element of its array argument)
        if isinstance(x, BColumn):
            raise SkipidxError(f"column {x.name!r} is neither under an aggregate function nor in GROUP BY")
        return x if isinstance(x, (BAgg, BFolded, BConst)) else None

    return transform(e, step)


# ---------------------------------------------------------------------------
# aggregation
# ---------------------------------------------------------------------------

class _Aggregation:
    """Accumulates the narrow inputs of the aggregates chunk by chunk, then aggregates once."""

    def __init__(self, bs: BoundSelect) -> None:
        self.bs = bs
        self.aggs = collect_aggs(bs)
        self.keys = list(bs.group_by)
        self.parts: list[pa.Table] = []
        self.rows = 0
        # count() only, no keys: just count rows
        self.count_only = not self.keys and all(a.arg is None and a.cond is None for a in self.aggs)

    def add(self, chunk: pa.Table) -> None:
        self.rows += chunk.num_rows
        if self.count_only or chunk.num_rows == 0:
            return
        cols: dict[str, pa.Array] = {}
        for j, k in enumerate(self.keys):
            cols[f"k{j}"] = _keyable(evaluate(k, chunk))
        for i, a in enumerate(self.aggs):
            if _is_tuple(a.arg):
                cols.update(_tuple_columns(i, [_keyable(evaluate(x, chunk)) for x in a.arg.args]))
            elif a.arg is not None:
                cols[f"a{i}"] = _keyable(evaluate(a.arg, chunk))
                if _uuid_min_max(a):
                    cols[f"a{i}"] = uuid_order_key(cols[f"a{i}"])   # min/max in ClickHouse's UUID order
            if a.cond is not None:
                cols[f"c{i}"] = _plain(_column_of(evaluate(a.cond, chunk), chunk.num_rows))
            if a.by is not None:
                cols[f"b{i}"] = _plain(evaluate(a.by, chunk))
        self.parts.append(pa.table(cols))

    def _empty_inputs(self) -> pa.Table:
        cols: dict[str, pa.Array] = {}
        for j, k in enumerate(self.keys):
            cols[f"k{j}"] = pa.array([], _storage_type(k.type))
        for i, a in enumerate(self.aggs):
            if _is_tuple(a.arg):
                cols.update(_tuple_columns(i, [pa.array([], _storage_type(x.type)) for x in a.arg.args]))
            elif a.arg is not None:
                cols[f"a{i}"] = pa.array([], _storage_type(a.arg.type))
            if a.cond is not None:
                cols[f"c{i}"] = pa.array([], pa.uint8())
            if a.by is not None:
                cols[f"b{i}"] = pa.array([], _value_type(a.by.type))
        return pa.table(cols)

    def finish(self) -> pa.Table:
        """One row per group: columns k0.. (keys) and g0.. (aggregate results).

        The aggregation itself is :func:`skipidx.execution.aggregates.aggregate`
        (ClickHouse's result types and empty-input answers, checked against chDB).
        """
        out = self._finish()
        # UUID keys and values (any(u), ...) were grouped as their bytes: give them their type back
        for j, k in enumerate(self.keys):
            out = _as_uuid_column(out, f"k{j}", k.type)
        for i, a in enumerate(self.aggs):
            if a.arg is not None and not _is_tuple(a.arg):
                if _uuid_min_max(a) and f"g{i}" in out.column_names:
                    # the order key swaps the halves; swapping again gives the UUID's bytes
                    col = pa.chunked_array([uuid_order_key(c) for c in out.column(f"g{i}").chunks],
                                           type=pa.binary(16))
                    out = out.set_column(out.column_names.index(f"g{i}"), f"g{i}", col)
                out = _as_uuid_column(out, f"g{i}", a.arg.type)
        return out

    def _finish(self) -> pa.Table:
        if self.count_only:
            cols = {f"g{i}": from_numpy(np.array([self.rows], np.uint64)) for i in range(len(self.aggs))}
            return pa.table(cols) if cols else zero_column_table(1)
        data = _concat(self.parts) if self.parts else self._empty_inputs()
        nullable = {f"a{i}" for i, a in enumerate(self.aggs)
                    if a.arg is not None and a.arg.nullable and not _is_tuple(a.arg)}
        nullable |= {f"k{j}" for j, k in enumerate(self.keys) if k.nullable}
        nullable |= {f"b{i}" for i, a in enumerate(self.aggs) if a.by is not None and a.by.nullable}
        key_names = [f"k{j}" for j in range(len(self.keys))]
        specs = [(a.func, None if a.arg is None else f"a{i}", f"g{i}", _options(i, a))
                 for i, a in enumerate(self.aggs) if not a.distinct and not _is_tuple(a.arg)]
        if not specs:
            specs = [("count", None, "_rows")]   # the groups themselves (dropped below)
        out = aggregate(data, key_names, specs, nullable=nullable)
        if "_rows" in out.column_names:
            out = out.drop_columns(["_rows"])
        distinct = [i for i, a in enumerate(self.aggs) if a.distinct or _is_tuple(a.arg)]
        if not distinct:
            return out
        # sum/avg(DISTINCT x): each over the deduplicated (keys, x) pairs. Both results
        # hold the same groups, so sorting both by their keys lines their rows up.
        cols = {c: out.column(c) for c in out.column_names}
        order = _group_order(out, key_names)
        cols = {c: v.take(order) for c, v in cols.items()} if order is not None else cols
        for i in distinct:
            a = self.aggs[i]
            if _is_tuple(a.arg):
                # uniqExact(x, y): the distinct (keys, x, y, valid) rows, summing `valid`
                # (no NULL among x, y): a group whose rows all hold a NULL counts 0
                tcols = [f"a{i}_{j}" for j in range(len(a.arg.args))] + [f"a{i}_valid"]
                rows = data.select(key_names + tcols).group_by(key_names + tcols, use_threads=False).aggregate([])
                d = aggregate(rows, key_names, [("sum", f"a{i}_valid", f"g{i}")], nullable=set())
                d_order = _group_order(d, key_names)
                cols[f"g{i}"] = d.column(f"g{i}").take(d_order) if d_order is not None else d.column(f"g{i}")
                continue
            pairs = data.select(key_names + [f"a{i}"])
            pairs = pairs.group_by(key_names + [f"a{i}"], use_threads=False).aggregate([])
            d = aggregate(pairs, key_names, [(a.func, f"a{i}", f"g{i}")], nullable=nullable)
            d_order = _group_order(d, key_names)
            cols[f"g{i}"] = d.column(f"g{i}").take(d_order) if d_order is not None else d.column(f"g{i}")
        return pa.table({c: cols[c] for c in key_names + [f"g{i}" for i in range(len(self.aggs))]})


def _uuid_min_max(a: BAgg) -> bool:
    return a.func.lower() in ("min", "max") and a.arg is not None and not _is_tuple(a.arg) \
        and is_uuid(_value_type(a.arg.type))


def _storage_type(t: pa.DataType) -> pa.DataType:
    t = _value_type(t)
    return t.storage_type if is_uuid(t) else t


def _as_uuid_column(t: pa.Table, name: str, bound_type: pa.DataType) -> pa.Table:
    if not is_uuid(_value_type(bound_type)) or name not in t.column_names:
        return t
    col = t.column(name)
    if not (pa.types.is_fixed_size_binary(col.type) and col.type.byte_width == 16):
        return t
    wrapped = pa.chunked_array([uuid_array(c) for c in col.chunks], type=pa.uuid())
    return t.set_column(t.column_names.index(name), name, wrapped)


def _options(i: int, a: BAgg) -> dict:
    """The aggregate's -If condition, argMin/argMax's compared column and parameters, as
    :func:`skipidx.execution.aggregates.aggregate` takes them."""
    opts: dict = {}
    if a.cond is not None:
        opts["cond"] = f"c{i}"
    if a.by is not None:
        opts["by"] = f"b{i}"
    if a.params:
        opts["params"] = a.params
    return opts


def _column_of(v: pa.Array, n: int) -> pa.Array:
    """A condition as a column of n rows (a constant condition evaluates to one value)."""
    return v if len(v) == n else pa.repeat(v[0], n) if len(v) else pa.nulls(n, pa.uint8())


def _is_tuple(e: BExpr | None) -> bool:
    """Whether an aggregate's argument is the argument tuple of a multi-argument uniqExact."""
    return isinstance(e, BCall) and e.func == TUPLE_FUNC


def _tuple_columns(i: int, arrays: list[pa.Array]) -> dict[str, pa.Array]:
    """Columns ``a{i}_{j}`` holding a multi-argument uniqExact's tuple, plus ``a{i}_valid``
    (UInt8: 1 where no element is NULL). Floats become their bits: ClickHouse hashes a
    tuple's values bitwise (0 and -0 are two tuples, so are two NaNs of different bits)."""
    n = len(arrays[0]) if arrays else 0
    valid = np.ones(n, dtype=np.uint8)
    cols: dict[str, pa.Array] = {}
    for j, v in enumerate(arrays):
        if pa.types.is_null(v.type):
            valid[:] = 0
            v = pa.nulls(n, pa.uint8())
        elif v.null_count:
            valid &= np.asarray(v.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)
        if pa.types.is_floating(v.type):
            f = np.asarray(v.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
            bits = f.view(np.int64) if not pa.types.is_float32(v.type) else \
                f.astype(np.float32).view(np.int32).astype(np.int64)
            v = pa.array(bits)
        cols[f"a{i}_{j}"] = v
    cols[f"a{i}_valid"] = pa.array(valid)
    return cols


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _group_order(t: pa.Table, keys: list[str]) -> pa.Array | None:
    """A total order of the rows of a grouped table (one row per distinct key tuple).

    Groups are distinct by value -- floats by their bits, as the hash grouping
    compares them -- so the order sorts floats by their bits too (0 and -0, or
    two NaNs, are two groups that compare equal as numbers).
    """
    if not keys or t.num_rows <= 1:
        return None
    cols: dict[str, pa.Array] = {}
    for j, k in enumerate(keys):
        v = _keyable(t.column(k))
        if pa.types.is_floating(v.type):
            bits = np.asarray(v.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False)).view(np.int64)
            v = pa.array(bits, mask=np.asarray(v.is_null().to_numpy(zero_copy_only=False)) if v.null_count else None)
        cols[f"s{j}"] = v
    # (NULLs sort last, Arrow's default: any fixed place will do)
    return pc.sort_indices(pa.table(cols), sort_keys=[(f"s{j}", "ascending") for j in range(len(keys))])


# ---------------------------------------------------------------------------
# ordering
# ---------------------------------------------------------------------------

def _sort_indices(keys: list[tuple[pa.Array, OrderItem]]) -> pa.Array:
    """Row order for ORDER BY keys with per-key direction and NULL placement.

    As ClickHouse: NULLS LAST by default in both directions; NaN goes with
    the NULLs (values, NaN, NULL; or with NULLS FIRST: NULL, NaN, values).
    Each key is preceded by its "is NULL" and "is NaN" flags.
    """
    cols: dict[str, pa.Array] = {}
    sort_keys: list[tuple[str, str]] = []
    for j, (arr, o) in enumerate(keys):
        arr = _plain(arr)
        if is_uuid(arr.type):
            arr = uuid_order_key(arr)
        flag_dir = "descending" if o.nulls_first else "ascending"
        if arr.null_count:
            cols[f"n{j}"] = arr.is_null()
            sort_keys.append((f"n{j}", flag_dir))
        if pa.types.is_floating(arr.type):
            nan = pc.fill_null(pc.is_nan(arr), False)
            if pc.any(nan).as_py():
                cols[f"nan{j}"] = nan
                # NULL before NaN under NULLS FIRST, NaN before NULL under NULLS LAST: the
                # NULL flag is the outer key, so the NaN flag takes the same direction
                sort_keys.append((f"nan{j}", flag_dir))
        cols[f"v{j}"] = arr
        sort_keys.append((f"v{j}", "descending" if o.descending else "ascending"))
    return pc.sort_indices(pa.table(cols), sort_keys=sort_keys)


def _order(table: pa.Table, key_arrays: list[pa.Array], items: list[OrderItem]) -> pa.Table:
    if not items or table.num_rows <= 1:
        return table
    idx = _sort_indices(list(zip(key_arrays, items)))
    return table.take(idx)


# ---------------------------------------------------------------------------
# the select
# ---------------------------------------------------------------------------

def output_array(e: BExpr, table: pa.Table, per_row: dict | None = None) -> pa.Array:
    """A select item's values; predicates are ClickHouse UInt8 (0/1), not Arrow booleans."""
    if isinstance(e, BConst) and e.value is None and pa.types.is_null(e.type):
        return pa.nulls(table.num_rows, pa.null())    # ClickHouse's Nullable(Nothing)
    v = _plain(evaluate(e, table, per_row))
    if pa.types.is_boolean(v.type) and not pa.types.is_boolean(e.type):
        v = v.cast(pa.uint8())
    return v


def _project(bs: BoundSelect, chunk: pa.Table, per_row: dict | None = None) -> pa.Table:
    # one per-row memo for the chunk: SELECT rand() AS r ... ORDER BY r sorts by the values it outputs
    per_row = {} if per_row is None else per_row
    cols = [output_array(it.expr, chunk, per_row) for it in bs.items]
    return pa.Table.from_arrays(cols, names=[it.name for it in bs.items]) if cols else chunk


# ---------------------------------------------------------------------------
# DISTINCT
# ---------------------------------------------------------------------------

def distinct_rows(table: pa.Table, ncols: int | None = None) -> pa.Table:
    """The first row of each distinct tuple of the first `ncols` columns, in table order.

    One hash grouping (Arrow's, as ClickHouse's: NULLs are one value, floats
    compare by bits) that remembers each group's first row; the rest of the
    columns (sort keys) come along from that row.
    """
    n = table.num_rows
    ncols = table.num_columns if ncols is None else ncols
    if n <= 1:
        return table
    cols = {f"c{j}": _keyable(table.column(j)) for j in range(ncols)}  # positional: names may repeat
    cols["__row"] = pa.array(np.arange(n, dtype=np.int64))
    firsts = pa.table(cols).group_by([f"c{j}" for j in range(ncols)], use_threads=False) \
        .aggregate([("__row", "min")])["__row_min"]
    if len(firsts) == n:
        return table
    return table.take(np.sort(firsts.to_numpy()))


class _DistinctRows:
    """Distinct output rows of a stream of projected chunks, in order of first appearance.

    Each chunk is reduced to its own distinct rows (while that pays: once a
    chunk keeps more than half its rows, later chunks are kept whole), and the
    union is reduced again only when it could hold `need` distinct rows -- so
    a LIMIT stops the scan as soon as `need` distinct rows are known -- or, with
    no LIMIT, once at the end (one hash grouping over everything: repeated
    reductions of a growing union cost more than they save).
    """

    def __init__(self, need: int | None, ncols: int | None = None) -> None:
        self.need = need
        self.ncols = ncols      # the columns compared (default all; the rest ride along)
        self.parts: list[pa.Table] = []
        self.known = 0          # distinct rows in parts[0] after the last reduction
        self.pending = 0        # rows in the chunks added since
        self.per_chunk = True   # reduce each chunk on arrival

    def add(self, chunk: pa.Table) -> None:
        if chunk.num_rows == 0:
            return
        if self.per_chunk:
            n = chunk.num_rows
            chunk = distinct_rows(chunk, self.ncols)
            self.per_chunk = chunk.num_rows * 2 <= n
        self.parts.append(chunk)
        self.pending += chunk.num_rows
        if self.need is not None and self.known + self.pending >= self.need:
            self._reduce()

    def _reduce(self) -> None:
        t = distinct_rows(_concat(self.parts), self.ncols)
        self.parts, self.known, self.pending = [t], t.num_rows, 0

    @property
    def done(self) -> bool:
        return self.need is not None and self.known >= self.need

    def result(self) -> pa.Table | None:
        if not self.parts:
            return None
        if self.pending or len(self.parts) > 1:
            self._reduce()
        return self.parts[0]


# ---------------------------------------------------------------------------
# the select
# ---------------------------------------------------------------------------

def _key_names(n: int) -> list[str]:
    return [f"__key{j}" for j in range(n)]


_POS = "__pos"


def _run_ids(t: pa.Table, cols: list[int]) -> pa.Array:
    """Runs of adjacent rows equal *by value* in columns `cols` of a sorted table: 0 and
    -0 are equal, NaN equals NaN and NULL equals NULL (ClickHouse's compareAt)."""
    n = t.num_rows
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for j in cols:
        a = _plain(t.column(j))
        prev, cur = a.slice(0, n - 1), a.slice(1)
        same = pc.fill_null(pc.equal(prev, cur), False)
        if pa.types.is_floating(a.type):
            same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(prev), pc.is_nan(cur)), False))
        if a.null_count:
            same = pc.or_(same, pc.and_(prev.is_null(), cur.is_null()))
        change[1:] |= ~np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(np.cumsum(change, dtype=np.int64))


def _in_order_distinct(t: pa.Table, ncols: int, prefix: list[int]) -> pa.Table:
    """ClickHouse's DISTINCT after ORDER BY (``optimize_distinct_in_order``): the rows
    arrive sorted by the DISTINCT columns `prefix`; runs equal by value in those
    columns are one group, split by the bits of the other DISTINCT columns.
    Only floats compare differently by value than by bits, so other types pass."""
    if t.num_rows <= 1 or not any(pa.types.is_floating(t.schema.field(j).type) for j in prefix):
        return t
    others = [j for j in range(ncols) if j not in prefix]
    cols = [_run_ids(t, prefix)] + [t.column(j) for j in others]
    firsts = distinct_rows(pa.Table.from_arrays(cols + [pa.array(np.arange(t.num_rows))],
                                                names=[f"c{j}" for j in range(len(cols))] + ["i"]), len(cols))
    return t.take(firsts.column("i")) if firsts.num_rows != t.num_rows else t


def _in_order_columns(items: list[BExpr], order: list[OrderItem]) -> list[int]:
    """The select items forming the longest ORDER BY prefix made of DISTINCT columns
    (those ClickHouse's in-order DISTINCT compares by value)."""
    out: list[int] = []
    for o in order:
        if o.expr not in items:
            break
        j = items.index(o.expr)
        if j not in out:
            out.append(j)
    return out


class _Plan:
    """How DISTINCT meets ORDER BY, as in ClickHouse.

    ClickHouse deduplicates *before* sorting ("Preliminary DISTINCT"): each tuple
    keeps its first row in the stream the table is read in -- parts and granules in
    order, unless the ORDER BY starts with the table's sort key, which ClickHouse
    then reads in order (backwards for DESC). `prefix` is that many leading ORDER
    BY keys; `desc` their direction. After sorting, a second DISTINCT compares
    the ORDER BY keys that are DISTINCT columns by value (`in_order`).
    """

    def __init__(self, bs: BoundSelect, sort_key: list[str]) -> None:
        p = 0
        first = bs.order_by[0].descending if bs.order_by else False
        for o, k in zip(bs.order_by, sort_key):
            if isinstance(o.expr, BColumn) and o.expr.name == k and o.descending == first:
                p += 1
            else:
                break
        self.prefix, self.desc = p, first and p > 0
        self.in_order = _in_order_columns([it.expr for it in bs.items], bs.order_by)
        # the stream's first row of a tuple is also its first in (ORDER BY, stream) order
        self.follow = _keys_follow_output(bs)
        self.topk_ok = self.follow or p == len(bs.order_by)

    def order(self, bs: BoundSelect) -> list[OrderItem]:
        """ORDER BY, ties in stream order. The sorts are stable and rows stay in scan
        order until sorted, so ties fall in scan order already; a DESC read in order
        reverses it: then the scan position (``__pos``) is a last, descending key."""
        pos = [OrderItem(BColumn(_POS, pa.int64(), False), True, False)] if self.desc else []
        return list(bs.order_by) + pos


def _sorted_rows(t: pa.Table, bs: BoundSelect, order: list[OrderItem], need: int | None,
                 deduplicated: bool = False, in_order: list[int] | None = None) -> pa.Table:
    """`t` (output columns, then one ``__key`` column per ORDER BY item) sorted; with
    DISTINCT only the first row of each output tuple (unless `t` is `deduplicated`
    already) and ClickHouse's in-order DISTINCT on the columns `in_order`; at most
    `need` rows."""
    keys = _key_names(len(order))
    t = _order(t, [t[k] for k in keys], order)
    if bs.distinct:
        if not deduplicated:
            t = distinct_rows(t, len(bs.items))
        if in_order:
            t = _in_order_distinct(t, len(bs.items), in_order)
    return t.slice(0, need) if need is not None else t


def _keys_follow_output(bs: BoundSelect) -> bool:
    """Whether each ORDER BY key is determined by the output row: it is a select
    item, or reads only columns that are select items themselves."""
    exprs = {it.expr for it in bs.items}
    plain = {e.name for e in exprs if isinstance(e, BColumn)}
    return all(o.expr in exprs or columns_of(o.expr) <= plain for o in bs.order_by)


_ARRAY_JOIN_COLUMN = "__array_join"


def array_joins(bs: BoundSelect) -> list[BCall]:
    """The distinct arrayJoin(...) calls of the select list, GROUP BY, HAVING and ORDER BY."""
    out: list[BCall] = []

    def step(x: BExpr) -> BExpr | None:
        if isinstance(x, BCall) and x.func == "arrayJoin" and x not in out:
            out.append(x)
        return None

    for e in [it.expr for it in bs.items] + list(bs.group_by) + [o.expr for o in bs.order_by] + [bs.having]:
        if e is not None:
            transform(e, step)
    return out


def _expand_array_join(bs: BoundSelect, join: BCall, chunks: Iterable[pa.Table]):
    """ClickHouse's arrayJoin: each row repeated once per element of the array (a row with an
    empty array disappears), the call itself read as the element column."""
    col = BColumn(_ARRAY_JOIN_COLUMN, join.type, join.nullable)

    def swap(x: BExpr) -> BExpr | None:
        return col if x == join else None

    def sub(e: BExpr | None) -> BExpr | None:
        return None if e is None else transform(e, swap)

    bs = dataclasses.replace(
        bs, items=[dataclasses.replace(it, expr=sub(it.expr)) for it in bs.items],
        group_by=[sub(g) for g in bs.group_by], having=sub(bs.having),
        order_by=[dataclasses.replace(o, expr=sub(o.expr)) for o in bs.order_by])

    def expanded() -> Iterator[pa.Table]:
        for ch in chunks:
            arr = _plain(evaluate(join.args[0], ch))
            flat = _plain(pc.list_flatten(arr))
            if ch.num_columns == 0:     # SELECT arrayJoin([...]) with no FROM: Arrow's take of no columns has no rows
                yield pa.table({_ARRAY_JOIN_COLUMN: flat})
                continue
            parents = pc.list_parent_indices(arr)
            yield ch.take(parents).append_column(_ARRAY_JOIN_COLUMN, flat)
    return bs, expanded()


def run_select(bs: BoundSelect, chunks: Iterable[pa.Table], sort_key: list[str] | None = None) -> pa.Table:
    """Consume the scan's filtered chunks and produce the result table.

    `sort_key` is the table's ORDER BY (column names): with DISTINCT and an ORDER BY
    starting with it, ClickHouse reads the table in that order, which decides
    which row of a tuple DISTINCT keeps.
    """
    joins = array_joins(bs)
    if len(joins) > 1:
        raise SkipidxError("only one arrayJoin(...) per query is supported (ClickHouse would join each)")
    if joins:
        bs, chunks = _expand_array_join(bs, joins[0], chunks)
    if bs.aggregate:
        return _run_aggregate(bs, chunks)
    if bs.limit == 0:
        # LIMIT 0 reads nothing (ClickHouse neither computes the SELECT list then:
        # `SELECT x % x ... LIMIT 0` raises no "Division by zero")
        return _empty_projection(bs)

    need = (bs.limit + bs.offset) if bs.limit is not None else None
    if not bs.order_by:
        if bs.distinct:
            acc = _DistinctRows(need)
            for ch in chunks:
                acc.add(_project(bs, ch))
                if acc.done:
                    break   # enough distinct rows: later chunks are never read
            out = acc.result()
            return _limit(out if out is not None else _empty_projection(bs), bs.limit, bs.offset)
        got: list[pa.Table] = []
        n = 0
        for ch in chunks:
            p = _project(bs, ch)
            got.append(p)
            n += p.num_rows
            if need is not None and n >= need:
                break   # stop the scan: later chunks are never read
        out = _concat(got) if got else _empty_projection(bs)
        return _limit(out, bs.limit, bs.offset)

    # ORDER BY: keep the projected rows plus their sort keys; top-k when limited
    best: pa.Table | None = None
    nk = len(bs.order_by)
    plan = _Plan(bs, list(sort_key or [])) if bs.distinct else None
    order = plan.order(bs) if plan is not None else list(bs.order_by)
    in_order = plan.in_order if plan is not None else None
    # DISTINCT read in scan order (no read in order): keep each tuple's first row as
    # rows come (ClickHouse's preliminary DISTINCT), sort those once at the end. Top-k
    # (below) is used instead when a LIMIT allows it: see _Plan.topk_ok.
    # (With the ORDER BY keys following the output row, a tuple's rows are alike and
    # an ascending read in order keeps the first scanned one too.)
    early = _DistinctRows(None, len(bs.items)) \
        if (plan is not None and not (need is not None and plan.topk_ok)
            and (plan.prefix == 0 or (plan.follow and not plan.desc))) else None
    # DISTINCT read in order and an ORDER BY that may rank a later row of a tuple first:
    # all rows, deduplicated in stream order at the end
    whole = plan is not None and early is None and not plan.topk_ok
    pos = 0
    for ch in chunks:
        if ch.num_rows == 0:
            continue
        per_row: dict = {}
        p = _project(bs, ch, per_row)
        keys = [_plain(evaluate(o.expr, ch, per_row)) for o in bs.order_by]
        for j, k in enumerate(keys):
            p = p.append_column(f"__key{j}", k)
        if plan is not None and plan.desc:   # the scan position: ties in stream order
            p = p.append_column(f"__key{nk}", pa.array(np.arange(pos, pos + p.num_rows, dtype=np.int64)))
            pos += p.num_rows
        if early is not None:
            early.add(p)
            continue
        best = p if best is None else _concat([best, p])
        if need is not None and not whole and best.num_rows > max(need, 1) * 2:
            best = _sorted_rows(best, bs, order, need, in_order=in_order)
    if early is not None:
        best = early.result()
    if best is None:
        return _limit(_empty_projection(bs), bs.limit, bs.offset)
    if whole:
        # the stream: sorted by the read-in-order prefix, ties by scan position
        stream = [(best[f"__key{j}"], o) for j, o in enumerate(order[:plan.prefix])]
        if plan.desc:
            stream.append((best[f"__key{nk}"], order[-1]))
        best = best.take(_sort_indices(stream))
        best = distinct_rows(best, len(bs.items))
    best = _sorted_rows(best, bs, order, None, deduplicated=early is not None or whole, in_order=in_order)
    return _limit(best.drop_columns(_key_names(len(order))), bs.limit, bs.offset)


def _run_aggregate(bs: BoundSelect, chunks: Iterable[pa.Table]) -> pa.Table:
    """GROUP BY / aggregates, then HAVING, the SELECT list, DISTINCT, ORDER BY and LIMIT."""
    agg = _Aggregation(bs)
    for ch in chunks:
        agg.add(ch)
    grouped = agg.finish()
    repl: dict[Any, BColumn] = {}
    for j, k in enumerate(agg.keys):
        repl[k] = BColumn(f"k{j}", k.type, k.nullable)
    for i, a in enumerate(agg.aggs):
        repl[a] = BColumn(f"g{i}", a.type, a.nullable)
    if bs.having is not None:
        mask = where_mask(_rewrite(bs.having, repl), grouped)
        if mask is not None:
            grouped = grouped.filter(mask) if grouped.num_columns else zero_column_table(
                int(pc.sum(mask).as_py() or 0))
    items = [OutputItem(it.name, _rewrite(it.expr, repl)) for it in bs.items]
    order = [OrderItem(_rewrite(o.expr, repl), o.descending, o.nulls_first) for o in bs.order_by]
    out = pa.Table.from_arrays([output_array(it.expr, grouped) for it in items],
                               names=[it.name for it in items])
    if order:
        for j, o in enumerate(order):
            out = out.append_column(f"__key{j}", _plain(evaluate(o.expr, grouped)))
        in_order = _in_order_columns([it.expr for it in items], order) if bs.distinct else None
        out = _sorted_rows(out, bs, order, None, in_order=in_order).drop_columns(_key_names(len(order)))
    elif bs.distinct:
        out = distinct_rows(out)
    return _limit(out, bs.limit, bs.offset)


def _empty_projection(bs: BoundSelect) -> pa.Table:
    return pa.Table.from_arrays([pa.array([], _value_type(it.expr.type)) for it in bs.items],
                                names=[it.name for it in bs.items])


def _limit(t: pa.Table, limit: int | None, offset: int) -> pa.Table:
    # LIMIT/OFFSET are UInt64 in ClickHouse: clamp before slicing (Arrow takes int64)
    if offset:
        t = t.slice(min(offset, t.num_rows))
    if limit is not None:
        t = t.slice(0, min(limit, t.num_rows))
    return t
