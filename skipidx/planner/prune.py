"""Mark-range pruning: answer the RPN's atoms with the table's skip indexes.

For one query:

1. :func:`plan_indexes` asks every index of the table for a condition on
   every atom (the index checks the atom's subject and function itself), and
   decides up front whether the index can prune at all for this WHERE
   clause (:func:`skipidx.planner.rpn.can_prune`). An index that cannot —
   no usable atom, negation only, ORed with something nothing answers, or a
   pattern that yields no complete token — is never read.
2. :func:`prune` loads the useful indexes of every part (through the
   database's :class:`IndexCache`; a damaged index is reported and its atoms
   stay UNKNOWN for that part), computes each atom's BoolMask per *index*
   granule with numpy, spreads it onto *data* granules (an index of
   GRANULARITY g answers for g data granules), ANDs the answers of all
   indexes for the same atom, and evaluates the RPN over the granules of
   all parts together. Indexes are probed one after another, a bloom
   filter only on the granules the ones before it kept (sequential
   narrowing, exact: see :func:`_prune_parts`). The per-index EXPLAIN
   figures (the granules each index alone would keep) are evaluated with
   that index's answers only -- for a narrowed index when first read.
3. :func:`mark_ranges` turns the kept granules into contiguous ranges.
"""
from __future__ import annotations

import os
from dataclasses import field
from skipidx.core.dataclass_codes import dataclass
from typing import Any, Callable, Iterable, NamedTuple

import numpy as np

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.indexes._common import stored_definitions
from skipidx.indexes.base import BoolMask, IndexCondition, IndexType, get_index_type
from skipidx.planner.rpn import RPN, evaluate, polarity, useful_answers
from skipidx.planner.sources import GranuleSource
from skipidx.planner.stats import IndexStats

@dataclass
class IndexUse:
    """One index of the table, bound to this query's atoms."""

    name: str
    type_name: str
    granularity: int
    itype: IndexType | None
    conditions: dict[int, IndexCondition] = field(default_factory=dict)
    #: how to get a part's granules (None: the part's index file of this name)
    loader: Any = None
    zones_read: int = 0
    zones_saturated: int = 0
    useful: bool = False
    note: str | None = None
    stats: IndexStats | None = None
    #: what a derived index (one with a loader) is, for EXPLAIN (None: the ORDER BY key)
    label: str | None = None

    @property
    def is_primary_key(self) -> bool:
        return self.loader is not None and self.label is None

    @property
    def description(self) -> str:
        if self.label is not None:
            return self.label
        if self.loader is not None and self.itype is not None:
            return f"ORDER BY {self.itype.definition.column}: min/max of each granule (row-group statistics)"
        return f"{self.type_name} GRANULARITY {self.granularity}"


class LoadedIndex:
    """One part's granules of one index, checked against the part's granules.

    `data_to_index` maps every data granule to the index granule covering it
    (None when they are the same: GRANULARITY 1), computed and validated once
    when the granules are loaded, not on every query.
    """

    __slots__ = ("granules", "data_to_index", "zones", "saturated", "nbytes", "granule_bytes")

    def __init__(self, part: GranuleSource, granules: Any, nbytes: int) -> None:
        n = int(part.n_granules)
        idx = _data_to_index_granule(part.marks, granules.zone_start, granules.zone_length, int(part.num_rows))
        self.granules = granules
        self.data_to_index = None if len(granules) == n and idx.shape == (n,) and bool(
            np.array_equal(idx, np.arange(n))) else idx
        self.zones = len(granules)
        self.saturated = granules.saturated_count
        self.nbytes = int(nbytes)
        #: bytes of the loaded granules (``nbytes`` is the file's size, what the cache bound counts)
        self.granule_bytes = int(granules.nbytes)


