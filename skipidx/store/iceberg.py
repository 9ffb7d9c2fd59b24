"""External tables over an Apache Iceberg table: ``ENGINE = Iceberg('catalog', 'namespace.table')``.

An :class:`IcebergTable` is an external table (:mod:`skipidx.store.external`)
whose data files are not a glob's but those of the Iceberg table's current
snapshot, as pyiceberg plans a full scan of it (``table.scan().plan_files()``).
Everything else is the ParquetFiles machinery: one sidecar per data file and
index (same build jobs, same zones), footer min/max and Bloom filters, the
same plan -> prune -> scan.

* ``ALTER TABLE t REFRESH`` loads the table again (pyiceberg), plans the current
  snapshot, indexes data files it has not seen (the sidecars of unchanged ones
  are kept), drops those of files the snapshot no longer holds. Queries read the
  snapshot of the last REFRESH and never import pyiceberg: what they need of the
  plan is in the table's state (``external.json``, key ``extra``).
* Deletes: the position-delete files (Parquet) and deletion vectors (Puffin,
  read with pyiceberg) that the plan attaches to a data file are resolved at
  REFRESH into that file's deleted row positions (``deletes/<xxh64>.bin``:
  sorted little-endian int64, checksummed in the state); every read of the
  file drops those rows. Equality deletes (pyiceberg does not plan them) and
  ORC/Avro files are refused with a SkipidxError: rows a delete removed are
  never returned.
* Puffin: after a REFRESH of a catalog table, every sidecar of the snapshot is
  copied as one blob (type ``skipidx-zone-index-v1``, :mod:`skipidx.store.puffin`)
  into ``<table location>/metadata/skipidx-<snapshot id>-<uuid>.stats`` and that
  file is registered as the snapshot's statistics file through pyiceberg's
  ``update_statistics()``. The registration lists no blobs (``blob-metadata``
  is empty): pyiceberg validates blob types against a closed list and would no
  longer load a table whose metadata names another; the Puffin footer lists them
  all. A statistics file of the snapshot written by another tool is never replaced.

Only local warehouses are read (data files opened by path: ``file://`` URIs or
plain paths).
"""
from __future__ import annotations

import os
import re
import uuid
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.store.commit import fsync_dir, write_file_durably
from skipidx.store.external import (ExternalFile, ExternalSnapshot, ExternalState, ExternalTable, RefreshReport,
                                    BuildJob, _write_state)
from skipidx.store.lake import DEFAULT_ZONE_ROWS, HalfWritten, column_type_of, probe
from skipidx.store.metadata import TableMeta
from skipidx.store.sidecar import SIDECAR_DIR

__all__ = ["ENGINE", "LOCAL_ENGINE", "IcebergTable", "IcebergFile", "IcebergSnapshot", "catalog_spec",
           "iceberg_columns", "load_iceberg", "create_iceberg_table", "DELETES_DIR"]

ENGINE = "Iceberg"
#: ClickHouse's spelling for a table directory read without a catalog (read-only: no statistics registered)
LOCAL_ENGINE = "IcebergLocal"
DELETES_DIR = "deletes"
_FIELD_ID = b"PARQUET:field_id"


# ------------------------------------------------------------------ pyiceberg (REFRESH and CREATE only)
def _pyiceberg() -> Any:
    try:
        import pyiceberg  # noqa: F401
    except ImportError:
        raise SkipidxError("ENGINE = Iceberg needs pyiceberg: pip install 'pyiceberg[sql-sqlite]'") from None
    return pyiceberg


def catalog_spec(catalog: str, local: bool = False, name: str | None = None) -> dict:
    """How to load the catalog named by ENGINE's first argument: a catalog URI
    (``sqlite:///path.db``, ``http://rest``, ...), the name of a catalog configured for
    pyiceberg (``~/.pyiceberg.yaml``, environment), or (``IcebergLocal``) a table
    directory / ``*.metadata.json``. Only these keys are kept (no credentials)."""
    if not isinstance(catalog, str) or not catalog.strip():
        raise SkipidxError("ENGINE = Iceberg needs the catalog: a URI such as 'sqlite:///warehouse/catalog.db' "
                           "or the name of a configured pyiceberg catalog")
    if local:
        return {"metadata": os.path.abspath(os.path.expanduser(_local_path(catalog)))}
    if "://" in catalog:
        # a SQL catalog keeps the tables of several catalogs apart by name
        return {"name": name or "default", "uri": catalog}
    if name is not None:
        raise SkipidxError("ENGINE = Iceberg: a catalog name as third argument goes with a catalog URI")
    return {"name": catalog}


