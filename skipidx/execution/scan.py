"""Scan the selected mark ranges of each part and apply the exact WHERE.

Only the kept granules are read (``Part.read(columns, mark_ranges)``), and
only the columns the query needs. The WHERE clause is evaluated exactly on
what was read (:mod:`skipidx.expr.evaluate`), so false positives of the
indexes never reach the answer. Chunks are yielded one at a time, so a
caller that has enough rows (LIMIT without ORDER BY or aggregation) stops
reading the rest.
"""
from __future__ import annotations

import os
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.core.threads import available_cores
from skipidx.core.arrays import from_numpy, scalar, to_numpy
from skipidx.expr.evaluate import where_mask
from skipidx.expr.bound import BExpr
from skipidx.expr.visitors import columns_of
from skipidx.planner.prune import PartSelection


def split_ranges(ranges: Sequence[tuple[int, int]], max_granules: int | None) -> Iterator[list[tuple[int, int]]]:
    """Ranges grouped so that one read covers at most `max_granules` granules (None: all at once)."""
    if max_granules is None:
        if ranges:
            yield ranges
        return
    cur: list[tuple[int, int]] = []
    size = 0
    for s, e in ranges:
        while s < e:
            take = min(e - s, max_granules - size)
            cur.append((s, s + take))
            size += take
            s += take
            if size >= max_granules:
                yield cur
                cur, size = [], 0
    if cur:
        yield cur


def rows_in_ranges(part: Any, ranges: list[tuple[int, int]]) -> int:
    marks = np.asarray(part.marks, dtype=np.int64)
    return int(sum(int(marks[e] - marks[s]) for s, e in ranges))


def zero_column_table(n: int) -> pa.Table:
    """A table with no columns and `n` rows (what ``count()`` needs)."""
    return pa.table({"__n": pa.nulls(n)}).drop_columns(["__n"])


def _decode_dictionaries(t: pa.Table) -> pa.Table:
    """`t` with every dictionary column decoded (the scan's callers see declared types)."""
    for i, typ in enumerate(t.schema.types):
        if pa.types.is_dictionary(typ):
            t = t.set_column(i, t.schema.field(i).with_type(typ.value_type),
                             t.column(i).cast(typ.value_type))
    return t


#: Read the WHERE's dictionary-encoded String columns as Arrow dictionaries, for reads of
#: at least ``part.dictionary_min_granules`` granules (False: always decoded; the tests
#: compare both).
DICTIONARY_READS = True


def _batch_rows(part: Any, batch: list[tuple[int, int]], rows: np.ndarray) -> np.ndarray:
    """The bool mask of the rows of `batch`'s granule ranges that are in `rows` (a bool
    mask of `part`'s rows, or its sorted row numbers)."""
    marks = part.marks
    if rows.dtype == np.bool_:
        return np.concatenate([rows[int(marks[s]):int(marks[e])] for s, e in batch])
    spans = [(int(marks[s]), int(marks[e])) for s, e in batch]
    out = np.zeros(sum(b - a for a, b in spans), dtype=np.bool_)
    off = 0
    for a, b in spans:
        i, j = np.searchsorted(rows, (a, b))
        out[rows[i:j] - a + off] = True
        off += b - a
    return out


def _batch_count(part: Any, batch: list[tuple[int, int]], rows: np.ndarray) -> int:
    """How many of `batch`'s rows are in `rows` (sorted part row numbers)."""
    marks = part.marks
    bounds = np.asarray([(int(marks[s]), int(marks[e])) for s, e in batch], dtype=np.int64)
    ij = np.searchsorted(rows, bounds)
    return int((ij[:, 1] - ij[:, 0]).sum())


