"""Aggregate functions with ClickHouse 26.9 result types and empty-input answers.

`aggregate(table, group_keys, aggs)` computes ``count()``, ``count(col)``,
``min``, ``max``, ``sum``, ``avg``, ``uniqExact`` and ``any`` over a whole
table (no keys) or per GROUP BY group, with pyarrow's hash aggregation
(``Table.group_by(...).aggregate``); chDB checks the values and the types in
``tests/execution/test_aggregates_chdb.py``.

Result types (ClickHouse):

============  ===============================================================
count()       UInt64 (never NULL)
count(col)    UInt64: the non-NULL values
sum(col)      Int64 for Int*, UInt64 for UInt*/Bool, Float64 for Float*;
              integer sums wrap on overflow as ClickHouse's do
avg(col)      Float64; integers are summed in Int64/UInt64 (wrapping) and
              divided by the count, as ClickHouse does. avg(Date/DateTime)
              keeps the type: the mean rounded half to even
min/max(col)  the column's type; NaN is skipped unless every value is NaN;
              strings compare byte-wise
uniqExact     UInt64: distinct non-NULL values (NaN counts as one value)
any(col)      the column's type: the first non-NULL value in table order
anyLast(col)  the column's type: the last non-NULL value
uniq          as uniqExact: exact (ClickHouse's uniq is approximate, but
              exact below ~65k distinct values)
argMin/Max    argMin(x, y): x at the row of the least (greatest) y; the first
              such row on ties; rows where x or y is NULL are skipped (the
              -Null combinator); NaN y never wins; Nullable if x or y is
quantile      quantile(l)(x), default l = 0.5: Float64, linear interpolation
              at l * (n - 1) of the sorted values, as ClickHouse's reservoir
              sampler computes it for up to 8192 values (above that its answer
              is a sample's; here it stays exact); NaN/NULL skipped
quantileExact x's type: the sorted values' element at floor(l * n)
quantiles     quantiles(l1, ...)(x): Array(Float64) (Array(T) for
              quantilesExact), never NULL: [nan, ...] / defaults when empty
groupArray    Array(T): the non-NULL values in input order
fIf(..., c)   the -If combinator, for every function above: f over the rows
              where c is true (NULL is not); a group where no row matches
              answers as an empty input does (0, nan, default, or NULL)
============  ===============================================================

NULLs: every function but ``count()`` skips NULL values. Over a Nullable
column the result is Nullable: NULL when the group (or the whole input) has no
non-NULL value (``count``/``uniqExact`` give 0). Over a non-Nullable column
and an *empty* input without GROUP BY, ClickHouse answers the type's default:
``sum`` 0, ``avg`` nan, ``min``/``max``/``any`` 0, '' or 1970-01-01. With
GROUP BY an empty input gives no rows. A NULL group key is a group of its own.

Whether a column is Nullable comes from the `nullable` argument, or else from
the Arrow field's ``nullable`` flag (the store writes non-Nullable columns as
``nullable=False`` fields).
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError

__all__ = ["AGGREGATE_FUNCTIONS", "AggSpec", "Aggregator", "aggregate", "result_type"]

#: (function, column or None for count(), output column name)
AggSpec = tuple[str, "str | None", str]

# ClickHouse names (case-insensitive in SQL) -> canonical names used here.
AGGREGATE_FUNCTIONS: dict[str, str] = {
    "count": "count", "min": "min", "max": "max", "sum": "sum", "avg": "avg",
    "uniqexact": "uniqExact", "any": "any", "uniq": "uniqExact",
    "anylast": "anyLast", "argmin": "argMin", "argmax": "argMax", "quantile": "quantile",
    "quantileexact": "quantileExact", "quantiles": "quantiles", "quantilesexact": "quantilesExact",
    "grouparray": "groupArray",
}
#: Computed by the extended path only (one group_by with rank/list states), as are specs
#: with options (the -If condition, argMin/argMax's compared column, quantile levels).
_EXTENDED = {"anyLast", "argMin", "argMax", "quantile", "quantileExact", "quantiles", "quantilesExact",
             "groupArray"}


def _canonical(func: str) -> str:
    name = AGGREGATE_FUNCTIONS.get(func.lower())
    if name is None:
        raise SkipidxError(f"Unknown aggregate function {func}")
    return name


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _sum_type(t: pa.DataType, func: str) -> pa.DataType:
    if pa.types.is_signed_integer(t):
        return pa.int64()
    if pa.types.is_unsigned_integer(t) or pa.types.is_boolean(t):
        return pa.uint64()
    if pa.types.is_floating(t):
        return pa.float64()
    raise SkipidxError(f"Illegal type {t} of argument for aggregate function {func}")


def result_type(func: str, column_type: pa.DataType | None) -> pa.DataType:
    """The Arrow type of ``func(column)`` (ClickHouse's result type, nullability aside)."""
    f = _canonical(func)
    if f in ("count", "uniqExact"):
        return pa.uint64()
    if column_type is None:
        raise SkipidxError(f"aggregate function {func} needs an argument")
    t = _value_type(column_type)
    if f in ("quantile", "quantileExact", "quantiles", "quantilesExact"):
        if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
            raise SkipidxError(f"Illegal type {t} of argument for aggregate function {func}")
        rt = t if f.endswith("Exact") else pa.float64()
        return _list_of(rt) if f.startswith("quantiles") else rt
    if f == "groupArray":
        return _list_of(t)
    if f == "sum":
        return _sum_type(t, func)
    if f == "avg":
        if _is_temporal(t):
            return t  # ClickHouse: avg(Date) is a Date (the mean day, rounded half to even)
        _sum_type(t, func)
        return pa.float64()
    return t


def _list_of(t: pa.DataType) -> pa.DataType:
    """Array(T) with non-Nullable items (groupArray skips NULLs; quantiles are never NULL)."""
    return pa.list_(pa.field("item", t, nullable=False))


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t)


