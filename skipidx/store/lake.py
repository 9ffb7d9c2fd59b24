"""Existing Parquet files as a table: discovery, file identity, footers, Hive partitions.

Nothing here writes, moves or locks a data file: files are opened read-only,
and only their footers are read to discover them.

* :func:`discover` expands the table's glob (``**`` recursive) to data files,
  sorted by path; hidden files and Spark/Hadoop markers (``.``/``_`` names,
  ``*.crc``) are left out.
* :class:`FileIdentity` is what a sidecar records of its data file: absolute
  path, size, modification time (ns) and the XXH64 of the footer bytes (the
  Thrift FileMetaData + its length + the trailing magic). A file replaced in
  place, appended to or rewritten changes at least one of them (a rewrite
  with the same size and mtime still changes the footer: its offsets,
  statistics or ``created_by``), so a stale sidecar is detected without
  hashing the data.
* :func:`probe` reads a file's identity and parsed footer through one file
  descriptor; a file whose footer does not parse (still being written, or
  truncated) raises :class:`HalfWritten`.
* Hive partitions: directories ``key=value`` between the glob's fixed prefix
  and the file become columns (values URL-decoded as Spark writes them;
  ``__HIVE_DEFAULT_PARTITION__`` is NULL); their type is Int64 when every
  value is an integer, else String, unless the table declares it.
"""
from __future__ import annotations

import glob as _glob
import os
import re
import struct
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from skipidx.core.errors import SkipidxError
from skipidx.core.parquet_bloom import plaintext_footer_encrypted
from skipidx.core.lru import LRU
from skipidx.core.types import ColumnType, ch_type_of, parse_type

__all__ = [
    "zone_marks", "DEFAULT_ZONE_ROWS",
    "FileIdentity", "HalfWritten", "discover", "glob_base", "probe", "identity_of",
    "hive_partition", "partition_types", "infer_columns", "column_type_of", "HIVE_NULL",
]

MAGIC = b"PAR1"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_WILD = re.compile(r"[*?\[]")


class HalfWritten(SkipidxError):
    """A data file whose footer does not parse (being written, truncated, not Parquet)."""


@dataclass(frozen=True)
class FileIdentity:
    """What identifies one version of a data file."""

    path: str           # absolute
    size: int
    mtime_ns: int
    footer_xxh64: str   # hex digest of the footer bytes (FileMetaData + length + magic)

    def to_json(self) -> dict:
        return {"path": self.path, "size": self.size, "mtime_ns": self.mtime_ns, "footer_xxh64": self.footer_xxh64}

    @staticmethod
    def from_json(o: Any, where: str) -> "FileIdentity":
        if (not isinstance(o, dict) or not isinstance(o.get("path"), str) or not isinstance(o.get("size"), int)
                or not isinstance(o.get("mtime_ns"), int) or not isinstance(o.get("footer_xxh64"), str)):
            raise SkipidxError(f"{where}: bad data file identity")
        return FileIdentity(o["path"], o["size"], o["mtime_ns"], o["footer_xxh64"])

    @property
    def key(self) -> str:
        """A short name for this version of the file (sidecar file names, cache keys)."""
        h = xxhash.xxh64_hexdigest(f"{self.path}\0{self.size}\0{self.mtime_ns}\0{self.footer_xxh64}".encode())
        return h


def glob_base(pattern: str) -> str:
    """The directory part of `pattern` before its first wildcard (where Hive keys start)."""
    parts = pattern.split(os.sep)
    fixed = []
    for p in parts[:-1]:
        if _WILD.search(p):
            break
        fixed.append(p)
    base = os.sep.join(fixed)
    return base if base else (os.sep if pattern.startswith(os.sep) else ".")


def _skipped_name(name: str) -> bool:
    return name.startswith((".", "_")) or name.endswith(".crc")


