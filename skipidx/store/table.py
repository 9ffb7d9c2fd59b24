"""A table: snapshots for readers; insert, ALTER index, merge for writers.

Every change goes through :func:`skipidx.store.commit.commit_parts` (one
atomic state change); readers take a pinned :class:`TableSnapshot` that
stays readable until closed, whatever merges and ALTERs happen meanwhile.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Iterator

import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.core.kms import KeyRing
from skipidx.indexes.base import IndexDef
from skipidx.store import commit as _commit
from skipidx.store.commit import ConflictError, StagedPart, TableState, commit_parts, new_part_name
from skipidx.store.metadata import TableMeta, make_index_meta
from skipidx.store import writer as _writer
from skipidx.store.conform import conform, dictionary_passthrough_columns, sort_rows
from skipidx.store.manifest import DATA_FILE, index_file_name
from skipidx.store.part import Part
from skipidx.store.snapshot import TableSnapshot
from skipidx.store.writer import PartWriter, build_part

__all__ = ["Table", "TableSnapshot", "as_batches"]


def as_batches(data: Any, max_rows: int) -> Iterator[pa.Table]:
    """Yield `data` (pyarrow Table/RecordBatch/RecordBatchReader, pandas
    DataFrame, or any Arrow C stream) as tables of at most `max_rows` rows,
    accumulating small batches so each yielded table fills a part."""
    if isinstance(data, pa.Table):
        for off in range(0, max(data.num_rows, 1), max_rows):
            yield data.slice(off, max_rows)
        return
    if isinstance(data, pa.RecordBatch):
        yield from as_batches(pa.Table.from_batches([data]), max_rows)
        return
    # a DataFrame exists only once pandas is imported: never import it (~0.3 s) to ask
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(data, pd.DataFrame):
        try:
            t = pa.Table.from_pandas(data, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise SkipidxError(f"cannot convert the DataFrame to Arrow: {e}") from None
        yield from as_batches(t, max_rows)
        return
    if isinstance(data, pa.RecordBatchReader):
        reader: Iterable[pa.RecordBatch] = data
    elif hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
    elif hasattr(data, "__next__"):
        # an iterator of Tables/RecordBatches (file imports, generators)
        def _flatten(it):
            for x in it:
                if isinstance(x, pa.Table):
                    out = x.to_batches()
                elif isinstance(x, pa.RecordBatch):
                    out = [x]
                else:
                    raise SkipidxError(f"an insert iterator yielded a {type(x).__name__}, "
                                       "expected pyarrow Tables or RecordBatches")
                x = None   # no reference kept here once a batch is handed on
                out.reverse()
                while out:
                    yield out.pop()
        reader = _flatten(data)
    else:
        raise SkipidxError(
            f"cannot insert a {type(data).__name__}: expected a pyarrow Table, RecordBatch, "
            "RecordBatchReader or a pandas DataFrame"
        )
    pending: list[pa.RecordBatch] = []
    rows = 0
    first = True
    for b in reader:
        if first:
            first = False
            # an empty first batch still carries the schema to check
            if b.num_rows == 0:
                yield pa.Table.from_batches([b])
        if b.num_rows == 0:
            continue
        if pending and not b.schema.equals(pending[0].schema):
            # a batch of another schema (e.g. a file block typed differently):
            # close the chunk so far; each chunk is conformed on its own
            yield pa.Table.from_batches(pending)
            pending, rows = [], 0
        pending.append(b)
        rows += b.num_rows
        while rows >= max_rows:
            t = pa.Table.from_batches(pending)
            rest = t.slice(max_rows)
            pending = rest.to_batches() if rest.num_rows else []
            rows = rest.num_rows
            # this frame keeps no reference to a yielded chunk: its memory is freed as soon
            # as the caller is done with it, so the next chunk is read into the same pages
            out = [t.slice(0, max_rows)]
            t = rest = b = None
            yield out.pop()
    if pending:
        out = [pa.Table.from_batches(pending)]
        del pending
        yield out.pop()


class Table:
    """A table directory. Cheap to construct; state is re-read when it changed."""

    def __init__(self, path: str, *, keyring: KeyRing | None = None) -> None:
        self.path = os.path.abspath(path)
        #: the connection's keys for sensitive columns (skipidx.core.kms)
        self.keyring = keyring
        _commit.check_layout(self.path)   # symbolic links are refused, never followed
        # fails early for a non-table / damaged state; the id this object
        # writes to (a statement never lands in a later table of the name)
        self.table_id = _commit.read_state(self.path).table_id
        _commit.cleanup(self.path)

    def _gone(self) -> bool:
        try:
            return _commit.read_state(self.path).table_id != self.table_id
        except _commit.TableGoneError:
            return True
        except SkipidxError:
            return False

    def _current(self) -> TableState:
        """The state, checked to be this table's (not a later one of the name)."""
        st = _commit.read_state(self.path)
        if st.table_id != self.table_id:
            raise _commit.TableGoneError("the table was dropped (and created again) since it was opened",
                                         path=self.path)
        return st

    # ---- reading -------------------------------------------------------
    @property
    def state(self) -> TableState:
        return _commit.read_state(self.path)

    @property
    def meta(self) -> TableMeta:
        """The current metadata."""
        return self.state.meta

    @property
    def name(self) -> str:
        return self.meta.name

    def snapshot(self) -> TableSnapshot:
        """A pinned, consistent view (close it when done)."""
        st, fd = _commit.pin_snapshot(self.path)
        if st.table_id != self.table_id:
            os.close(fd)
            raise _commit.TableGoneError("the table was dropped (and created again) since it was opened",
                                         path=self.path)
        return TableSnapshot(self.path, st, fd, keyring=self.keyring)

    @property
    def num_rows(self) -> int:
        return sum(p.rows for p in self.state.parts)

    def read(self, columns: list[str] | None = None) -> pa.Table:
        with self.snapshot() as s:
            return s.read(columns)

    def parts_table(self) -> pa.Table:
        """The active parts as ClickHouse's system.parts names them (SHOW PARTS)."""
        import datetime as _dt

        rows = []
        with self.snapshot() as snap:
            for p in snap.parts:
                m = p.manifest
                rows.append((p.name, 1, int(m.get("level", 0)), p.num_rows, p.n_granules,
                             sum(int(f["size"]) for f in m["files"].values()),
                             _dt.datetime.fromtimestamp(int(float(m.get("created_unix", 0))), _dt.timezone.utc)
                             .replace(tzinfo=None),
                             sorted(m["indexes"])))
        cols = list(zip(*rows)) if rows else [[]] * 8
        return pa.table({
            "name": pa.array(cols[0], pa.string()),
            "active": pa.array(cols[1], pa.uint8()),
            "level": pa.array(cols[2], pa.uint32()),
            "rows": pa.array(cols[3], pa.uint64()),
            "marks": pa.array(cols[4], pa.uint64()),
            "bytes_on_disk": pa.array(cols[5], pa.uint64()),
            "modification_time": pa.array(cols[6], pa.timestamp("s")),
            "indexes": pa.array(cols[7], pa.list_(pa.string())),
        })

    # ---- inserting -----------------------------------------------------
    def insert(self, data: Any, *, max_part_rows: int | None = None, threads: int | None = None) -> int:
        """Insert rows; returns how many. All or nothing: the chunks of a big
        input become several parts published together, and any bad value
        anywhere leaves the table unchanged.

        Chunks of ``max_part_rows`` rows are read in this thread and each
        is checked, cast, sorted and written as a part by one of up to
        ``threads`` workers (default: the cores this process may use;
        casting, sorting, Parquet encoding and the index kernels release the
        GIL), so memory stays bounded by ``threads`` chunks in flight. The
        parts are the same, in the same order, whatever ``threads`` is.
        """
        from skipidx.store.merge import check_parts_to_throw

        check_parts_to_throw(self)
        try:
            n = self._insert(data, max_part_rows, threads)
        except _commit.TableGoneError:
            raise
        except Exception as e:
            # a DROP renames the table away under a running writer: its files
            # vanish mid-write; say what happened, not which file went missing
            if self._gone():
                raise _commit.TableGoneError("the table was dropped while the insert ran; nothing was written",
                                             path=self.path) from None
            if isinstance(e, OSError):
                raise _commit.os_error(e, self.path) from None
            raise
        if n:
            from skipidx.store.merge import after_insert

            try:
                after_insert(self)
            except (SkipidxError, OSError):
                pass   # the insert committed; merges are best effort (the next insert tries again)
        return n

    def _insert(self, data: Any, max_part_rows: int | None, threads: int | None) -> int:
        from concurrent.futures import ThreadPoolExecutor

        from skipidx.core.threads import resolve_threads

        meta = self._current().meta
        limit = int(max_part_rows or meta.max_part_rows)
        workers = resolve_threads(threads)
        staged: list[StagedPart] = []
        pending: list = []
        plan = _writer.EncodingPlan()   # the first part's encodings, for the others
        first = True
        total = 0
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="skipidx-insert") if workers > 1 else None
        try:
            for chunk in as_batches(data, limit):
                if chunk.num_rows == 0:
                    conform(meta, chunk)   # schema errors even for empty inputs
                    continue
                total += chunk.num_rows
                if pool is None:
                    staged.append(_prepare_and_build(self.path, meta, chunk, self.keyring, 1, plan, first))
                    first = False
                    del chunk   # freed before the next chunk is read, which then reuses its pages
                    continue
                # a worker conforms and sorts its chunk too: the reading thread
                # only reads, so the insert scales with the workers
                pending.append(pool.submit(_prepare_and_build, self.path, meta, chunk, self.keyring, workers, plan,
                                           first))
                first = False
                del chunk
                while len(pending) >= workers:   # bound the chunks in flight
                    staged.append(pending.pop(0).result())
            while pending:
                staged.append(pending.pop(0).result())
            if staged:
                commit_parts(self.path, staged, meta_check=_same_columns(meta), expect_id=self.table_id)
        except BaseException:
            for f in pending:
                try:
                    staged.append(f.result())
                except BaseException:
                    pass
            for s in staged:
                s.discard()
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        return total

    def insert_file(self, path: str, format: str | None = None, **options: Any) -> int:
        """Import a Parquet, CSV, CSVWithNames or JSONEachRow file (streamed, bounded memory)."""
        from skipidx.store.ingest import open_file_batches

        meta = self._current().meta
        return self.insert(open_file_batches(path, format, meta, **options))

    # ---- ALTER ---------------------------------------------------------
    def add_index(self, defn: IndexDef, *, if_not_exists: bool = False) -> bool:
        """Declare an index (metadata only; existing parts get it by
        materialize_index or merges). Returns False if it existed and
        `if_not_exists`."""
        with _commit.WriteLock(self.path):
            meta = self._current().meta
            if any(i.name == defn.name for i in meta.indexes):
                if if_not_exists:
                    return False
                raise SkipidxError(f"table {meta.name!r} already has an index {defn.name!r}")
            if defn.expression is not None:
                from skipidx.core.types import parse_type

                col_type = parse_type(defn.expression_type)
            else:
                col_type = meta.column(defn.column).type
            im = make_index_meta(defn, col_type)
        new_meta = meta.with_indexes(list(meta.indexes) + [im]).validate()

        def check(cur: TableMeta) -> None:
            if cur != meta:
                raise ConflictError(f"table {meta.name!r} changed concurrently; retry ADD INDEX")

        commit_parts(self.path, [], meta=new_meta, meta_check=check, expect_id=self.table_id)
        return True

    def drop_index(self, name: str, *, if_exists: bool = False) -> bool:
        """Remove an index: from the metadata (one commit; queries stop using
        it at once), then its files from the parts, part by part (each part
        rewritten by hard links and published on its own, so steady inserts
        and merges never starve it: a part merged away meanwhile is skipped,
        its merge result was built without the index)."""
        try:
            return self._drop_index(name, if_exists)
        finally:
            _commit.cleanup(self.path)   # our own pin kept the old parts until now

    def _drop_index(self, name: str, if_exists: bool) -> bool:
        while True:
            meta = self._current().meta
            if not any(i.name == name for i in meta.indexes):
                if if_exists:
                    return False
                raise SkipidxError(f"table {meta.name!r} has no index {name!r}")
            new_meta = meta.with_indexes([i for i in meta.indexes if i.name != name])

            def check(cur: TableMeta, meta=meta) -> None:
                if cur != meta:
                    raise ConflictError("metadata changed")

            try:
                commit_parts(self.path, [], meta=new_meta, meta_check=check, expect_id=self.table_id)
                break
            except ConflictError:
                continue   # another ALTER committed between: decide again on its metadata
        fname = index_file_name(name)
        with self.snapshot() as snap:
            for p in snap.parts:
                if fname not in p.manifest["files"]:
                    continue
                staged = self._rewrite_part(p, snap.meta, drop=fname)
                try:
                    commit_parts(self.path, [staged], retire=[p.name], meta_check=_index_absent(name),
                                 expect_id=self.table_id)
                except ConflictError:
                    staged.discard()   # merged meanwhile, or the name was added again
                except BaseException:
                    staged.discard()
                    raise
        return True

    def materialize_index(self, name: str) -> int:
        """Build index `name` for every part that lacks it; each rebuilt part
        is published atomically on its own. Returns the parts rebuilt."""
        try:
            return self._materialize_index(name)
        finally:
            _commit.cleanup(self.path)   # our own pin kept the old parts until now

    def _materialize_index(self, name: str) -> int:
        done = 0
        for _ in range(100):
            with self.snapshot() as snap:
                im = snap.meta.index(name)
                todo = [p for p in snap.parts if not p.has_index(name)]
                if not todo:
                    return done
                progress = False
                for p, staged in self._rewrite_parts(todo, snap.meta, im):
                    try:
                        commit_parts(self.path, [staged], retire=[p.name],
                                     meta_check=_index_unchanged(name, im), expect_id=self.table_id)
                    except ConflictError:
                        staged.discard()   # merged or redefined meanwhile: look again
                        continue
                    except BaseException:
                        staged.discard()
                        raise
                    done += 1
                    progress = True
                if not progress:
                    continue
        return done

    def _rewrite_parts(self, todo: list[Part], meta: TableMeta, im: Any) -> Iterator[tuple[Part, StagedPart]]:
        """(part, its staged rewrite with index `im`) in `todo` order; parts are built on
        up to the process's cores at once (as ClickHouse runs a mutation's parts), each
        published by the caller as soon as it and those before it are built."""
        from concurrent.futures import ThreadPoolExecutor

        from skipidx.core.threads import resolve_threads

        workers = min(resolve_threads(None), len(todo))
        if workers <= 1:
            for p in todo:
                yield p, self._rewrite_part(p, meta, add=im)
            return
        # the cores are shared by the parts built at once: each build gets its share of
        # threads (more only adds work: slices to merge, thread starts)
        share = max(1, resolve_threads(None) // workers)
        with ThreadPoolExecutor(workers) as ex:
            futs = [ex.submit(self._rewrite_part, p, meta, add=im, build_threads=share) for p in todo]
            given = 0
            try:
                for p, f in zip(todo, futs):
                    staged = f.result()
                    given += 1
                    yield p, staged
            except BaseException:
                # the parts not handed out yet are discarded (the caller owns those it got)
                for f in futs[given:]:
                    if not f.cancel():
                        try:
                            f.result().discard()
                        except BaseException:  # noqa: BLE001 -- its own failure: nothing staged
                            pass
                raise

    def _rewrite_part(self, p: Part, meta: TableMeta, *, drop: str | None = None,
                      add: Any = None, build_threads: int | None = None) -> StagedPart:
        """A new staged part sharing `p`'s files by hard links (with their
        checksums from `p`'s manifest, so damage is never laundered into a
        fresh checksum), minus index file `drop`, plus index `add` built by
        streaming the part's column in chunks of whole index granules (on `build_threads`
        threads; None: the index type's default)."""
        man = p.manifest
        level = int(man.get("level", 0))
        name = new_part_name(level)
        staged = _commit.stage_dir(self.path, name)
        writer = None
        try:
            reuse = {DATA_FILE: os.path.join(p.path, DATA_FILE)}
            keep = []
            for im in meta.indexes:
                e = man["indexes"].get(im.name)
                if add is not None and im.name == add.name:
                    continue
                if e is not None and e["fingerprint"] == im.fingerprint() and e["file"] != drop:
                    reuse[e["file"]] = os.path.join(p.path, e["file"])
                    keep.append(im)
            sums = {f: man["files"][f] for f in reuse}
            writer = PartWriter(staged.path, meta, name, level=level, indexes=keep + ([add] if add else []),
                                reuse=reuse, reuse_sums=sums, reuse_layout=(man["marks"], man["row_groups"]),
                                keyring=self.keyring, expected_rows=int(p.num_rows), build_threads=build_threads)
            if add is not None:
                G = meta.index_granularity
                step = max(1, _writer.INDEX_CHUNK_ROWS // writer.chunk_multiple()) * (writer.chunk_multiple() // G)
                for a in range(0, p.n_granules, step):
                    cols = list(add.definition.expression_columns) if add.definition.expression is not None \
                        else [add.definition.column]
                    writer.write(p.read(cols, [(a, min(a + step, p.n_granules))]))
            writer.finish()
        except BaseException:
            if writer is not None:
                writer.abort()
            staged.discard()
            raise
        staged.rows = p.num_rows
        return staged

    # ---- merges --------------------------------------------------------
    def optimize(self, final: bool = False, *, max_part_rows: int | None = None, threads: int | None = None) -> int:
        """Merge parts (OPTIMIZE TABLE [FINAL]); returns the parts merged away.

        FINAL merges every part into one (and rewrites a single part whose
        indexes are not all materialized). Without FINAL, runs of small parts
        are merged into parts of at most max_part_rows rows. Rows are
        re-sorted, indexes rebuilt, and the sources retired atomically; a
        merge that races another merge of the same parts gives way
        (ConflictError is not raised: it merges nothing). `threads`: see
        :func:`skipidx.store.merge.merge_parts` (None: the cores).
        """
        from skipidx.store.merge import plan_merges, merge_parts

        from skipidx.store.merge import _MergeLock

        # the merge lock: a background merge of the same parts would make
        # this one give way (OPTIMIZE FINAL must leave one part)
        with _MergeLock(self.path, blocking=True), self.snapshot() as snap:
            limit = int(max_part_rows or snap.meta.max_part_rows)
            merged = 0
            for group in plan_merges(snap, final=final, max_rows=limit):
                try:
                    merge_parts(self.path, snap.meta, group, expect_id=self.table_id, threads=threads)
                except ConflictError:
                    continue
                merged += len(group)
        _commit.cleanup(self.path)   # our own pin kept the sources until now
        return merged

    def __repr__(self) -> str:
        return f"Table({self.path!r})"


def _prepare_and_build(table_dir: str, meta: TableMeta, chunk: pa.Table, keyring: KeyRing | None,
                       threads: int, plan: "_writer.EncodingPlan | None" = None, first: bool = False) -> StagedPart:
    """One insert chunk checked, cast, sorted and written as a staged part
    (`threads`: the writer's and index builds' threads; `plan`: the encodings the
    insert's `first` part chooses, for the others)."""
    try:
        prepared = sort_rows(meta, conform(meta, chunk, dictionary_passthrough_columns(meta)))
        del chunk
        return build_part(table_dir, meta, prepared, prepare=False, keyring=keyring, build_threads=threads,
                          threads=threads, plan=plan, plan_first=first)
    finally:
        if first and plan is not None:
            plan.release()   # a first part that failed before choosing leaves the others to choose


def _same_columns(meta: TableMeta):
    def check(cur: TableMeta) -> None:
        if cur.columns != meta.columns:
            raise ConflictError(f"table {meta.name!r} columns changed during the insert")
    return check


def _index_absent(name: str):
    def check(cur: TableMeta) -> None:
        if any(i.name == name for i in cur.indexes):
            raise ConflictError(f"index {name!r} was added again")
    return check


def _index_unchanged(name: str, im):
    def check(cur: TableMeta) -> None:
        if not any(i.name == name and i.fingerprint() == im.fingerprint() for i in cur.indexes):
            raise ConflictError(f"index {name!r} was dropped or redefined")
    return check