def _local_path(uri: str) -> str:
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if "://" in uri:
        raise SkipidxError(f"ENGINE = Iceberg reads local warehouses only; {uri!r} is not a local file")
    return uri


def _latest_metadata(path: str) -> str:
    """The newest ``*.metadata.json`` of a table directory (or `path` itself when it is one)."""
    if os.path.isfile(path):
        return path
    mdir = os.path.join(path, "metadata")
    hint = os.path.join(mdir, "version-hint.text")
    if os.path.isfile(hint):
        with open(hint) as f:
            v = f.read().strip()
        for cand in (f"v{v}.metadata.json", f"{v}.metadata.json"):
            if os.path.isfile(os.path.join(mdir, cand)):
                return os.path.join(mdir, cand)
    best = None
    try:
        names = os.listdir(mdir)
    except OSError as e:
        raise SkipidxError(f"IcebergLocal({path!r}): no metadata directory ({e.strerror or e})") from None
    for n in names:
        m = re.match(r"^v?(\d+)[-.].*metadata\.json$", n)
        if m and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), n)
    if best is None:
        raise SkipidxError(f"IcebergLocal({path!r}): no *.metadata.json under {mdir}")
    return os.path.join(mdir, best[1])


def local_location(tbl: Any) -> str:
    """The table's location as a local directory."""
    return os.path.abspath(_local_path(tbl.location().rstrip("/")))


def load_iceberg(spec: dict, identifier: str) -> Any:
    """The pyiceberg Table of `spec` (:func:`catalog_spec`) and `identifier`; SkipidxError otherwise."""
    _pyiceberg()
    try:
        if "metadata" in spec:
            from pyiceberg.table import StaticTable

            return StaticTable.from_metadata(_latest_metadata(spec["metadata"]))
        from pyiceberg.catalog import load_catalog

        props = {k: spec[k] for k in ("uri", "type", "warehouse") if k in spec}
        return load_catalog(spec.get("name", "skipidx"), **props).load_table(identifier)
    except SkipidxError:
        raise
    except Exception as e:      # pyiceberg raises its own hierarchy, pydantic's and the drivers'
        where = spec.get("metadata") or spec.get("uri") or spec.get("name")
        raise SkipidxError(f"cannot load Iceberg table {identifier!r} from {where!r}: {type(e).__name__}: {e}") from None


