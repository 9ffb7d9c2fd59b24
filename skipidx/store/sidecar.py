"""Sidecar index files of external Parquet data files.

For every data file and declared index, one Arrow IPC file in the Lance zone
schema (the same table a MergeTree part's ``idx.<name>.arrow`` holds): one
row per index granule, where a data granule is one row group of the data
file (GRANULARITY g: g row groups), the ``part`` column naming the data file
(Lance's fragment). Its schema metadata records the data file's identity
(``skipidx.data_file``, ``skipidx.data_size``, ``skipidx.data_mtime_ns``,
``skipidx.data_footer_xxh64``) besides the index type, params and fpp, so a
sidecar read without its table still says which version of which file it
describes. Files are named ``<identity key>.<index>.arrow``: a changed data
file gets new sidecars under new names, and a query holding the old names
never reads a half-written one.

A sidecar is used only when the data file's identity (checked on every
query) equals the one recorded and the file's checksum (XXH64 of the whole
sidecar, recorded by the table state) matches: anything else and the
index's atoms are UNKNOWN for that file, so answers stay exact.
"""
from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.core.types import cast_to
from skipidx.expr.index_expressions import apply_expression
from skipidx.indexes.base import IndexDef, IndexGranules, index_from_meta
from skipidx.store.commit import fsync_dir, fsync_file
from skipidx.store.lake import FileIdentity, zone_marks
from skipidx.store.metadata import IndexMeta, TableMeta
from skipidx.store.manifest import zones as zones_of
from skipidx.store.part import granules_from_table, index_fingerprint

__all__ = ["SIDECAR_DIR", "SIDECAR_SEED", "sidecar_index_def", "build_file_sidecars", "load_sidecar", "sidecar_name", "zones_of", "IDENTITY_KEYS"]

SIDECAR_DIR = "sidecars"
IDENTITY_KEYS = (b"skipidx.data_file", b"skipidx.data_size", b"skipidx.data_mtime_ns", b"skipidx.data_footer_xxh64")
#: rows handed to the index aggregators at once (whole index granules): bounded memory per file
BUILD_CHUNK_ROWS = 1 << 20


#: The hash seed of a sidecar Bloom filter (``bloom_filter``, ``sbbf``) whose DDL names none.
#: Parquet's own Bloom filters hash with seed 0, and the pruner ANDs them with the sidecars':
#: with the same hash two filters share their false positives (a block of the larger one lies
#: inside a block of the smaller), so the sidecar's would add no pruning. Recorded in the
#: index params at CREATE / ADD INDEX; sidecars of tables created before (seed 0) read as built.
SIDECAR_SEED = 0x9E3779B97F4A7C15


def sidecar_index_def(defn: IndexDef) -> IndexDef:
    """`defn` as an external table declares it: a ``bloom_filter`` / ``sbbf`` index without an
    explicit ``seed`` gets ``seed = SIDECAR_SEED`` (shown by SHOW CREATE TABLE) instead of
    Parquet's 0. ``tokenbf_v1`` / ``ngrambf_v1`` take the seed as a required argument: kept."""
    if defn.type_name not in ("bloom_filter", "sbbf") or any(k == "seed" for k, _ in defn.kwargs):
        return defn
    return dataclasses.replace(defn, kwargs=tuple(defn.kwargs) + (("seed", SIDECAR_SEED),))


def sidecar_name(ident: FileIdentity, index: str) -> str:
    return f"{ident.key}.{index}.arrow"


def _identity_metadata(ident: FileIdentity) -> dict[bytes, bytes]:
    vals = (ident.path, str(ident.size), str(ident.mtime_ns), ident.footer_xxh64)
    return {k: v.encode() for k, v in zip(IDENTITY_KEYS, vals)}


def _file_xxh64(path: str) -> str:
    h = xxhash.xxh64()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def _column_values(meta: TableMeta, im: IndexMeta, t: pa.Table, partition: dict[str, Any], n: int) -> pa.Array:
    col = im.definition.column
    ctype = meta.column(col).type
    if col in partition:
        arr = pa.array([partition[col]] * n, ctype.arrow_type) if n else pa.array([], ctype.arrow_type)
    elif col in t.column_names:
        arr = cast_to(ctype, t.column(col), col)
    else:
        arr = pa.nulls(n, ctype.arrow_type)   # a column this file lacks: NULL in every row
    return apply_expression(im.definition.expr_func, arr)


