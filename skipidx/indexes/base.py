"""The index-type interface: granule, aggregator, condition (ClickHouse's
``MergeTreeIndices.h`` split), plus the registry and the atom/mask types the
planner speaks.

* :class:`IndexGranules` — what an index keeps for every index granule of one
  part, columnar (one row per index granule, the Lance zone schema on disk:
  ``part, zone_start, zone_length, has_null, filter`` + type-specific columns;
  schema metadata holds the type, params, tokenizer version, fpp, items per
  zone). Serialized with a format version.
* :class:`IndexAggregator` — builds IndexGranules from a whole part's values
  (the evaluated index expression, already sorted) and the zone bounds, in
  whole-array steps.
* :class:`IndexCondition` — answers one :class:`Atom` for all index granules
  of a part at once (numpy arrays), and describes itself for EXPLAIN.

"Keep" is the default everywhere: an index that cannot answer an atom returns
no condition (the planner treats the atom as UNKNOWN = maybe), and a NULL,
unknown type or damaged/saturated filter answers "maybe", never "no".
"""
from __future__ import annotations

import abc
from dataclasses import field
from skipidx.core.dataclass_codes import dataclass
from typing import Any, Callable, ClassVar, NamedTuple

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError


@dataclass(frozen=True)
class IndexDef:
    """An index as declared: ``INDEX name expr TYPE type(args) GRANULARITY n``."""

    name: str
    column: str                    # the column the expression reads
    expr_func: str | None          # None for `col`, "lower" for `lower(col)`
    type_name: str                 # minmax, set, bloom_filter, tokenbf_v1, ngrambf_v1, sbbf
    args: tuple = ()               # positional constant args, as written
    kwargs: tuple = ()             # (key, value) pairs (sbbf's key = value args)
    granularity: int = 1           # data granules per index granule
    #: ClickHouse's tuple form ``INDEX i (s, lower(s)) TYPE ...`` is one index per
    #: element: the first is named `i`, the others `i__1`, `i__2`, ...; each
    #: records the group (name `i` and the tuple as written). None otherwise.
    group: tuple | None = None     # (group name, element position, tuple SQL)
    #: an index on any other deterministic expression (``toStartOfHour(ts)``, ``id * 2``):
    #: its SQL text (then `column` is that same text, a virtual column), the
    #: expression's ClickHouse type and the table columns it reads. None otherwise.
    expression: str | None = None
    expression_type: str | None = None
    expression_columns: tuple = ()

    @property
    def expr_sql(self) -> str:
        return f"{self.expr_func}({self.column})" if self.expr_func else self.column


@dataclass(frozen=True)
class Atom:
    """One leaf of the WHERE clause, as the planner hands it to indexes.

    ``func`` is a canonical ClickHouse function name: equals, notEquals, less,
    lessOrEquals, greater, greaterOrEquals, in, notIn, isNull, isNotNull,
    like, notLike, hasToken, hasTokenOrNull, hasTokenCaseInsensitive,
    startsWith, endsWith, multiSearchAny, match, has, hasAnyTokens,
    hasAllTokens. Its subject is ``expr_func(column)`` (expr_func None or
    "lower"); ``args`` are the constants after the subject, already cast to
    the subject's type (strings as bytes; IN/multiSearchAny lists as tuples;
    None for NULL).
    """

    func: str
    column: str
    expr_func: str | None
    args: tuple
    text: str = ""                 # the atom as written, for EXPLAIN


class BoolMask(NamedTuple):
    """Per-granule (can_be_true, can_be_false), as ClickHouse's BoolMask."""

    can_be_true: np.ndarray        # bool[n]
    can_be_false: np.ndarray       # bool[n]

    @staticmethod
    def unknown(n: int) -> "BoolMask":
        return BoolMask(np.ones(n, dtype=bool), np.ones(n, dtype=bool))


class IndexGranules(abc.ABC):
    """What one index keeps for all index granules of one part."""

    FORMAT_VERSION: ClassVar[int] = 1

    zone_start: np.ndarray         # int64 row offset of each index granule in the part
    zone_length: np.ndarray        # int64 rows in each index granule
    null_count: np.ndarray         # int64 NULL rows in each index granule
    has_null: np.ndarray           # bool

    #: Per index granule: a filter so full that it answers "maybe" unchecked (the bloom
    #: types set it); None for types whose granules always answer.
    saturated: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.zone_start.shape[0])

    @property
    def nbytes(self) -> int:
        """Memory the granules hold (the index cache's weight); an estimate of 64 bytes per
        granule unless the type knows better (filters, postings)."""
        return 64 * len(self)

    @property
    def saturated_count(self) -> int:
        """How many index granules are saturated."""
        return 0 if self.saturated is None else int(np.count_nonzero(self.saturated))

    @property
    def non_null(self) -> np.ndarray:
        """Per index granule: some row is not NULL (computed once; callers must not modify it)."""
        m = self.__dict__.get("_non_null")
        if m is None:
            m = self.__dict__["_non_null"] = (self.zone_length - self.null_count) > 0
        return m

    @property
    def summary_groups(self) -> int:
        """How many group summaries (filters over groups of granules) the granules carry."""
        return 0

    def summary_metadata(self) -> dict[bytes, bytes] | None:
        """Custom metadata of the record batch that stores these granules: their group
        summaries (None: the type has none). Granules built for a chunk of a part store
        their own; zones are relative to the batch."""
        return None

    def attach_summaries(self, pieces: list[tuple[int, int, dict | None]]) -> None:
        """Take the summaries stored in the index file, per record batch (first zone, zones,
        custom metadata); a type without summaries ignores them, and one that does not
        check out is dropped (never trusted)."""

    @abc.abstractmethod
    def to_arrow(self, part: str) -> pa.Table:
        """The Lance-zone table (one row per index granule) with schema metadata."""

    @classmethod
    @abc.abstractmethod
    def from_arrow(cls, table: pa.Table) -> "IndexGranules":
        """Inverse of to_arrow; raises CorruptionError/SkipidxError on a bad table or version."""