def iceberg_columns(tbl: Any) -> tuple[list[tuple[str, Any]], dict[str, int], list[str]]:
    """(columns with their skipidx types, field id per column, columns left out for want of a
    type) of the table's current schema (top-level fields)."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    schema = tbl.schema()
    arrow = schema_to_pyarrow(schema, include_field_ids=False)
    cols, ids, left = [], {}, []
    for f, nf in zip(arrow, schema.fields):
        ct = column_type_of(f)
        if ct is None:
            left.append(f"{f.name} ({f.type})")
            continue
        cols.append((f.name, ct))
        ids[f.name] = int(nf.field_id)
    return cols, ids, left


def _file_field_ids(md: pq.FileMetaData) -> dict[int, str]:
    out = {}
    for f in md.schema.to_arrow_schema():
        v = (f.metadata or {}).get(_FIELD_ID)
        if v is not None:
            out[int(v)] = f.name
    return out


def _check_field_ids(path: str, md: pq.FileMetaData, ids: dict[str, int]) -> None:
    """A data file must hold each column under its name (a column renamed in Iceberg keeps
    its old name in older files: read by name it would be NULL, so it is refused)."""
    have = _file_field_ids(md)
    if not have:
        return          # no field ids (files added by name mapping): read by name
    names = set(have.values())
    for col, fid in ids.items():
        got = have.get(fid)
        if (got is not None and got != col) or (got is None and col in names):
            raise SkipidxError(f"Iceberg data file {path} holds column {col!r} (field id {fid}) under another "
                               "name or id (a renamed or re-added column): not supported by ENGINE = Iceberg; "
                               "re-create the table with the current columns")


def _position_deletes(tbl: Any, dfile: Any, cache: dict) -> dict[str, np.ndarray]:
    """{data file URI: deleted positions} of one delete file of the plan."""
    from pyiceberg.manifest import DataFileContent, FileFormat

    key = dfile.file_path
    got = cache.get(key)
    if got is not None:
        return got
    if dfile.content == DataFileContent.EQUALITY_DELETES:
        raise SkipidxError(f"Iceberg equality delete file {dfile.file_path}: not supported by ENGINE = Iceberg")
    if dfile.content != DataFileContent.POSITION_DELETES:
        raise SkipidxError(f"Iceberg delete file {dfile.file_path} of content {dfile.content}: not supported")
    out: dict[str, np.ndarray] = {}
    if dfile.file_format == FileFormat.PARQUET:
        try:
            t = pq.read_table(_local_path(dfile.file_path), columns=["file_path", "pos"])
        except (OSError, pa.ArrowException, KeyError) as e:
            raise SkipidxError(f"unreadable Iceberg position delete file {dfile.file_path}: {e}") from None
        fp = t.column("file_path").combine_chunks().dictionary_encode()
        pos = np.asarray(t.column("pos").to_numpy(zero_copy_only=False), dtype=np.int64)
        idx = np.asarray(fp.indices.to_numpy(zero_copy_only=False))
        order = np.argsort(idx, kind="stable")
        bounds = np.searchsorted(idx[order], np.arange(len(fp.dictionary) + 1))
        for i, uri in enumerate(fp.dictionary.to_pylist()):
            out[uri] = pos[order[bounds[i]:bounds[i + 1]]]
    elif dfile.file_format == FileFormat.PUFFIN:
        from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
        from pyiceberg.table.puffin import PuffinFile

        try:
            with open(_local_path(dfile.file_path), "rb") as f:
                data = f.read()
            for dv in deletion_vectors_from_puffin_file(PuffinFile(data)):
                out[dv.referenced_data_file] = np.asarray(dv.to_vector().to_numpy(), dtype=np.int64)
        except SkipidxError:
            raise
        except Exception as e:
            raise SkipidxError(f"unreadable Iceberg deletion vector {dfile.file_path}: {type(e).__name__}: {e}") from None
    else:
        raise SkipidxError(f"Iceberg delete file {dfile.file_path} in {dfile.file_format}: only Parquet position "
                           "deletes and Puffin deletion vectors are read")
    cache[key] = out
    return out


def _plan(tbl: Any, table_dir: str) -> dict:
    """The current snapshot's data files (local path -> {uri, record_count, size, deletes}),
    their deleted positions written under ``deletes/``."""
    snap = tbl.current_snapshot()
    info: dict[str, Any] = {"snapshot_id": None if snap is None else int(snap.snapshot_id),
                            "sequence_number": None if snap is None else int(snap.sequence_number or 0),
                            "schema_id": int(tbl.schema().schema_id), "files": {}}
    if snap is None:
        return info
    from pyiceberg.manifest import FileFormat

    try:
        tasks = list(tbl.scan(snapshot_id=snap.snapshot_id).plan_files())
    except ValueError as e:
        if "equality" in str(e):
            raise SkipidxError(f"the Iceberg table has equality deletes, which pyiceberg cannot plan and "
                               f"ENGINE = Iceberg does not read ({e})") from None
        raise SkipidxError(f"cannot plan the Iceberg scan: {e}") from None
    cache: dict = {}
    ddir = os.path.join(table_dir, DELETES_DIR)
    for task in tasks:
        f = task.file
        if f.file_format != FileFormat.PARQUET:
            raise SkipidxError(f"Iceberg data file {f.file_path} is {f.file_format}: ENGINE = Iceberg reads Parquet")
        local = os.path.abspath(_local_path(f.file_path))
        rec: dict[str, Any] = {"uri": f.file_path, "record_count": int(f.record_count),
                               "size": int(f.file_size_in_bytes)}
        dels = [_position_deletes(tbl, d, cache).get(f.file_path) for d in task.delete_files]
        dels = [d for d in dels if d is not None and d.size]
        if dels:
            pos = np.unique(np.concatenate(dels))
            pos = pos[(pos >= 0) & (pos < rec["record_count"])].astype("<i8")
            if pos.size:
                raw = pos.tobytes()
                h = xxhash.xxh64_hexdigest(raw)
                name = f"{h}.bin"
                os.makedirs(ddir, exist_ok=True)
                if not os.path.isfile(os.path.join(ddir, name)):
                    tmp = os.path.join(ddir, f".{name}.{os.urandom(4).hex()}.tmp")
                    write_file_durably(tmp, raw)
                    os.replace(tmp, os.path.join(ddir, name))
                rec["deletes"] = {"file": name, "count": int(pos.size), "xxh64": h}
        info["files"][local] = rec
    if os.path.isdir(ddir):
        fsync_dir(ddir)
    return info


# ------------------------------------------------------------------ the query side (no pyiceberg)
def _merge(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Granule ranges sorted and merged (the order ExternalFile.read returns rows in)."""
    out: list[tuple[int, int]] = []
    for a, b in sorted((int(a), int(b)) for a, b in ranges if b > a):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