def _read_filtered(part: Any, batch: list[tuple[int, int]], columns: list[str], where: BExpr | None,
                   keep: list[str], use_threads: bool | None = None,
                   prewhere: BExpr | None = None, known: np.ndarray | None = None) -> tuple[pa.Table, int, int]:
    """Read one batch of ranges, apply the exact WHERE, keep only `keep`; (rows, rows read).

    `known` (the part's rows where the WHERE is true, from exact postings): the columns
    are read as always, but the WHERE is not evaluated per row; this mask filters them.

    The String columns the WHERE reads are read as Arrow dictionaries where
    the part wrote them dictionary-encoded: the filter then runs on the
    distinct values (:func:`skipidx.expr.evaluate.evaluate`), and a
    column that is also kept is decoded after the filter, for the rows kept only.
    """
    if not columns:
        # (a file with deleted rows, ENGINE = Iceberg, counts the rows still live)
        n = part.live_rows(batch) if part.deleted_rows else rows_in_ranges(part, batch)
        mask = where_mask(where, zero_column_table(n))   # a WHERE of no column: rand() % 2 = 0
        return zero_column_table(n if mask is None else mask.true_count), n, 0
    as_dict = (_where_columns(where) if DICTIONARY_READS and part.dictionary_columns
               and sum(e - s for s, e in batch) >= part.dictionary_min_granules
               else ())
    kw: dict[str, Any] = {} if use_threads is None else {"use_threads": use_threads}
    if (known is not None and not keep and known.dtype != np.bool_
            and (prewhere is None or all(c in _where_columns(prewhere) for c in columns))):
        # count() over known rows (sorted row numbers): the columns are read as below, the
        # batch's count comes from the rows without a mask of the batch
        rows = part.string_pages(columns[0], batch, _page_rows) if len(columns) == 1 and part.string_pages else None
        if rows is not None:
            # a String column's pages decompressed and their values walked, no Arrow strings built
            return (zero_column_table(_batch_count(part, batch, known)), sum(sum(r) for r in rows),
                    _bytes(part, columns, sum(e - s for s, e in batch)))
        t = part.read(columns, batch, dictionary=as_dict, **kw) if as_dict else part.read(columns, batch, **kw)
        return (t.select([]).slice(0, _batch_count(part, batch, known)), t.num_rows,
                _bytes(part, columns, sum(e - s for s, e in batch)))
    if known is None and not keep and len(columns) == 1 and part.string_pages and (prewhere is None or prewhere is where):
        tree = page_predicate(where, columns[0])
        got = part.string_pages(columns[0], batch, _PageCount(tree)) if tree is not None else None
        if got is not None:
            # count() of a substring / token search over one String column: the search runs
            # over the decompressed PLAIN pages, no Arrow strings built
            return (zero_column_table(sum(c for r in got for c, _ in r)), sum(n for r in got for _, n in r),
                    _bytes(part, columns, sum(e - s for s, e in batch)))
    known = None if known is None else _batch_rows(part, batch, known)
    needles = required_substrings(where) if part.needle_column is not None and known is None else None
    if needles and part.needle_column(needles) is not None:
        # a reader that skips the pages lacking a substring every passing row holds (external
        # Parquet files): only candidate rows come back, the exact WHERE still decides
        t = part.read(columns, batch, dictionary=as_dict, needles=needles, **kw)
        n = rows_in_ranges(part, batch)
        mask = where_mask(where, t)
        if keep != list(t.column_names):
            t = t.select(keep)
        if mask is not None:
            if t.num_columns:
                t = t.filter(mask)
            else:
                t = t.slice(0, mask.true_count if isinstance(mask, pa.Array) else int(pc.sum(mask).as_py() or 0))
        if as_dict:
            t = _decode_dictionaries(t)
        return t, n, _bytes(part, columns, sum(e - s for s, e in batch))
    if prewhere is not None:
        first_cols = _where_columns(prewhere)
        if any(c not in first_cols for c in columns):
            return _read_prewhere(part, batch, columns, where, prewhere, keep, as_dict, kw, known)
    t = part.read(columns, batch, dictionary=as_dict, **kw) if as_dict else part.read(columns, batch, **kw)
    read = t.num_rows
    nbytes = _bytes(part, columns, sum(e - s for s, e in batch))
    mask = where_mask(where, t) if known is None else from_numpy(known, pa.bool_())
    if keep != list(t.column_names):
        t = t.select(keep)   # (no columns: the row count stays)
    if mask is not None:
        if t.num_columns:
            t = t.filter(mask)
        else:
            # count(): the rows that pass (mask has no NULLs: where_mask filled them)
            n = mask.true_count if isinstance(mask, pa.Array) else int(pc.sum(mask).as_py() or 0)
            t = t.slice(0, n)
    if as_dict:
        t = _decode_dictionaries(t)
    return t, read, nbytes


