"""The tokenizer plugin API (ClickHouse's ``ITokenizer``), and its registry.

A tokenizer is one small class with two sides:

* **index side** — ``hash_column(values, seed)``: every token of every value
  of a whole column (pyarrow array) as 64-bit hashes, with the row each came
  from, in whole-array work (compiled kernels / pyarrow.compute; never a
  Python loop per row). ``tokenize(values)`` gives the tokens themselves
  (for tests, the bench and ``advise``).
* **query side** — separate entry points for exact values
  (``value_tokens``), substrings with ``is_prefix``/``is_suffix``
  (``substring_tokens``) and LIKE patterns (``like_tokens``); and
  ``requirement(func, args)``, which turns a predicate on the indexed
  expression into a :class:`TokenRequirement` (ANY of ALL-sets of tokens a
  granule must hold), or ``None`` = "cannot help" (the index answers maybe).

Tokens are ``bytes``. A token's hash is ``xxh64(token bytes, seed)``; the
``value`` tokenizer's token is the Parquet PLAIN encoding of the value, so
with seed 0 its hashes are exactly the Parquet bloom-filter hashes.

A string tokenizer usually derives from :class:`TextTokenizer`, which
implements ``requirement`` for every predicate the engine knows (ClickHouse's
rules from ``MergeTreeIndexBloomFilterText``) on top of the three query-side
primitives; see ``tests/plugin_dist`` for a complete third-party plugin.

Plugins are discovered through the entry-point group ``skipidx.tokenizers``;
the built-ins (package ``skipidx_tokenizers``) register through the same group.
``refresh_tokenizers()`` rescans after a plugin is installed into a running
process.
"""
from __future__ import annotations

import abc
from dataclasses import field
from skipidx.core.dataclass_codes import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError

if TYPE_CHECKING:
    from skipidx.core._kernels.build import DistinctScratch

ENTRY_POINT_GROUP = "skipidx.tokenizers"


@dataclass(frozen=True)
class TokenRequirement:
    """What a granule must hold for a predicate to be possibly true.

    ``any_of`` is a disjunction of conjunctions: the predicate may be true in
    a granule iff, for at least one tuple, *all* its tokens may be in the
    granule's filter. An empty tuple inside ``any_of`` means "no constraint"
    (always maybe) — callers should prefer returning ``None`` then.
    ``negated`` marks `!=`, NOT IN, NOT LIKE: the same token sets, but the
    atom can never prune on its own (a filter cannot prove absence of others).
    """

    any_of: tuple[tuple[bytes, ...], ...]
    negated: bool = False


@dataclass(frozen=True)
class Tokens:
    """Tokens of a column: token k is ``data[offsets[k]:offsets[k+1]]`` from row ``rows[k]``."""

    rows: np.ndarray      # int64, non-decreasing
    offsets: np.ndarray   # int64, len = n_tokens + 1
    data: np.ndarray      # uint8

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def to_pylist(self) -> list[bytes]:
        buf = self.data.tobytes()
        o = self.offsets
        return [buf[o[i]:o[i + 1]] for i in range(len(self))]