class IcebergFile(ExternalFile):
    """A data file of the snapshot: an external file whose reads drop the rows its
    delete files delete."""

    def __init__(self, snap: "IcebergSnapshot", path: str, *args: Any) -> None:
        super().__init__(snap, path, *args)
        self._del = snap.state.extra["files"].get(path, {}).get("deletes")
        self._deleted: np.ndarray | None = None

    @property
    def deleted_rows(self) -> int:
        return int(self._del["count"]) if self._del else 0

    def deleted(self) -> np.ndarray:
        """Sorted deleted row positions (checked against the state's checksum)."""
        if self._deleted is None:
            p = os.path.join(self.snap.table.path, DELETES_DIR, self._del["file"])
            try:
                with open(p, "rb") as f:
                    raw = f.read()
            except OSError as e:
                raise CorruptionError(f"deleted positions of {self.name} unreadable ({e.strerror or e}); "
                                      "run ALTER TABLE ... REFRESH", path=p) from None
            if xxhash.xxh64_hexdigest(raw) != self._del["xxh64"] or len(raw) != 8 * int(self._del["count"]):
                raise CorruptionError(f"deleted positions of {self.name}: checksum mismatch", path=p)
            self._deleted = np.frombuffer(raw, dtype="<i8")
        return self._deleted

    def needle_column(self, needles: dict) -> str | None:
        # a page prefilter returns rows whose positions are not known; deletes need them
        return None if self._del else super().needle_column(needles)

    def _live_mask(self, merged: list[tuple[int, int]]) -> np.ndarray:
        """Per row of the (sorted, disjoint) granule ranges: not deleted."""
        marks = self.marks
        pos = np.concatenate([np.arange(marks[a], marks[b], dtype=np.int64) for a, b in merged])
        dels = self.deleted()
        if not dels.shape[0]:
            return np.ones(pos.shape[0], dtype=bool)
        i = np.searchsorted(dels, pos)
        i[i == dels.shape[0]] = 0
        return dels[i] != pos

    def live_rows(self, ranges: Sequence[tuple[int, int]]) -> int:
        """Rows of granule ranges `ranges` not deleted (``count()`` reads no column)."""
        merged = _merge(ranges)
        if not merged:
            return 0
        if not self._del:
            return int(sum(int(self.marks[b] - self.marks[a]) for a, b in merged))
        return int(self._live_mask(merged).sum())

    def read(self, columns: Sequence[str] | None = None, mark_ranges: Sequence[tuple[int, int]] | None = None,
             **kw: Any) -> pa.Table:
        if not self._del:
            return super().read(columns, mark_ranges, **kw)
        kw.pop("needles", None)
        merged = _merge([(0, self.n_granules)] if mark_ranges is None else mark_ranges)
        t = super().read(columns, merged, **kw)
        if not merged:
            return t
        keep = self._live_mask(merged)
        if keep.all():
            return t
        if t.num_columns == 0:
            return pa.table({"__n": pa.nulls(int(keep.sum()))}).drop_columns(["__n"])
        return t.filter(pa.array(keep))