def discover(pattern: str) -> list[str]:
    """The data files `pattern` names (absolute paths, sorted); a plain directory means
    every ``*.parquet`` under it."""
    pat = os.path.abspath(pattern)
    if os.path.isdir(pat):
        pat = os.path.join(pat, "**", "*.parquet")
    base = glob_base(pat)
    out = []
    for p in _glob.glob(pat, recursive=True):
        rel = os.path.relpath(p, base)
        if any(_skipped_name(c) for c in rel.split(os.sep)):
            continue
        if os.path.isfile(p):
            out.append(p)
    return sorted(out)


def _tail(fd: int, size: int, where: str) -> bytes:
    if size < 12:
        raise HalfWritten("too short for a Parquet file", path=where)
    head = os.pread(fd, 4, 0)
    end = os.pread(fd, 8, size - 8)
    if len(end) == 8 and end[4:] == b"PARE":
        raise HalfWritten("an encrypted Parquet file (modular encryption, encrypted footer): external tables "
                          "read unencrypted files only", path=where)
    if head != MAGIC or len(end) != 8 or end[4:] != MAGIC:
        raise HalfWritten("no Parquet magic at both ends (being written, truncated or not Parquet)", path=where)
    n = struct.unpack("<I", end[:4])[0]
    if n <= 0 or n > size - 12:
        raise HalfWritten("footer length out of range", path=where)
    return os.pread(fd, n, size - 8 - n) + end


#: parsed footers by file identity: a query re-checks every file's identity but
#: parses only footers it has not seen
_FOOTERS = LRU(4096, "store.external_footers", "parsed Parquet footers of external data files, by file identity")


def identity_of(fd: int, path: str) -> tuple[FileIdentity, bytes]:
    """The identity of the file open as `fd` and its footer bytes."""
    st = os.fstat(fd)
    tail = _tail(fd, st.st_size, path)
    return FileIdentity(path, int(st.st_size), int(st.st_mtime_ns), xxhash.xxh64_hexdigest(tail)), tail


def probe(path: str, fd: int | None = None, checked: FileIdentity | None = None) -> tuple[FileIdentity, pq.FileMetaData]:
    """(identity, parsed footer) of data file `path` (through `fd` when given).

    `checked`: an identity whose footer already passed these checks (a table's record of
    the file: REFRESH probed it); when the file's identity equals it, the Python footer
    check is skipped -- the identity holds the footer bytes' checksum, and the check is a
    function of those bytes only. Any other identity is checked in full.

    HalfWritten when the footer does not parse; FileNotFoundError when the file is gone."""
    own = fd is None
    if own:
        fd = os.open(path, os.O_RDONLY)
    try:
        ident, tail = identity_of(fd, path)
        md = _FOOTERS.get(ident)
        if md is None:
            try:
                # the footer bytes are self-contained: parse them without the file
                md = pq.read_metadata(pa.BufferReader(MAGIC + tail))
            except (OSError, pa.ArrowException, ValueError) as e:
                raise HalfWritten(f"unreadable Parquet footer: {e}", path=path) from None
            # pyarrow aborts the process on an encrypted column's metadata
            # without its key: files encrypted with a plaintext footer are refused
            # (their footer carries a 28-byte signature after the Thrift
            # struct, so only a size mismatch needs the full check)
            if md.serialized_size != len(tail) - 8 and plaintext_footer_encrypted(tail[:-8], path):
                raise HalfWritten("an encrypted Parquet file (modular encryption, plaintext footer): external "
                                  "tables read unencrypted files only", path=path)
            # column-chunk accessors abort the process on some footers
            # read_metadata accepts (store/parquet_check): refused first
            from skipidx.store.parquet_check import check_footer_bytes

            if checked is None or checked != ident:
                try:
                    check_footer_bytes(tail[:-8], path)
                except SkipidxError as e:
                    raise HalfWritten(e.message, path=path) from None
            if md.num_rows < 0 or any(md.row_group(i).num_rows < 0 for i in range(md.num_row_groups)):
                raise HalfWritten("negative row counts in the footer", path=path)
            _FOOTERS.put(ident, md)
        return ident, md
    finally:
        if own:
            os.close(fd)


