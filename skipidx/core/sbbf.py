"""The Split Block Bloom Filter (SBBF) of the Parquet specification, to the bit.

A filter is ``z`` blocks of 32 bytes; a block is eight little-endian 32-bit
words. A 64-bit hash ``h`` picks one block and sets one bit in each of its
eight words::

    block = ((h >> 32) * z) >> 32                 (the top half picks the block)
    key   = h & 0xFFFFFFFF                        (the bottom half picks the bits)
    bit_i = ((key * SALT[i]) mod 2**32) >> 27     (i = 0..7, bit bit_i of word i)

`check` asks whether all eight bits are set. The bytes of `to_bytes()` are the
bitset exactly as Parquet (after its ``BloomFilterHeader``) and Lance store it,
so filters move between skipidx, Arrow C++ (pyarrow), parquet-java (Spark) and
DuckDB unchanged.

Two layouts:

- `SBBF`: one filter (one Parquet column chunk, one index granule).
- `SBBFBank`: many filters in one flat uint32 array, filter ``f`` being blocks
  ``block_offset[f] .. block_offset[f] + num_blocks[f]``. All granules of a
  part live in one bank, so one hash (or a few) is checked against every
  granule in one compiled call (`SBBFBank.check_all`), and a whole part's
  hashes are inserted in one call (`SBBFBank.insert`).

All hot loops are numba kernels in `skipidx.core._kernels.sbbf` (no Python loop
per hash): many hashes landing in the same block within one call all set
their bits, because the kernel ORs them in one after another.

Sizing
------
``SBBF.for_ndv(ndv, fpp, sizing)`` sizes a filter by one of the rules of
:mod:`skipidx.core.sizing` (default ``"parquet"``: Arrow C++'s power of two).
Since Arrow 26 (and in arrow-rs) a writer then *folds* each column chunk's
filter before writing it: `SBBF.fold_to_target_fpp` reproduces that rule, and
`SBBF.fold` is exact (the folded filter equals the one built at the smaller
size), so the filter pyarrow writes is
``SBBF.for_ndv(ndv, fpp)`` + inserts + ``fold_to_target_fpp(fpp)``.
"""
from __future__ import annotations

import sys
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa

from skipidx.core import sizing as _sizing
from skipidx.core._kernels import sbbf as _k
from skipidx.core.errors import SkipidxError
from skipidx.core.lazy import numba_loaded
from skipidx.core.sizing import (  # noqa: F401  (public names of this module since the first release)
    BYTES_PER_BLOCK, MAX_BYTES, MIN_BYTES, exact_num_bytes, optimal_num_bytes, sizing_table,
)

__all__ = [
    "SBBF",
    "SBBFBank",
    "SALT",
    "BYTES_PER_BLOCK",
    "MIN_BYTES",
    "MAX_BYTES",
    "optimal_num_bytes",
    "exact_num_bytes",
    "sizing_table",
]

#: The eight odd salts of the Parquet spec (one per 32-bit word of a block).
SALT: np.ndarray = _k.SALT
WORDS_PER_BLOCK = 8


# ---------------------------------------------------------------- validation

_check_num_bytes = _sizing.check_num_bytes


def _as_hashes(h: object, what: str = "hashes") -> np.ndarray:
    """A contiguous uint64 array (any shape is flattened by the callers), or SkipidxError.

    Only uint64 is accepted: a silent cast from int64 or float would hash
    something else than the caller believes (floats lose bits, negative
    int64 would wrap), so the caller converts explicitly.
    """
    if isinstance(h, np.ndarray):
        if h.dtype != np.uint64:
            raise SkipidxError(f"{what} must be a numpy uint64 array, got dtype {h.dtype}")
        return np.ascontiguousarray(h)
    if isinstance(h, np.uint64):
        return np.array([h], dtype=np.uint64)
    raise SkipidxError(f"{what} must be a numpy uint64 array, got {type(h).__name__}")


def _as_hash_int(h: object) -> np.ndarray:
    if isinstance(h, (bool, np.bool_)) or not isinstance(h, (int, np.integer)):
        raise SkipidxError(f"a hash must be an integer in [0, 2**64), got {h!r}")
    v = int(h)
    if not (0 <= v < 1 << 64):
        raise SkipidxError(f"a hash must be an integer in [0, 2**64), got {v}")
    return np.array([v], dtype=np.uint64)