class IcebergSnapshot(ExternalSnapshot):
    """The data files of the snapshot of the last REFRESH, as one query reads them: every
    one must be readable (a missing file would silently lose its rows)."""

    file_class = IcebergFile

    def __init__(self, table: "IcebergTable", state: ExternalState, only: Iterable[str] | None = None) -> None:
        super().__init__(table, state, only)
        want = table.data_paths(state) if only is None else list(only)
        got = {p.data_path for p in self.parts}
        missing = [p for p in want if p not in got]
        if missing:
            why = {s["path"]: s["reason"] for s in self.skipped}
            self.close()
            raise SkipidxError(f"Iceberg snapshot {state.extra.get('snapshot_id')}: {len(missing)} data file(s) "
                               f"unreadable: " + "; ".join(f"{p}: {why.get(p, 'missing')}" for p in missing[:3]))
        stale = [p.name for p in self.parts if p.stale]
        if stale:
            self.close()
            raise SkipidxError(f"Iceberg data file(s) changed on disk since the snapshot was planned: "
                               f"{', '.join(stale[:3])} (Iceberg data files are immutable; REFRESH)")

    @property
    def notes(self) -> list[str]:
        x = self.state.extra
        d = sum(1 for p in self.parts if p.deleted_rows)
        out = [f"Iceberg snapshot {x.get('snapshot_id')} (sequence number {x.get('sequence_number')}) as of the "
               f"last REFRESH: {len(self.parts)} data file(s)" + (f", {d} with deleted rows" if d else "")]
        now = newer_snapshot(x)
        if now is not None:
            out.append(f"the Iceberg table's current snapshot is now {now}; ALTER TABLE {self.meta.name} REFRESH "
                       "reads it")
        return out + super().notes


def newer_snapshot(x: dict) -> int | None:
    """The table's current snapshot id when it is not the one of the last REFRESH, where that is
    cheap to learn without pyiceberg (a sqlite SQL catalog, read-only; a table directory);
    None otherwise (same snapshot, or not known)."""
    import json

    spec = x.get("catalog", {})
    try:
        if "metadata" in spec:
            loc = _latest_metadata(spec["metadata"])
        else:
            uri = spec.get("uri", "")
            if not uri.startswith("sqlite:///") or "." not in x.get("identifier", ""):
                return None
            import sqlite3

            ns, name = x["identifier"].rsplit(".", 1)
            con = sqlite3.connect(f"file:{uri[len('sqlite:///'):]}?mode=ro", uri=True, timeout=0.5)
            try:
                row = con.execute("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND "
                                  "table_namespace = ? AND table_name = ?", (spec.get("name"), ns, name)).fetchone()
            finally:
                con.close()
            if not row:
                return None
            loc = _local_path(row[0])
        if os.path.basename(loc) == os.path.basename(x.get("metadata_location") or ""):
            return None
        with open(loc, "rb") as f:
            cur = json.load(f).get("current-snapshot-id")
        if cur is None or cur == -1:
            cur = None
        return None if cur == x.get("snapshot_id") else cur
    except Exception:       # only a note: anything unexpected means "not known"
        return None


