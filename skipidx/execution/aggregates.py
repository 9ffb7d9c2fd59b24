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
import pyarrow.compute as pc

from skipidx.core.errors import SkipidxError

__all__ = ["AGGREGATE_FUNCTIONS", "AggSpec", "Aggregator", "aggregate", "result_type"]

#: (function, column or None for count(), output column name)
AggSpec = tuple[str, "str | None", str]

# ClickHouse names (case-insensitive in SQL) -> canonical names used here.
AGGREGATE_FUNCTIONS: dict[str, str] = {
    "count": "count", "min": "min", "max": "max", "sum": "sum", "avg": "avg",
    "uniqexact": "uniqExact", "any": "any",
}


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
    if f == "sum":
        return _sum_type(t, func)
    if f == "avg":
        if _is_temporal(t):
            return t  # ClickHouse: avg(Date) is a Date (the mean day, rounded half to even)
        _sum_type(t, func)
        return pa.float64()
    return t


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
    outs: set[str] = set(group_keys)
    for spec in aggs:
        if len(spec) != 3:
            raise SkipidxError(f"aggregate spec must be (function, column, output_name), got {spec!r}")
        func, column, out = spec
        f = _canonical(func)
        if column is None and f != "count":
            raise SkipidxError(f"aggregate function {func} needs an argument")
        if column is not None and column not in names:
            raise SkipidxError(f"Unknown column {column} in {func}({column})")
        if out in outs:
            raise SkipidxError(f"duplicate output column name {out}")
        outs.add(out)
        if column is not None:
            result_type(f, table.schema.field(column).type)  # type check now, before any work
        plan.append((f, column, out, column is not None and column in nullable))

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