def _words_from_buffer(b: object, what: str) -> np.ndarray:
    """Copy a little-endian bitset into an aligned native uint32 array."""
    if isinstance(b, np.ndarray):
        if b.dtype != np.uint8:
            raise SkipidxError(f"{what}: a bitset array must be uint8, got dtype {b.dtype}")
        raw = np.ascontiguousarray(b).reshape(-1)
    elif isinstance(b, (bytes, bytearray, memoryview)):
        raw = np.frombuffer(b, dtype=np.uint8)
    elif isinstance(b, pa.Buffer):
        raw = np.frombuffer(b, dtype=np.uint8)
    else:
        raise SkipidxError(f"{what}: expected bytes, got {type(b).__name__}")
    _check_num_bytes(raw.shape[0], "bitset length")
    return raw.view("<u4").astype(np.uint32)  # astype copies: aligned, native order


# ---------------------------------------------------------------- one filter

class SBBF:
    """One Split Block Bloom Filter (the Parquet spec's bitset).

    >>> f = SBBF.for_ndv(1000, 0.01)
    >>> f.insert_hashes(np.array([1, 2, 3], dtype=np.uint64))
    >>> f.check_hashes(np.array([1, 2, 3], dtype=np.uint64)).all()
    True
    """

    __slots__ = ("_words",)

    def __init__(self, num_bytes: int) -> None:
        """An empty filter of `num_bytes` (a multiple of 32 in [32, 128 MiB])."""
        n = _check_num_bytes(num_bytes)
        self._words = np.zeros(n // 4, dtype=np.uint32)

    # -- construction
    @classmethod
    def _from_words(cls, words: np.ndarray) -> "SBBF":
        f = cls.__new__(cls)
        f._words = words
        return f

    @classmethod
    def for_ndv(
        cls, ndv: int, fpp: float, sizing: str = "parquet", max_bytes: int = MAX_BYTES
    ) -> "SBBF":
        """An empty filter sized for `ndv` distinct values at false-positive rate `fpp`.

        `sizing` is a rule of :mod:`skipidx.core.sizing`: ``"parquet"`` (default,
        Arrow C++), ``"parquet-java"`` (Spark), ``"lance"`` or ``"exact"``.
        `ndv` <= 0 or `fpp` outside (0, 1) raise SkipidxError.
        """
        return cls(optimal_num_bytes(ndv, fpp, sizing, max_bytes))

    @classmethod
    def from_bytes(cls, b: bytes | bytearray | memoryview | np.ndarray) -> "SBBF":
        """A filter from its bitset bytes (the Parquet/Lance layout); the bytes are copied."""
        return cls._from_words(_words_from_buffer(b, "SBBF.from_bytes"))

    def to_bytes(self) -> bytes:
        """The bitset: blocks of eight little-endian uint32 words."""
        return self._words.astype("<u4", copy=False).tobytes()

    def copy(self) -> "SBBF":
        return SBBF._from_words(self._words.copy())

    # -- properties
    @property
    def num_bytes(self) -> int:
        return int(self._words.shape[0]) * 4

    @property
    def num_blocks(self) -> int:
        return int(self._words.shape[0]) // WORDS_PER_BLOCK

    @property
    def words(self) -> np.ndarray:
        """The bitset as a native uint32 array (a view: writes change the filter)."""
        return self._words

    # -- insert / check
    def insert_hashes(self, h: np.ndarray) -> None:
        """Insert every hash of the uint64 array `h` (any shape)."""
        hashes = _as_hashes(h).reshape(-1)
        _k.insert_hashes(self._words, self.num_blocks, hashes, SALT)

    def check_hashes(self, h: np.ndarray) -> np.ndarray:
        """For each hash of the uint64 array `h`: may it be in the filter? (bool, same shape).

        False is certain (never inserted); True may be a false positive.
        """
        hashes = _as_hashes(h)
        out = _k.check_hashes(self._words, self.num_blocks, hashes.reshape(-1), SALT)
        return out.reshape(hashes.shape)

    def insert_hash(self, h: int) -> None:
        """Insert one hash given as a Python int in [0, 2**64)."""
        _k.insert_hashes(self._words, self.num_blocks, _as_hash_int(h), SALT)

    def check_hash(self, h: int) -> bool:
        """Check one hash given as a Python int in [0, 2**64)."""
        return bool(_k.check_hashes(self._words, self.num_blocks, _as_hash_int(h), SALT)[0])

    # -- merge
    def merge(self, other: "SBBF") -> "SBBF":
        """OR `other` into this filter (in place; returns self). Sizes must be equal.

        The union of two SBBFs of one size over sets A and B equals the filter of A | B.
        """
        if not isinstance(other, SBBF):
            raise SkipidxError(f"can only merge an SBBF, got {type(other).__name__}")
        if other.num_bytes != self.num_bytes:
            raise SkipidxError(
                f"cannot merge SBBFs of different sizes ({self.num_bytes} and {other.num_bytes} bytes)"
            )
        np.bitwise_or(self._words, other._words, out=self._words)
        return self

    def fold(self, num_bytes: int) -> "SBBF":
        """The filter of `num_bytes` holding the same hashes (a new SBBF), when that size divides this one.

        Hash h lands in block ``floor(x * z / 2**32)`` (x = h >> 32); with
        ``z = r * k`` blocks, ``floor(floor(x * r * k / 2**32) / r) == floor(x * k / 2**32)``,
        so OR-ing each run of r consecutive blocks gives exactly the filter of
        k blocks built from the same hashes. A writer can therefore size for
        the worst case and shrink once it knows how full the filter is
        (`fold_to_target_fpp`).
        """
        n = _check_num_bytes(num_bytes)
        if self.num_bytes % n:
            raise SkipidxError(f"cannot fold an SBBF of {self.num_bytes} bytes to {n}: {n} does not divide it")
        k = n // BYTES_PER_BLOCK
        r = self.num_blocks // k
        folded = np.bitwise_or.reduce(self._words.reshape(k, r, WORDS_PER_BLOCK), axis=1)
        return SBBF._from_words(np.ascontiguousarray(folded, dtype=np.uint32).reshape(-1))

    def folds_for_target_fpp(self, target_fpp: float) -> int:
        """How many halvings `fold_to_target_fpp` makes (Arrow C++ ``NumFoldsForTargetFpp``).

        With ``f`` the fraction of set bits, one fold turns the expected fill
        into ``1 - (1 - f)**2``; a probe tests 8 bits, so the estimated FPP is
        ``fill**8``. Fold while that estimate stays <= `target_fpp`, at most
        as many times as the block count has factors of two.
        """
        p = _sizing.check_fpp(target_fpp)
        blocks = self.num_blocks
        max_folds = (blocks & -blocks).bit_length() - 1  # trailing zero bits
        unset = 1.0 - self.fill_ratio()
        folds = 0
        for _ in range(max_folds):
            unset *= unset
            if (1.0 - unset) ** 8 > p:
                break
            folds += 1
        return folds

    def fold_to_target_fpp(self, target_fpp: float) -> "SBBF":
        """The smallest fold of this filter whose estimated FPP meets `target_fpp` (a new SBBF).

        This is what Arrow C++ (pyarrow >= 26, ``BloomFilterOptions.fold``,
        on by default) and arrow-rs do before writing a column chunk's filter:
        size for the worst-case NDV, insert, then fold. An empty filter becomes
        one empty block. Every fold is exact (see `fold`).
        """
        folds = self.folds_for_target_fpp(target_fpp)
        if not self._words.any():
            return SBBF(MIN_BYTES)
        return self.fold(self.num_bytes >> folds) if folds else self.copy()

    def __ior__(self, other: "SBBF") -> "SBBF":
        return self.merge(other)

    def __or__(self, other: "SBBF") -> "SBBF":
        return self.copy().merge(other)

    # -- statistics
    def fill_ratio(self) -> float:
        """Fraction of the bits that are set (0.0 empty .. 1.0 saturated)."""
        return float(_k.popcount_words(self._words).sum()) / (self.num_bytes * 8)

    @staticmethod
    def fpp_estimate(num_bytes: int, ndv: int | float) -> float:
        """Expected false-positive rate of a `num_bytes` filter holding `ndv` distinct hashes
        (:func:`skipidx.core.sizing.fpp_estimate`)."""
        return _sizing.fpp_estimate(num_bytes, ndv)

    # -- dunder
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SBBF):
            return NotImplemented
        return self.num_bytes == other.num_bytes and bool(np.array_equal(self._words, other._words))

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return f"SBBF(num_bytes={self.num_bytes}, fill_ratio={self.fill_ratio():.4f})"