class IcebergTable(ExternalTable):
    """An external table over an Iceberg table's current snapshot (ENGINE = Iceberg)."""

    engine = ENGINE
    snapshot_class = IcebergSnapshot

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._tbl: Any = None
        self._adopted = 0

    @property
    def engine_sql(self) -> str:
        from skipidx.sql import ast as A

        x = self.state().extra
        spec = x["catalog"]
        if "metadata" in spec:
            return f"{LOCAL_ENGINE}({A.quote_string(spec['metadata'].encode())})"
        q = [spec.get("uri") or spec["name"], x["identifier"]] + ([spec["name"]] if spec.get("uri") else [])
        return f"{ENGINE}({', '.join(A.quote_string(v.encode()) for v in q)})"

    def _read_only(self, what: str) -> SkipidxError:
        return SkipidxError(f"table {self.name!r} is an Iceberg table (ENGINE = Iceberg): {what} is not supported "
                            "here; write with pyiceberg (or any Iceberg writer), then ALTER TABLE ... REFRESH")

    def data_paths(self, st: ExternalState) -> list[str]:
        return list(st.extra.get("files", {}))

    def num_rows(self) -> int:
        files = self.state().extra.get("files", {})
        return int(sum(r["record_count"] - r.get("deletes", {}).get("count", 0) for r in files.values()))

    # ---- REFRESH ---------------------------------------------------------
    def _discover(self, st: ExternalState) -> list[str]:
        x = st.extra
        tbl = load_iceberg(x["catalog"], x["identifier"])
        self._tbl = tbl
        info = _plan(tbl, self.path)
        info["metadata_location"] = str(tbl.metadata_location)
        ids = x.get("field_ids", {})
        cur = {f.name: int(f.field_id) for f in tbl.schema().fields}
        gone = [c for c in st.meta.column_names if c in ids and cur.get(c) != ids[c]]
        if gone:
            raise SkipidxError(f"Iceberg table {x['identifier']!r}: column(s) {', '.join(gone)} were dropped, "
                               "renamed or replaced since the table was attached; re-create it")
        # identity-partitioned columns: Iceberg lets a data file leave them out (the value is in
        # the manifest); read by name they would come back NULL, so such files are refused
        from pyiceberg.transforms import IdentityTransform

        part_ids = {pf.source_id for spec in tbl.specs().values() for pf in spec.fields
                    if isinstance(pf.transform, IdentityTransform)}
        part_cols = {c: ids[c] for c in st.meta.column_names if ids.get(c) in part_ids}
        probed = {}
        for p, rec in info["files"].items():
            try:
                ident, md = probe(p)
            except (FileNotFoundError, HalfWritten, OSError) as e:
                raise SkipidxError(f"Iceberg data file {rec['uri']} of snapshot {info['snapshot_id']} is unreadable: "
                                   f"{e.message if isinstance(e, SkipidxError) else e}") from None
            if ident.size != rec["size"] or md.num_rows != rec["record_count"]:
                raise SkipidxError(f"Iceberg data file {rec['uri']}: {ident.size} bytes and {md.num_rows} rows on disk, "
                                   f"the manifest says {rec['size']} and {rec['record_count']}")
            _check_field_ids(p, md, {c: ids[c] for c in st.meta.column_names if c in ids})
            if part_cols:
                names = set(md.schema.to_arrow_schema().names)
                lack = [c for c in part_cols if c not in names]
                if lack:
                    raise SkipidxError(f"Iceberg data file {rec['uri']} leaves out its partition column(s) "
                                       f"{', '.join(lack)} (values kept in the manifest): not read by ENGINE = Iceberg")
            probed[p] = (ident, md)
        self._adopted = _adopt_puffin_sidecars(tbl, st, info, probed, self.path)
        info["previous_deletes"] = sorted({r["deletes"]["file"] for r in x.get("files", {}).values() if "deletes" in r})
        x.update(info)
        return list(info["files"])

    def refresh(self, builder: Callable[[list[BuildJob]], list[dict]] | None = None) -> RefreshReport:
        """Plan the Iceberg table's current snapshot and index its data files (sidecars of
        files indexed before are kept); then write and register the Puffin statistics file."""
        rep = super().refresh(builder)
        st = self.state()
        x = st.extra
        if self._adopted:
            rep.notes.insert(0, f"{self._adopted} sidecar(s) taken from the table's Puffin statistics files")
            self._adopted = 0
        rep.notes.insert(0, f"Iceberg snapshot {x.get('snapshot_id')}: {len(x.get('files', {}))} data file(s), "
                            f"{sum(1 for r in x.get('files', {}).values() if 'deletes' in r)} with deletes")
        self._collect_deletes(st)
        tbl, self._tbl = self._tbl, None
        if tbl is not None and "metadata" not in x["catalog"]:
            note = publish_puffin(tbl, st, self.path)
            if note:
                rep.notes.append(note)
        return rep

    def _collect_deletes(self, st: ExternalState) -> None:
        ddir = os.path.join(self.path, DELETES_DIR)
        try:
            names = os.listdir(ddir)
        except FileNotFoundError:
            return
        live = {r["deletes"]["file"] for r in st.extra.get("files", {}).values() if "deletes" in r}
        live |= set(st.extra.get("previous_deletes", []))
        for n in names:
            if n not in live:
                try:
                    os.unlink(os.path.join(ddir, n))
                except OSError:
                    pass


