"""Shared by the storage tests: a tiny test-only index type and table builders.

``zcount`` keeps, per index granule, the number of non-NULL values and the
sum of their lengths (strings) or values (numbers): simple enough to check by
hand, and it exercises every piece of the storage side of the index
interface (build per zone chunk, the Lance zone table, load and validation).
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.indexes.base import (IndexAggregator, IndexCondition, IndexDef, IndexGranules, IndexType,
                                  register_index_type)
from skipidx.store.catalog import Catalog
from skipidx.store.metadata import ColumnMeta, TableMeta, make_index_meta
from skipidx.core.types import parse_type


class ZCountGranules(IndexGranules):
    def __init__(self, zone_start, zone_length, has_null, count, total):
        self.zone_start = np.asarray(zone_start, dtype=np.int64)
        self.zone_length = np.asarray(zone_length, dtype=np.int64)
        self.has_null = np.asarray(has_null, dtype=bool)
        self.count = np.asarray(count, dtype=np.int64)
        self.total = np.asarray(total, dtype=np.float64)

    def to_arrow(self, part: str) -> pa.Table:
        n = len(self.zone_start)
        return pa.table(
            {
                "part": pa.array([part] * n, pa.string()),
                "zone_start": pa.array(self.zone_start.astype(np.uint64)),
                "zone_length": pa.array(self.zone_length.astype(np.uint64)),
                "has_null": pa.array(self.has_null),
                "count": pa.array(self.count),
                "total": pa.array(self.total),
            }
        ).replace_schema_metadata({"skipidx.index_type": "zcount", "bloomfilter_item": "0"})

    @classmethod
    def from_arrow(cls, table: pa.Table) -> "ZCountGranules":
        want = ["part", "zone_start", "zone_length", "has_null", "count", "total"]
        if table.column_names != want or (table.schema.metadata or {}).get(b"skipidx.index_type") != b"zcount":
            raise CorruptionError("not a zcount index table")
        c = {k: table.column(k).to_numpy() for k in want[1:]}
        return cls(c["zone_start"].astype(np.int64), c["zone_length"].astype(np.int64), c["has_null"],
                   c["count"], c["total"])


class ZCountAggregator(IndexAggregator):
    def build(self, values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray) -> ZCountGranules:
        assert zone_start[0] == 0 and int(zone_start[-1] + zone_length[-1]) == len(values)
        zone = np.repeat(np.arange(len(zone_start)), zone_length)
        valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False))
        if pa.types.is_string(values.type):
            v = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False).astype(np.float64)
        else:
            x = values
            if pa.types.is_date32(x.type):
                x = x.cast(pa.int32())
            elif pa.types.is_timestamp(x.type) or pa.types.is_boolean(x.type):
                x = x.cast(pa.int64())
            v = pc.fill_null(x.cast(pa.float64(), safe=False), 0).to_numpy(zero_copy_only=False)
        count = np.bincount(zone, weights=valid, minlength=len(zone_start)).astype(np.int64)
        total = np.bincount(zone, weights=v, minlength=len(zone_start))
        has_null = np.bincount(zone, weights=~valid, minlength=len(zone_start)) > 0
        return ZCountGranules(zone_start, zone_length, has_null, count, total)


class ZCountIndex(IndexType):
    name = "zcount"

    @classmethod
    def validate(cls, definition: IndexDef, column_type: pa.DataType) -> dict[str, Any]:
        if definition.args:
            raise SkipidxError(f"index {definition.name!r}: zcount takes no arguments")
        return {"scale": 1}

    def aggregator(self) -> IndexAggregator:
        return ZCountAggregator()

    def condition(self, atom) -> IndexCondition | None:
        return None

    def granules_from_arrow(self, table: pa.Table) -> IndexGranules:
        return ZCountGranules.from_arrow(table)


register_index_type(ZCountIndex)

ALL_TYPES = [
    "UInt8", "UInt16", "UInt32", "UInt64", "Int8", "Int16", "Int32", "Int64", "Float32", "Float64",
    "Bool", "String", "LowCardinality(String)", "Date", "DateTime",
]


def zdef(name: str, column: str, granularity: int = 1, expr_func: str | None = None) -> IndexDef:
    return IndexDef(name=name, column=column, expr_func=expr_func, type_name="zcount", granularity=granularity)


def make_meta(name: str, columns: list[tuple[str, str]], order_by: list[str], granularity: int = 8192,
              indexes: list[IndexDef] = (), settings: dict | None = None) -> TableMeta:
    cols = [ColumnMeta(n, parse_type(t)) for n, t in columns]
    by_name = {c.name: c for c in cols}
    ims = [make_index_meta(d, by_name[d.column].type) for d in indexes]
    return TableMeta(name, cols, list(order_by), granularity, ims, dict(settings or {})).validate()


def log_table(db: str, name: str = "logs", granularity: int = 64, settings: dict | None = None,
              indexes: list[IndexDef] | None = None):
    """A small log-like table: id UInt64 (key), msg String, lvl Nullable(String)."""
    cat = Catalog(db)
    meta = make_meta(name, [("id", "UInt64"), ("msg", "String"), ("lvl", "Nullable(String)")], ["id"],
                     granularity, indexes if indexes is not None else [zdef("zmsg", "msg", 2)], settings)
    return cat, cat.create_table(meta)


def log_rows(start: int, n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed + start)
    ids = np.arange(start, start + n, dtype=np.uint64)
    rng.shuffle(ids)
    msg = pa.array([f"message {i} é{'x' * (i % 13)}" for i in ids.tolist()])
    lvl = pa.array([None if i % 5 == 0 else ("INFO", "WARN", "ERROR")[i % 3] for i in ids.tolist()])
    return pa.table({"id": pa.array(ids), "msg": msg, "lvl": lvl})


def part_files(table_dir: str) -> dict[str, list[str]]:
    pdir = os.path.join(table_dir, "parts")
    return {p: sorted(os.listdir(os.path.join(pdir, p))) for p in sorted(os.listdir(pdir))}


def state_json(table_dir: str) -> dict:
    with open(os.path.join(table_dir, "state.json")) as f:
        return json.load(f)["state"]