#: bound WHERE -> its required substrings (the same bound tree serves every job of a query)
_NEEDLES: dict = {}
#: bound WHERE -> its page predicate (as _NEEDLES)
_PAGE_PREDICATES: dict = {}


def page_predicate(where: BExpr | None, column: str) -> tuple | None:
    """`where` as a tree that :class:`_PageCount` evaluates over a String column's PLAIN
    pages, or None: ANDs and ORs of ``hasToken(column, 't')``, ``hasAnyTokens`` /
    ``hasAllTokens(column, tokens)`` (an OR / AND of hasToken) and ``column LIKE '%s%'``
    (no other wildcard), every leaf on `column`. A NULL row makes every leaf NULL, so it
    never counts. Leaves: ("token" | "sub", needle); nodes: ("and" | "or", [children])."""
    if where is None:
        return None
    key = (id(where), column)
    hit = _PAGE_PREDICATES.get(key)
    if hit is not None and hit[0] is where:
        return hit[1]
    from skipidx.expr.bound import BCall, BColumn, BConst
    from skipidx.expr.kernels.strings import _like_substring, check_token_needle, token_needles

    def walk(e: BExpr) -> tuple | None:
        if not isinstance(e, BCall):
            return None
        if e.func in ("and", "or") and len(e.args) >= 2:
            kids = [walk(x) for x in e.args]
            return None if any(k is None for k in kids) else (e.func, kids)
        if e.func in ("hasAnyTokens", "hasAllTokens") and len(e.args) == 2:
            a, b = e.args
            if not (isinstance(a, BColumn) and a.name == column and isinstance(b, BConst)
                    and (pa.types.is_string(a.type) or pa.types.is_binary(a.type))):
                return None
            try:
                toks = token_needles(b.value, e.func == "hasAllTokens")
            except (SkipidxError, ValueError, TypeError):
                return None      # (the per-row evaluation reports it)
            # (no needle that is one token: 0 on every row, left to the per-row evaluation)
            return None if toks is None else ("and" if e.func == "hasAllTokens" else "or",
                                              [("token", t) for t in toks])
        if e.func not in ("hasToken", "like") or len(e.args) != 2:
            return None
        a, b = e.args
        if not (isinstance(a, BColumn) and a.name == column and isinstance(b, BConst)
                and isinstance(b.value, (bytes, str)) and (pa.types.is_string(a.type) or pa.types.is_binary(a.type))):
            return None
        v = b.value.encode() if isinstance(b.value, str) else b.value
        try:
            if e.func == "hasToken":
                return ("token", check_token_needle(v))
            sub = _like_substring(v)
        except (SkipidxError, ValueError):
            return None      # (the per-row evaluation reports it)
        return None if sub is None else ("sub", sub)

    tree = walk(where)
    if len(_PAGE_PREDICATES) > 256:
        _PAGE_PREDICATES.clear()
    _PAGE_PREDICATES[key] = (where, tree)
    return tree


def _page_rows(page: Any) -> int:
    page.bounds()       # the values walked: they must fill the page
    return page.rows


class _PageCount:
    """Per page: (rows passing `tree`, rows); each leaf's searcher keeps its anchors
    from page to page. The masks cover the non-NULL values only (a NULL row never passes)."""

    def __init__(self, tree: tuple) -> None:
        from skipidx.expr.kernels._search import PageSearch

        def build(t: tuple) -> tuple:
            kind, arg = t
            if kind in ("token", "sub"):
                return ("leaf", PageSearch(arg, kind == "token", gap=4))
            return (kind, [build(k) for k in arg])

        self.tree = build(tree)

    def _mask(self, t: tuple, page: Any) -> np.ndarray:
        kind, arg = t
        if kind == "leaf":
            return arg.plain(page.data, page.start, page.values)
        out = self._mask(arg[0], page)
        for k in arg[1:]:
            out = (out & self._mask(k, page)) if kind == "and" else (out | self._mask(k, page))
        return out

    def __call__(self, page: Any) -> tuple[int, int]:
        return int(np.count_nonzero(self._mask(self.tree, page))), page.rows
_NEEDLE_FUNCS = ("hasToken", "like", "startsWith", "endsWith", "equals")