# ------------------------------------------------------------------ Puffin statistics
def _adopt_puffin_sidecars(tbl: Any, st: ExternalState, info: dict, probed: dict, table_dir: str) -> int:
    """Sidecars this table lacks, taken from the skipidx blobs of the Iceberg table's statistics
    files (another skipidx database indexed the same data files): a blob is used only when it
    was built for this version of the data file (size, footer XXH64, and the identity recorded in
    the sidecar itself), for this index definition (fingerprint) and zone size, and its payload's
    XXH64 is the one its properties name. The state `st` gets their records (REFRESH then keeps
    them as it keeps its own); the number adopted."""
    from skipidx.store.external import FileRecord
    from skipidx.store.part import index_fingerprint
    from skipidx.store.puffin import SKIPIDX_BLOB, blob_payload, read_footer
    from skipidx.store.sidecar import _identity_metadata, sidecar_name

    fps = {im.name: index_fingerprint(im) for im in st.meta.indexes}
    need = {}
    for p, (ident, md) in probed.items():
        old = st.files.get(p)
        have = set(old.sidecars) if old is not None and old.identity == ident else set()
        if set(fps) - have:
            need[info["files"][p]["uri"]] = (p, ident, md, have)
    if not need or not fps:
        return 0
    n = 0
    sdir = os.path.join(table_dir, SIDECAR_DIR)
    os.makedirs(sdir, exist_ok=True)
    for sf in sorted(getattr(tbl.metadata, "statistics", []), key=lambda s: s.snapshot_id != info["snapshot_id"]):
        path = sf.statistics_path
        if not os.path.basename(path).startswith("skipidx-"):
            continue
        try:
            with open(_local_path(path), "rb") as f:
                data = f.read()
            footer = read_footer(data, path)
        except (OSError, SkipidxError):
            continue
        for b in footer.blobs:
            pr = b.get("properties") or {}
            hit = need.get(pr.get("skipidx.data-file"))
            name = pr.get("skipidx.index")
            if b.get("type") != SKIPIDX_BLOB or hit is None or name not in fps or name in hit[3]:
                continue
            p, ident, md, have = hit
            if (pr.get("skipidx.index-fingerprint") != fps[name] or pr.get("skipidx.zone-rows") != str(st.zone_rows)
                    or pr.get("skipidx.data-file-size") != str(ident.size)
                    or pr.get("skipidx.data-footer-xxh64") != ident.footer_xxh64):
                continue
            try:
                payload = blob_payload(data, b, path)
                h = xxhash.xxh64_hexdigest(payload)
                smd = pa.ipc.open_file(pa.BufferReader(payload)).schema.metadata or {}
            except (SkipidxError, pa.ArrowException, OSError):
                continue
            if h != pr.get("skipidx.sidecar-xxh64") or any(smd.get(k) != v for k, v in _identity_metadata(ident).items()):
                continue
            fname = sidecar_name(ident, name)
            tmp = os.path.join(sdir, f".{fname}.{os.urandom(4).hex()}.tmp")
            write_file_durably(tmp, payload)
            os.replace(tmp, os.path.join(sdir, fname))
            rec = st.files.get(p)
            if rec is None or rec.identity != ident:
                rec = st.files[p] = FileRecord(ident, [md.row_group(i).num_rows for i in range(md.num_row_groups)], {})
            rec.sidecars[name] = {"file": fname, "xxh64": h, "fingerprint": fps[name]}
            have.add(name)
            n += 1
    if n:
        fsync_dir(sdir)
    return n


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skipidx")
    except PackageNotFoundError:
        return "unknown"


def _blob_key(props: dict) -> tuple:
    return (props.get("skipidx.data-file"), props.get("skipidx.index"), props.get("skipidx.index-fingerprint"),
            props.get("skipidx.sidecar-xxh64"))


