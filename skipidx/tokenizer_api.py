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

Plugins are discovered through the entry-point group ``skipidx.tokenizers``;
the built-ins (package ``skipidx_tokenizers``) register through the same group.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from skipidx.errors import SkipidxError

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
        from skipidx._kernels.xxh64 import xxh64_offsets

        toks = self.tokenize(values)
        return toks.rows, xxh64_offsets(toks.data, toks.offsets, np.uint64(seed))

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

    def requirement(self, func: str, args: tuple, value_type: pa.DataType | None = None) -> TokenRequirement | None:
        """The tokens a granule must hold for ``func(expr, *args)`` to be possibly true.

        ``func`` is a canonical ClickHouse function name (``equals``, ``in``,
        ``like``, ``hasToken``, ``startsWith``, ...); ``args`` are the
        constant arguments after the indexed expression (strings as bytes, an
        IN list as a tuple). ``None`` means "cannot help".
        """
        return None


_REGISTRY: dict[str, type[Tokenizer]] | None = None


def _load_registry() -> dict[str, type[Tokenizer]]:
    global _REGISTRY
    if _REGISTRY is None:
        from importlib.metadata import entry_points

        reg: dict[str, type[Tokenizer]] = {}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                cls = ep.load()
            except Exception as e:  # a broken plugin must not take the engine down
                import warnings

                warnings.warn(f"skipidx: tokenizer plugin {ep.name!r} failed to load: {e}")
                continue
            reg[ep.name] = cls
        _REGISTRY = reg
    return _REGISTRY


def register_tokenizer(name: str, cls: type[Tokenizer]) -> None:
    """Register a tokenizer class in-process (entry points are the normal route)."""
    _load_registry()[name] = cls


def known_tokenizers() -> list[str]:
    return sorted(_load_registry())


def get_tokenizer(name: str, **params: Any) -> Tokenizer:
    """An instance of the tokenizer registered as `name`, with validated params."""
    reg = _load_registry()
    if name not in reg:
        raise SkipidxError(f"unknown tokenizer {name!r}; known: {', '.join(sorted(reg)) or '(none)'}")
    return reg[name](**params)
