"""A part's manifest (``manifest.json``, written last): its format, reading
and validation, and the parsed form every snapshot of the part shares.

A part directory::

    data.parquet        the rows, sorted by the ORDER BY key; one Parquet row
                        group per data granule
    idx.<index>.arrow   one Arrow IPC file per index: the Lance zone table
    manifest.json       written last: rows, marks, row-group byte spans,
                        columns, index fingerprints, and the size and block
                        checksums (:mod:`skipidx.store.checksums`) of every
                        other file
"""
from __future__ import annotations

import json
import os
import re
import time

import numpy as np
import xxhash

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.store.checksums import FileSum
from skipidx.store.metadata import FORMAT_VERSION, TableMeta

__all__ = ["DATA_FILE", "MANIFEST", "index_file_name", "zones", "read_manifest",
           "manifest_matches_meta", "PartInfo", "new_part_name", "check_part_name",
           "key_stats_from_footer", "KEY_STATS"]

_PART_NAME = re.compile(r"^[a-z0-9_]{1,100}$")


def new_part_name(level: int = 0) -> str:
    """A fresh, unique, time-ordered part name: ``p_<ns hex>_<rand>_<level>``."""
    return f"p_{time.time_ns():016x}_{os.urandom(4).hex()}_{level}"


def check_part_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not _PART_NAME.match(name):
        raise CorruptionError(f"invalid part name {name!r}", path=where)
    return name


DATA_FILE = "data.parquet"
MANIFEST = "manifest.json"


def index_file_name(index: str) -> str:
    return f"idx.{index}.arrow"


def zones(marks: np.ndarray, granularity: int) -> tuple[np.ndarray, np.ndarray]:
    """(zone_start, zone_length) in rows of index granules of `granularity` data granules."""
    ng = marks.shape[0] - 1
    first = np.arange(0, ng, granularity, dtype=np.int64)
    last = np.minimum(first + granularity, ng)
    start = marks[first]
    return start, marks[last] - start


def read_manifest(part_dir: str, expected_hash: str | None = None) -> tuple[dict, str]:
    """Load and validate a part's manifest; (manifest, xxh3_128 hex of its bytes)."""
    path = os.path.join(part_dir, MANIFEST)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise CorruptionError("part manifest is missing", path=path) from None
    except OSError as e:
        raise CorruptionError(f"cannot read part manifest: {e.strerror}", path=path) from None
    h = xxhash.xxh3_128_hexdigest(raw)
    if expected_hash is not None and h != expected_hash:
        raise CorruptionError("part manifest checksum mismatch", path=path)
    try:
        m = json.loads(raw)
        if not isinstance(m, dict):
            raise CorruptionError("damaged part manifest (not an object)", path=path)
        if m["format_version"] != FORMAT_VERSION:
            raise CorruptionError(f"unsupported part format version {m['format_version']!r}", path=path)
        check_part_name(m["part"], path)
        rows = m["rows"]
        marks = m["marks"]
        if (not _int(rows) or not 0 < rows < 1 << 48 or not isinstance(marks, list) or len(marks) < 2
                or marks[0] != 0 or marks[-1] != rows or not all(_int(x) for x in marks)
                or any(b <= a for a, b in zip(marks, marks[1:]))):
            raise CorruptionError("bad rows/marks in part manifest", path=path)
        spans = m["row_groups"]
        if len(spans) != len(marks) - 1 or not all(
                isinstance(s, list) and len(s) == 2 and all(_int(x) for x in s) and 0 <= s[0] < s[1] < 1 << 50
                for s in spans):
            raise CorruptionError("bad row-group spans in part manifest", path=path)
        if not isinstance(m["files"], dict) or not isinstance(m["indexes"], dict):
            raise CorruptionError("bad file or index lists in part manifest", path=path)
        if DATA_FILE not in m["files"]:
            raise CorruptionError("part manifest lists no data file", path=path)
        dsize = m["files"][DATA_FILE].get("size") if isinstance(m["files"][DATA_FILE], dict) else None
        if (not _int(dsize) or spans[-1][1] > dsize - 8
                or any(b[0] < a[1] for a, b in zip(spans, spans[1:]))):
            raise CorruptionError("row-group spans in part manifest do not fit the data file", path=path)
        for fname, fs in m["files"].items():
            if not isinstance(fname, str) or "/" in fname or fname.startswith(".") or fname in ("", MANIFEST):
                raise CorruptionError(f"bad file name {fname!r} in part manifest", path=path)
            FileSum.from_json(fs, os.path.join(part_dir, fname))
        for iname, e in m["indexes"].items():
            if (not isinstance(e, dict) or not isinstance(iname, str) or not isinstance(e["file"], str)
                    or e["file"] != index_file_name(iname) or e["file"] not in m["files"]
                    or not _int(e.get("granularity", 1)) or not 0 < e.get("granularity", 1) < 1 << 24):
                raise CorruptionError(f"bad entry for index {iname!r} in part manifest", path=path)
            if not isinstance(e["fingerprint"], str):
                raise CorruptionError(f"bad entry for index {iname!r} in part manifest", path=path)
        if (not isinstance(m["columns"], list) or not _int(m["index_granularity"])
                or not 0 < m["index_granularity"] <= 1 << 24
                or not all(isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c)
                           for c in m["columns"])
                or not isinstance(m.get("order_by", []), list)
                or not all(isinstance(k, str) for k in m.get("order_by", []))):
            raise CorruptionError("bad columns in part manifest", path=path)
        lvl = m.get("level", 0)
        if not _int(lvl) or not 0 <= lvl < 1 << 20:
            raise CorruptionError("bad level in part manifest", path=path)
        ct = m.get("created_unix", 0)
        if isinstance(ct, bool) or not isinstance(ct, (int, float)) or not 0 <= ct < 1e11:
            raise CorruptionError("bad creation time in part manifest", path=path)
        d = m.get("dictionary")
        if d is not None and not (isinstance(d, list) and all(isinstance(x, str) for x in d)):
            raise CorruptionError("bad dictionary columns in part manifest", path=path)
    except CorruptionError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError, OverflowError,
            RecursionError, IndexError) as e:
        # the type only: the message of a decode error quotes the file's bytes
        raise CorruptionError(f"damaged part manifest ({type(e).__name__})", path=path) from None
    return m, h


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