class Tokenizer(abc.ABC):
    """Base class of every tokenizer plugin.

    Subclasses set ``name`` and ``version`` (stored with every index built by
    the tokenizer, so a change of semantics is detectable), validate their
    parameters in ``__init__`` (raise :class:`SkipidxError`), and implement the
    abstract methods.
    """

    name: ClassVar[str]
    version: ClassVar[str]

    def __init__(self, **params: Any) -> None:
        if params:
            raise SkipidxError(f"tokenizer {self.name!r} takes no parameters, got {sorted(params)}")

    @property
    def params(self) -> dict[str, Any]:
        """Normalized parameters (JSON-serializable), as stored in index metadata."""
        return {}

    # -- index side -------------------------------------------------------
    @abc.abstractmethod
    def tokenize(self, values: pa.Array) -> Tokens:
        """All tokens of all non-null values, with their row numbers."""

    def hash_column(self, values: pa.Array, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(rows int64, hashes uint64) of every token of every non-null value.

        The default tokenizes then hashes; built-ins override it with a fused
        kernel that never materializes the tokens.
        """
        from skipidx.core._kernels.xxh64 import xxh64_offsets

        toks = self.tokenize(values)
        return toks.rows, xxh64_offsets(toks.data, toks.offsets, np.uint64(seed))

    # -- fast path (optional) ---------------------------------------------
    # As ClickHouse's ITokenExtractor fills a bloom filter itself
    # (stringToBloomFilter), a tokenizer may fill the filters of a run of index
    # granules ("zones") in one compiled pass. Without these (the defaults) an
    # index is built from hash_column, with the same filters.

    def insert_zones(self, values: pa.Array, zone_end: np.ndarray, seed: int,
                     words: np.ndarray, block_offset: np.ndarray, num_blocks: np.ndarray) -> bool:
        """Insert ``xxh64(token, seed)`` of every token of `values` into its zone's filter; True if done.

        `values` is a plain (non-dictionary) array; zone z holds rows
        ``[zone_end[z - 1], zone_end[z])`` (zone 0 from row 0); filter z is
        blocks ``block_offset[z] .. block_offset[z] + num_blocks[z]`` of
        `words` (:class:`skipidx.core.sbbf.SBBFBank`'s layout; insert with
        ``skipidx.core._kernels.sbbf.insert_one`` and the spec's ``SALT``).
        False: no fast path for these values (the caller uses hash_column).
        """
        return False

    def distinct_zones(self, values: pa.Array, zone_end: np.ndarray, seed: int,
                       scratch: "DistinctScratch") -> np.ndarray | None:
        """The distinct ``xxh64(token, seed)`` of every zone (as :meth:`insert_zones`), into
        ``scratch.uniq`` (``scratch.reserve(slots)`` makes room; the set ``scratch.table``
        must come back all zero). Returns the offsets (int64, ``len(zone_end) + 1``:
        zone z's hashes are ``uniq[offsets[z]:offsets[z + 1]]``), or None: no fast path."""
        return None

    def tokens_repeat(self) -> bool:
        """True when a value's tokens repeat a lot within an index granule (short
        n-grams of text): a fixed-size filter then takes each granule's distinct
        hashes, found first, which is cheaper than inserting every token."""
        return False

    # -- query side -------------------------------------------------------
    @abc.abstractmethod
    def value_tokens(self, value: bytes) -> list[bytes]:
        """Tokens of an exact value (the constant of `=`, `hasToken`, `has`, an IN row)."""

    @abc.abstractmethod
    def substring_tokens(self, s: bytes, is_prefix: bool, is_suffix: bool) -> list[bytes]:
        """Tokens every value containing `s` must hold. `is_prefix`: s starts the value;
        `is_suffix`: s ends the value (both: s is the whole value)."""

    @abc.abstractmethod
    def like_tokens(self, pattern: bytes) -> list[bytes]:
        """Tokens every value matching the LIKE pattern must hold (may be empty)."""

    def requirement(self, func: str, args: tuple, value_type: pa.DataType | None = None,
                    *, expr: str | None = None) -> TokenRequirement | None:
        """The tokens a granule must hold for ``func(expr, *args)`` to be possibly true.

        ``func`` is a canonical ClickHouse function name (``equals``, ``in``,
        ``like``, ``hasToken``, ``startsWith``, ...); ``args`` are the
        constant arguments after the indexed expression (strings as bytes, an
        IN list as a tuple). ``expr`` is the index expression's function
        (``None`` for the bare column, ``"lower"`` for ``lower(col)``): a
        case-insensitive predicate can only be answered by a lowercased
        index. ``None`` means "cannot help".
        """
        return None


#: Canonical ClickHouse names of the predicates a tokenizer may be asked about,
#: with the spellings a caller may use instead.
FUNCTION_ALIASES: dict[str, str] = {
    "=": "equals", "==": "equals", "!=": "notEquals", "<>": "notEquals",
    "IN": "in", "NOT IN": "notIn", "not in": "notIn",
    "LIKE": "like", "NOT LIKE": "notLike", "not like": "notLike",
}

#: Predicates whose requirement is marked ``negated`` (they can never prune alone).
NEGATED_FUNCTIONS = frozenset({"notEquals", "notIn", "notLike"})


def canonical_function(func: str) -> str:
    """The canonical ClickHouse name of a predicate (``'!='`` -> ``'notEquals'``)."""
    return FUNCTION_ALIASES.get(func, func)


_SEPARATOR = bytes(c for c in range(128) if not chr(c).isalnum())


def split_by_non_alpha(value: bytes) -> list[bytes]:
    """ClickHouse's splitByNonAlpha of one value (query side; the index side is compiled).

    A separator is an ASCII byte that is not [0-9A-Za-z]; bytes >= 0x80 belong
    to tokens; tokens are the maximal non-empty runs of non-separators.
    """
    return value.translate(_SEP_TO_SPACE).split()


_SEP_TO_SPACE = bytes.maketrans(_SEPARATOR, b" " * len(_SEPARATOR))


def has_separator(value: bytes) -> bool:
    """True iff `value` holds a separator byte (ASCII, not a letter or digit)."""
    return any(b < 0x80 and not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122) for b in value)


def check_token_needle(needle: bytes) -> bytes:
    """A ``hasToken`` needle must be one token: raise as ClickHouse does otherwise."""
    if has_separator(needle):
        raise SkipidxError("Needle must not contain whitespace or separator characters")
    return needle


def _as_const_bytes(v: Any) -> bytes | None:
    if isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    return None


def _dedup(tokens: list[bytes]) -> tuple[bytes, ...]:
    return tuple(dict.fromkeys(tokens))


def _all_of(tokens: list[bytes], negated: bool = False) -> TokenRequirement | None:
    return TokenRequirement((_dedup(tokens),), negated) if tokens else None


def _any_of(alternatives: list[list[bytes]], negated: bool = False) -> TokenRequirement | None:
    # One alternative without tokens needs nothing: the disjunction cannot prune.
    if not alternatives or any(not alt for alt in alternatives):
        return None
    return TokenRequirement(tuple(dict.fromkeys(_dedup(a) for a in alternatives)), negated)


class TextTokenizer(Tokenizer):
    """Base for tokenizers of string values whose query side follows from three primitives.

    A subclass implements the index side plus ``value_tokens``,
    ``substring_tokens`` and ``like_tokens`` (and may refine
    ``needle_tokens``); :meth:`requirement` then answers every predicate the
    engine knows, with ClickHouse's rules (``MergeTreeIndexBloomFilterText``):

    =============================== ===========================================
    ``equals``/``notEquals``, ``has`` all ``value_tokens`` of the constant
    ``in``/``notIn``, ``hasAny``      ANY over the members' ``value_tokens``
                                      (a NULL member: cannot help)
    ``hasAll`` (arrays)               all ``value_tokens`` of all members
    ``hasToken[OrNull]``              ``needle_tokens`` of the needle
    ``hasTokenCaseInsensitive*``      the same of the ASCII-lowercased needle,
                                      only for a ``lower(col)`` index
    ``like``/``notLike``              ``like_tokens`` of the pattern
    ``startsWith``/``endsWith``       ``substring_tokens(s, prefix, suffix)``
    ``multiSearchAny``                ANY over ``substring_tokens`` of needles
    ``match``                         the regex's required literals
                                      (:func:`skipidx.core.text_patterns.regex_literals`)
    ``hasAnyTokens``/``hasAllTokens`` ANY/ALL over the needles' ``needle_tokens``
    =============================== ===========================================

    ``notEquals``/``notIn``/``notLike`` come back with ``negated=True``.
    Whenever one alternative would need no token, the answer is ``None``.
    """

    def needle_tokens(self, needle: bytes) -> list[bytes]:
        """Tokens every value holding `needle` as a whole splitByNonAlpha token must hold.

        The needle holds no separator. Default: its ``value_tokens`` (right for
        any tokenizer whose tokens of a value include those of each of its
        separator-delimited words — token and n-gram tokenizers are).
        """
        return self.value_tokens(needle)

    def requirement(self, func: str, args: tuple, value_type: pa.DataType | None = None,
                    *, expr: str | None = None) -> TokenRequirement | None:
        func = canonical_function(func)
        negated = func in NEGATED_FUNCTIONS
        if not args:
            return None
        arg = args[0]
        if func in ("equals", "notEquals", "has"):
            b = _as_const_bytes(arg)
            return None if b is None else _all_of(self.value_tokens(b), negated)
        if func in ("in", "notIn", "hasAny", "hasAll"):
            # IN: the value equals one member. hasAny(arr, [..]) / hasAll(arr, [..]) on an
            # Array(String) column: some / every listed value is an element.
            if not isinstance(arg, (tuple, list, frozenset, set)):
                return None
            alts = []
            for v in arg:
                b = _as_const_bytes(v)
                if b is None:  # NULL member (or a non-string): cannot help
                    return None
                alts.append(self.value_tokens(b))
            if func == "hasAll":
                return _all_of([t for alt in alts for t in alt])
            return _any_of(alts, negated)
        if func.startswith("hasToken"):
            b = _as_const_bytes(arg)
            if b is None:
                return None
            or_null = func.endswith("OrNull")
            if not or_null:
                check_token_needle(b)
            if func.startswith("hasTokenCaseInsensitive"):
                if expr != "lower":
                    return None  # tokens of the raw column keep their case
                b = b.lower()    # bytes.lower() folds ASCII only, as ClickHouse's lower
            if has_separator(b):
                # hasToken*OrNull with a separator in the needle is NULL on every row:
                # never true, so any requirement is sound; use the value's tokens.
                return _all_of(self.value_tokens(b))
            return _all_of(self.needle_tokens(b))
        if func in ("like", "notLike"):
            b = _as_const_bytes(arg)
            return None if b is None else _all_of(self.like_tokens(b), negated)
        if func in ("startsWith", "endsWith"):
            b = _as_const_bytes(arg)
            if b is None:
                return None
            return _all_of(self.substring_tokens(b, func == "startsWith", func == "endsWith"))
        if func == "multiSearchAny":
            if not isinstance(arg, (tuple, list)):
                return None
            alts = []
            for v in arg:
                b = _as_const_bytes(v)
                if b is None:
                    return None
                alts.append(self.substring_tokens(b, False, False))
            return _any_of(alts)
        if func == "match":
            from skipidx.core.text_patterns import regex_literals

            b = _as_const_bytes(arg)
            req = None if b is None else regex_literals(b)
            if req is None:
                return None
            alts = []
            for conj in req:
                toks: list[bytes] = []
                for lit in conj:
                    toks.extend(self.substring_tokens(lit.text, lit.at_start, lit.at_end))
                alts.append(toks)
            return _any_of(alts)
        if func in ("hasAnyTokens", "hasAllTokens"):
            b = _as_const_bytes(arg)
            if b is not None:
                needles = split_by_non_alpha(b)   # a string argument is tokenized
            elif isinstance(arg, (tuple, list)):
                needles = []
                for v in arg:
                    nb = _as_const_bytes(v)
                    if nb is None:
                        return None
                    needles.append(nb)
            else:
                return None
            # An array element that is not a single token never equals one: it
            # drops out of ANY, and makes ALL always false (any answer is sound).
            good = [n for n in needles if n and not has_separator(n)]
            if func == "hasAnyTokens":
                return _any_of([self.needle_tokens(n) for n in good])
            toks = []
            for n in good:
                toks.extend(self.needle_tokens(n))
            return _all_of(toks)
        return None


_REGISTRY: dict[str, type[Tokenizer]] | None = None


def _load_registry() -> dict[str, type[Tokenizer]]:
    global _REGISTRY
    if _REGISTRY is None:
        from importlib.metadata import entry_points

        reg: dict[str, type[Tokenizer]] = {}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if BUILTIN_ENTRY_POINTS.get(ep.name, ep.value) != ep.value:
                # a built-in name always means the built-in (get_tokenizer loads it without a scan)
                import warnings

                warnings.warn(f"skipidx: tokenizer plugin {ep.name!r} ({ep.value}) ignored: a built-in has that name")
                continue
            try:
                cls = ep.load()
            except Exception as e:  # a broken plugin must not take the engine down
                import warnings

                warnings.warn(f"skipidx: tokenizer plugin {ep.name!r} failed to load: {e}")
                continue
            reg[ep.name] = cls
        _REGISTRY = reg
    return _REGISTRY


def refresh_tokenizers() -> list[str]:
    """Scan the ``skipidx.tokenizers`` entry points again (e.g. after a plugin was installed
    into a running process, or ``sys.path`` changed); returns the known names."""
    global _REGISTRY
    _REGISTRY = None
    return known_tokenizers()


def register_tokenizer(name: str, cls: type[Tokenizer]) -> None:
    """Register a tokenizer class in-process (entry points are the normal route)."""
    _load_registry()[name] = cls


def known_tokenizers() -> list[str]:
    """Names of all registered tokenizers, sorted."""
    return sorted(_load_registry())


#: The built-in tokenizers' entry points (pyproject.toml's, a test compares): until something
#: needs the whole registry, these names load their class directly, because scanning every
#: installed distribution's entry points (importlib.metadata) costs a new process ~40 ms.
BUILTIN_ENTRY_POINTS = {
    "token": "skipidx_tokenizers.token:TokenTokenizer",
    "ngram": "skipidx_tokenizers.ngram:NgramTokenizer",
    "value": "skipidx_tokenizers.value:ValueTokenizer",
    "sparse_grams": "skipidx_tokenizers.sparse_grams:SparseGramsTokenizer",
    "split_by_string": "skipidx_tokenizers.split_by_string:SplitByStringTokenizer",
}


def get_tokenizer(name: str, **params: Any) -> Tokenizer:
    """An instance of the tokenizer registered as `name`, with validated params."""
    if _REGISTRY is None and name in BUILTIN_ENTRY_POINTS:
        import importlib

        module, _, attr = BUILTIN_ENTRY_POINTS[name].partition(":")
        return getattr(importlib.import_module(module), attr)(**params)
    reg = _load_registry()
    if name not in reg:
        raise SkipidxError(f"unknown tokenizer {name!r}; known: {', '.join(sorted(reg)) or '(none)'}")
    return reg[name](**params)