def _temporal_ints(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Date/DateTime values as their integer count (days or time units since the epoch)."""
    return col.cast(pa.int32() if pa.types.is_date32(col.type) else pa.int64()).cast(pa.int64())


def _temporal_mean(sums: pa.ChunkedArray | pa.Array, counts: pa.ChunkedArray | pa.Array,
                   t: pa.DataType) -> pa.Array:
    """Mean of epoch counts rounded half to even, back in the Date/DateTime type."""
    s = np.asarray(pa.chunked_array([sums]).combine_chunks().cast(pa.float64(), safe=False)
                   .to_numpy(zero_copy_only=False), dtype=np.float64)
    c = np.asarray(pa.chunked_array([counts]).combine_chunks().cast(pa.float64())
                   .to_numpy(zero_copy_only=False), dtype=np.float64)
    with np.errstate(all="ignore"):
        mean = np.rint(s / c)
    valid = np.isfinite(mean)
    ints = pa.array(np.where(valid, mean, 0).astype(np.int64), mask=~valid)
    return ints.cast(pa.int32()).cast(t) if pa.types.is_date32(t) else ints.cast(t)


def _default_scalar(t: pa.DataType) -> pa.Scalar:
    """ClickHouse's default value of a non-Nullable type (what min() of nothing returns)."""
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return pa.scalar(0, type=t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, type=t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", type=t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", type=t)
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return pa.scalar(0, type=pa.int64()).cast(pa.int32() if pa.types.is_date32(t) else pa.int64()).cast(t)
    raise SkipidxError(f"no default value for type {t}")


def _prepare(col: pa.ChunkedArray, f: str, func: str) -> pa.ChunkedArray:
    """The column as the kernel should see it: decoded dictionaries, sums in the result type."""
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if f == "avg" and _is_temporal(col.type):
        col = _temporal_ints(col)
    elif f in ("sum", "avg"):
        col = col.cast(_sum_type(col.type, func))  # int->int64/uint64 is value-preserving
    return col


def _nan_min_max(col: pa.ChunkedArray, f: str) -> pa.Scalar:
    # Arrow's min/max already skip NaN unless every value is NaN, as ClickHouse's do.
    mm = pc.min_max(col, skip_nulls=True)
    return mm["min" if f == "min" else "max"]


def _whole_table(table: pa.Table, aggs: Sequence[tuple[str, str | None, str, bool]]) -> pa.Table:
    arrays, names = [], []
    n = table.num_rows
    for f, column, out, is_nullable in aggs:
        if f == "count" and column is None:
            arrays.append(pa.array([n], pa.uint64()))
            names.append(out)
            continue
        raw = table.column(column)
        col = _prepare(raw, f, f)
        rt = result_type(f, raw.type)
        nonnull = len(col) - col.null_count
        if f == "count":
            value: pa.Scalar = pa.scalar(nonnull, pa.uint64())
        elif f == "uniqExact":
            value = pa.scalar(pc.count_distinct(col, mode="only_valid").as_py(), pa.uint64())
        elif nonnull == 0:
            if is_nullable:
                value = pa.scalar(None, rt)
            elif f == "avg" and not _is_temporal(rt):
                value = pa.scalar(float("nan"), pa.float64())
            else:
                value = _default_scalar(rt)
        elif f == "sum":
            value = pc.sum(col, skip_nulls=True, min_count=1).cast(rt)
        elif f == "avg" and _is_temporal(rt):
            value = _temporal_mean(pa.array([pc.sum(col).as_py()], pa.int64()), pa.array([nonnull]), rt)[0]
        elif f == "avg":
            s = pc.sum(col, skip_nulls=True, min_count=1).as_py()
            value = pa.scalar(float(s) / nonnull, pa.float64())
        elif f in ("min", "max"):
            value = _nan_min_max(col, f).cast(rt)
        elif f == "any":
            value = pc.first(col, skip_nulls=True).cast(rt)
        else:
            raise AssertionError(f)
        arrays.append(pa.array([value.as_py()], type=value.type))
        names.append(out)
    return pa.Table.from_arrays(arrays, names=names)


def aggregate(table: pa.Table, group_keys: Sequence[str], aggs: Sequence[AggSpec], *,
              nullable: Collection[str] | None = None) -> pa.Table:
    """ClickHouse aggregation of `table`.

    `aggs` lists ``(function, column, output_name)``; the function is one of
    count, min, max, sum, avg, uniqExact, any (any case); column ``None`` is
    ``count()``. With no `group_keys` the result has one row; otherwise one row
    per distinct key combination (NULL is a key value; the order of groups is
    unspecified, as in ClickHouse). Output columns: the keys, then the
    aggregates, in the order given. `nullable` names the Nullable columns
    (default: the fields whose Arrow ``nullable`` flag is set). Unknown
    functions or columns, or ``sum``/``avg`` of a non-number, raise
    `SkipidxError`.
    """
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    names = set(table.column_names)
    for k in group_keys:
        if k not in names:
            raise SkipidxError(f"Unknown GROUP BY column {k}")
    if nullable is None:
        nullable = {f.name for f in table.schema if f.nullable}
    plan: list[tuple[str, str | None, str, bool]] = []
    options: list[dict] = []
    outs: set[str] = set(group_keys)
    for spec in aggs:
        if len(spec) not in (3, 4):
            raise SkipidxError(f"aggregate spec must be (function, column, output_name[, options]), got {spec!r}")
        func, column, out = spec[:3]
        opts = dict(spec[3]) if len(spec) == 4 and spec[3] else {}
        for key in ("cond", "by"):
            if opts.get(key) is not None and opts[key] not in names:
                raise SkipidxError(f"Unknown column {opts[key]} in {func}")
        f = _canonical(func)
        if f in ("argMin", "argMax") and opts.get("by") is None:
            raise SkipidxError(f"aggregate function {func} needs the compared column (option 'by')")
        options.append(opts)
        if column is None and f != "count":
            raise SkipidxError(f"aggregate function {func} needs an argument")
        if column is not None and column not in names:
            raise SkipidxError(f"Unknown column {column} in {func}({column})")
        if out in outs:
            raise SkipidxError(f"duplicate output column name {out}")
        outs.add(out)
        if column is not None:
            result_type(f, table.schema.field(column).type)  # type check now, before any work
        plan.append((f, column, out, column is not None and (column in nullable or (
            f in ("argMin", "argMax") and opts["by"] in nullable))))

    if any(options) or any(f in _EXTENDED for f, *_ in plan):
        return _aggregate_extended(table, list(group_keys), plan, options)
    if not group_keys:
        return _whole_table(table, plan)

    # Hash aggregation: one pass, per-group kernels. Columns are prepared (decoded,
    # widened) once and given private names so the same column can serve many aggs.
    work: dict[str, pa.ChunkedArray] = {}
    for k in group_keys:
        c = table.column(k)
        work[k] = c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
    requests = []
    post: list[tuple[str, str, str, pa.DataType | None]] = []
    for i, (f, column, out, _) in enumerate(plan):
        tmp = f"__agg{i}"
        if f == "count" and column is None:
            requests.append(([], "count_all"))
            post.append((out, "count_all", f, pa.uint64()))
            continue
        col = _prepare(table.column(column), f, f)
        work[tmp] = col
        rt = result_type(f, table.schema.field(column).type)
        if f == "count":
            requests.append((tmp, "count", pc.CountOptions(mode="only_valid")))
            post.append((out, f"{tmp}_count", f, pa.uint64()))
        elif f == "uniqExact":
            requests.append((tmp, "count_distinct", pc.CountOptions(mode="only_valid")))
            post.append((out, f"{tmp}_count_distinct", f, pa.uint64()))
        elif f == "sum":
            requests.append((tmp, "sum", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)))
            post.append((out, f"{tmp}_sum", f, rt))
        elif f == "avg":
            requests.append((tmp, "sum", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)))
            requests.append((tmp, "count", pc.CountOptions(mode="only_valid")))
            post.append((out, f"{tmp}_sum/{tmp}_count", f, rt))
        elif f in ("min", "max"):
            requests.append((tmp, f, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)))
            post.append((out, f"{tmp}_{f}", f, rt))
        elif f == "any":
            requests.append((tmp, "first", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)))
            post.append((out, f"{tmp}_first", f, rt))
        else:
            raise AssertionError(f)
    wt = pa.table(work)
    # use_threads=False: "first" (any) needs input order, and results are deterministic.
    res = wt.group_by(list(group_keys), use_threads=False).aggregate(requests)
    arrays = [res.column(k) for k in group_keys]
    out_names = list(group_keys)
    for out, src, f, rt in post:
        if f == "avg" and _is_temporal(rt):
            s_name, c_name = src.split("/")
            arrays.append(_temporal_mean(res.column(s_name), res.column(c_name), rt))
        elif f == "avg":
            s_name, c_name = src.split("/")
            s = res.column(s_name).cast(pa.float64(), safe=False)  # big int sums round, as in C++
            arrays.append(pc.divide(s, res.column(c_name).cast(pa.float64())))
        else:
            arrays.append(res.column(src).cast(rt))
        out_names.append(out)
    return pa.Table.from_arrays(arrays, names=out_names)


