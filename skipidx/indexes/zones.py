"""The Lance zone schema: how every index type lays out its granules on disk.

One row per index granule ("zone" in Lance's words), as Lance's
``bloomfilter.lance`` / ``zonemap.lance`` files do::

    fragment_id  uint64   the part the zone belongs to: xxh64 of the part name
                          (the name itself is in the metadata, ``skipidx.part``)
    zone_start   uint64   first row of the zone within the part
    zone_length  uint64   rows in the zone
    has_null     bool     the zone holds a NULL of the index expression
    null_count   uint64   how many (Lance's zone map keeps the count)
    ...                   type-specific columns (min/max/nan_count for minmax,
                          values for set, bloom_filter_data/ndv/fill_ratio/
                          saturated for the SBBF types)

Schema metadata (all values strings, as Lance stores them): ``skipidx.index_type``,
``skipidx.params`` (JSON), ``skipidx.format_version``, ``skipidx.part``, ``skipidx.tokenizer`` and
``skipidx.tokenizer_version`` (SBBF types), and Lance's own keys
``bloomfilter_item`` (rows per zone) and ``bloomfilter_probability`` (the fpp the
filters were sized for; for fixed-size filters the mean estimated fpp).

Files written before ``fragment_id`` (a ``part`` string column instead) are
still read: :func:`read_common` takes either column.

Readers go through :func:`read_common`, which checks every column and
raises :class:`~skipidx.core.errors.CorruptionError` for anything unexpected: a
damaged index is never trusted.
"""
from __future__ import annotations

import json
from skipidx.core.dataclass_codes import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from skipidx.core.errors import CorruptionError
from skipidx.core.arrays import to_numpy

PART = "part"                  # the column of files written before fragment_id
FRAGMENT_ID = "fragment_id"
ZONE_START = "zone_start"
ZONE_LENGTH = "zone_length"
HAS_NULL = "has_null"
NULL_COUNT = "null_count"

META_TYPE = b"skipidx.index_type"
META_PARAMS = b"skipidx.params"
META_FORMAT = b"skipidx.format_version"
META_TOKENIZER = b"skipidx.tokenizer"
META_TOKENIZER_VERSION = b"skipidx.tokenizer_version"
META_PART = b"skipidx.part"
META_ITEMS = b"bloomfilter_item"            # Lance: expected items per zone
META_FPP = b"bloomfilter_probability"       # Lance: false-positive probability

COMMON_FIELDS = [
    pa.field(FRAGMENT_ID, pa.uint64(), nullable=False),
    pa.field(ZONE_START, pa.uint64(), nullable=False),
    pa.field(ZONE_LENGTH, pa.uint64(), nullable=False),
    pa.field(HAS_NULL, pa.bool_(), nullable=False),
    pa.field(NULL_COUNT, pa.uint64(), nullable=False),
]


@dataclass
class ZoneCommon:
    """The columns every index table has, decoded to numpy."""

    zone_start: np.ndarray     # int64
    zone_length: np.ndarray    # int64
    has_null: np.ndarray       # bool
    null_count: np.ndarray     # int64
    metadata: dict[str, str]


