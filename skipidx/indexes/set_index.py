"""``set(max_rows)``: the exact set of distinct values of every index granule.

Per zone it keeps the distinct non-NULL values as one list (a list array,
so the whole index is three flat buffers). A zone with more than
``max_rows`` distinct values keeps no set (NULL list) and answers "maybe",
as ClickHouse's set index does; ``max_rows = 0`` means unlimited.

Because the set is exact, a condition is answered by evaluating the atom on
every stored value (whole-array pyarrow.compute) and asking, per zone,
"is some value true?" (can_be_true) and "is some value false?"
(can_be_false). NULL rows are not in the set: a comparison with NULL is
neither true nor false. NaN is a value like any other, so ``x != 1`` is true
for it and ``x = 1`` false -- as ClickHouse compares floats.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.indexes import zones
from skipidx.indexes._common import (
    COMPARISONS, atom_text, cmp, comparable, index_atom_args, index_error, index_values, int_arg, is_orderable,
    is_string_like, is_uuid_type, null_counts, null_mask, null_subject_matches, plain, segment_any,
    stored_value_type, subject_matches, to_scalar,
)
from skipidx.indexes.base import (
    Atom, BoolMask, IndexAggregator, IndexCondition, IndexDef, IndexGranules, IndexType, register_index_type,
)

FUNCS = tuple(COMPARISONS) + ("in", "notIn", "isNull", "isNotNull", "startsWith", "endsWith")


class SetGranules(IndexGranules):
    """Distinct values per zone: ``sets`` is a list array, NULL where the zone overflowed max_rows."""

    def __init__(self, zone_start: np.ndarray, zone_length: np.ndarray, null_count: np.ndarray,
                 sets: pa.ListArray, params: dict[str, Any]) -> None:
        self.zone_start = zone_start
        self.zone_length = zone_length
        self.null_count = null_count
        self.has_null = null_count > 0
        self.sets = sets
        self.params = params

    @property
    def overflow(self) -> np.ndarray:
        """Zones whose set was not kept (more than max_rows distinct values)."""
        return self.sets.is_null().to_numpy(zero_copy_only=False).astype(bool)

    @property
    def offsets(self) -> np.ndarray:
        return self.sets.offsets.to_numpy().astype(np.int64)

    def to_arrow(self, part: str) -> pa.Table:
        md = zones.make_metadata(SetIndex.name, self.params, self.FORMAT_VERSION,
                                 items_per_zone=int(self.zone_length.max()) if len(self) else 0)
        common = zones.common_columns(part, self.zone_start, self.zone_length, self.has_null, self.null_count)
        return zones.make_table(common, [pa.field("values", self.sets.type)], [self.sets], md, part)

    @classmethod
    def from_arrow(cls, table: pa.Table, value_type_: pa.DataType | None = None) -> "SetGranules":
        c = zones.read_common(table, SetIndex.name, cls.FORMAT_VERSION)
        expected = pa.list_(value_type_) if value_type_ is not None else None
        sets = zones.column(table, "values", expected, nullable=True)
        if not pa.types.is_list(sets.type) or not is_orderable(sets.type.value_type):
            raise zones.CorruptionError(f"index table: 'values' has type {sets.type}")
        params = json.loads(c.metadata[zones.META_PARAMS.decode()])
        max_rows = params.get("max_rows") if isinstance(params, dict) else None
        if not isinstance(max_rows, int) or max_rows < 0:
            raise zones.CorruptionError("index table: bad max_rows in params")
        if sets.flatten().null_count:
            raise zones.CorruptionError("index table: a set holds NULL")
        lengths = pc.list_value_length(sets).fill_null(0).to_numpy(zero_copy_only=False)
        if np.any(lengths > c.zone_length - c.null_count) or (max_rows and np.any(lengths > max_rows)):
            raise zones.CorruptionError("index table: a set is larger than its zone allows")
        return cls(c.zone_start, c.zone_length, c.null_count, sets, params)


class SetAggregator(IndexAggregator):
    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.max_rows = int(params["max_rows"])

    def build(self, values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray) -> SetGranules:
        vals = index_values(plain(values))    # a UUID as its ClickHouse-order key
        zs, zl = zones.check_zones(len(vals), zone_start, zone_length)
        n = zs.shape[0]
        nulls = null_counts(vals, zs, zl)
        # Distinct (zone, value) pairs without hashing every value per zone:
        # dictionary-encode the column once, then unique the int64 keys
        # zone * |dictionary| + code (sorted by zone, then code).
        enc = pc.dictionary_encode(vals)
        dictionary = enc.dictionary
        k = max(len(dictionary), 1)
        codes = enc.indices
        valid = codes.is_valid().to_numpy(zero_copy_only=False).astype(bool)
        zid = zones.zone_of_rows(zs, zl)
        keys = zid[valid] * np.int64(k) + codes.to_numpy(zero_copy_only=False)[valid].astype(np.int64)
        uniq = np.unique(keys)
        uz, ucode = uniq // k, uniq % k
        counts = np.bincount(uz, minlength=n).astype(np.int64)
        over = (counts > self.max_rows) if self.max_rows else np.zeros(n, bool)
        keep = ~over[uz]
        offsets = np.concatenate([[0], np.cumsum(np.where(over, 0, counts))]).astype(np.int32)
        flat = dictionary.take(pa.array(ucode[keep], pa.int64())) if len(dictionary) else pa.array([], vals.type)
        sets = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), flat,
                                        mask=pa.array(over, pa.bool_()) if over.any() else None)
        return SetGranules(zs, zl, nulls, sets, self.params)


class SetCondition(IndexCondition):
    """Evaluates the atom on every stored value; per zone: any true / any false."""

    can_prove_true = True

    def __init__(self, atom: Atom, column_type: pa.DataType) -> None:
        super().__init__(atom)
        self.column_type = stored_value_type(column_type)
        self._args = index_atom_args(atom.func, atom.args, column_type)
        self.uuid = is_uuid_type(column_type)

    def describe(self) -> str:
        return f"{atom_text(self.atom)}: exact value sets"

    def mask(self, granules: IndexGranules) -> BoolMask:
        g = granules
        assert isinstance(g, SetGranules)
        n = len(g)
        func, args = self.atom.func, self._args
        if func in ("isNull", "isNotNull"):
            return null_mask(func, g.has_null, g.non_null)
        if self.uuid and not pa.types.is_binary(g.sets.type.value_type):
            return BoolMask.unknown(n)     # values not kept as ClickHouse-order keys
        values = comparable(g.sets.flatten())
        per_value = self._evaluate(values, func, args)
        if per_value is None:
            return BoolMask.unknown(n)
        t_val, f_val = per_value
        offs = g.offsets
        over = g.overflow
        return BoolMask(segment_any(t_val, offs) | over, segment_any(f_val, offs) | over)

    def _evaluate(self, values: pa.Array, func: str, args: tuple) -> tuple[np.ndarray, np.ndarray] | None:
        """(true, false) of the atom for every stored value; None = cannot say."""
        nv = len(values)
        if func in ("in", "notIn"):
            consts = [v for v in (args[0] if args else ()) if v is not None]
            scalars = [to_scalar(v, self.column_type) for v in consts]
            if any(s is None for s in scalars):
                return None
            if scalars:
                vs = pa.array([s.as_py() for s in scalars], scalars[0].type)
                if pa.types.is_large_binary(values.type):
                    vs = vs.cast(pa.large_binary())
                probe = values
                if pa.types.is_floating(values.type):
                    # is_in hashes bits, but -0.0 = 0.0: adding +0.0 turns every -0.0 into 0.0
                    probe, vs = pc.add(values, 0.0).cast(values.type), pc.add(vs, 0.0).cast(values.type)
                hit = pc.is_in(probe, value_set=vs).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
            else:
                hit = np.zeros(nv, bool)
            unsure = self._nan(values)   # NaN IN (...): left to the exact evaluation
            t, f = hit | unsure, ~hit | unsure
            return (t, f) if func == "in" else (f, t)
        if not args or args[0] is None:
            return np.zeros(nv, bool), np.zeros(nv, bool)
        s = to_scalar(args[0], self.column_type)
        if s is None:
            return None
        if func in COMPARISONS:
            t = cmp(values, COMPARISONS[func], s)
        elif func in ("startsWith", "endsWith"):
            fn = pc.starts_with if func == "startsWith" else pc.ends_with
            arr = values.cast(pa.binary()) if pa.types.is_fixed_size_binary(values.type) else values
            t = fn(arr, pattern=s.as_py()).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
        else:
            return None
        return t, ~t

    @staticmethod
    def _nan(values: pa.Array) -> np.ndarray:
        if pa.types.is_floating(values.type):
            return pc.is_nan(values).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
        return np.zeros(len(values), bool)


@register_index_type
class SetIndex(IndexType):
    """``set(max_rows)``: one argument, a non-negative integer (0 = unlimited)."""

    name = "set"
    version = 1

    @classmethod
    def validate(cls, definition: IndexDef, column_type: pa.DataType) -> dict[str, Any]:
        if definition.kwargs:
            raise index_error(definition, "set takes no key = value parameters")
        if len(definition.args) != 1:
            raise index_error(definition, f"set must have exactly one argument (max_rows), got {len(definition.args)}")
        max_rows = int_arg(definition, definition.args[0], "max_rows", minimum=0)
        if not (is_orderable(column_type) or is_uuid_type(column_type)):
            raise index_error(definition, f"set does not support column type {column_type}")
        return {"max_rows": max_rows}

    def __init__(self, definition: IndexDef, column_type: pa.DataType) -> None:
        super().__init__(definition, column_type)
        self.params = self.validate(definition, column_type)

    def aggregator(self, threads: int | None = None) -> SetAggregator:
        return SetAggregator(self.params)

    def condition(self, atom: Atom) -> IndexCondition | None:
        if null_subject_matches(self.definition, atom):
            return SetCondition(atom, self.column_type)
        if not subject_matches(self.definition, atom) or atom.func not in FUNCS:
            return None
        if atom.func in ("startsWith", "endsWith") and not is_string_like(self.column_type):
            return None
        return SetCondition(atom, self.column_type)

    def granules_from_arrow(self, table: pa.Table) -> SetGranules:
        return SetGranules.from_arrow(table, stored_value_type(self.column_type))