#: The manifest's per-granule statistics of the ORDER BY columns:
#: ``{column: {"min": [...], "max": [...], "nulls": [...]}}``, one entry per
#: granule (row group), as the data file's footer holds them. A query prunes
#: on the key from these without parsing (and checking) the footer of every
#: part it does not read; parts without them are pruned from the footer.
KEY_STATS = "key_stats"


def _key_stats_kind(t) -> type | None:
    """The Python type whose JSON form holds this column type's statistics exactly
    (integers, bool, strings, dictionary-encoded strings included); None: not recorded."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return bool
    if pa.types.is_integer(t):
        return int
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return str
    return None


def key_stats_from_footer(md, meta: TableMeta) -> dict:
    """The :data:`KEY_STATS` entry of a part from the footer its writer just wrote
    (`md`, pyarrow FileMetaData): a column is left out when a row group lacks a
    statistic the pruner needs (it then reads the footer, and finds the same gap)."""
    out: dict = {}
    pos = {md.schema.column(j).path: j for j in range(md.num_columns)}
    for col in meta.order_by:
        kind = _key_stats_kind(meta.column(col).type.arrow_type)
        ci = pos.get(col)
        if kind is None or ci is None:
            continue
        mins: list = []
        maxs: list = []
        nulls: list = []
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            st = rg.column(ci).statistics
            if st is None:
                break
            nn = int(st.null_count) if st.has_null_count else 0
            if st.has_min_max:
                lo, hi = st.min, st.max
                if type(lo) is not kind or type(hi) is not kind:
                    break
            elif nn == rg.num_rows:
                lo = hi = None
            else:
                break
            mins.append(lo)
            maxs.append(hi)
            nulls.append(nn)
        else:
            out[col] = {"min": mins, "max": maxs, "nulls": nulls}
    return out


def key_stats_of(manifest: dict, column: str, lengths: np.ndarray, where: str) -> tuple[list, list, np.ndarray] | None:
    """(mins, maxs, null counts) per granule of ORDER BY column `column` from a
    manifest's :data:`KEY_STATS` (`lengths`: rows per granule); None when not
    recorded. CorruptionError naming the manifest when the entry is malformed."""
    ks = manifest.get(KEY_STATS)
    if ks is None:
        return None
    try:
        e = ks.get(column)
        if e is None:
            return None
        mins, maxs, nulls = e["min"], e["max"], e["nulls"]
        n = int(lengths.shape[0])
        if not (isinstance(mins, list) and isinstance(maxs, list) and isinstance(nulls, list)
                and len(mins) == n and len(maxs) == n and len(nulls) == n):
            raise ValueError("lengths")
        for lo, hi, nn, rows in zip(mins, maxs, nulls, lengths.tolist()):
            if not _int(nn) or not 0 <= nn <= rows:
                raise ValueError("null count")
            if lo is None or hi is None:
                if lo is not None or hi is not None or nn != rows:
                    raise ValueError("min/max")
            elif type(lo) not in (int, bool, str) or type(hi) is not type(lo):
                raise ValueError("min/max")
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
        raise CorruptionError(f"bad key statistics of column {column!r} in part manifest", path=where) from None
    return mins, maxs, np.asarray(nulls, dtype=np.int64)


def manifest_matches_meta(m: dict, meta: TableMeta, where: str) -> None:
    cols = [[c.name, c.type.name] for c in meta.columns]
    if m["columns"] != cols:
        raise SkipidxError(f"part columns {m['columns']} do not match table {meta.name!r} columns {cols}",
                           path=where)

class PartInfo:
    """What a part's manifest says, parsed once: the manifest itself, the
    marks as a read-only int64 array, and the file checksums (parsed on first
    use). Shared by every snapshot that sees the part (parts are immutable)."""

    __slots__ = ("manifest", "marks", "_sums", "dictionary", "column_bytes", "__weakref__")

    def __init__(self, manifest: dict) -> None:
        self.manifest = manifest
        #: columns written dictionary-encoded (empty for parts written before this was recorded)
        self.dictionary = frozenset(manifest.get("dictionary") or ())
        #: mean compressed bytes per granule by column (filled from the footer on demand)
        self.column_bytes: dict[str, float] = {}
        marks = np.asarray(manifest["marks"], dtype=np.int64)
        marks.flags.writeable = False   # shared between snapshots and threads
        self.marks = marks
        self._sums: dict[str, FileSum] = {}

    def filesum(self, fname: str, where: str) -> FileSum:
        fs = self._sums.get(fname)
        if fs is None:
            fs = FileSum.from_json(self.manifest["files"][fname], where)
            self._sums[fname] = fs
        return fs