def required_substrings(where: BExpr | None) -> dict[str, list[bytes]]:
    """Byte strings that every row passing `where` holds in a String column: the
    conjuncts ``hasToken(c, 't')`` (t), ``c LIKE 'p'`` (each literal run of p),
    ``startsWith`` / ``endsWith`` / ``c = 's'`` (s). Under an AND only (OR and NOT
    give nothing); case-insensitive forms give nothing. {column: [needles]}."""
    if where is None:
        return {}
    key = id(where)
    hit = _NEEDLES.get(key)
    if hit is not None and hit[0] is where:
        return hit[1]
    from skipidx.core.text_patterns import ANY, ONE, like_scan
    from skipidx.expr.bound import BCall, BColumn, BConst
    from skipidx.expr.kernels.strings import check_token_needle

    out: dict[str, list[bytes]] = {}
    stack = [where]
    while stack:
        e = stack.pop()
        if not isinstance(e, BCall):
            continue
        if e.func == "and":
            stack.extend(e.args)
            continue
        if e.func not in _NEEDLE_FUNCS or len(e.args) != 2:
            continue
        a, b = e.args
        if e.func == "equals" and isinstance(a, BConst):
            a, b = b, a
        if not (isinstance(a, BColumn) and isinstance(b, BConst) and isinstance(b.value, (bytes, str))
                and (pa.types.is_string(a.type) or pa.types.is_binary(a.type))):
            continue
        v = b.value.encode() if isinstance(b.value, str) else b.value
        found: list[bytes] = []
        if e.func == "hasToken":
            try:
                found = [check_token_needle(v)]
            except Exception:
                found = []
        elif e.func == "like":
            try:
                items = like_scan(v, strict=True)
            except ValueError:
                items = []
            run = bytearray()
            for it in items + [ANY]:
                if it in (ANY, ONE):
                    if run:
                        found.append(bytes(run))
                    run = bytearray()
                else:
                    run.append(it)
        else:
            found = [v]
        found = [x for x in found if x]
        if found:
            out.setdefault(a.name, []).extend(found)
    if len(_NEEDLES) > 256:
        _NEEDLES.clear()
    _NEEDLES[key] = (where, out)
    return out


def _bytes(part: Any, columns: Sequence[str], granules: int) -> int:
    """Compressed bytes of `columns` over `granules` granules (the footer's mean per granule)."""
    if not columns or not granules:
        return 0
    try:
        return int(round(granules * part.granule_bytes(columns)))
    except AttributeError:      # a part without a Parquet footer to ask (external readers)
        return 0


def _granule_ranges(granules: np.ndarray) -> list[tuple[int, int]]:
    """Sorted granule numbers as [a, b) ranges of consecutive ones."""
    if granules.size == 0:
        return []
    cut = np.flatnonzero(np.diff(granules) != 1) + 1
    return [(int(g[0]), int(g[-1]) + 1) for g in np.split(granules, cut)]