class IndexCache:
    """Loaded index granules and bound index types, shared by the queries of one database.

    Parts are immutable and an index file is identified by its part's
    directory, the index name and the index definition's fingerprint, so a
    cached entry can never be stale; ALTER DROP/ADD of an index under the
    same name changes the fingerprint. The cache is bounded by bytes (the
    index files' sizes) with least-recently-used eviction, and safe to share
    between threads. Damaged files are never cached (every query re-reads and
    re-reports them); the file's checksums were verified by the load that
    filled the entry.
    """

    def __init__(self, max_bytes: int = 1 << 30) -> None:
        import threading
        from collections import OrderedDict

        self.max_bytes = int(max_bytes)
        self._granules: "OrderedDict[tuple, LoadedIndex]" = OrderedDict()
        #: concatenations over several parts (one per set of parts): each table
        #: change makes new ones and the old ones are never asked for again, so
        #: they are kept by count, apart from the files' entries
        self._combos: "OrderedDict[tuple, Any]" = OrderedDict()
        self._types: dict[tuple, IndexType] = {}
        #: per table directory, the newest generation whose parts the cache was trimmed
        #: to, with those parts' paths and the table's id
        self._gens: dict[str, tuple[int, frozenset, str]] = {}
        self._lock = threading.Lock()
        self.bytes = 0
        self.combo_bytes = 0
        self.hits = 0
        self.misses = 0

    def index_type(self, definition: Any, col_type: Any) -> IndexType:
        key = (definition, str(col_type))
        t = self._types.get(key)
        if t is None:
            # the definition is a table's stored one, validated when it was stored
            with stored_definitions():
                t = get_index_type(definition.type_name)(definition, col_type)
            self._types[key] = t
        return t

    def _get(self, key: tuple) -> LoadedIndex | None:
        with self._lock:
            hit = self._granules.get(key)
            if hit is not None:
                self._granules.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
            return hit

    def _put(self, key: tuple, li: LoadedIndex) -> None:
        if li.nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._granules.pop(key, None)
            if old is not None:
                self.bytes -= old.nbytes
            self._granules[key] = li
            self.bytes += li.nbytes
            while self.bytes > self.max_bytes and self._granules:
                _, ev = self._granules.popitem(last=False)
                self.bytes -= ev.nbytes

    def _get_combo(self, key: tuple) -> Any:
        with self._lock:
            hit = self._combos.get(key)
            if hit is None:
                return None
            self._combos.move_to_end(key)
            return hit[0]

    def _put_combo(self, key: tuple, value: Any, nbytes: int) -> None:
        if nbytes > self.max_bytes // 4:
            return
        with self._lock:
            old = self._combos.pop(key, None)
            if old is not None:
                self.combo_bytes -= old[1]
            self._combos[key] = (value, int(nbytes))
            self.combo_bytes += int(nbytes)
            while self._combos and (len(self._combos) > COMBOS_MAX or self.combo_bytes > self.max_bytes // 4):
                self.combo_bytes -= self._combos.popitem(last=False)[1][1]

    def retain_parts(self, table_dir: str, gen: int, part_paths: Iterable[str], table_id: str = "") -> None:
        """Forget the entries of `table_dir`'s parts that generation `gen` no longer lists
        (merged away or dropped), once per newer generation: parts never come back, so
        without this a table under steady inserts and merges would fill the cache with
        dead parts' indexes. A query still reading an older snapshot reloads what it needs.
        `table_id`: the table's incarnation (generations of a re-created table start again)."""
        with self._lock:
            last = self._gens.get(table_dir)
            if last is not None and last[2] != table_id:
                last = None   # another incarnation of the name: its old parts are all gone
            elif last is not None and last[0] >= gen:
                return
            live = frozenset(part_paths)
            self._gens[table_dir] = (gen, live, table_id)
            if last is not None:
                # an insert only adds parts: nothing to drop, nothing to scan
                gone = last[1] - live
                if not gone:
                    return
                drop = lambda p: p in gone   # noqa: E731
            else:
                prefix = os.path.join(table_dir, "")
                drop = lambda p: p.startswith(prefix) and p not in live   # noqa: E731
            for k in [k for k in self._granules if isinstance(k[0], str) and drop(k[0])]:
                self.bytes -= self._granules.pop(k).nbytes
            for k in [k for k in self._combos if any(drop(p) for p in k[2])]:
                self.combo_bytes -= self._combos.pop(k)[1]

    def loaded(self, part: GranuleSource, name: str, entry: dict | None = None) -> LoadedIndex:
        """The part's index `name` (its file), from the cache or loaded and checked.

        `entry`: the part's manifest entry of the index if the caller has it.
        CorruptionError for a damaged file (never cached)."""
        if entry is None:
            entry = part.index_entry(name)
        if entry is None:
            return LoadedIndex(part, part.load_index(name), 0)
        key = (part.path, name, entry.get("fingerprint"), entry.get("file"))
        li = self._get(key)
        if li is not None:
            return li
        g = part.load_index(name)
        try:
            size = os.path.getsize(os.path.join(part.path, entry["file"]))
        except (OSError, KeyError, TypeError):
            size = 1 << 20
        li = LoadedIndex(part, g, size)
        self._put(key, li)
        return li

    def loaded_derived(self, part: GranuleSource, name: str, loader: Any) -> LoadedIndex:
        """Granules computed from the part itself (e.g. the key's row-group statistics), cached."""
        key = (part.path, name, "derived")
        li = self._get(key)
        if li is not None:
            return li
        g = loader(part)
        li = LoadedIndex(part, g, 64 * max(len(g), 1))
        self._put(key, li)
        return li

    def load(self, part: GranuleSource, name: str) -> Any:
        """The part's granules of index `name` (see :meth:`loaded`)."""
        return self.loaded(part, name).granules

    def load_derived(self, part: GranuleSource, name: str, loader: Any) -> Any:
        return self.loaded_derived(part, name, loader).granules

    def clear(self) -> None:
        with self._lock:
            self._granules.clear()
            self._combos.clear()
            self._types.clear()
            self._gens.clear()
            self.bytes = 0
            self.combo_bytes = 0


@dataclass
class PartSelection:
    """The granules of one part that the scan must read."""

    part: GranuleSource
    kept: np.ndarray                       # bool per data granule
    ranges: list[tuple[int, int]]          # [start, end) granule ranges


def plan_indexes(rpn: RPN, table_meta: Any, cache: IndexCache | None = None,
                 derived: Callable[[RPN, Any, list[IndexUse]], list[IndexUse]] | None = None) -> list[IndexUse]:
    """Bind each index of the table to the RPN's atoms and decide whether to read it.

    An index is read iff one of its answers can matter
    (:func:`skipidx.planner.rpn.useful_answers`, over the capabilities of all
    indexes together, so ``hasToken(msg, 'x') OR trace_id = 'y'`` reads both
    the token and the trace_id index).
    """
    uses: list[IndexUse] = []
    pol = polarity(rpn)
    reasons: dict[str, list[str]] = {}
    for im in table_meta.indexes:
        d = im.definition
        use = IndexUse(d.name, d.type_name, d.granularity, None)
        use.stats = IndexStats(name=d.name, type=d.type_name, description=use.description)
        uses.append(use)
        reasons[d.name] = []
        try:
            col_type = table_meta.column(d.column).type.arrow_type
            use.itype = (cache.index_type(d, col_type) if cache is not None
                         else get_index_type(d.type_name)(d, col_type))
        except SkipidxError as e:
            use.note = f"index unusable: {e}"
            continue
        for i, atom in enumerate(rpn.atoms):
            cond = use.itype.condition(atom)
            if cond is None:
                continue
            r = cond.reason
            if r and not cond.can_prune:
                reasons[d.name].append(f"{atom.text or atom.func}: {r}")
            use.conditions[i] = cond
            use.stats.conditions.append(cond.describe())
    uses.extend(_primary_key_uses(rpn, table_meta, uses, cache))
    if derived is not None:
        # indexes the table's data gives for free (external tables: footers, Bloom filters, partitions)
        uses.extend(derived(rpn, cache, list(uses)))
    refute_any: dict[int, bool] = {}
    confirm_any: dict[int, bool] = {}
    caps: dict[str, tuple[dict[int, bool], dict[int, bool]]] = {}
    for use in uses:
        # refute: the answer may say "no row can be true" (what prunes a positive atom);
        # confirm: "every row is true" (IndexCondition.can_prove_true: minmax, set,
        # IS NULL), which is what lets an atom under NOT prune
        refute = {i: bool(c.can_prune) and not c.reason for i, c in use.conditions.items()}
        confirm = {i: bool(c.can_prove_true) and not c.reason for i, c in use.conditions.items()}
        caps[use.name] = (refute, confirm)
        for i, v in refute.items():
            refute_any[i] = refute_any.get(i, False) or v
        for i, v in confirm.items():
            confirm_any[i] = confirm_any.get(i, False) or v
    needed = useful_answers(rpn, refute_any, confirm_any)
    for use in uses:
        if use.itype is None:
            continue
        refute, confirm = caps[use.name]
        use.useful = any(("refute" in needed.get(i, ()) and refute[i]) or ("confirm" in needed.get(i, ()) and confirm[i])
                         for i in use.conditions)
        if use.useful:
            continue
        if not use.conditions:
            use.note = "no usable atom"
        elif reasons.get(use.name):
            use.note = "; ".join(reasons[use.name])
        elif not any(refute.values()) and not any(confirm.values()):
            use.note = "cannot prune for these atoms"
        elif all(pol.get(i) == {False} for i in use.conditions if refute[i]) and not any(confirm.values()):
            use.note = "negation only"
        else:
            use.note = "its atoms are ORed with conditions no index answers"
    # a primary-key pseudo index that cannot help is not worth a line
    return [u for u in uses if u.loader is None or u.useful]


#: Types whose Parquet row-group statistics are exact min/max (Arrow writes
#: them untruncated, or not at all); floats are left out because of NaN.
def _stats_type_ok(t: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
            or pa.types.is_string(t) or pa.types.is_boolean(t))


def _primary_key_uses(rpn: RPN, table_meta: Any, uses: list[IndexUse], cache: "IndexCache | None") -> list[IndexUse]:
    """The ORDER BY key as a minmax index per granule, from the data file's row-group statistics.

    Every granule is one Parquet row group whose footer already holds the
    min/max/NULL count of each column, so the sorting key prunes range
    conditions for free (ClickHouse's primary key), without an index file.
    Skipped for a key column that already has a minmax index of GRANULARITY 1.
    """
    from skipidx.indexes.base import IndexDef

    out: list[IndexUse] = []
    covered = {u.itype.definition.column for u in uses
               if u.itype is not None and u.type_name == "minmax" and u.granularity == 1
               and u.itype.definition.expr_func is None}
    for key in table_meta.order_by:
        if key in covered:
            continue
        col_type = table_meta.column(key).type.arrow_type
        if not _stats_type_ok(col_type):
            continue
        d = IndexDef(name="PrimaryKey" if len(table_meta.order_by) == 1 else f"PrimaryKey({key})",
                     column=key, expr_func=None, type_name="minmax")
        itype = cache.index_type(d, col_type) if cache is not None else get_index_type("minmax")(d, col_type)
        use = IndexUse(d.name, "primary key", 1, itype, loader=_key_stats_loader(key, col_type))
        use.stats = IndexStats(name=d.name, type="primary key", description=use.description)
        for i, atom in enumerate(rpn.atoms):
            cond = itype.condition(atom)
            if cond is not None:
                use.conditions[i] = cond
                use.stats.conditions.append(cond.describe())
        if use.conditions:
            out.append(use)
    return out


def _key_stats_loader(column: str, col_type: Any):
    def load(part: GranuleSource) -> Any:
        return key_granules_from_stats(part, column, col_type)
    return load


def key_granules_from_stats(part: GranuleSource, column: str, col_type: Any) -> Any:
    """MinMax granules of `column` from the part's Parquet footer (one row group per granule).

    CorruptionError when the footer lacks a usable statistic: the caller then
    treats the key's atoms as UNKNOWN for that part.
    """
    import pyarrow as pa

    from skipidx.indexes.minmax import MinMaxGranules

    marks = np.asarray(part.marks, dtype=np.int64)
    vt = col_type.value_type if pa.types.is_dictionary(col_type) else col_type
    # recorded with the part: the footer of a part the query does not read stays unparsed
    ks = part.key_statistics(column)
    if ks is not None:
        mins_, maxs_, nulls_ = ks
        try:
            amin, amax = pa.array(mins_, vt), pa.array(maxs_, vt)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            raise CorruptionError(f"unusable key statistics: {type(e).__name__}") from None
        return MinMaxGranules(marks[:-1].copy(), np.diff(marks), nulls_, np.zeros(marks.shape[0] - 1, dtype=np.int64),
                              amin, amax)
    # (a sensitive key column's statistics are encrypted: data_metadata makes its key
    # available first, as pyarrow aborts the process on them without it)
    try:
        md = part.data_metadata([column])
    except CorruptionError:
        raise
    except (OSError, pa.ArrowException, SkipidxError) as e:   # unreadable: the key's atoms stay UNKNOWN
        raise CorruptionError(f"no row-group statistics: {e}") from None
    n = marks.shape[0] - 1
    if md.num_row_groups != n:
        raise CorruptionError("row groups are not granules")
    ci = md.schema.to_arrow_schema().get_field_index(column)
    if ci < 0:
        raise CorruptionError(f"no column {column} in the data file")
    mins: list[Any] = []
    maxs: list[Any] = []
    nulls = np.zeros(n, dtype=np.int64)
    lengths = np.diff(marks)
    for g in range(n):
        st = md.row_group(g).column(ci).statistics
        if st is None:
            raise CorruptionError("missing row-group statistics")
        nulls[g] = st.null_count if st.has_null_count else 0
        if st.has_min_max:
            mins.append(st.min)
            maxs.append(st.max)
        elif nulls[g] == lengths[g]:
            mins.append(None)
            maxs.append(None)
        else:
            raise CorruptionError("row group without min/max statistics")
    try:
        amin, amax = pa.array(mins, vt), pa.array(maxs, vt)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise CorruptionError(f"unusable row-group statistics: {e}") from None
    return MinMaxGranules(marks[:-1].copy(), lengths, nulls, np.zeros(n, dtype=np.int64), amin, amax)


def _data_to_index_granule(marks: np.ndarray, zone_start: np.ndarray, zone_length: np.ndarray,
                           num_rows: int) -> np.ndarray:
    """For every data granule, the index granule covering it; CorruptionError if zones do not tile the part."""
    zs = np.asarray(zone_start, dtype=np.int64)
    zl = np.asarray(zone_length, dtype=np.int64)
    if zs.shape[0] == 0 or zs[0] != 0 or int(zs[-1] + zl[-1]) != num_rows or np.any(zs[1:] != zs[:-1] + zl[:-1]):
        raise CorruptionError("index zones do not cover the part's rows")
    marks = np.asarray(marks, dtype=np.int64)
    # every zone must begin on a granule boundary, or a zone would split a granule
    pos = np.searchsorted(marks, zs)
    if np.any(pos >= marks.shape[0]) or np.any(marks[np.minimum(pos, marks.shape[0] - 1)] != zs):
        raise CorruptionError("index zones do not start on granule boundaries")
    return np.searchsorted(zs, marks[:-1], side="right") - 1


def _load(part: GranuleSource, use: IndexUse, cache: IndexCache | None) -> LoadedIndex | None:
    """Index `use`'s granules of `part`, loaded and checked, or None when the index cannot
    answer for this part (not materialized, or damaged: never trusted -- its atoms
    stay UNKNOWN there and the scan keeps the answer exact); the reason goes to
    the index's note."""
    try:
        if use.loader is not None:
            li = (cache.loaded_derived(part, use.name, use.loader) if cache is not None
                  else LoadedIndex(part, use.loader(part), 0))
        else:
            entry = part.index_entry(use.name)
            if entry is None:
                _note(use, f"not materialized in part {part.name}")
                return None
            li = (cache.loaded(part, use.name, entry) if cache is not None
                  else LoadedIndex(part, part.load_index(use.name), 0))
    except CorruptionError as e:
        _note(use, f"damaged index ignored in part {part.name}: {e.message}")
        return None
    use.zones_read += li.zones
    use.zones_saturated += li.saturated
    return li


#: Indexes whose filters over all parts take at most this many bytes are
#: also kept concatenated (one bank over every granule of the snapshot), so a
#: point lookup checks all parts in one kernel call instead of one per part.
#: The copy is made once per set of parts, so the bound also bounds what a
#: query pays after each table change; larger (text) indexes are checked part
#: by part, where the kernel work dwarfs the per-part overhead.
COMBINE_MAX_BYTES = 32 << 20
#: A part whose filters take at least this many bytes is concatenated only with
#: other such parts (see :func:`_combined_granules`).
COMBINE_BIG_BYTES = 256 << 10
#: Concatenations kept by an IndexCache (each also counts towards a quarter of its bytes).
COMBOS_MAX = 64


class _Combined:
    """One index's granules of several parts concatenated (an IndexCache entry)."""

    __slots__ = ("granules", "zones", "saturated", "nbytes")

    def __init__(self, granules: Any, nbytes: int) -> None:
        self.granules = granules
        self.zones = len(granules)
        self.saturated = granules.saturated_count
        self.nbytes = int(nbytes)


def _concat_sbbf(gs: list[Any]) -> Any | None:
    """The SBBF granules of several parts as one (granule order kept), or None if they differ in kind."""
    from skipidx.indexes.bloom import SBBFGranules
    from skipidx.indexes.summary import GroupSummary
    from skipidx.core.sbbf import SBBFBank

    first = gs[0]
    if not all(type(g) is SBBFGranules for g in gs) or any(
            (g.type_name, g.params, g.tokenizer, g.tokenizer_version)
            != (first.type_name, first.params, first.tokenizer, first.tokenizer_version) for g in gs):
        return None
    base = np.zeros(len(gs), dtype=np.int64)
    np.cumsum([g.words.shape[0] // 8 for g in gs[:-1]], out=base[1:])
    bank = SBBFBank(np.concatenate([g.words for g in gs]),
                    np.concatenate([np.asarray(g.block_offset, dtype=np.int64) + b for g, b in zip(gs, base)]),
                    np.concatenate([np.asarray(g.num_blocks, dtype=np.int64) for g in gs]))
    ndv = None if any(g.ndv is None for g in gs) else np.concatenate([g.ndv for g in gs])
    out = SBBFGranules(first.type_name, first.params, first.tokenizer, first.tokenizer_version,
                       np.concatenate([g.zone_start for g in gs]), np.concatenate([g.zone_length for g in gs]),
                       np.concatenate([g.null_count for g in gs]), bank, ndv,
                       np.concatenate([g.fill_ratio for g in gs]), np.concatenate([g.fpp_estimate for g in gs]))
    # the parts' group summaries, shifted to the concatenated zones (a part without: checked flat)
    z0 = np.zeros(len(gs), dtype=np.int64)
    np.cumsum([len(g) for g in gs[:-1]], out=z0[1:])
    out.summary = GroupSummary.concat([(int(z), g.summary) for z, g in zip(z0, gs)], len(out))
    return out


def _combined_granules(parts: list[GranuleSource], ns: np.ndarray, offsets: np.ndarray, use: IndexUse,
                       cache: IndexCache | None) -> list["_Segment"] | None:
    """Index `use`'s granules of all `parts` as few segments, or None: then the caller
    loads it part by part (and reports what is missing or damaged).

    Only when every part holds the index undamaged at GRANULARITY 1 and the
    filters of all parts are small (:data:`COMBINE_MAX_BYTES`). Runs of
    adjacent parts are concatenated into one bank each (cached under the parts'
    own keys, so a new snapshot with other parts builds another one), big parts
    (filters of at least :data:`COMBINE_BIG_BYTES`) only with big ones: an
    insert then copies the small parts' filters again, not the whole table's
    (the big parts stay until a merge replaces one), and a query still checks
    a few banks, not one per part. Every part's index file was loaded and
    verified through the cache first.
    """
    if cache is not None and use.loader is not None and use.conditions:
        return _combined_derived(parts, ns, offsets, use, cache)
    if cache is None or use.loader is not None or not use.conditions:
        return None
    live = [j for j in range(len(parts)) if ns[j] > 0]
    if len(live) < 2 or COMBINE_MAX_BYTES <= 0:   # (0 or less: part by part)
        return None
    loaded: list[tuple[int, LoadedIndex, tuple]] = []
    total = 0
    for j in live:
        p = parts[j]
        e = p.index_entry(use.name)
        if e is None:
            return None
        try:
            li = cache.loaded(p, use.name, e)
        except CorruptionError:
            return None
        if li.data_to_index is not None:
            return None
        loaded.append((j, li, (p.path, e.get("fingerprint"), e.get("file"))))
        total += li.granule_bytes
        if total > COMBINE_MAX_BYTES:
            # large (text-sized) filters: part by part, where the kernel work dwarfs the
            # per-part overhead, and without copies
            return None
    segs: list[_Segment] = []
    run: list[tuple[int, LoadedIndex, tuple]] = []

    def flush() -> None:
        if len(run) > 1:
            key = ("run", use.name, tuple(k[0] for _, _, k in run), tuple(k[1:] for _, _, k in run))
            g = cache._get_combo(key)
            if g is None:
                g = _concat_sbbf([li.granules for _, li, _ in run])
                if g is not None and len(g) == sum(li.zones for _, li, _ in run):
                    cache._put_combo(key, g, sum(li.granule_bytes for _, li, _ in run))
                else:
                    g = None
            if g is not None:
                segs.append(_Segment(int(offsets[run[0][0]]), int(offsets[run[-1][0] + 1]), g, None,
                                     tuple(j for j, _, _ in run)))
                run.clear()
                return
        for j, li, _ in run:
            segs.append(_Segment(int(offsets[j]), int(offsets[j + 1]), li.granules, None, (j,)))
        run.clear()

    big = None
    for item in loaded:
        b = item[1].granule_bytes >= COMBINE_BIG_BYTES
        if b is not big:
            flush()
            big = b
        run.append(item)
    flush()
    for _, li, _ in loaded:
        use.zones_read += li.zones
        use.zones_saturated += li.saturated
    return segs


def _concat_minmax(gs: list[Any]) -> Any | None:
    """MinMax granules of several parts as one (granule order kept), or None if their types differ."""
    import pyarrow as pa

    from skipidx.indexes.minmax import MinMaxGranules

    if not all(type(g) is MinMaxGranules for g in gs) or len({str(g.min.type) for g in gs}) != 1:
        return None
    return MinMaxGranules(np.concatenate([g.zone_start for g in gs]), np.concatenate([g.zone_length for g in gs]),
                          np.concatenate([g.null_count for g in gs]), np.concatenate([g.nan_count for g in gs]),
                          pa.concat_arrays([g.min for g in gs]), pa.concat_arrays([g.max for g in gs]), gs[0].params)


def _combined_derived(parts: list[GranuleSource], ns: np.ndarray, offsets: np.ndarray, use: IndexUse,
                      cache: IndexCache) -> list["_Segment"] | None:
    """A derived index's granules (computed from each part itself: the ORDER BY key's
    row-group statistics, an external file's footer statistics or Bloom filters) of
    all `parts` as one segment, so many parts cost one check instead of one per part;
    cached under the parts' keys (an external file's path carries its identity). None:
    the caller goes part by part (and reports the parts that cannot answer)."""
    live = [j for j in range(len(parts)) if ns[j] > 0]
    if len(live) < 2:
        return None
    key = ("derived", use.name, tuple(parts[j].path for j in live))
    comb = cache._get_combo(key)
    if comb is None:
        gs = []
        for j in live:
            try:
                li = cache.loaded_derived(parts[j], use.name, use.loader)
            except CorruptionError:
                return None
            if li.data_to_index is not None:
                return None
            gs.append(li.granules)
        from skipidx.indexes.bloom import SBBFGranules

        g = _concat_sbbf(gs) if all(type(x) is SBBFGranules for x in gs) else _concat_minmax(gs)
        if g is None or len(g) != int(ns.sum()):
            return None
        comb = _Combined(g, sum(x.nbytes for x in gs))
        cache._put_combo(key, comb, comb.nbytes)
    use.zones_read += comb.zones
    use.zones_saturated += comb.saturated
    return [_Segment(0, int(offsets[-1]), comb.granules, None, tuple(live))]


class _Segment(NamedTuple):
    """A stretch [start, end) of the query's granule axis that one index answers from `granules`."""

    start: int
    end: int
    granules: Any
    data_to_index: np.ndarray | None    # None: index granule i is data granule i
    parts: tuple[int, ...]             # the parts it covers (indexes into the part list)


class _Source:
    """One useful index and where its answers come from, along the granule axis of all
    parts concatenated: one segment for a concatenated bank, else one per part that
    holds the index undamaged. Parts without a segment stay UNKNOWN for its atoms."""

    __slots__ = ("use", "segments", "answered", "narrowable")

    def __init__(self, use: IndexUse, segments: list[_Segment], answered: np.ndarray) -> None:
        from skipidx.indexes.bloom import SBBFGranules

        self.use = use
        self.segments = segments
        self.answered = answered          # bool per part
        #: probing fewer granules saves work: bloom filters (a memory-bound probe per
        #: granule and value); whole-array checks (minmax, set) cost the same either way
        self.narrowable = bool(segments) and all(isinstance(s.granules, SBBFGranules) for s in segments)

    def rank(self) -> tuple[int, float]:
        """Probe order: whole-array checks first (cheap), then bloom filters by the estimated
        share of granules without a match they let through (most selective first: fewer
        granules left for the rest). For a required token set, any of groups g, that is
        about sum over g of fpp ** len(g) with the filters' mean fpp: a 4-gram pattern
        passes fewer filters than one token at the same fpp. Any order is exact."""
        if not self.narrowable:
            return (0, 0.0)
        n = sum(len(s.granules) for s in self.segments)
        fpp = sum(s.granules.mean_fpp * len(s.granules) for s in self.segments) / max(n, 1)
        best = None
        for c in self.use.conditions.values():
            req = c.requirement
            if req is not None and not req.negated and req.any_of:
                est = min(1.0, sum(fpp ** len(g) for g in req.any_of))
                best = est if best is None else min(best, est)
        return (1, fpp if best is None else best)


def _sources(parts: list[GranuleSource], ns: np.ndarray, offsets: np.ndarray, useful: list[IndexUse],
             cache: IndexCache | None) -> list[_Source]:
    """Load every useful index (small ones concatenated over all parts); the ones that answer somewhere."""
    out: list[_Source] = []
    live = tuple(j for j in range(len(parts)) if ns[j] > 0)
    for use in useful:
        answered = np.zeros(len(parts), dtype=bool)
        segs: list[_Segment] = []
        comb = _combined_granules(parts, ns, offsets, use, cache) if parts else None
        if comb is not None:
            segs.extend(comb)
            answered[list(live)] = True
        else:
            for j in live:
                li = _load(parts[j], use, cache)
                if li is not None:
                    segs.append(_Segment(int(offsets[j]), int(offsets[j + 1]), li.granules, li.data_to_index, (j,)))
                    answered[j] = True
        if segs:
            out.append(_Source(use, segs, answered))
    return out


def _probe(conditions: dict[int, IndexCondition], segments: list[_Segment], answered: np.ndarray,
           sel: np.ndarray | None, total: int,
           damaged: Callable[[_Segment, str], None] | None = None,
           groups: list[int] | None = None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """An index's answer to each of its atoms (`conditions`) on every granule of the axis.

    `sel` (sorted granule ids, or None for all): only those granules are
    probed; every other granule gets UNKNOWN (1, 1), which the RPN reads as
    "no information" (see :func:`skipidx.planner.rpn.evaluate` on why that
    can never drop a granule the full answers keep). An index granule
    covering several data granules (GRANULARITY g) is probed once and its
    answer spread onto each of them. A segment whose answer does not fit
    (a damaged index) goes back to UNKNOWN, its parts to not `answered`, and
    `damaged(segment, reason)` is told. `groups` ([passing, probed]) adds up the group
    summaries the checks went through.
    """
    if groups is None:
        groups = [0, 0]
    whole = sel is None and len(segments) == 1 and segments[0].data_to_index is None \
        and (segments[0].start, segments[0].end) == (0, total)
    if whole:
        # one bank over the whole axis, probed everywhere: its answers are the arrays
        seg = segments[0]
        try:
            out = {}
            for i, cond in conditions.items():
                m, gp, gt = cond.mask_counted(seg.granules)
                groups[0] += gp
                groups[1] += gt
                t = np.asarray(m.can_be_true, dtype=bool)
                f = np.asarray(m.can_be_false, dtype=bool)
                if t.shape != (total,) or f.shape != (total,):
                    raise CorruptionError(f"answer of {len(t)} granules for an index of {total}")
                out[i] = (t, f)
            return out
        except CorruptionError as e:
            answered[list(seg.parts)] = False
            if damaged is not None:
                damaged(seg, e.message)
            return {i: (np.ones(total, dtype=bool), np.ones(total, dtype=bool)) for i in conditions}
    out = {i: (np.ones(total, dtype=bool), np.ones(total, dtype=bool)) for i in conditions}
    for seg in segments:
        s0, s1, g, idx = seg.start, seg.end, seg.granules, seg.data_to_index
        if sel is None:
            local = None
            zones = None
        else:
            a, b = np.searchsorted(sel, (s0, s1))
            if a == b:
                continue
            local = sel[a:b] - s0
            zones = local if idx is None else np.unique(idx[local])
        nz = len(g) if zones is None else int(zones.shape[0])
        # where the zones' answers go: data granule -> position in the answer
        if idx is None:
            pos = None
        elif local is None:
            pos = idx
        else:
            pos = np.searchsorted(zones, idx[local])
        target = slice(s0, s1) if local is None else local + s0
        try:
            for i, cond in conditions.items():
                m, gp, gt = cond.mask_counted(g, zones)
                groups[0] += gp
                groups[1] += gt
                t = np.asarray(m.can_be_true, dtype=bool)
                f = np.asarray(m.can_be_false, dtype=bool)
                if t.shape != (nz,) or f.shape != (nz,):
                    raise CorruptionError(f"answer of {len(t)} granules for an index of {nz}")
                if pos is not None:
                    t, f = t[pos], f[pos]
                out[i][0][target] = t
                out[i][1][target] = f
        except CorruptionError as e:
            # never trusted: the whole segment back to UNKNOWN, its parts unanswered
            for t_, f_ in out.values():
                t_[s0:s1] = True
                f_[s0:s1] = True
            answered[list(seg.parts)] = False
            if damaged is not None:
                damaged(seg, e.message)
    return out


#: A later index is probed only on the granules the indexes before it kept if
#: these are at most this share of all granules; above it, narrowing saves
#: little and probing them all gives that index's own figure at once.
NARROW_MAX_SHARE = 0.5


class _Alone:
    """Granules one index alone keeps, per part; computed on first use when the index was
    probed only on the granules earlier indexes kept (the figures stay exact).

    It holds the index's conditions and loaded granules until then, but neither
    the IndexUse nor its stats: no reference cycle through the stats that owe
    the figure (those would linger until the cyclic collector ran)."""

    __slots__ = ("_value", "_args")

    def __init__(self, value: np.ndarray | None = None, args: tuple | None = None) -> None:
        self._value = value
        self._args = args

    def get(self) -> np.ndarray:
        if self._value is None:
            conditions, segments, answered, rpn, total, offsets, ns = self._args
            ans = _probe(conditions, segments, answered, None, total)
            k = evaluate(rpn, total, {i: BoolMask(t, f) for i, (t, f) in ans.items()})
            self._value = np.where(answered, _per_part_counts(k.can_be_true, offsets), ns)
            self._args = None     # drop the references to the loaded granules
        return self._value

    @property
    def ready(self) -> bool:
        return self._value is not None


@dataclass
class _Pruned:
    """The pruning of a list of parts, as arrays over all their granules (parts concatenated)."""

    kept: np.ndarray                  # bool per granule of all parts
    offsets: np.ndarray               # int64, part j's granules are [offsets[j], offsets[j+1])
    alone: dict[str, _Alone]          # per index that answered some part: granules it alone keeps, per part
    answered: dict[str, np.ndarray]   # per such index: bool per part


def _prune_parts(parts: list[GranuleSource], rpn: RPN, uses: list[IndexUse], cache: IndexCache | None) -> _Pruned:
    """Answer the atoms with one index after another, each on the granules still kept.

    The combined answer of an atom on a granule is the AND of every index's
    answer (an index that did not answer for a part leaves it UNKNOWN), and
    the RPN is evaluated over the granules of all parts at once (one pass of
    numpy operations per RPN item, not one per part).

    Sequential narrowing, as ClickHouse applies skip indexes one after
    another on the mark ranges left: the indexes are probed cheapest and
    most selective first (:meth:`_Source.rank`), and a bloom-filter index
    only on the granules the ones before it kept (when they are few,
    :data:`NARROW_MAX_SHARE`). Its other granules get UNKNOWN, which keeps
    the result exact: the evaluation is granule by granule and monotone
    (:func:`skipidx.planner.rpn.evaluate`), so a granule the earlier
    indexes' answers already exclude stays excluded whatever the later ones
    say, and on the granules still kept every index's answer is its real
    one. An id lookup with two indexes on its column probes the second on
    ~40 instead of 1221 granules.

    The per-index figures (the RPN with that index's answers only) stay
    exact too: for a narrowed index they are computed when first read
    (:class:`_Alone`, resolved through :meth:`IndexStats.defer`).
    """
    ns = np.fromiter((int(p.n_granules) for p in parts), dtype=np.int64, count=len(parts))
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(ns, out=offsets[1:])
    total = int(offsets[-1])
    useful = [u for u in uses if u.useful]
    srcs = sorted(_sources(parts, ns, offsets, useful, cache), key=_Source.rank)
    combined: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    kept: np.ndarray | None = None
    alone: dict[str, _Alone] = {}
    for src in srcs:
        sel = None
        if kept is not None and src.narrowable and np.count_nonzero(kept) <= NARROW_MAX_SHARE * total:
            sel = np.flatnonzero(kept)
        groups = [0, 0]
        ans = _probe(src.use.conditions, src.segments, src.answered, sel, total,
                     lambda seg, why, use=src.use: _note(
                         use, f"damaged index ignored in part {', '.join(parts[j].name for j in seg.parts)}: {why}"),
                     groups)
        if src.use.stats is not None:
            src.use.stats.groups_selected += groups[0]
            src.use.stats.groups_total += groups[1]
        for i, (t, f) in ans.items():
            c = combined.get(i)
            combined[i] = (t, f) if c is None else (c[0] & t, c[1] & f)
        first = kept is None
        kept = evaluate(rpn, total, {i: BoolMask(t, f) for i, (t, f) in combined.items()}).can_be_true
        name = src.use.name
        if sel is not None:
            alone[name] = _Alone(args=(src.use.conditions, src.segments, src.answered, rpn, total, offsets, ns))
            continue
        # the first index's answers are the combined ones so far
        k = kept if first else evaluate(rpn, total, {i: BoolMask(t, f) for i, (t, f) in ans.items()}).can_be_true
        alone[name] = _Alone(np.where(src.answered, _per_part_counts(k, offsets), ns))
    if kept is None:
        # the RPN may prune on constants even with no index answer (WHERE 0)
        kept = evaluate(rpn, total, {}).can_be_true
    return _Pruned(kept, offsets, alone, {s.use.name: s.answered for s in srcs})


def _per_part_counts(kept: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Kept granules per part, through the kept positions (cheaper than a cumsum
    over the bool array; bench/NOTES.md)."""
    c = np.searchsorted(np.flatnonzero(kept), offsets)
    return c[1:] - c[:-1]      # not np.diff: a Python-level function, dearer at this size


def prune_part(part: GranuleSource, rpn: RPN, uses: list[IndexUse],
               cache: IndexCache | None = None) -> tuple[np.ndarray, dict[str, int]]:
    """Kept data granules of `part` (bool array) and, per index that answered, how many it alone keeps."""
    r = _prune_parts([part], rpn, uses, cache)
    return r.kept.copy(), {name: int(a.get()[0]) for name, a in r.alone.items() if r.answered[name][0]}


def _note(use: IndexUse, text: str) -> None:
    if use.note is None:
        use.note = text
    elif text not in use.note:
        use.note = f"{use.note}; {text}"


def mark_ranges(kept: np.ndarray) -> list[tuple[int, int]]:
    """Contiguous runs of kept granules as [start, end) pairs."""
    if kept.size == 0:
        return []
    k = np.concatenate(([False], kept.astype(bool), [False]))
    edges = np.flatnonzero(k[1:] != k[:-1])
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist()))


def _alone_figures(a: _Alone):
    def figures() -> tuple[int, int]:
        alone = a.get()
        return int(alone.sum()), int(np.count_nonzero(alone > 0))
    return figures


def prune(parts: Iterable[GranuleSource], rpn: RPN, uses: list[IndexUse], stats,
          cache: IndexCache | None = None) -> list[PartSelection]:
    """Prune every part; fill the part/granule/index figures of `stats`; return the parts to scan."""
    parts = list(parts)
    for use in uses:
        use.stats.note = None
    r = _prune_parts(parts, rpn, uses, cache)
    ns = r.offsets[1:] - r.offsets[:-1]
    total = int(r.offsets[-1])
    live_parts = int(np.count_nonzero(ns))
    stats.parts_total += len(parts)
    stats.granules_total += total
    stats.rows_total += sum(int(p.num_rows) for p in parts)
    for use in uses:
        s = use.stats
        s.granules_before += total
        s.parts_before += len(parts)
        if use.name in r.answered and bool(r.answered[use.name].any()):
            s.used = True
        a = r.alone.get(use.name)
        if a is None:           # not read: it alone keeps every granule
            s.granules_after += total
            s.parts_after += live_parts
            continue
        if not a.ready:
            s.defer(_alone_figures(a))     # a narrowed index: its own figure when read
            continue
        alone = a.get()
        s.granules_after += int(alone.sum())
        s.parts_after += int(np.count_nonzero(alone > 0))
    out: list[PartSelection] = []
    counts = _per_part_counts(r.kept, r.offsets)
    for j in np.flatnonzero(counts).tolist():
        kept = r.kept[int(r.offsets[j]):int(r.offsets[j + 1])].copy()
        ranges = mark_ranges(kept)
        stats.parts_selected += 1
        stats.granules_selected += int(counts[j])
        stats.ranges += len(ranges)
        out.append(PartSelection(parts[j], kept, ranges))
    for use in uses:
        if use.zones_saturated:
            # a saturated filter answers "maybe" for its zone: say how many there were
            _note(use, f"filter saturated in {use.zones_saturated}/{use.zones_read} index granules")
        use.stats.note = use.note
    stats.indexes = [u.stats for u in uses]
    return out