class IndexAggregator(abc.ABC):
    #: True for an aggregator that gathers a whole part (``add`` per chunk, ``finish`` once;
    #: the text index's dictionary) instead of building chunk by chunk.
    whole_part: ClassVar[bool] = False
    #: True for an aggregator whose ``build`` takes a ChunkedArray as it is (the store then
    #: hands it a streamed column's chunks instead of copying them into one array first).
    takes_chunked: ClassVar[bool] = False

    @abc.abstractmethod
    def build(self, values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray) -> IndexGranules:
        """Build all index granules of a part from its (sorted) expression values."""

    def set_summaries(self, build: bool) -> None:
        """Whether builds also make group summaries (types that have them: the SBBF ones);
        the store turns them off for parts too small to need them."""

    def use_merged(self, sources: list[IndexGranules], row_maps: list[np.ndarray]) -> None:
        """Take the merged parts' granules (and where each of their rows went) instead of
        tokenizing the merged values; only asked where :attr:`merges_granules`."""
        raise AssertionError(f"{type(self).__name__} does not merge granules")

    def use_merged_later(self, load: Callable[[], tuple[list[IndexGranules], list[np.ndarray]] | None]) -> None:
        """:meth:`use_merged` of what ``load()`` returns (None: the sources cannot be used,
        the merged rows are built from). Here at once; the text index loads on a thread
        beside the store's read of the rows."""
        got = load()
        if got is not None:
            self.use_merged(*got)

    @property
    def merges_granules(self) -> bool:
        """Whether this aggregator implements :meth:`use_merged` (text postings do)."""
        return type(self).use_merged is not IndexAggregator.use_merged


class IndexCondition(abc.ABC):
    """One atom, answered by one index for all its granules at once."""

    #: False when the atom can never prune alone (negation only): the planner
    #: still evaluates it for correctness of NOT, but does not read the index
    #: for it if nothing else needs it.
    can_prune: bool = True

    #: Set when the atom is recognized but this index cannot help with it
    #: (e.g. "pattern yields no complete token"): EXPLAIN prints it, and the
    #: condition answers maybe everywhere (with can_prune False).
    reason: str | None = None

    #: True when the condition can clear can_be_false (prove the atom true for
    #: every row of a granule, or -- for a negated atom -- refute its positive):
    #: then it prunes under an outer NOT. minmax/set conditions, IS [NOT] NULL,
    #: and negated token atoms (``x != v`` where no row can equal v) can.
    can_prove_true: bool = False

    #: What a token index needs in a granule for the atom to hold there (the
    #: tokenizer's TokenRequirement; None for other indexes): the pruner orders
    #: its probes by it.
    requirement: Any = None

    #: True when :meth:`exact_rows` gives exactly the rows where the atom holds (a text
    #: index's postings), so a count() or a WHERE can be answered without reading data.
    exact: bool = False

    def __init__(self, atom: Atom) -> None:
        self.atom = atom

    @abc.abstractmethod
    def mask(self, granules: IndexGranules) -> BoolMask:
        """(can_be_true, can_be_false) per index granule."""

    def mask_at(self, granules: IndexGranules, zones: np.ndarray) -> BoolMask:
        """The answers of :meth:`mask` for the index granules `zones` only (sorted int64 ids).

        The pruner asks this for the granules earlier indexes kept. The
        default answers every granule and picks; types whose probes cost
        (bloom filters) answer only the asked ones."""
        m = self.mask(granules)
        return BoolMask(np.asarray(m.can_be_true, dtype=bool)[zones], np.asarray(m.can_be_false, dtype=bool)[zones])

    def mask_counted(self, granules: IndexGranules, zones: np.ndarray | None = None) -> tuple[BoolMask, int, int]:
        """:meth:`mask` (or :meth:`mask_at` the sorted ids `zones`) and how many group
        summaries passed / were probed on the way (0, 0 for a check without them)."""
        return (self.mask(granules) if zones is None else self.mask_at(granules, zones)), 0, 0

    @abc.abstractmethod
    def describe(self) -> str:
        """Short text for EXPLAIN, e.g. ``hasToken(msg, 'x') -> tokens {x}``."""

    def exact_rows(self, granules: IndexGranules) -> np.ndarray | None:
        """The rows (sorted int64 offsets in the part) where the atom holds, when
        :attr:`exact`; None when this condition cannot say."""
        return None