def check_zones(n_rows: int, zone_start: np.ndarray, zone_length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate the zone bounds the store hands to an aggregator: contiguous, covering [0, n_rows).

    A mismatch is a bug in the caller (not a user error), hence ValueError.
    """
    zs = np.asarray(zone_start, dtype=np.int64)
    zl = np.asarray(zone_length, dtype=np.int64)
    if zs.shape != zl.shape or zs.ndim != 1:
        raise ValueError("zone_start and zone_length must be 1-d arrays of equal length")
    if zs.shape[0]:
        ends = zs + zl
        if zs[0] != 0 or np.any(zl < 0) or np.any(zs[1:] != ends[:-1]) or ends[-1] != n_rows:
            raise ValueError(f"zones must tile [0, {n_rows}) contiguously")
    elif n_rows:
        raise ValueError(f"no zones for {n_rows} rows")
    return zs, zl


def zone_of_rows(zone_start: np.ndarray, zone_length: np.ndarray) -> np.ndarray:
    """int64 zone id of every row (zones tile the rows contiguously)."""
    return np.repeat(np.arange(zone_start.shape[0], dtype=np.int64), zone_length)


def fragment_id(part: str) -> int:
    """The Lance fragment id of a part: xxh64 (seed 0) of its name."""
    import xxhash

    return xxhash.xxh64_intdigest(part.encode("utf-8"))


def common_columns(part: str, zone_start: np.ndarray, zone_length: np.ndarray,
                   has_null: np.ndarray, null_count: np.ndarray) -> list[pa.Array]:
    n = zone_start.shape[0]
    return [
        pa.array(np.full(n, fragment_id(part), dtype=np.uint64), pa.uint64()),
        pa.array(zone_start.astype(np.uint64, copy=False), pa.uint64()),
        pa.array(zone_length.astype(np.uint64, copy=False), pa.uint64()),
        pa.array(has_null.astype(bool, copy=False), pa.bool_()),
        pa.array(null_count.astype(np.uint64, copy=False), pa.uint64()),
    ]


def make_metadata(index_type: str, params: dict[str, Any], format_version: int, *,
                  items_per_zone: int, fpp: float | None = None, tokenizer: str | None = None,
                  tokenizer_version: str | None = None) -> dict[bytes, bytes]:
    md = {
        META_TYPE: index_type.encode(),
        META_PARAMS: json.dumps(params, sort_keys=True).encode(),
        META_FORMAT: str(format_version).encode(),
        META_ITEMS: str(int(items_per_zone)).encode(),
    }
    if fpp is not None:
        md[META_FPP] = repr(float(fpp)).encode()
    if tokenizer is not None:
        md[META_TOKENIZER] = tokenizer.encode()
        md[META_TOKENIZER_VERSION] = str(tokenizer_version).encode()
    return md


def make_table(common: list[pa.Array], extra_fields: list[pa.Field], extra: list[pa.Array],
               metadata: dict[bytes, bytes], part: str | None = None) -> pa.Table:
    if part is not None:
        metadata = {**metadata, META_PART: part.encode()}
    schema = pa.schema(COMMON_FIELDS + extra_fields, metadata=metadata)
    return pa.Table.from_arrays(common + extra, schema=schema)


def _bad(msg: str) -> CorruptionError:
    return CorruptionError(f"index table: {msg}")


def column(table: pa.Table, name: str, expected: pa.DataType | None = None, *, nullable: bool = False) -> pa.Array:
    """One column as a single chunk, type-checked; CorruptionError when missing or wrong."""
    if name not in table.column_names:
        raise _bad(f"missing column {name!r}")
    col = table.column(name)
    if expected is not None and not col.type.equals(expected):
        raise _bad(f"column {name!r} has type {col.type}, expected {expected}")
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if not nullable and arr.null_count:
        raise _bad(f"column {name!r} holds NULLs")
    return arr


def read_common(table: pa.Table, index_type: str, format_version: int) -> ZoneCommon:
    """Check the shared columns and metadata of an index table and decode them."""
    if not isinstance(table, pa.Table):
        raise _bad(f"expected a pyarrow Table, got {type(table).__name__}")
    raw = table.schema.metadata or {}
    md = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in raw.items()}
    got_type = md.get(META_TYPE.decode())
    if got_type != index_type:
        raise _bad(f"index type {got_type!r} where {index_type!r} was expected")
    try:
        version = int(md.get(META_FORMAT.decode(), ""))
    except ValueError:
        raise _bad("missing or bad format version") from None
    if version != format_version:
        raise _bad(f"format version {version} is not supported (this build reads {format_version})")
    try:
        json.loads(md.get(META_PARAMS.decode(), ""))
    except ValueError:
        raise _bad("missing or bad params") from None
    zs = to_numpy(column(table, ZONE_START, pa.uint64())).astype(np.int64)
    zl = to_numpy(column(table, ZONE_LENGTH, pa.uint64())).astype(np.int64)
    hn = to_numpy(column(table, HAS_NULL, pa.bool_())).astype(bool)
    nc = to_numpy(column(table, NULL_COUNT, pa.uint64())).astype(np.int64)
    if FRAGMENT_ID in table.column_names:
        column(table, FRAGMENT_ID, pa.uint64())
    else:
        column(table, PART, pa.string())   # written before fragment_id
    if zs.shape[0]:
        ends = zs + zl
        if np.any(zs < 0) or np.any(zl < 0) or np.any(zs[1:] != ends[:-1]):
            raise _bad("zones are not contiguous")
    if np.any(nc > zl) or np.any(hn != (nc > 0)):
        raise _bad("null_count / has_null are inconsistent")
    return ZoneCommon(zs, zl, hn, nc, md)