# ---------------------------------------------------------- many filters

def _layout(sizes: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(block_offset, num_blocks, total words) of a bank of filters of ``sizes[i]`` bytes (validated)."""
    arr = np.asarray(sizes)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise SkipidxError(f"SBBF sizes must be a 1-D integer array, got {arr.dtype} of shape {arr.shape}")
    sizes64 = arr.astype(np.int64)
    bad = (sizes64 < MIN_BYTES) | (sizes64 > MAX_BYTES) | (sizes64 % BYTES_PER_BLOCK != 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        _check_num_bytes(int(sizes64[i]), f"size of filter {i}")
    num_blocks = sizes64 // BYTES_PER_BLOCK
    block_offset = np.zeros(num_blocks.shape[0], dtype=np.int64)
    if num_blocks.shape[0]:
        np.cumsum(num_blocks[:-1], out=block_offset[1:])
    total = int(num_blocks.sum()) * WORDS_PER_BLOCK
    return block_offset, num_blocks, total


def _writable_words(data: pa.Buffer, start: int, total: int) -> np.ndarray | None:
    """`total` uint32 words at byte `start` of `data` as a writable view of the memory
    under it (the mutable buffer it is, or is a slice of), or None where there is no such
    view (read-only or foreign memory, a misaligned start, a big-endian host)."""
    if sys.byteorder != "little":
        return None
    base = data
    while not base.is_mutable and base.parent is not None:
        base = base.parent
    if not base.is_mutable:
        return None
    off = data.address + start - base.address
    if off % 4 or off < 0 or off + 4 * total > base.size:
        return None
    return np.frombuffer(base, dtype=np.uint32, count=total, offset=off)


class SBBFBank:
    """Many SBBFs (e.g. one per index granule of a part) in one flat uint32 array.

    Filter ``f`` is words ``8 * block_offset[f] .. 8 * (block_offset[f] + num_blocks[f])``
    of `words`. Filters may have different sizes. Insert and check work on
    the whole bank in one compiled call.
    """

    __slots__ = ("words", "block_offset", "num_blocks")

    def __init__(self, words: np.ndarray, block_offset: np.ndarray, num_blocks: np.ndarray) -> None:
        """Wrap existing arrays (trusted: use `from_num_bytes`, `fixed`, `from_arrow`, `from_filters`)."""
        self.words = words
        self.block_offset = block_offset
        self.num_blocks = num_blocks

    # -- construction
    @classmethod
    def from_num_bytes(cls, sizes: Sequence[int] | np.ndarray) -> "SBBFBank":
        """An empty bank with one filter of ``sizes[i]`` bytes per entry."""
        block_offset, num_blocks, total = _layout(sizes)
        return cls(np.zeros(total, dtype=np.uint32), block_offset, num_blocks)

    @classmethod
    def fixed(cls, n_filters: int, num_bytes: int) -> "SBBFBank":
        """An empty bank of `n_filters` filters of `num_bytes` each (see `as_2d`)."""
        if isinstance(n_filters, bool) or not isinstance(n_filters, (int, np.integer)) or n_filters < 0:
            raise SkipidxError(f"n_filters must be an integer >= 0, got {n_filters!r}")
        nb = _check_num_bytes(num_bytes)
        return cls.from_num_bytes(np.full(int(n_filters), nb, dtype=np.int64))

    @classmethod
    def from_filters(cls, filters: Iterable[SBBF]) -> "SBBFBank":
        """A bank holding copies of `filters`, in order."""
        fs = list(filters)
        for i, f in enumerate(fs):
            if not isinstance(f, SBBF):
                raise SkipidxError(f"filter {i} is a {type(f).__name__}, not an SBBF")
        bank = cls.from_num_bytes(np.array([f.num_bytes for f in fs], dtype=np.int64))
        if fs:
            bank.words[:] = np.concatenate([f.words for f in fs])
        return bank

    @classmethod
    def from_arrow(cls, arr: pa.Array | pa.ChunkedArray, copy: bool = True) -> "SBBFBank":
        """A bank from a binary Arrow array holding one bitset per element (copied).

        Accepts binary, large_binary and fixed_size_binary (also chunked).
        Nulls and bitsets of invalid length raise SkipidxError. `copy=False`: the
        words view the array's data buffer where it is writable memory of its own
        (the buffer a file was read or decompressed into, or a slice of it), so
        the bank and the array share it; a copy otherwise.
        """
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
        if not isinstance(arr, pa.Array):
            raise SkipidxError(f"SBBFBank.from_arrow expects a pyarrow binary array, got {type(arr).__name__}")
        t = arr.type
        if arr.null_count:
            raise SkipidxError(f"SBBF bitset array holds {arr.null_count} null(s)")
        n = len(arr)
        if pa.types.is_fixed_size_binary(t):
            width = t.byte_width
            sizes = np.full(n, width, dtype=np.int64)
            start, end = arr.offset * width, (arr.offset + n) * width
            data = arr.buffers()[1]
        elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
            odt = np.int32 if pa.types.is_binary(t) else np.int64
            offs = np.frombuffer(arr.buffers()[1], dtype=odt)[arr.offset: arr.offset + n + 1].astype(np.int64)
            sizes = np.diff(offs)
            start, end = (int(offs[0]), int(offs[-1])) if n else (0, 0)
            data = arr.buffers()[2]
        else:
            raise SkipidxError(f"SBBF bitsets must be a binary array, got type {t}")
        if not copy and n:
            block_offset, num_blocks, total = _layout(sizes)   # validates every size
            if data is None or data.size < end:
                raise SkipidxError("SBBF bitset array: data buffer shorter than its offsets")
            words = _writable_words(data, start, total)
            if words is not None:
                return cls(words, block_offset, num_blocks)
        bank = cls.from_num_bytes(sizes)  # validates every size
        if n:
            if data is None or data.size < end:
                raise SkipidxError("SBBF bitset array: data buffer shorter than its offsets")
            raw = np.frombuffer(data, dtype=np.uint8)[start:end]
            bank.words[:] = raw.view("<u4")
        return bank

    # -- layout
    def __len__(self) -> int:
        return int(self.block_offset.shape[0])

    @property
    def num_bytes(self) -> np.ndarray:
        """Bytes of every filter (int64)."""
        return self.num_blocks * BYTES_PER_BLOCK

    @property
    def nbytes(self) -> int:
        """Bytes of all bitsets together."""
        return int(self.words.shape[0]) * 4

    def as_2d(self) -> np.ndarray:
        """The words as a (n_filters, num_bytes // 4) uint32 view; all filters must have one size."""
        n = len(self)
        if n == 0:
            return self.words.reshape(0, 0)
        if not (self.num_blocks == self.num_blocks[0]).all():
            raise SkipidxError("as_2d needs filters of one size; this bank mixes sizes")
        return self.words.reshape(n, int(self.num_blocks[0]) * WORDS_PER_BLOCK)

    def filter(self, i: int) -> SBBF:
        """Filter `i` as a standalone SBBF (a copy)."""
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not (-n <= int(i) < n):
            raise SkipidxError(f"filter index {i!r} out of range for a bank of {n}")
        i = int(i) % n
        a = int(self.block_offset[i]) * WORDS_PER_BLOCK
        b = a + int(self.num_blocks[i]) * WORDS_PER_BLOCK
        return SBBF._from_words(self.words[a:b].copy())

    def to_arrow(self) -> pa.Array:
        """One bitset per element as pa.binary() (pa.large_binary() beyond 2 GiB), zero-copy on little-endian."""
        n = len(self)
        offsets = np.zeros(n + 1, dtype=np.int64)
        offsets[1:] = (self.block_offset + self.num_blocks) * BYTES_PER_BLOCK
        if n:
            offsets[0] = self.block_offset[0] * BYTES_PER_BLOCK
        data = pa.py_buffer(self.words.astype("<u4", copy=False))
        if offsets[-1] < 2**31:
            return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets.astype(np.int32)), data])
        return pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), data])

    # -- insert / check
    def _ids(self, filter_ids: np.ndarray, count: int) -> np.ndarray:
        if not isinstance(filter_ids, np.ndarray) or not np.issubdtype(filter_ids.dtype, np.integer):
            got = filter_ids.dtype if isinstance(filter_ids, np.ndarray) else type(filter_ids).__name__
            raise SkipidxError(f"filter_ids must be a numpy integer array, got {got}")
        ids = np.ascontiguousarray(filter_ids.reshape(-1), dtype=np.int64)
        if ids.shape[0] != count:
            raise SkipidxError(f"filter_ids has {ids.shape[0]} entries but there are {count} hashes")
        # The kernels do not bounds-check: an id outside the bank would write into another filter.
        if count and (int(ids.min()) < 0 or int(ids.max()) >= len(self)):
            raise SkipidxError(f"filter_ids must lie in [0, {len(self)}), got [{int(ids.min())}, {int(ids.max())}]")
        return ids

    def insert(self, filter_ids: np.ndarray, hashes: np.ndarray) -> None:
        """Insert ``hashes[j]`` into filter ``filter_ids[j]`` for every j, in one call."""
        h = _as_hashes(hashes).reshape(-1)
        ids = self._ids(filter_ids, h.shape[0])
        _k.bank_insert(self.words, self.block_offset, self.num_blocks, ids, h, SALT)

    def check_pairs(self, filter_ids: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        """``out[j]`` = may ``hashes[j]`` be in filter ``filter_ids[j]`` (bool per hash)."""
        h = _as_hashes(hashes).reshape(-1)
        ids = self._ids(filter_ids, h.shape[0])
        return _k.bank_check_pairs(self.words, self.block_offset, self.num_blocks, ids, h, SALT)

    def check_all(self, hashes: np.ndarray) -> np.ndarray:
        """bool[n_filters]: True where every given hash may be present (AND; no hashes -> all True)."""
        h = _as_hashes(hashes).reshape(-1)
        return _k.bank_check_all(self.words, self.block_offset, self.num_blocks, h, SALT)

    def check_any_of(self, groups: Sequence[np.ndarray]) -> np.ndarray:
        """bool[n_filters]: OR over the groups of (AND over the hashes of a group).

        ``x IN ('a', 'b')`` over an ngram index is ``any_of([grams(a), grams(b)])``.
        An empty group keeps every filter; no groups keeps none.
        """
        hs = [_as_hashes(g, f"hash group {i}").reshape(-1) for i, g in enumerate(groups)]
        offsets = np.zeros(len(hs) + 1, dtype=np.int64)
        if hs:
            np.cumsum([g.shape[0] for g in hs], out=offsets[1:])
        flat = np.concatenate(hs) if hs else np.empty(0, dtype=np.uint64)
        return bank_check_any_of(self.words, self.block_offset, self.num_blocks, flat, offsets)

    def check_matrix(self, hashes: np.ndarray) -> np.ndarray:
        """bool[n_filters, n_hashes]: every hash against every filter."""
        h = _as_hashes(hashes).reshape(-1)
        return _k.bank_check_matrix(self.words, self.block_offset, self.num_blocks, h, SALT)

    # -- statistics
    def fill_ratios(self) -> np.ndarray:
        """Fraction of bits set, per filter (float64)."""
        if len(self) == 0:
            return np.empty(0, dtype=np.float64)
        pop = _k.popcount_words(self.words)
        per = np.add.reduceat(pop, self.block_offset * WORDS_PER_BLOCK) if pop.size else np.zeros(len(self))
        return per / (self.num_blocks * BYTES_PER_BLOCK * 8).astype(np.float64)

    def fpp_estimates(self, ndv: np.ndarray | Sequence[float]) -> np.ndarray:
        """Expected FPP of every filter given its distinct-value count ``ndv[f]`` (float64)."""
        nd = np.asarray(ndv)
        if nd.shape != (len(self),) or not (np.issubdtype(nd.dtype, np.integer) or np.issubdtype(nd.dtype, np.floating)):
            raise SkipidxError(f"ndv must be a numeric array of {len(self)} entries, got {nd.dtype} of shape {nd.shape}")
        nd = nd.astype(np.float64)
        if (~np.isfinite(nd)).any() or (nd < 0).any():
            raise SkipidxError("ndv must be finite and >= 0")
        return _k.fpp_poisson(self.num_blocks.astype(np.float64), nd)

    def __repr__(self) -> str:
        return f"SBBFBank({len(self)} filters, {self.nbytes} bytes)"



#: Up to this many (filter, hash) probes a check runs in numpy, not the compiled kernel, while
#: numba is not loaded: a new process then answers a small query without loading (or, on a
#: fresh install, compiling) the kernel; once loaded, the kernel (10-30x faster) always.
SMALL_CHECK_PROBES = 1 << 18


def bank_check_any_of(words: np.ndarray, block_offset: np.ndarray, num_blocks: np.ndarray,
                      hashes: np.ndarray, group_offsets: np.ndarray) -> np.ndarray:
    """out[f] = OR over groups g of (AND over hashes[group_offsets[g]:group_offsets[g+1]]
    may be in filter f); the kernel's contract (``_kernels.sbbf.bank_check_any_of``)."""
    hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
    group_offsets = np.ascontiguousarray(group_offsets, dtype=np.int64)
    nf = block_offset.shape[0]
    if nf * hashes.shape[0] > SMALL_CHECK_PROBES or numba_loaded():
        return _k.bank_check_any_of(words, block_offset, num_blocks, hashes, group_offsets, SALT)
    return bank_check_any_of_numpy(words, block_offset, num_blocks, hashes, group_offsets)


def bank_check_any_of_numpy(words: np.ndarray, block_offset: np.ndarray, num_blocks: np.ndarray,
                            hashes: np.ndarray, group_offsets: np.ndarray) -> np.ndarray:
    """:func:`bank_check_any_of` in numpy (for a few probes in a process without numba)."""
    hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
    group_offsets = np.ascontiguousarray(group_offsets, dtype=np.int64)
    nf = block_offset.shape[0]
    ng = group_offsets.shape[0] - 1
    out = np.zeros(nf, dtype=bool)
    if nf == 0 or ng <= 0:
        return out
    nb = num_blocks.astype(np.uint64)
    base = block_offset.astype(np.int64) * 8
    lanes = np.arange(8, dtype=np.int64)
    present = np.empty((hashes.shape[0], nf), dtype=bool)
    for j, h in enumerate(hashes.tolist()):
        block = (np.uint64(h >> 32) * nb) >> np.uint64(32)
        w = words[(base + block.astype(np.int64) * 8)[:, None] + lanes]
        key = (h & 0xFFFFFFFF)
        bits = np.array([1 << (((key * int(s)) & 0xFFFFFFFF) >> 27) for s in SALT], dtype=np.uint32)
        present[j] = np.all((w & bits) == bits, axis=1)
    for g in range(ng):
        a, b = int(group_offsets[g]), int(group_offsets[g + 1])
        out |= present[a:b].all(axis=0) if b > a else True
    return out


#: Up to this many (filter, hash) pairs :func:`bank_check_pairs` probes in numpy.
SMALL_PAIR_PROBES = 1 << 12


def bank_check_pairs(words: np.ndarray, block_offset: np.ndarray, num_blocks: np.ndarray,
                     filter_ids: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """``out[j]`` = ``hashes[j]`` may be in filter ``filter_ids[j]`` of the bank (trusted ids, no
    bounds check: the caller derives them from the bank); the kernel's contract
    (``_kernels.sbbf.bank_check_pairs``), in numpy for a few pairs."""
    hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
    filter_ids = np.ascontiguousarray(filter_ids, dtype=np.int64)
    if hashes.shape[0] > SMALL_PAIR_PROBES or numba_loaded():
        return _k.bank_check_pairs(words, block_offset, num_blocks, filter_ids, hashes, SALT)
    return bank_check_pairs_numpy(words, block_offset, num_blocks, filter_ids, hashes)


def bank_check_pairs_numpy(words: np.ndarray, block_offset: np.ndarray, num_blocks: np.ndarray,
                           filter_ids: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """:func:`bank_check_pairs` in numpy (for a few pairs in a process without numba)."""
    hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
    filter_ids = np.ascontiguousarray(filter_ids, dtype=np.int64)
    if hashes.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    nb = num_blocks[filter_ids].astype(np.uint64)
    block = (((hashes >> np.uint64(32)) * nb) >> np.uint64(32)).astype(np.int64)
    base = (block_offset[filter_ids].astype(np.int64) + block) * 8
    w = words[base[:, None] + np.arange(8, dtype=np.int64)]
    key = (hashes & np.uint64(0xFFFFFFFF))[:, None]
    shift = ((key * SALT.astype(np.uint64)[None, :]) & np.uint64(0xFFFFFFFF)) >> np.uint64(27)
    bits = (np.uint64(1) << shift).astype(np.uint32)
    return np.all((w & bits) == bits, axis=1)