def publish_puffin(tbl: Any, st: ExternalState, table_dir: str) -> str | None:
    """Write the snapshot's sidecars as a Puffin file next to the table's metadata and register it
    as the snapshot's statistics file; a note of what was done (None: nothing to do)."""
    from skipidx.store.puffin import SKIPIDX_BLOB, Blob, read_footer, write_puffin

    x = st.extra
    sid, seq = x.get("snapshot_id"), x.get("sequence_number")
    if sid is None:
        return None
    ids = x.get("field_ids", {})
    blobs: list[tuple[str, Blob]] = []
    for p, rec in sorted(st.files.items()):
        info = x["files"].get(p)
        if info is None:
            continue
        for name, e in sorted(rec.sidecars.items()):
            im = st.meta.index(name)
            col = im.definition.column
            props = {"skipidx.data-file": info["uri"], "skipidx.index": name,
                     "skipidx.index-fingerprint": str(e.get("fingerprint")), "skipidx.sidecar-xxh64": str(e.get("xxh64")),
                     "skipidx.zone-rows": str(st.zone_rows), "skipidx.data-file-size": str(rec.identity.size),
                     "skipidx.data-footer-xxh64": rec.identity.footer_xxh64}
            blobs.append((os.path.join(table_dir, SIDECAR_DIR, e["file"]),
                          Blob(SKIPIDX_BLOB, [ids[col]] if col in ids else [], sid, seq, b"", props)))
    if not blobs:
        return None
    if not hasattr(tbl, "update_statistics"):
        return "no Puffin statistics file: this pyiceberg has no update_statistics() (0.9 or newer has)"
    existing = [s for s in getattr(tbl.metadata, "statistics", []) if s.snapshot_id == sid]
    old_path = None
    carried: list[Blob] = []
    if existing:
        old_path = _local_path(existing[0].statistics_path)
        if not os.path.basename(old_path).startswith("skipidx-"):
            return (f"snapshot {sid} already has a statistics file not written by skipidx "
                    f"({existing[0].statistics_path}); not replaced")
        try:
            with open(old_path, "rb") as f:
                data = f.read()
            old = read_footer(data, old_path)
        except (OSError, CorruptionError):
            old = None
        if old is not None:
            new_keys = {_blob_key(b.properties) for _, b in blobs}
            old_keys = {_blob_key(b.get("properties") or {}) for b in old.blobs}
            if new_keys <= old_keys:
                return f"Puffin statistics file of snapshot {sid} up to date ({existing[0].statistics_path})"
            # blobs another skipidx database wrote for this snapshot's files (other indexes) stay
            uris = {r["uri"] for r in x["files"].values()}
            for b in old.blobs:
                pr = b.get("properties") or {}
                if b.get("type") == SKIPIDX_BLOB and pr.get("skipidx.data-file") in uris and _blob_key(pr) not in new_keys:
                    carried.append(Blob(b["type"], list(b.get("fields") or []), sid, seq,
                                        data[b["offset"]:b["offset"] + b["length"]], dict(pr),
                                        b.get("compression-codec"), precompressed=True))
    for path, b in blobs:
        with open(path, "rb") as f:
            b.payload = f.read()
    blobs += [("", b) for b in carried]
    loc = tbl.location().rstrip("/")
    mdir = os.path.join(_local_path(loc), "metadata")
    name = f"skipidx-{sid}-{uuid.uuid4()}.stats"
    local = os.path.join(mdir, name)
    try:
        footer = write_puffin(local, [b for _, b in blobs], {"created-by": f"skipidx {_version()}"})
    except OSError as e:        # a read-only warehouse: the sidecars serve the queries all the same
        try:
            os.unlink(local)
        except OSError:
            pass
        return f"Puffin statistics file not written ({e.strerror or e}: {local})"
    uri = f"{loc}/metadata/{name}"
    from pyiceberg.table.statistics import StatisticsFile

    sf = StatisticsFile(**{"snapshot-id": sid, "statistics-path": uri, "file-size-in-bytes": footer.file_size,
                           "file-footer-size-in-bytes": footer.footer_size, "blob-metadata": []})
    try:
        with tbl.update_statistics() as u:
            u.set_statistics(sf)
    except Exception as e:      # a concurrent commit, a catalog that refuses
        try:
            os.unlink(local)
        except OSError:
            pass
        return f"Puffin statistics file not registered ({type(e).__name__}: {e})"
    if old_path and os.path.isfile(old_path):
        try:
            os.unlink(old_path)
        except OSError:
            pass
    return f"Puffin statistics file {uri}: {len(blobs)} blob(s) of type {SKIPIDX_BLOB}"


# ------------------------------------------------------------------ CREATE
def create_iceberg_table(table_dir_tmp: str, meta: TableMeta, spec: dict, identifier: str, field_ids: dict[str, int],
                         location: str, builder: Callable[[list[BuildJob]], list[dict]] | None = None,
                         zone_rows: int | None = None) -> RefreshReport:
    """Write a new Iceberg-backed external table into the empty directory `table_dir_tmp`
    and index the data files of the current snapshot (`location`: the table's local
    directory, under which its data files are named)."""
    meta.validate()
    src = os.path.join(location, "**", "*.parquet")
    st = ExternalState(0, meta, src, [], {}, [], DEFAULT_ZONE_ROWS if zone_rows is None else int(zone_rows),
                       ENGINE, {"catalog": spec, "identifier": identifier, "field_ids": field_ids, "files": {}})
    os.makedirs(os.path.join(table_dir_tmp, SIDECAR_DIR), exist_ok=True)
    _write_state(table_dir_tmp, st)
    return IcebergTable(table_dir_tmp).refresh(builder)