def _read_prewhere(part: Any, batch: list[tuple[int, int]], columns: list[str], where: BExpr | None,
                   prewhere: BExpr, keep: list[str], as_dict: Any, kw: dict,
                   known: np.ndarray | None = None) -> tuple[pa.Table, int, int]:
    """ClickHouse's PREWHERE: read the columns `prewhere` needs over `batch`,
    evaluate it, then read the other columns only for the granules holding a
    passing row; `where` (if it is not `prewhere` itself: an explicit PREWHERE
    clause) is applied to the rows that passed. Same rows, same order as
    reading everything and filtering; (rows with `keep`, rows read, bytes read).
    `known`: the batch's rows where `prewhere` (the WHERE itself) is true, from postings."""
    pcols = _where_columns(prewhere)
    first = [c for c in columns if c in pcols]
    rest = [c for c in columns if c not in pcols]
    head_dict = tuple(c for c in as_dict if c in pcols) if as_dict else ()
    head = part.read(first, batch, dictionary=head_dict, **kw) if head_dict else part.read(first, batch, **kw)
    read = head.num_rows
    granules = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in batch])
    nbytes = _bytes(part, first, int(granules.size))
    mask = row_mask(prewhere, head) if known is None else known
    if mask is None:        # a constant-true PREWHERE: every granule
        mask = np.ones(read, dtype=bool)
    marks = np.asarray(part.marks, dtype=np.int64)
    sizes = marks[granules + 1] - marks[granules]
    ends = np.cumsum(sizes)
    passed = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
    hit = passed[ends] - passed[ends - sizes] > 0
    if hit.all():
        tail, tail_mask = part.read(rest, batch, **kw), mask
    else:
        ranges = _granule_ranges(granules[hit])
        tail = part.read(rest, ranges, **kw) if ranges else part.read(rest, [])
        tail_mask = mask[np.repeat(hit, sizes)]
    nbytes += _bytes(part, rest, int(hit.sum()))
    head = _filtered(head, mask)
    tail = _filtered(tail, tail_mask)
    cols = {n: (head.schema.field(n), head.column(n)) for n in first}
    cols.update({n: (tail.schema.field(n), tail.column(n)) for n in rest})
    t = pa.Table.from_arrays([cols[n][1] for n in columns], schema=pa.schema([cols[n][0] for n in columns]))
    if where is not None and where is not prewhere and t.num_rows:
        m = where_mask(where, t)
        if m is not None:
            t = t.filter(m)
    if keep != list(t.column_names):
        t = t.select(keep)
    if head_dict:
        t = _decode_dictionaries(t)
    return t, read, nbytes


def row_mask(where: BExpr | None, t: pa.Table) -> np.ndarray | None:
    """The exact filter's row mask as a numpy bool array (None: every row passes)."""
    m = where_mask(where, t)
    if m is None:
        return None
    if m.null_count:
        m = pc.fill_null(m, scalar(False, pa.bool_()))
    return np.asarray(to_numpy(m), dtype=bool)


def _filtered(t: pa.Table, mask: np.ndarray | None) -> pa.Table:
    return t if mask is None else t.filter(from_numpy(mask, pa.bool_()))


def read_filter_first(part: Any, batch: list[tuple[int, int]], where: BExpr, first: list[str], rest: list[str],
                      order: list[str]) -> pa.Table | None:
    """Rows of `batch` (granule ranges of `part`) passing `where`, reading the
    filter's columns `first`, then the columns `rest` only for the granules that
    hold a passing row (ClickHouse's PREWHERE): a granule the indexes could not
    rule out costs the filter's columns, not all of them. Same rows, same order
    as reading everything and filtering; columns in `order`; None: no row passes."""
    head = part.read(first, batch)
    mask = row_mask(where, head)
    if mask is None:
        return part.read(order, batch)
    if not mask.any():
        return None
    marks = np.asarray(part.marks, dtype=np.int64)
    granules = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in batch])
    sizes = marks[granules + 1] - marks[granules]
    ends = np.cumsum(sizes)
    passed = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
    hit = passed[ends] - passed[ends - sizes] > 0
    if hit.all():
        tail, tail_mask = part.read(rest, batch), mask
    else:
        kept = granules[hit]
        cut = np.flatnonzero(np.diff(kept) != 1) + 1   # consecutive kept granules -> [a, b) ranges
        ranges = [(int(g[0]), int(g[-1]) + 1) for g in np.split(kept, cut)]
        tail, tail_mask = part.read(rest, ranges), mask[np.repeat(hit, sizes)]
    head = _filtered(head, mask)
    tail = _filtered(tail, tail_mask)
    cols = {n: (head.schema.field(n), head.column(n)) for n in first}
    cols.update({n: (tail.schema.field(n), tail.column(n)) for n in rest})
    return pa.Table.from_arrays([cols[n][1] for n in order], schema=pa.schema([cols[n][0] for n in order]))


def _where_columns(where: BExpr | None) -> frozenset:
    return frozenset(columns_of(where)) if where is not None else frozenset()