# ------------------------------------------------------------------ partitions
def hive_partition(path: str, base: str) -> dict[str, str | None]:
    """``key=value`` directories of `path` below `base` (values decoded; NULL as None)."""
    rel = os.path.relpath(os.path.dirname(path), base)
    out: dict[str, str | None] = {}
    if rel in (".", ""):
        return out
    for comp in rel.split(os.sep):
        if "=" in comp:
            k, v = comp.split("=", 1)
            if k:
                v = unquote(v)
                out[k] = None if v == HIVE_NULL else v
    return out


_INT = re.compile(r"^-?[0-9]{1,18}$")


def partition_types(parts: Iterable[dict[str, str | None]]) -> dict[str, ColumnType]:
    """Inferred type of each partition key: Int64 when every value is an integer, else String
    (Nullable when a file has no value for it or the NULL partition)."""
    parts = list(parts)
    keys: list[str] = []
    for p in parts:
        for k in p:
            if k not in keys:
                keys.append(k)
    out = {}
    for k in keys:
        vals = [p.get(k) for p in parts]
        nullable = any(v is None for v in vals)
        vs = [v for v in vals if v is not None]
        base = "Int64" if vs and all(_INT.match(v) for v in vs) else "String"
        out[k] = parse_type(f"Nullable({base})" if nullable else base)
    return out


# ------------------------------------------------------------------ columns
def column_type_of(field: pa.Field) -> ColumnType | None:
    """The skipidx type of a Parquet column as Arrow reads it (ClickHouse's name of its
    Arrow type, Nullable when Parquet says optional), or None when there is none (such
    columns are not exposed)."""
    try:
        name = ch_type_of(field.type)
    except SkipidxError:
        return None
    nullable = field.nullable and not name.startswith("Array(")
    try:
        return parse_type(f"Nullable({name})" if nullable else name)
    except SkipidxError:
        return None


def infer_columns(schemas: list[pa.Schema]) -> tuple[list[tuple[str, ColumnType]], list[str]]:
    """Columns of the files (union, first appearance order; Nullable when some file
    lacks one) and the names left out for want of a type."""
    order: list[str] = []
    first: dict[str, pa.Field] = {}
    seen_in: dict[str, int] = {}
    for s in schemas:
        for f in s:
            if f.name not in first:
                first[f.name] = f
                order.append(f.name)
            seen_in[f.name] = seen_in.get(f.name, 0) + 1
    cols: list[tuple[str, ColumnType]] = []
    skipped: list[str] = []
    for n in order:
        f = first[n]
        if seen_in[n] < len(schemas):
            f = f.with_nullable(True)
        ct = column_type_of(f)
        if ct is None:
            skipped.append(f"{n} ({f.type})")
        else:
            cols.append((n, ct))
    return cols, skipped


#: Rows of an index zone of a new external table: row groups (pyarrow writes 1M rows, Spark
#: 128 MiB) are cut into zones of this many rows, the unit pruned; a kept zone inside a row
#: group is read page by page (skipidx.store.parquet_pages). 0: the row group is the zone.
DEFAULT_ZONE_ROWS = 8192


def zone_marks(rg_rows: Sequence[int] | np.ndarray, zone_rows: int) -> np.ndarray:
    """Row marks of a data file's zones: each row group cut every `zone_rows` rows from
    its start (a last piece under half a zone joins the one before), so every row-group
    boundary is a zone boundary; `zone_rows` 0: one zone per row group."""
    rg = np.asarray(rg_rows, dtype=np.int64)
    starts = np.zeros(rg.shape[0] + 1, dtype=np.int64)
    np.cumsum(rg, out=starts[1:])
    if zone_rows <= 0:
        return starts
    out = [np.zeros(1, dtype=np.int64)]
    for i, r in enumerate(rg.tolist()):
        cuts = np.arange(zone_rows, r, zone_rows, dtype=np.int64)
        if cuts.shape[0] and r - cuts[-1] < zone_rows // 2:
            cuts = cuts[:-1]
        out.append(starts[i] + np.append(cuts, r))
    return np.concatenate(out)