def build_file_sidecars(data_path: str, ident: FileIdentity, md: pq.FileMetaData, meta: TableMeta,
                        indexes: Sequence[IndexMeta], partition: dict[str, Any], out_dir: str,
                        source: Any = None, zone_rows: int = 0, threads: int | None = None) -> dict[str, dict]:
    """Build the sidecars of `indexes` for one data file into `out_dir`; their entries.

    The data file is only read (row groups of the index columns, a chunk of
    whole index granules at a time). Each sidecar is written under a
    temporary name, fsynced and renamed, so a crash leaves no partial file
    under a final name. `source`: an open file (the caller's descriptor, so
    that the bytes read are those of the identity it checked)."""
    if not indexes:
        return {}
    rg_rows = np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)], dtype=np.int64)
    rg_marks = zone_marks(rg_rows, 0)
    marks = zone_marks(rg_rows, zone_rows)      # the granules: zones (row groups when 0)
    # the zone at each row-group boundary: a chunk read ends on one that starts an index
    # granule of every index (GRANULARITY g: g zones)
    rg_zone = np.searchsorted(marks, rg_marks)
    file_cols = set(md.schema.to_arrow_schema().names)
    need = sorted({im.definition.column for im in indexes} & file_cols - set(partition))
    pf = pq.ParquetFile(source if source is not None else data_path, metadata=md)
    aggs = {}
    for im in indexes:
        col = meta.column(im.definition.column)
        it = index_from_meta(im.definition, col.type.arrow_type, im.params)
        aggs[im.name] = it.aggregator(threads) if threads else it.aggregator()
    os.makedirs(out_dir, exist_ok=True)

    def _write(im: IndexMeta, tab: pa.Table) -> None:
        if schemas[im.name] is None:
            md_ = dict(tab.schema.metadata or {})
            md_.update(_identity_metadata(ident))
            schemas[im.name] = tab.schema.with_metadata(md_)
            ipc[im.name] = pa.ipc.new_file(sinks[im.name], schemas[im.name])
        elif not tab.schema.equals(schemas[im.name], check_metadata=False):
            tab = tab.cast(schemas[im.name])
        ipc[im.name].write_table(tab.replace_schema_metadata(schemas[im.name].metadata))

    tmp_paths: dict[str, str] = {}
    sinks: dict[str, Any] = {}
    schemas: dict[str, pa.Schema | None] = {}
    ipc: dict[str, Any] = {}
    part_name = os.path.basename(data_path)
    ok = False
    try:
        for im in indexes:
            tmp_paths[im.name] = os.path.join(out_dir, f".tmp-{os.urandom(6).hex()}-{sidecar_name(ident, im.name)}")
            sinks[im.name] = pa.OSFile(tmp_paths[im.name], "wb")
            schemas[im.name] = None
        # chunks of whole row groups, cut at index-granule boundaries of every index
        step = math.lcm(*(im.definition.granularity for im in indexes))
        nrg = len(rg_rows)
        cuts = [i for i in range(1, nrg) if rg_zone[i] % step == 0] + [nrg]
        start = 0
        while True:
            k = 0
            while k < len(cuts) - 1 and cuts[k] <= start:
                k += 1
            end = cuts[k]
            while k + 1 < len(cuts) and rg_marks[cuts[k + 1]] - rg_marks[start] <= BUILD_CHUNK_ROWS:
                k += 1
                end = cuts[k]
            t = (pf.read_row_groups(list(range(start, end)), columns=need, use_threads=False)
                 if end > start else pa.table({}))
            n = int(rg_marks[end] - rg_marks[start])
            if t.num_rows != n and need:
                raise CorruptionError(f"read {t.num_rows} rows where the footer says {n}", path=data_path)
            za, zb = int(rg_zone[start]), int(rg_zone[end])
            local = marks[za:zb + 1] - marks[za]
            for im in indexes:
                zs, zl = zones_of(local, im.definition.granularity)
                vals = _column_values(meta, im, t, partition, n)
                agg = aggs[im.name]
                if getattr(agg, "whole_part", False):
                    # a whole-file aggregator (the text index's dictionary): written once at the end
                    agg.add(vals, zs, zl, int(marks[za]))
                    continue
                g = agg.build(vals, zs, zl)
                g.zone_start = np.asarray(g.zone_start, dtype=np.int64) + int(marks[za])
                _write(im, g.to_arrow(part_name))
            start = end
            if start >= nrg:
                break
        for im in indexes:
            if getattr(aggs[im.name], "whole_part", False):
                _write(im, aggs[im.name].finish().to_arrow(part_name))
        entries = {}

        for im in indexes:
            if ipc.get(im.name) is not None:
                ipc[im.name].close()
            sinks[im.name].close()
            final = os.path.join(out_dir, sidecar_name(ident, im.name))
            fsync_file(tmp_paths[im.name])
            os.replace(tmp_paths[im.name], final)
            entries[im.name] = {"file": os.path.basename(final), "xxh64": _file_xxh64(final),
                                "fingerprint": index_fingerprint(im)}
        fsync_dir(out_dir)
        ok = True
        return entries
    except (OSError, pa.ArrowException) as e:
        raise SkipidxError(f"cannot build sidecar indexes: {e}", path=data_path) from None
    finally:
        if not ok:
            for name, s in sinks.items():
                try:
                    s.close()
                except Exception:
                    pass
                try:
                    os.unlink(tmp_paths[name])
                except OSError:
                    pass


def load_sidecar(path: str, entry: dict, meta: TableMeta, im: IndexMeta, ident: FileIdentity,
                 marks: np.ndarray) -> IndexGranules:
    """The granules of one sidecar, checked against its checksum, its data file's identity
    and the file's row groups; CorruptionError (naming the file) otherwise."""
    try:
        with pa.OSFile(path, "r") as src:
            buf = src.read_buffer()
    except (OSError, pa.ArrowException) as e:
        raise CorruptionError(f"unreadable sidecar: {e}", path=path) from None
    if xxhash.xxh64_hexdigest(memoryview(buf)) != entry.get("xxh64"):
        raise CorruptionError("sidecar checksum mismatch", path=path)
    try:
        table = pa.ipc.open_file(pa.BufferReader(buf)).read_all()
        table.validate(full=True)
    except (OSError, pa.ArrowException) as e:
        raise CorruptionError(f"unreadable sidecar: {e}", path=path) from None
    md = table.schema.metadata or {}
    if tuple(md.get(k) for k in IDENTITY_KEYS) != tuple(_identity_metadata(ident).values()):
        raise CorruptionError("sidecar describes another version of the data file", path=path)
    return granules_from_table(table, meta, im, marks, path, what="sidecar", unit="the data file's row groups")