def _truth(c: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A condition column as a boolean mask: non-zero is true, NULL is not."""
    if pa.types.is_null(c.type):
        return pc.cast(pa.nulls(len(c), pa.bool_()), pa.bool_()).fill_null(False)
    if pa.types.is_dictionary(c.type):
        c = c.cast(c.type.value_type)
    b = c if pa.types.is_boolean(c.type) else pc.not_equal(c, pa.scalar(0, c.type))
    return b.fill_null(False)


def _np(a: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    return a.to_numpy(zero_copy_only=False)


def _list_parts(lists: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(offsets, values) of per-group lists with NULL items removed (NaN too, if `nan`)."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks() if lists.num_chunks else pa.array([], lists.type)
    lists = lists.fill_null(pa.scalar([], lists.type)) if lists.null_count else lists
    values = pc.list_flatten(lists)
    gid = _np(pc.list_parent_indices(lists)).astype(np.int64)
    keep = _np(values.is_valid()).astype(bool)
    counts = np.bincount(gid[keep], minlength=len(lists)) if len(gid) else np.zeros(len(lists), np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return offsets, values.filter(pa.array(keep))


def _group_arrays(lists: pa.ChunkedArray, t: pa.DataType) -> pa.Array:
    offsets, values = _list_parts(lists)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values.cast(t), type=_list_of(t))


def _quantile_values(lists: pa.ChunkedArray, levels: list[float], exact: bool, t: pa.DataType,
                     nullable: bool, many: bool) -> pa.Array:
    """Per group, ClickHouse's quantile (linear interpolation at level * (n - 1), as its
    reservoir sampler computes it) or quantileExact (the value at floor(level * n)); NaN
    and NULL are skipped. A group without values: NULL (Nullable x), else nan / the default;
    quantiles(...) always give an array."""
    offsets, values = _list_parts(lists)
    vals = _np(values).astype(np.float64) if not exact else _np(values)
    if not exact or pa.types.is_floating(t):
        keep = ~np.isnan(vals.astype(np.float64))
        if not keep.all():
            counts = np.diff(offsets)
            gid = np.repeat(np.arange(len(counts)), counts)
            counts = np.bincount(gid[keep], minlength=len(counts))
            offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            vals = vals[keep]
    counts = np.diff(offsets)
    gid = np.repeat(np.arange(len(counts)), counts)
    sv = vals[np.lexsort((vals, gid))] if len(vals) else vals
    empty = counts == 0
    start = offsets[:-1]
    outs = []
    for level in levels:
        if exact:
            pos = np.where(level < 1, np.floor(level * counts), counts - 1).astype(np.int64)
            pos = np.clip(pos, 0, np.maximum(counts - 1, 0))
            got = sv[np.minimum(start + pos, max(len(sv) - 1, 0))] if len(sv) else np.zeros(len(counts), sv.dtype)
            arr = pa.array(got, t) if len(sv) else pa.array(np.zeros(len(counts)), pa.float64()).cast(t)
            if empty.any():
                fill = None if nullable and not many else _default_scalar(t).as_py()
                arr = pc.if_else(pa.array(empty), pa.scalar(fill, t), arr)
        else:
            idx = np.clip(level * (counts - 1), 0, np.maximum(counts - 1, 0))
            left = idx.astype(np.int64)
            right = np.minimum(left + 1, np.maximum(counts - 1, 0))
            if len(sv):
                a = sv[np.minimum(start + left, len(sv) - 1)]
                b = sv[np.minimum(start + right, len(sv) - 1)]
                rc = idx - left
                got = np.where(left + 1 < counts, a * ((left + 1) - idx) + b * rc, a)
            else:
                got = np.zeros(len(counts))
            got = np.where(empty, np.nan, got)
            mask = empty if nullable and not many else None
            arr = pa.array(got, pa.float64(), mask=mask)
        outs.append(arr)
    if not many:
        return outs[0]
    k = len(levels)
    rt = t if exact else pa.float64()
    items = pa.concat_arrays([o.cast(rt) for o in outs]) if outs else pa.array([], rt)
    # interleave: group g's levels are items[j * G + g] for j in 0..k-1
    g = len(counts)
    order = (np.arange(k)[None, :] * g + np.arange(g)[:, None]).reshape(-1)
    items = items.take(pa.array(order, pa.int64()))
    return pa.ListArray.from_arrays(pa.array(np.arange(g + 1, dtype=np.int32) * k), items, type=_list_of(rt))


def _empty_fill(arr: pa.Array | pa.ChunkedArray, f: str, rt: pa.DataType, nullable: bool):
    """A group (or an empty input) without values: NULL for a Nullable argument,
    else ClickHouse's answer for nothing (0, nan for avg, the type's default)."""
    if f in ("count", "uniqExact"):
        return arr.fill_null(0)
    if nullable or f in ("groupArray", "quantiles", "quantilesExact", "quantile", "quantileExact"):
        return arr
    if f == "avg" and not _is_temporal(rt):
        return arr.fill_null(float("nan"))
    return arr.fill_null(_default_scalar(rt))


def _aggregate_extended(table: pa.Table, group_keys: list[str], plan: list, options: list[dict]) -> pa.Table:
    """Every aggregate in one hash aggregation, -If conditions applied by masking the
    inputs, argMin/argMax as the least rank of a stable sort by the compared column,
    quantiles and groupArray from per-group lists (sorted with one numpy lexsort)."""
    n = table.num_rows
    keys = group_keys or ["__skipidx_all"]
    work: dict[str, pa.ChunkedArray | pa.Array] = {}
    for k in group_keys:
        c = table.column(k)
        work[k] = c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
    if not group_keys:
        work[keys[0]] = pa.array(np.zeros(n, np.int8))
    requests: list = []
    post: list = []
    ones = None
    for i, ((f, column, out, is_nullable), opts) in enumerate(zip(plan, options)):
        tmp = f"__agg{i}"
        mask = _truth(table.column(opts["cond"])) if opts.get("cond") is not None else None
        if column is None:          # count()[If]
            if mask is None:
                requests.append(([], "count_all"))
                post.append((out, "count_all", f, pa.uint64(), is_nullable, None))
            else:
                ones = pa.array(np.ones(n, np.int8)) if ones is None else ones
                work[tmp] = pc.if_else(mask, ones, pa.scalar(None, pa.int8()))
                requests.append((tmp, "count", pc.CountOptions(mode="only_valid")))
                post.append((out, f"{tmp}_count", f, pa.uint64(), is_nullable, None))
            continue
        raw = table.column(column)
        rt = result_type(f, raw.type)
        col = _prepare(raw, f, f)
        skip = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
        if f in ("argMin", "argMax"):
            by = table.column(opts["by"])
            by = by.cast(by.type.value_type) if pa.types.is_dictionary(by.type) else by
            order = pc.sort_indices(pa.table({"b": by}), sort_keys=[("b", "ascending" if f == "argMin"
                                                                        else "descending")],
                                    )
            rank = np.empty(n, np.int64)
            rank[_np(order)] = np.arange(n, dtype=np.int64)
            valid = pc.and_(col.is_valid(), by.is_valid())
            if mask is not None:
                valid = pc.and_(valid, mask)
            work[tmp] = pc.if_else(valid, pa.array(rank), pa.scalar(None, pa.int64()))
            requests.append((tmp, "min", skip))
            post.append((out, f"{tmp}_min", f, rt, is_nullable, (order, col)))
            continue
        if mask is not None:
            col = pc.if_else(mask, col, pa.scalar(None, col.type))
        work[tmp] = col
        if f == "count":
            requests.append((tmp, "count", pc.CountOptions(mode="only_valid")))
            post.append((out, f"{tmp}_count", f, rt, is_nullable, None))
        elif f == "uniqExact":
            requests.append((tmp, "count_distinct", pc.CountOptions(mode="only_valid")))
            post.append((out, f"{tmp}_count_distinct", f, rt, is_nullable, None))
        elif f == "sum":
            requests.append((tmp, "sum", skip))
            post.append((out, f"{tmp}_sum", f, rt, is_nullable, None))
        elif f == "avg":
            requests.append((tmp, "sum", skip))
            requests.append((tmp, "count", pc.CountOptions(mode="only_valid")))
            post.append((out, f"{tmp}_sum/{tmp}_count", f, rt, is_nullable, None))
        elif f in ("min", "max"):
            requests.append((tmp, f, skip))
            post.append((out, f"{tmp}_{f}", f, rt, is_nullable, None))
        elif f in ("any", "anyLast"):
            requests.append((tmp, "first" if f == "any" else "last", skip))
            post.append((out, f"{tmp}_{'first' if f == 'any' else 'last'}", f, rt, is_nullable, None))
        elif f in ("groupArray", "quantile", "quantileExact", "quantiles", "quantilesExact"):
            requests.append((tmp, "list"))
            post.append((out, f"{tmp}_list", f, rt, is_nullable, opts.get("params") or (0.5,)))
        else:
            raise AssertionError(f)
    res = pa.table(work).group_by(keys, use_threads=False).aggregate(requests)
    empty_whole = not group_keys and res.num_rows == 0
    if empty_whole:             # no GROUP BY and no row: one row of "nothing" answers
        res = pa.table({c: pa.nulls(1, res.schema.field(c).type) for c in res.column_names})
        if "count_all" in res.column_names:
            res = res.set_column(res.column_names.index("count_all"), "count_all", pa.array([0], pa.int64()))
    arrays = [res.column(k) for k in group_keys]
    names = list(group_keys)
    for out, src, f, rt, is_nullable, extra in post:
        if f == "avg":
            s_name, c_name = src.split("/")
            if _is_temporal(rt):
                arr = _temporal_mean(res.column(s_name), res.column(c_name).fill_null(0), rt)
            else:
                arr = pc.divide(res.column(s_name).cast(pa.float64(), safe=False),
                                res.column(c_name).fill_null(0).cast(pa.float64()))
        elif f in ("argMin", "argMax"):
            order, col = extra
            rank = res.column(src)
            idx = pc.take(order, rank.fill_null(0)) if len(order) else pa.array([0] * len(rank), pa.uint64())
            taken = col.take(idx) if len(col) else pa.nulls(len(rank), rt)
            arr = pc.if_else(rank.is_null(), pa.scalar(None, taken.type), taken).cast(rt)
        elif f == "groupArray":
            arr = _group_arrays(res.column(src), rt.value_type)
        elif f.startswith("quantile"):
            t = _value_type(res.schema.field(src).type.value_type)
            arr = _quantile_values(res.column(src), [float(x) for x in extra], f.endswith("Exact"), t,
                                   is_nullable, f.startswith("quantiles"))
        else:
            arr = res.column(src).cast(rt)
        arrays.append(_empty_fill(arr, f, rt, is_nullable))
        names.append(out)
    return pa.Table.from_arrays(arrays, names=names)


class Aggregator:
    """Combinable aggregation: feed batches with `update`, merge with `merge`, finish with `result`.

    Each `update` reduces its batch to one partial-state row per group at once
    (count, sum, min, max, first, and for avg a sum and a count), so memory
    holds states, not rows; ``uniqExact`` keeps its distinct (keys, value)
    pairs, which is what an exact distinct count needs. `result` gives the same
    table as `aggregate` over all rows fed (and, for ``any``, the first value in
    feeding order). Aggregators built with the same arguments on different
    parts merge with `merge`.
    """

    _CONST_KEY = "__skipidx_all"

    def __init__(self, schema: pa.Schema, group_keys: Sequence[str], aggs: Sequence[AggSpec], *,
                 nullable: Collection[str] | None = None) -> None:
        self.schema = schema
        self.group_keys = list(group_keys)
        self.aggs = list(aggs)
        self.nullable = ({f.name for f in schema if f.nullable} if nullable is None else set(nullable))
        for spec in self.aggs:
            if len(spec) != 3 or _canonical(spec[0]) in _EXTENDED:
                raise SkipidxError(f"{spec[0]} (or an aggregate with options) has no combinable state here; "
                                   "use aggregate()")
        # Validate now (names, functions, types) with the one-shot path on an empty table.
        aggregate(schema.empty_table(), self.group_keys, self.aggs, nullable=self.nullable)
        self._partials: list[pa.Table] = []

    def _keys(self) -> list[str]:
        return self.group_keys or [self._CONST_KEY]

    def update(self, batch: pa.Table | pa.RecordBatch) -> None:
        """Reduce `batch` (the aggregator's schema) to partial states and keep them."""
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        if table.num_rows == 0:
            return
        if not table.schema.equals(self.schema, check_metadata=False):
            raise SkipidxError("batch schema differs from the aggregator's schema")
        work: dict[str, pa.ChunkedArray] = {}
        for k in self.group_keys:
            c = table.column(k)
            work[k] = c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
        if not self.group_keys:
            work[self._CONST_KEY] = pa.chunked_array([pa.array([0] * table.num_rows, pa.int8())])
        requests = []
        uniq_tables = []
        for i, (func, column, _) in enumerate(self.aggs):
            f = _canonical(func)
            tmp = f"__agg{i}"
            if f == "count" and column is None:
                requests.append(([], "count_all"))
                continue
            col = _prepare(table.column(column), f, f)
            if f == "uniqExact":
                pairs = {k: work[k] for k in self._keys()}
                pairs[tmp] = col
                uniq_tables.append(pa.table(pairs).group_by(self._keys() + [tmp], use_threads=False).aggregate([]))
                continue
            work[tmp] = col
            if f == "count":
                requests.append((tmp, "count", pc.CountOptions(mode="only_valid")))
            elif f in ("sum", "avg"):
                requests.append((tmp, "sum", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)))
                requests.append((tmp, "count", pc.CountOptions(mode="only_valid")))
            elif f in ("min", "max"):
                requests.append((tmp, f, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)))
            elif f == "any":
                requests.append((tmp, "first", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)))
        part = pa.table(work).group_by(self._keys(), use_threads=False).aggregate(requests)
        self._partials.append(part)
        self._partials.extend(uniq_tables)

    def merge(self, other: "Aggregator") -> None:
        """Take over the partial states of `other` (built with the same arguments), after ours."""
        if (other.group_keys, other.aggs) != (self.group_keys, self.aggs):
            raise SkipidxError("cannot merge aggregators of different queries")
        self._partials.extend(other._partials)

    def result(self) -> pa.Table:
        """The final aggregate table (as `aggregate` would give over every row fed)."""
        if not self._partials:
            return aggregate(self.schema.empty_table(), self.group_keys, self.aggs, nullable=self.nullable)
        states = pa.concat_tables(self._partials, promote_options="default")
        requests = []
        post: list[tuple[str, str, pa.DataType, str]] = []
        for i, (func, column, out) in enumerate(self.aggs):
            f = _canonical(func)
            tmp = f"__agg{i}"
            if f == "count" and column is None:
                requests.append(("count_all", "sum"))
                post.append((out, "count_all_sum", pa.uint64(), f))
                continue
            rt = result_type(f, self.schema.field(column).type)
            if f == "uniqExact":
                requests.append((tmp, "count_distinct", pc.CountOptions(mode="only_valid")))
                post.append((out, f"{tmp}_count_distinct", rt, f))
            elif f == "count":
                requests.append((f"{tmp}_count", "sum"))
                post.append((out, f"{tmp}_count_sum", rt, f))
            elif f in ("sum", "avg"):
                requests.append((f"{tmp}_sum", "sum", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)))
                requests.append((f"{tmp}_count", "sum"))
                post.append((out, f"{tmp}_sum_sum" if f == "sum" else f"{tmp}_sum_sum/{tmp}_count_sum", rt, f))
            elif f in ("min", "max"):
                requests.append((f"{tmp}_{f}", f, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)))
                post.append((out, f"{tmp}_{f}_{f}", rt, f))
            elif f == "any":
                requests.append((f"{tmp}_first", "first", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)))
                post.append((out, f"{tmp}_first_first", rt, f))
        res = states.group_by(self._keys(), use_threads=False).aggregate(requests)
        arrays = [res.column(k) for k in self.group_keys]
        names = list(self.group_keys)
        for out, src, rt, f in post:
            if f == "avg":
                s_name, c_name = src.split("/")
                if _is_temporal(rt):
                    arrays.append(_temporal_mean(res.column(s_name), res.column(c_name), rt))
                else:
                    arrays.append(pc.divide(res.column(s_name).cast(pa.float64(), safe=False),
                                            res.column(c_name).cast(pa.float64())))
            else:
                # (Partial integer sums add in int64/uint64 with wrap-around, like one sum.)
                arrays.append(res.column(src).cast(rt))
            names.append(out)
        return pa.Table.from_arrays(arrays, names=names)