#: Reads running at the same time by default (Parquet decoding and pyarrow.compute
#: release the GIL): the cores this process may use; a query's ``SETTINGS max_threads = n`` sets its own.
SCAN_THREADS = available_cores()
#: Granules per concurrent read job: a part's kept ranges are cut into jobs of
#: at most this many granules, so one big part is decoded by several threads
#: too (Arrow's own threads only split a read by column), while a job stays
#: large enough (~0.1-1 s of decoding for wide columns) to pay its hand-off.
SCAN_JOB_GRANULES = 16
#: A scan of at most this many granules in all runs in the calling thread:
#: decoding a granule costs about what handing a job to another thread does.
SCAN_INLINE_GRANULES = 2
#: A scan of at most this many compressed bytes (the kept granules of the
#: columns read, from the Parquet footer) runs in the calling thread too, in
#: one read per part (as ClickHouse reads small mark-range sets with one
#: stream: merge_tree_min_{rows,bytes}_for_concurrent_read): below it the
#: hand-offs cost more than a second core gives back.
SCAN_INLINE_BYTES = 2 << 20


def job_granules(selections: Sequence[PartSelection], threads: int | None = None) -> int:
    """Granules per scan job: the kept granules cut into a multiple of
    :data:`SCAN_THREADS` jobs of at most :data:`SCAN_JOB_GRANULES`, of equal
    size, so the threads finish together: 40 granules are 4 jobs of 10 (a
    critical path of 20 granules on 2 threads; 16-granule jobs 16 + 16 + 8
    left one of 24), 7 are 4 + 3."""
    n = threads or SCAN_THREADS
    total = sum(e - s for sel in selections for s, e in sel.ranges)
    if total <= 0:
        return SCAN_JOB_GRANULES
    jobs = n * -(-total // (n * SCAN_JOB_GRANULES))
    return max(1, -(-total // jobs))


def _small_scan(selections: Sequence[PartSelection], columns: Sequence[str]) -> bool:
    """Whether the kept granules are little enough work to read in this thread
    (:data:`SCAN_INLINE_GRANULES`, :data:`SCAN_INLINE_BYTES`)."""
    granules = [sum(e - s for s, e in sel.ranges) for sel in selections]
    if sum(granules) <= SCAN_INLINE_GRANULES:
        return True
    if not columns:
        return True   # nothing is read: the row counts come from the marks
    total = 0.0
    for sel, g in zip(selections, granules):
        if g:
            total += g * sel.part.granule_bytes(columns)
            if total > SCAN_INLINE_BYTES:
                return False
    return True


class ScanExecutor:
    """The threads that read kept granules concurrently, owned by whoever runs queries
    (each :class:`~skipidx.engine.Database` has one, closed with it).

    `max_threads` is the default of the queries it runs (None or 0: the cores this
    process may use, :data:`SCAN_THREADS`); a query's ``SETTINGS max_threads = n`` asks
    for its own. The pool starts on the first concurrent scan and grows when a query
    asks for more (starting threads costs more than a point query's whole read); a
    query never has more than its own thread count of jobs in flight, so a wider pool
    does not raise its concurrency. A forked child starts a pool of its own.
    """

    def __init__(self, max_threads: int | None = None) -> None:
        if max_threads is not None and (isinstance(max_threads, bool) or not isinstance(max_threads, int)
                                        or max_threads < 0):
            raise SkipidxError(f"max_threads must be an integer >= 0, got {max_threads!r}")
        self.max_threads = max_threads or None
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._size = 0
        self._pid = os.getpid()
        self._closed = False

    def threads(self, query_threads: int | None = None) -> int:
        """Concurrent reads of a query: its own max_threads, else this executor's, else the cores."""
        return max(1, int(query_threads or self.max_threads or SCAN_THREADS))

    def pool(self, threads: int) -> ThreadPoolExecutor:
        """A pool at least `threads` wide."""
        with self._lock:
            if self._closed:
                raise SkipidxError("the database is closed")
            if self._pid != os.getpid():
                # a forked child has none of the parent's threads
                self._pool, self._size, self._pid = None, 0, os.getpid()
            if self._pool is None or self._size < threads:
                old = self._pool
                self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="skipidx-scan")
                self._size = threads
                if old is not None:
                    old.shutdown(wait=False)   # its running jobs finish; new ones go to the new pool
            return self._pool

    @property
    def started(self) -> int:
        """Threads of the current pool (0: none started)."""
        return self._size if self._pool is not None and self._pid == os.getpid() else 0

    def close(self) -> None:
        """Stop the pool (running reads finish; nothing new starts)."""
        with self._lock:
            self._closed = True
            pool, self._pool, self._size = self._pool, None, 0
        if pool is not None and self._pid == os.getpid():
            pool.shutdown(wait=False, cancel_futures=True)


def scan(selections: list[PartSelection], columns: list[str], where: BExpr | None, stats,
         max_granules: int | None = None, keep: list[str] | None = None,
         prewhere: BExpr | None = None, threads: int | None = None,
         executor: ScanExecutor | None = None, known: Sequence[np.ndarray] | None = None) -> Iterator[pa.Table]:
    """Yield the rows of the kept granules that satisfy `where`, part by part in order.

    `columns` (read) must include every column `where` reads; `keep` (default:
    all of them) are the columns the caller needs afterwards, so a column
    read only for the filter is dropped before the rows are gathered
    (``SELECT count() ... WHERE msg LIKE ...`` never copies a string). With no
    columns at all (``SELECT count() FROM t`` without WHERE) nothing is read:
    each chunk is a zero-column table of the right length, taken from the marks.

    With `max_granules` (a LIMIT that may stop early) batches are read one by
    one in this thread. A small scan (at most :data:`SCAN_INLINE_GRANULES`
    granules, or :data:`SCAN_INLINE_BYTES` of compressed column data) is read
    in this thread too, one read per part. Otherwise the kept ranges are cut
    into equal jobs of at most :data:`SCAN_JOB_GRANULES` granules
    (:func:`job_granules`), read and filtered concurrently by `executor`'s
    pool, at most twice its thread count ahead of the consumer (bounded
    memory), and yielded in order; without an executor every read runs in
    this thread.

    `prewhere` (ClickHouse's PREWHERE; the planner passes the WHERE itself
    unless ``optimize_move_to_prewhere = 0``, or an explicit PREWHERE clause):
    its columns are read first and the other columns only for the granules
    holding a row that passes it (:func:`_read_prewhere`); `where` still
    decides the rows. `threads` (the query's max_threads; None or 0: the
    executor's, by default the machine's cores) bounds the concurrent reads.

    `known` (per selection, its part's rows where the WHERE is true, from exact postings:
    a bool mask of the part's rows or their sorted row numbers; `prewhere` must be None or the WHERE itself): the
    columns are read as always and filtered by these rows, the WHERE is not evaluated.
    """
    threads = executor.threads(threads) if executor is not None else 1
    keep = list(columns) if keep is None else list(keep)
    inline = max_granules is None and _small_scan(selections, columns)
    step = max_granules if max_granules is not None else None if inline else job_granules(selections, threads)
    jobs = [(sel.part, batch, None if known is None else known[i])
            for i, sel in enumerate(selections) for batch in split_ranges(sel.ranges, step)]

    def account(t: pa.Table, read: int, nbytes: int, t0: float) -> pa.Table:
        stats.rows_read += read
        stats.bytes_read += nbytes
        stats.rows_matched += t.num_rows
        stats.scan_ms += (time.perf_counter() - t0) * 1000
        return t

    # (a scan of at most SCAN_INLINE_GRANULES granules is `inline` already: _small_scan)
    if inline or max_granules is not None or len(jobs) <= 1 or threads == 1 or executor is None:
        for part, batch, k in jobs:
            t0 = time.perf_counter()
            t, read, nbytes = _read_filtered(part, batch, columns, where, keep, prewhere=prewhere, known=k)
            yield account(t, read, nbytes, t0)
        return
    pool = executor.pool(threads)
    pending: deque = deque()
    it = iter(jobs)
    try:
        for part, batch, k in it:
            # the jobs themselves run concurrently: no Arrow threads inside one
            pending.append(pool.submit(_read_filtered, part, batch, columns, where, keep, False, prewhere, k))
            if len(pending) >= 2 * threads:
                break
        while pending:
            t0 = time.perf_counter()
            t, read, nbytes = pending.popleft().result()
            nxt = next(it, None)
            if nxt is not None:
                pending.append(pool.submit(_read_filtered, nxt[0], nxt[1], columns, where, keep, False, prewhere,
                                           nxt[2]))
            yield account(t, read, nbytes, t0)
    finally:
        # a consumer that stops early (or an error) leaves no work behind; the
        # jobs already running finish on their own and their results are dropped
        for f in pending:
            f.cancel()