class IndexType(abc.ABC):
    """An index type, registered by name; instances are bound to one IndexDef."""

    name: ClassVar[str]
    version: ClassVar[int] = 1
    #: the constructor takes ``stored_params`` (the params the table recorded at CREATE)
    accepts_stored_params: ClassVar[bool] = False

    def __init__(self, definition: IndexDef, column_type: pa.DataType) -> None:
        self.definition = definition
        self.column_type = column_type

    @classmethod
    @abc.abstractmethod
    def validate(cls, definition: IndexDef, column_type: pa.DataType) -> dict[str, Any]:
        """Check parameters at CREATE time; return the normalized params (JSON-able).
        Raises SkipidxError naming the index and the bad parameter."""

    @abc.abstractmethod
    def aggregator(self, threads: int | None = None) -> IndexAggregator:
        """A builder of this index's granules; `threads`: how many threads one build
        may use (None: the index type's default; only passed when set)."""

    @abc.abstractmethod
    def condition(self, atom: Atom) -> IndexCondition | None:
        """A condition for this atom, or None when this index cannot answer it."""

    @abc.abstractmethod
    def granules_from_arrow(self, table: pa.Table) -> IndexGranules: ...


INDEX_TYPES: dict[str, type[IndexType]] = {}


def register_index_type(cls: type[IndexType]) -> type[IndexType]:
    INDEX_TYPES[cls.name] = cls
    return cls


def get_index_type(name: str) -> type[IndexType]:
    """The index type registered as `name` (the built-ins register when the package is imported)."""
    if name not in INDEX_TYPES:
        from skipidx.core.hints import did_you_mean

        raise SkipidxError(f"unknown index type {name!r}{did_you_mean(name, INDEX_TYPES)}; "
                           f"known: {', '.join(sorted(INDEX_TYPES))}")
    return INDEX_TYPES[name]


#: Index types that index an Array column's elements (as ClickHouse's bloom_filter,
#: tokenbf_v1, ngrambf_v1 and set do): the type sees the element type, the
#: aggregator the flattened elements with each granule's rows mapped to its elements.
ELEMENT_INDEX_TYPES = frozenset({"bloom_filter", "tokenbf_v1", "ngrambf_v1", "set", "sbbf"})


def is_array_type(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def indexed_type(definition: IndexDef, column_type: pa.DataType) -> pa.DataType:
    """The type an index type sees: an Array column's element type for element indexes."""
    if not is_array_type(column_type):
        return column_type
    if definition.type_name not in ELEMENT_INDEX_TYPES:
        raise SkipidxError(f"index {definition.name!r}: {definition.type_name} does not index Array columns "
                           f"(the element indexes are {', '.join(sorted(ELEMENT_INDEX_TYPES))})")
    return column_type.value_type


class ElementAggregator(IndexAggregator):
    """An aggregator over an Array column's elements: granule i covers the elements of its rows."""

    def __init__(self, inner: IndexAggregator) -> None:
        self.inner = inner

    def set_summaries(self, build: bool) -> None:
        self.inner.set_summaries(build)

    def build(self, values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray) -> IndexGranules:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        offsets = np.asarray(values.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        offsets = offsets - offsets[0]
        zs = np.asarray(zone_start, dtype=np.int64)
        starts = offsets[zs]
        lengths = offsets[zs + np.asarray(zone_length, dtype=np.int64)] - starts
        g = self.inner.build(values.flatten(), starts, lengths)
        # The granules are kept by row (the zones the planner maps to marks are the rows').
        # An Array is never NULL, so no row is: NULL elements are not NULL rows.
        g.zone_start = np.asarray(zone_start, dtype=np.int64)
        g.zone_length = np.asarray(zone_length, dtype=np.int64)
        g.null_count = np.zeros(len(g.zone_start), dtype=np.int64)
        g.has_null = np.zeros(len(g.zone_start), dtype=bool)
        g.__dict__.pop("_non_null", None)
        return g


def index_from_meta(definition: IndexDef, column_type: pa.DataType, stored_params: dict | None = None) -> IndexType:
    """The index instance for an index a table recorded.

    ``stored_params`` are the params written at CREATE time; a type that sets
    ``accepts_stored_params`` uses them to keep the rules the table was created
    with (e.g. sbbf's sizing rule for tables older than ``size_rule``).
    """
    cls = get_index_type(definition.type_name)
    t = indexed_type(definition, column_type)
    if stored_params is not None and cls.accepts_stored_params:
        inst = cls(definition, t, stored_params=stored_params)
    else:
        inst = cls(definition, t)
    if t is not column_type:
        make = inst.aggregator
        inst.aggregator = lambda *a, **kw: ElementAggregator(make(*a, **kw))  # type: ignore[method-assign]
    return inst
