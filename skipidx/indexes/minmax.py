"""``minmax``: the smallest and largest value of every index granule.

Per zone it keeps ``min``/``max`` over the values that compare (NULLs and
NaNs excluded), the NULL count and the NaN count. The conditions follow SQL
three-valued logic: a NULL row makes a comparison NULL, which is neither
true nor false, so it adds nothing to (can_be_true, can_be_false); a NaN row
makes every comparison false except ``!=``, which it makes true (IEEE, as
ClickHouse compares floats). A zone holding only NULLs therefore answers
(False, False) to a comparison -- under NOT it stays pruned, which is right
since ``NOT (NULL < 5)`` is NULL too.

Strings compare bytewise (ClickHouse compares with memcmp). A UUID is kept as
its 16-byte key in ClickHouse's UUID order (``index_values``: the second 8
bytes first), so its bounds are ClickHouse's, not Parquet's byte order.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.indexes import zones
from skipidx.indexes._common import (
    COMPARISONS, atom_text, cmp, comparable, index_atom_args, index_error, index_values, is_orderable,
    is_string_like, is_uuid_type, null_counts, null_mask, null_subject_matches, plain, stored_value_type,
    subject_matches, to_scalar,
)
from skipidx.indexes.base import (
    Atom, BoolMask, IndexAggregator, IndexCondition, IndexDef, IndexGranules, IndexType, register_index_type,
)

FUNCS = tuple(COMPARISONS) + ("in", "notIn", "isNull", "isNotNull", "startsWith")


class MinMaxGranules(IndexGranules):
    """min/max/null/NaN bookkeeping of every zone of one part."""

    def __init__(self, zone_start: np.ndarray, zone_length: np.ndarray, null_count: np.ndarray,
                 nan_count: np.ndarray, mins: pa.Array, maxs: pa.Array, params: dict[str, Any] | None = None) -> None:
        self.zone_start = zone_start
        self.zone_length = zone_length
        self.null_count = null_count
        self.has_null = null_count > 0
        self.nan_count = nan_count
        self.min = mins
        self.max = maxs
        self.params = params or {}

    @property
    def value_count(self) -> np.ndarray:
        """Rows whose value takes part in comparisons (not NULL, not NaN)."""
        return self.zone_length - self.null_count - self.nan_count

    def to_arrow(self, part: str) -> pa.Table:
        md = zones.make_metadata(MinMaxIndex.name, self.params, self.FORMAT_VERSION,
                                 items_per_zone=int(self.zone_length.max()) if len(self) else 0)
        common = zones.common_columns(part, self.zone_start, self.zone_length, self.has_null, self.null_count)
        fields = [pa.field("min", self.min.type), pa.field("max", self.max.type),
                  pa.field("nan_count", pa.uint64(), nullable=False)]
        extra = [self.min, self.max, pa.array(self.nan_count.astype(np.uint64), pa.uint64())]
        return zones.make_table(common, fields, extra, md, part)

    @classmethod
    def from_arrow(cls, table: pa.Table, value_type_: pa.DataType | None = None) -> "MinMaxGranules":
        c = zones.read_common(table, MinMaxIndex.name, cls.FORMAT_VERSION)
        mins = zones.column(table, "min", value_type_, nullable=True)
        maxs = zones.column(table, "max", mins.type, nullable=True)
        nan = zones.column(table, "nan_count", pa.uint64()).to_numpy().astype(np.int64)
        if not is_orderable(mins.type):
            raise zones.CorruptionError(f"index table: min/max of unsupported type {mins.type}")
        if np.any(nan + c.null_count > c.zone_length):
            raise zones.CorruptionError("index table: nan_count + null_count exceed zone_length")
        # a zone with comparable values must have both bounds, and only then
        has_vals = (c.zone_length - c.null_count - nan) > 0
        if (np.any(has_vals == mins.is_null().to_numpy(zero_copy_only=False))
                or np.any(has_vals == maxs.is_null().to_numpy(zero_copy_only=False))):
            raise zones.CorruptionError("index table: min/max missing for a zone with values")
        import json
        params = json.loads(c.metadata[zones.META_PARAMS.decode()])
        return cls(c.zone_start, c.zone_length, c.null_count, nan, mins, maxs, params)


class MinMaxAggregator(IndexAggregator):
    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params

    def build(self, values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray) -> MinMaxGranules:
        vals = index_values(plain(values))
        zs, zl = zones.check_zones(len(vals), zone_start, zone_length)
        n = zs.shape[0]
        nulls = null_counts(vals, zs, zl)
        if pa.types.is_floating(vals.type):
            isnan = pc.is_nan(vals).fill_null(False).to_numpy(zero_copy_only=False)
            cs = np.concatenate([[0], np.cumsum(isnan, dtype=np.int64)])
            nans = cs[zs + zl] - cs[zs]
        else:
            nans = np.zeros(n, dtype=np.int64)
        has_vals = (zl - nulls - nans) > 0
        numeric = _numeric_view(vals)
        if numeric is not None and n:
            mins, maxs = _reduce_numeric(vals, numeric, zs, zl, has_vals)
        else:
            mins, maxs = _reduce_generic(vals, zs, zl, has_vals)
        return MinMaxGranules(zs, zl, nulls, nans, mins, maxs, self.params)


def _numeric_view(vals: pa.Array) -> tuple[pa.DataType, np.dtype] | None:
    """(storage type, numpy dtype) of fixed-width orderable types; None for strings."""
    t = vals.type
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return t, np.dtype(t.to_pandas_dtype())
    if pa.types.is_date32(t):
        return pa.int32(), np.dtype(np.int32)
    if pa.types.is_date64(t) or pa.types.is_timestamp(t):
        return pa.int64(), np.dtype(np.int64)
    return None


def _reduce_numeric(vals: pa.Array, view: tuple[pa.DataType, np.dtype], zs: np.ndarray, zl: np.ndarray,
                    has_vals: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """Per-zone min/max with numpy reduceat over the values buffer (NULLs and NaNs excluded).

    NULL slots are filled with the identity of each reduction (the type's
    max for min, min for max; NaN for floats, which fmin/fmax skip).
    """
    storage, dt = view
    arr = vals if vals.type == storage else vals.view(storage)
    if pa.types.is_floating(storage):
        filled = arr.fill_null(float("nan")).to_numpy(zero_copy_only=False)
        lo_src = hi_src = filled
        lo_op, hi_op = np.fmin, np.fmax
    else:
        info = np.iinfo(dt)
        lo_src = arr.fill_null(pa.scalar(int(info.max), storage)).to_numpy(zero_copy_only=False)
        hi_src = arr.fill_null(pa.scalar(int(info.min), storage)).to_numpy(zero_copy_only=False)
        lo_op, hi_op = np.minimum, np.maximum
    nonempty = zl > 0
    starts = zs[nonempty]
    lo = np.zeros(zs.shape[0], dtype=dt)
    hi = np.zeros(zs.shape[0], dtype=dt)
    if starts.size:
        # zones tile the rows, so the segment of a non-empty zone ends where the next one starts
        lo[nonempty] = lo_op.reduceat(lo_src, starts)
        hi[nonempty] = hi_op.reduceat(hi_src, starts)
    mask = ~has_vals
    mins = pa.array(lo, storage, mask=mask)
    maxs = pa.array(hi, storage, mask=mask)
    if vals.type != storage:
        mins, maxs = mins.view(vals.type), maxs.view(vals.type)
    return mins, maxs


def _reduce_generic(vals: pa.Array, zs: np.ndarray, zl: np.ndarray,
                    has_vals: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """Per-zone min/max of any orderable type with one hash aggregate over (zone, value)."""
    n = zs.shape[0]
    if n == 0:
        return pa.array([], vals.type), pa.array([], vals.type)
    zid = zones.zone_of_rows(zs, zl)
    agg = pa.table({"z": pa.array(zid, pa.int64()), "v": vals}).group_by("z", use_threads=False).aggregate(
        [("v", "min"), ("v", "max")])
    pos = np.full(n, -1, dtype=np.int64)
    pos[agg.column("z").to_numpy()] = np.arange(agg.num_rows)
    take = pa.array(np.where(has_vals, pos, 0), pa.int64(), mask=~has_vals | (pos < 0))
    return (agg.column("v_min").combine_chunks().take(take), agg.column("v_max").combine_chunks().take(take))


class MinMaxCondition(IndexCondition):
    """A comparison, IN, IS [NOT] NULL or startsWith answered from the zone bounds."""

    can_prove_true = True

    def __init__(self, atom: Atom, column_type: pa.DataType) -> None:
        super().__init__(atom)
        self.column_type = stored_value_type(column_type)
        self._args = index_atom_args(atom.func, atom.args, column_type)
        self.uuid = is_uuid_type(column_type)

    def describe(self) -> str:
        return f"{atom_text(self.atom)}: min/max ranges"

    def mask(self, granules: IndexGranules) -> BoolMask:
        g = granules
        assert isinstance(g, MinMaxGranules)
        n = len(g)
        func, args = self.atom.func, self._args
        non_null = g.non_null
        if func in ("isNull", "isNotNull"):
            return null_mask(func, g.has_null, non_null)
        if self.uuid and not pa.types.is_binary(g.min.type):
            return BoolMask.unknown(n)     # bounds not in ClickHouse's UUID order
        has_vals = g.value_count > 0
        has_nan = g.nan_count > 0
        mn, mx = comparable(g.min), comparable(g.max)
        if func in ("in", "notIn"):
            values = [v for v in (args[0] if args else ()) if v is not None]
            m = self._in(mn, mx, values, has_vals, has_nan, n)
            return m if m is None or func == "in" else BoolMask(m.can_be_false, m.can_be_true)
        if not args or args[0] is None:
            # x <op> NULL is NULL for every row: neither true nor false
            return BoolMask(np.zeros(n, bool), np.zeros(n, bool))
        s = to_scalar(args[0], self.column_type)
        if s is None:
            return BoolMask.unknown(n)
        if func == "startsWith":
            return self._starts_with(mn, mx, s, has_vals)
        if pa.types.is_floating(s.type) and s.as_py() != s.as_py():
            # a comparison with NaN is false for every value (and != is true)
            some = has_vals | has_nan
            none = np.zeros(n, bool)
            return BoolMask(some, none) if func == "notEquals" else BoolMask(none, some)
        if func in ("equals", "notEquals"):
            m = self._equals(mn, mx, s, has_vals, has_nan)
            return m if func == "equals" else BoolMask(m.can_be_false, m.can_be_true)
        if func == "less":
            t, f = cmp(mn, "less", s), cmp(mx, "greater_equal", s)
        elif func == "lessOrEquals":
            t, f = cmp(mn, "less_equal", s), cmp(mx, "greater", s)
        elif func == "greater":
            t, f = cmp(mx, "greater", s), cmp(mn, "less_equal", s)
        else:  # greaterOrEquals
            t, f = cmp(mx, "greater_equal", s), cmp(mn, "less", s)
        return BoolMask(has_vals & t, (has_vals & f) | has_nan)

    @staticmethod
    def _equals(mn, mx, s, has_vals, has_nan) -> BoolMask:
        t = has_vals & cmp(mn, "less_equal", s) & cmp(mx, "greater_equal", s)
        only_s = cmp(mn, "equal", s) & cmp(mx, "equal", s)
        return BoolMask(t, (has_vals & ~only_s) | has_nan)

    def _in(self, mn, mx, values, has_vals, has_nan, n) -> BoolMask:
        if len(values) > IN_SORTED_MIN:
            got = _in_sorted(mn, mx, values)
            if got is not None:
                t, all_one_member = got
                return BoolMask(has_vals & t, (has_vals & ~all_one_member) | has_nan)
        t = np.zeros(n, bool)
        all_one_member = np.zeros(n, bool)
        for v in values:
            s = to_scalar(v, self.column_type)
            if s is None:
                # a constant we cannot place: it may match anywhere
                t |= has_vals
                continue
            t |= has_vals & cmp(mn, "less_equal", s) & cmp(mx, "greater_equal", s)
            all_one_member |= cmp(mn, "equal", s) & cmp(mx, "equal", s)
        return BoolMask(t, (has_vals & ~all_one_member) | has_nan)

    @staticmethod
    def _starts_with(mn, mx, s, has_vals) -> BoolMask:
        p = s.as_py()
        mn, mx = _as_binary(mn), _as_binary(mx)
        # Strings starting with p form one interval [p, p\xff\xff...): the
        # zone [min, max] meets it iff max >= p and min's first len(p) bytes <= p;
        # every value of the zone starts with p iff both bounds do.
        head = pc.binary_slice(mn, 0, len(p))
        t = has_vals & cmp(mx, "greater_equal", s) & cmp(head, "less_equal", s)
        both = _starts(mn, p) & _starts(mx, p)
        return BoolMask(t, has_vals & ~both)


#: Longer IN lists of integers or strings are answered by one binary search of
#: each zone's bounds in the sorted list, not by one pass over the zones per value.
IN_SORTED_MIN = 16


def _in_sorted(mn: pa.Array, mx: pa.Array, values: list) -> tuple[np.ndarray, np.ndarray] | None:
    """(zone may hold a member, zone holds only one member) for an integer or
    string zone bounds and list; None when the list does not fit the type (the
    caller compares value by value)."""
    if pa.types.is_integer(mn.type):
        if not all(type(v) is int for v in values):
            return None
        lo_v, hi_v = np.iinfo(mn.type.to_pandas_dtype()).min, np.iinfo(mn.type.to_pandas_dtype()).max
        if min(values) < lo_v or max(values) > hi_v:
            return None
        vs = np.unique(np.array(values, dtype=mn.type.to_pandas_dtype()))
        a = mn.fill_null(0).to_numpy(zero_copy_only=False)
        b = mx.fill_null(0).to_numpy(zero_copy_only=False)
    elif pa.types.is_binary(mn.type) or pa.types.is_large_binary(mn.type):
        enc = [v.encode("utf-8") if isinstance(v, str) else v for v in values]
        if not all(isinstance(v, bytes) for v in enc):
            return None
        # bytes order as memcmp, as ClickHouse compares strings
        vs = np.array(sorted(set(enc)), dtype=object)
        a = np.array(mn.fill_null(b"").to_pylist(), dtype=object)
        b = np.array(mx.fill_null(b"").to_pylist(), dtype=object)
    else:
        return None
    if vs.shape[0] == 0:
        z = np.zeros(len(mn), bool)
        return z, z
    lo = np.searchsorted(vs, a, side="left")
    hi = np.searchsorted(vs, b, side="right")
    t = (hi > lo) & mn.is_valid().to_numpy(zero_copy_only=False) & mx.is_valid().to_numpy(zero_copy_only=False)
    return t, t & np.asarray(a == b, dtype=bool)


def _as_binary(a: pa.Array) -> pa.Array:
    if pa.types.is_binary(a.type) or pa.types.is_large_binary(a.type):
        return a
    return a.cast(pa.large_binary() if pa.types.is_large_string(a.type) else pa.binary())


def _starts(a: pa.Array, p: bytes) -> np.ndarray:
    return pc.starts_with(a, pattern=p).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)


@register_index_type
class MinMaxIndex(IndexType):
    """``minmax``: no parameters; any orderable column type."""

    name = "minmax"
    version = 1

    @classmethod
    def validate(cls, definition: IndexDef, column_type: pa.DataType) -> dict[str, Any]:
        if definition.args or definition.kwargs:
            raise index_error(definition, "minmax takes no parameters")
        if not (is_orderable(column_type) or is_uuid_type(column_type)):
            raise index_error(definition, f"minmax does not support column type {column_type}")
        return {}

    def __init__(self, definition: IndexDef, column_type: pa.DataType) -> None:
        super().__init__(definition, column_type)
        self.params = self.validate(definition, column_type)

    def aggregator(self, threads: int | None = None) -> MinMaxAggregator:
        return MinMaxAggregator(self.params)

    def condition(self, atom: Atom) -> IndexCondition | None:
        if null_subject_matches(self.definition, atom):
            return MinMaxCondition(atom, self.column_type)
        if not subject_matches(self.definition, atom) or atom.func not in FUNCS:
            return None
        if atom.func == "startsWith" and not is_string_like(self.column_type):
            return None
        return MinMaxCondition(atom, self.column_type)

    def granules_from_arrow(self, table: pa.Table) -> MinMaxGranules:
        return MinMaxGranules.from_arrow(table, stored_value_type(self.column_type))
