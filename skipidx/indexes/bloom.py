"""The SBBF index types: ``bloom_filter``, ``tokenbf_v1``, ``ngrambf_v1``, ``sbbf``.

All four keep one Split Block Bloom Filter per index granule and differ only
in the tokenizer and in how the filter is sized:

================  ==========================  =======================================
type              tokenizer                   size of a zone's filter
================  ==========================  =======================================
bloom_filter(p)   value (Parquet PLAIN bytes)  SBBF.for_ndv(distinct values, p=0.025)
tokenbf_v1(b,h,s) token                       b bytes rounded up to 32-byte blocks
ngrambf_v1(n,...) ngram(n)                    b bytes rounded up to 32-byte blocks
sbbf(tok, k=v..)  any registered tokenizer    size_rule (default 'exact') at fpp=0.01
================  ==========================  =======================================

``sbbf``'s ``size_rule``: ``'exact'`` gives a zone the fewest 32-byte blocks
whose Putze/Poisson estimate (``SBBF.fpp_estimate``) meets ``fpp`` -- any block
count is a valid SBBF, and Arrow's power-of-two rule both misses the target
near a power of two (its uniform approximation ignores uneven block loads)
and wastes up to 2x bytes; ``'parquet'`` is Arrow's rule (``bloom_filter``
always uses it: its filters must equal pyarrow's); ``'lance'`` the smallest
power of two meeting the estimate. The rule is stored in the params; params
without it (tables made before it existed) mean ``'parquet'``.

Hashes are ``xxh64(token, seed)``; with the value tokenizer and seed 0 they
are Parquet's bloom-filter hashes, so a ``bloom_filter`` zone's filter is
byte for byte the filter pyarrow writes for the same values and ndv.
``hashes`` of the ClickHouse DDL is accepted and stored but does not change
the filter: an SBBF always sets 8 bits, one per word of a block.

One granule class (:class:`SBBFGranules`, the bank layout: all filters in one
flat uint32 array) and one condition class (:class:`SBBFCondition`) serve
all four. A zone whose filter is *saturated* (estimated false-positive
probability of a lookup above :data:`SATURATION_FPP`) answers "maybe"
without being checked; the planner may skip reading an index whose zones are
all saturated.
"""
from __future__ import annotations

import json
import os
import threading
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core import sizing
from skipidx.core._kernels import build as kb
from skipidx.core.lru import LRU
from skipidx.core._kernels.sbbf import SALT
from skipidx.core.errors import SkipidxError
from skipidx.indexes import zones
from skipidx.indexes._common import (
    atom_text, index_error, int_arg, fpp_arg, is_string_like, null_counts, null_mask,
    null_subject_matches, plain, sql_literal, stored_definitions, subject_matches,
)
from skipidx.core.arrays import to_numpy
from skipidx.core.hashing import xxh64_spans
from skipidx.core.sbbf import SBBFBank, bank_check_any_of
from skipidx.indexes.summary import SUMMARY_MIN_PROBES, GroupSummary
from skipidx.indexes.base import (
    Atom, BoolMask, IndexAggregator, IndexCondition, IndexDef, IndexGranules, IndexType, register_index_type,
)
from skipidx.core.tokenizer_api import Tokenizer, TokenRequirement, get_tokenizer
from skipidx.expr.catalogue import CATALOGUE
from skipidx.expr.index_expressions import get_expression

#: A zone whose filter lets more than this share of absent lookups through is
#: "saturated": it answers maybe and is not checked (see core.sizing).
from skipidx.core.sizing import SATURATION_FPP  # noqa: E402

#: Build in slices of whole zones of about this many bytes of string data (or
#: rows for fixed-width types), so the (row, hash) arrays of one slice stay
#: small whatever the part size.
CHUNK_BYTES = 8 << 20
CHUNK_ROWS = 1 << 18

#: Threads of the build (the kernels release the GIL); SKIPIDX_BUILD_THREADS overrides.
def _build_threads() -> int:
    try:
        n = int(os.environ.get("SKIPIDX_BUILD_THREADS", "0"))
    except ValueError:
        n = 0
    from skipidx.core.threads import available_cores

    return max(1, n or available_cores())


BUILD_THREADS = _build_threads()

#: Atoms for which "the tokenizer finds no token" means "recognized, cannot
#: help" (EXPLAIN says why), rather than "not this index's business".
_PATTERN_FUNCS = {
    "like": "pattern yields no complete token",
    "notLike": "pattern yields no complete token",
    "match": "regular expression yields no required token",
    "hasToken": "needle yields no token",
    "hasTokenOrNull": "needle yields no token",
    "startsWith": "prefix yields no complete token",
    "endsWith": "suffix yields no complete token",
    "multiSearchAny": "a needle yields no complete token",
    "hasAnyTokens": "no token to look up",
    "hasAllTokens": "no token to look up",
    "equals": "value yields no token",
    "notEquals": "value yields no token",
    "in": "a value yields no token",
    "notIn": "a value yields no token",
}

_LOWER = get_expression("lower").apply_scalar

#: hasTokenCaseInsensitive -> hasToken, ilike -> like, ...: the catalogue's case-insensitive forms
_CASE_INSENSITIVE = CATALOGUE.case_insensitive()


def _ilike_is_ascii_folding(pattern: Any) -> bool:
    """Whether ILIKE `pattern` matches exactly the rows LIKE lower(pattern) matches on lower(x).

    ILIKE folds case by Unicode (RE2's case orbits), lower() folds ASCII only. For an
    ASCII pattern the two agree except where a non-ASCII character folds onto an ASCII
    letter: the Kelvin sign onto k and the long s onto s. Such patterns are not routed."""
    b = _ascii_lower(pattern)
    return isinstance(b, bytes) and b.isascii() and b"k" not in b and b"s" not in b


def _ascii_lower(v: Any) -> Any:
    """ClickHouse's lower() of a constant (the catalogue's fold), as bytes; other values unchanged."""
    if isinstance(v, str):
        v = v.encode("utf-8")
    return _LOWER(v) if isinstance(v, (bytes, bytearray, tuple)) else v


class SBBFGranules(IndexGranules):
    """One SBBF per zone, all in one bank (flat uint32 words, block offsets, block counts)."""

    def __init__(self, type_name: str, params: dict[str, Any], tokenizer: str, tokenizer_version: str,
                 zone_start: np.ndarray, zone_length: np.ndarray, null_count: np.ndarray,
                 bank: SBBFBank, ndv: np.ndarray | None,
                 fill_ratio: np.ndarray | None = None, fpp_estimate: np.ndarray | None = None) -> None:
        self.type_name = type_name
        self.params = params
        self.tokenizer = tokenizer
        self.tokenizer_version = tokenizer_version
        self.zone_start = zone_start
        self.zone_length = zone_length
        self.null_count = null_count
        self.has_null = null_count > 0
        self.bank = bank
        self.ndv = ndv
        if fill_ratio is None or fpp_estimate is None:
            fill_ratio, fpp_estimate = kb.bank_stats(bank.words, bank.block_offset, bank.num_blocks)
        self.fill_ratio = fill_ratio
        self.fpp_estimate = fpp_estimate
        self.saturated = fpp_estimate > SATURATION_FPP
        #: one filter per group of granules (None: not built, or not trusted)
        self.summary: GroupSummary | None = None

    @property
    def summary_groups(self) -> int:
        return 0 if self.summary is None else len(self.summary)

    def summary_metadata(self) -> dict[bytes, bytes] | None:
        return None if self.summary is None else self.summary.metadata()

    def attach_summaries(self, pieces: list[tuple[int, int, dict | None]]) -> None:
        self.summary = GroupSummary.from_pieces(pieces, len(self))

    @property
    def words(self) -> np.ndarray:
        return self.bank.words

    @property
    def block_offset(self) -> np.ndarray:
        return self.bank.block_offset

    @property
    def num_blocks(self) -> np.ndarray:
        return self.bank.num_blocks

    @property
    def num_bytes(self) -> np.ndarray:
        """Bytes of every zone's filter."""
        return self.num_blocks * 32

    @property
    def nbytes(self) -> int:
        """Bytes of all filters (the group summaries' too)."""
        return int(self.words.nbytes) + (0 if self.summary is None else self.summary.nbytes)

    def filter_bytes(self, zone: int) -> bytes:
        """One zone's filter in the Parquet/Lance bitset layout (little-endian words)."""
        o, nb = int(self.block_offset[zone]), int(self.num_blocks[zone])
        return self.words[o * 8:(o + nb) * 8].astype("<u4", copy=False).tobytes()

    def filter_array(self) -> pa.Array:
        """All filters as one binary array, zero-copy over the bank."""
        n = len(self)
        offs = np.concatenate([[0], np.cumsum(self.num_blocks * 32)]).astype(np.int64)
        data = pa.py_buffer(self.words.astype("<u4", copy=False).view(np.uint8))
        if offs[-1] < 2**31:
            return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offs.astype(np.int32)), data])
        return pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offs), data])

    def maybe_contains(self, hashes: np.ndarray, group_offsets: np.ndarray) -> np.ndarray:
        """Per zone: some group's hashes may all be in the zone's filter."""
        return bank_check_any_of(self.words, self.block_offset, self.num_blocks, hashes, group_offsets)

    def maybe_contains_at(self, zones: np.ndarray, hashes: np.ndarray, group_offsets: np.ndarray) -> np.ndarray:
        """:meth:`maybe_contains` for the zones `zones` only (int64 ids), one entry per asked zone."""
        return bank_check_any_of(self.words, self.block_offset[zones], self.num_blocks[zones], hashes, group_offsets)

    def maybe_contains_grouped(self, zones: np.ndarray | None, hashes: np.ndarray,
                               group_offsets: np.ndarray) -> tuple[np.ndarray, int, int]:
        """:meth:`maybe_contains` (`zones` None) or :meth:`maybe_contains_at`, through the group
        summaries where they pay (:data:`~skipidx.indexes.summary.SUMMARY_MIN_PROBES`),
        and (groups passing, groups probed)."""
        n = len(self) if zones is None else int(zones.shape[0])
        if self.summary is None or n * hashes.shape[0] < SUMMARY_MIN_PROBES:
            flat = self.maybe_contains(hashes, group_offsets) if zones is None else \
                self.maybe_contains_at(zones, hashes, group_offsets)
            return flat, 0, 0
        return self.summary.check(self.words, self.block_offset, self.num_blocks, hashes, group_offsets, zones)

    @property
    def mean_fpp(self) -> float:
        """Mean estimated false-positive rate of a lookup over the zones (cached): the
        planner probes the most selective index first."""
        m = self.__dict__.get("_mean_fpp")
        if m is None:
            m = self.__dict__["_mean_fpp"] = float(self.fpp_estimate.mean()) if len(self) else 1.0
        return m

    def to_arrow(self, part: str) -> pa.Table:
        fpp = self.params.get("fpp")
        if fpp is None:
            # fixed-size filters (tokenbf_v1/ngrambf_v1) have no target fpp: Lance's key gets
            # the mean estimated fpp of a lookup over this build's filters
            fpp = float(self.fpp_estimate.mean()) if len(self) else 0.0
        md = zones.make_metadata(self.type_name, self.params, self.FORMAT_VERSION,
                                 items_per_zone=int(self.zone_length.max()) if len(self) else 0,
                                 fpp=fpp, tokenizer=self.tokenizer, tokenizer_version=self.tokenizer_version)
        common = zones.common_columns(part, self.zone_start, self.zone_length, self.has_null, self.null_count)
        filt = self.filter_array()
        ndv = (pa.array(self.ndv.astype(np.uint64), pa.uint64()) if self.ndv is not None
               else pa.nulls(len(self), pa.uint64()))
        fields = [pa.field("bloom_filter_data", filt.type, nullable=False),
                  pa.field("ndv", pa.uint64()),
                  pa.field("fill_ratio", pa.float64(), nullable=False),
                  pa.field("fpp_estimate", pa.float64(), nullable=False),
                  pa.field("saturated", pa.bool_(), nullable=False)]
        extra = [filt, ndv, pa.array(self.fill_ratio, pa.float64()), pa.array(self.fpp_estimate, pa.float64()),
                 pa.array(self.saturated, pa.bool_())]
        return zones.make_table(common, fields, extra, md, part)

    @classmethod
    def from_arrow(cls, table: pa.Table, type_name: str | None = None,
                   expected_params: dict[str, Any] | None = None) -> "SBBFGranules":
        md_type = (table.schema.metadata or {}).get(zones.META_TYPE, b"").decode("utf-8", "replace") \
            if isinstance(table, pa.Table) else ""
        type_name = type_name or md_type
        if type_name not in SBBF_TYPES:
            raise zones.CorruptionError(f"index table: {type_name!r} is not an SBBF index type")
        c = zones.read_common(table, type_name, cls.FORMAT_VERSION)
        params = json.loads(c.metadata[zones.META_PARAMS.decode()])
        if not isinstance(params, dict):
            raise zones.CorruptionError("index table: params are not an object")
        if expected_params is not None and not _same_params(params, expected_params):
            raise zones.CorruptionError(f"index table: built with params {params}, the table declares {expected_params}")
        tok = c.metadata.get(zones.META_TOKENIZER.decode())
        tok_version = c.metadata.get(zones.META_TOKENIZER_VERSION.decode())
        if tok != params.get("tokenizer") or tok_version is None:
            raise zones.CorruptionError("index table: tokenizer name/version missing or inconsistent")
        filt = table.column("bloom_filter_data") if "bloom_filter_data" in table.column_names else None
        if filt is None:
            raise zones.CorruptionError("index table: missing column 'bloom_filter_data'")
        arr = zones.column(table, "bloom_filter_data", filt.type)
        if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
            raise zones.CorruptionError(f"index table: bloom_filter_data has type {arr.type}")
        large = pa.types.is_large_binary(arr.type)
        obuf = arr.buffers()[1]
        if obuf is None or obuf.size < (arr.offset + len(arr) + 1) * (8 if large else 4):
            sizes = np.zeros(0, np.int64) if len(arr) == 0 else None
            if sizes is None:
                raise zones.CorruptionError("index table: bloom_filter_data offsets are truncated")
        else:
            offs = np.frombuffer(obuf, dtype=np.int64 if large else np.int32, count=len(arr) + 1,
                                 offset=arr.offset * (8 if large else 4)).astype(np.int64)
            sizes = np.diff(offs)
        if np.any(sizes < sizing.MIN_BYTES) or np.any(sizes % 32):
            raise zones.CorruptionError("index table: a filter is not a whole number of 32-byte blocks")
        ndv_col = zones.column(table, "ndv", pa.uint64(), nullable=True)
        ndv = None if ndv_col.null_count == len(ndv_col) and len(ndv_col) else to_numpy(ndv_col)
        if ndv is not None and len(ndv_col) and ndv_col.null_count:
            raise zones.CorruptionError("index table: ndv partly missing")
        if ndv is not None:
            ndv = ndv.astype(np.int64)
        if not _sizes_hold(params, ndv, sizes):
            raise zones.CorruptionError("index table: filter sizes do not match the index parameters")
        try:
            bank = SBBFBank.from_arrow(arr, copy=False)   # the words stay in the buffer the file was read into
        except SkipidxError as e:
            raise zones.CorruptionError(f"index table: {e.message}") from None
        fill = to_numpy(zones.column(table, "fill_ratio", pa.float64()))
        fpp = to_numpy(zones.column(table, "fpp_estimate", pa.float64()))
        zones.column(table, "saturated", pa.bool_())
        if np.any(~np.isfinite(fill)) or np.any((fill < 0) | (fill > 1)) or np.any((fpp < 0) | (fpp > 1)):
            raise zones.CorruptionError("index table: fill_ratio / fpp_estimate out of range")
        return cls(type_name, params, tok, tok_version, c.zone_start, c.zone_length, c.null_count,
                   bank, ndv, fill, fpp)


def size_rule(params: dict[str, Any]) -> str:
    """The sizing rule of adaptive params; absent = "parquet" (the only rule before size_rule existed)."""
    return params.get("size_rule", "parquet")


def _same_params(built: dict[str, Any], declared: dict[str, Any]) -> bool:
    """A file's params match the declaration; a file built before size_rule existed
    (no key) matches whatever rule the declaration now derives, since its sizes
    are checked against the rule it was built with (and any size answers correctly)."""
    if built == declared:
        return True
    if "size_rule" in built:
        return False
    return built == {k: v for k, v in declared.items() if k != "size_rule"}


def _sizes_hold(params: dict[str, Any], ndv: np.ndarray | None, sizes: np.ndarray) -> bool:
    """The stored filter sizes are those the params give (for the ndv recorded)."""
    if params.get("sizing") != "fixed" and size_rule(params) == "exact" and ndv is not None:
        fpp = params.get("fpp")
        if isinstance(fpp, float) and 0 < fpp < 1:
            return sizing.exact_sizes_hold(ndv, fpp, sizes)
    expect = _expected_sizes(params, ndv, len(sizes))
    return expect is not None and np.array_equal(expect, sizes)


def _expected_sizes(params: dict[str, Any], ndv: np.ndarray | None, n: int) -> np.ndarray | None:
    if params.get("sizing") == "fixed":
        b = params.get("bytes")
        return np.full(n, b, dtype=np.int64) if isinstance(b, int) and b >= sizing.MIN_BYTES and b % 32 == 0 else None
    fpp = params.get("fpp")
    if ndv is None or not isinstance(fpp, float) or not 0 < fpp < 1:
        return None
    rule = size_rule(params)
    if rule not in sizing.INDEX_RULES:
        return None
    return sizing.num_bytes(ndv, fpp, rule)


class SBBFAggregator(IndexAggregator):
    """Tokenize -> hash -> zone -> (distinct count -> size) -> insert, in slices of whole zones.

    Two paths produce the same filters (tested):

    * the tokenizer's fast path (:meth:`Tokenizer.insert_zones` /
      :meth:`Tokenizer.distinct_zones`; the built-ins run one compiled pass
      per slice straight from the Arrow buffers): fixed sizing inserts every
      token, adaptive sizing collects each zone's distinct hashes;
    * the generic path (any tokenizer): ``tokenizer.hash_column`` on the
      slice, then the zone walk / per-zone distinct set over its (row, hash)
      arrays.

    Adaptive sizing then sizes every zone's filter from its distinct count
    (:func:`skipidx.core.sizing.num_bytes` with the params' size rule) and
    inserts only the distinct hashes -- slice by slice in the worker threads,
    straight from the build's reused scratch buffers; the slices' filters are
    concatenated into the part's bank at the end. Slices are whole zones of
    about CHUNK_BYTES of text, so memory stays bounded; they run on `threads`
    threads (default :data:`BUILD_THREADS`; the kernels release the GIL).

    `fused`: None takes the tokenizer's fast path where it has one, False
    never, True always (ValueError where it has none: the tests compare paths).
    """

    def __init__(self, type_name: str, params: dict[str, Any], tokenizer: Tokenizer,
                 fused: bool | None = None, *, threads: int | None = None) -> None:
        self.type_name = type_name
        self.params = params
        self.tokenizer = tokenizer
        self.seed = np.uint64(params["seed"])
        self.fused = fused
        self.threads = threads
        #: granules per group summary (0: none); a build of fewer than two groups' granules
        #: gets none (one group's filter would only repeat its granules')
        self.summary_group = sizing.SUMMARY_GROUP

    def set_summaries(self, build: bool) -> None:
        self.summary_group = sizing.SUMMARY_GROUP if build else 0

    @staticmethod
    def _slices(weight: np.ndarray, limit: int, align: int = 1) -> list[tuple[int, int]]:
        """Zone ranges [z0, z1) of at most `limit` total weight each (at least one zone),
        starting at multiples of `align` zones (then a slice may pass `limit`)."""
        n = weight.shape[0]
        cum = np.cumsum(weight)
        bounds = [0]
        while bounds[-1] < n:
            z0 = bounds[-1]
            base = cum[z0 - 1] if z0 else 0
            z1 = max(int(np.searchsorted(cum, base + limit, side="right")), z0 + 1)
            bounds.append(min(n, -(-z1 // align) * align))
        return list(zip(bounds[:-1], bounds[1:]))

    takes_chunked = True

    def build(self, values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray) -> SBBFGranules:
        # a chunked string column stays chunked: each slice is taken from its chunk (zero
        # copy), and only a slice across chunks is copied (a slice's bytes, not the column's)
        chunked = (isinstance(values, pa.ChunkedArray) and values.num_chunks > 1
                   and _variable_binary(values.type))
        if chunked:
            raw = vals = values
        else:
            raw = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
            vals = plain(raw)
        zs, zl = zones.check_zones(len(vals), zone_start, zone_length)
        n = zs.shape[0]
        nulls = null_counts(vals, zs, zl)
        ends = zs + zl
        fixed = self.params["sizing"] == "fixed"
        tok = self.tokenizer
        fast = self.fused is not False
        t = vals.type
        if chunked:
            lens = pc.binary_length(vals).fill_null(0)
            o = np.zeros(len(vals) + 1, dtype=np.int64)
            if len(vals):
                np.cumsum(np.concatenate([c.to_numpy(zero_copy_only=False) for c in lens.chunks]), out=o[1:])
            weight, limit = o[ends] - o[zs], CHUNK_BYTES
        elif pa.types.is_fixed_size_binary(t):
            weight, limit = zl * t.byte_width, CHUNK_BYTES
        elif _binary_like(t):
            o = np.frombuffer(vals.buffers()[1], dtype=np.int64 if _large(t) else np.int32,
                              count=len(vals) + 1, offset=vals.offset * (8 if _large(t) else 4))
            weight, limit = (o[ends] - o[zs]).astype(np.int64), CHUNK_BYTES
        else:
            weight, limit = zl, CHUNK_ROWS
        group = self.summary_group if n >= 2 * self.summary_group else 0
        slices = self._slices(weight, limit, group or 1) if n else []
        bank = SBBFBank.fixed(n, self.params["bytes"]) if fixed else None
        # (group summaries need each zone's distinct hashes: no direct insert where they are built)
        direct = fixed and not tok.tokens_repeat() and not group
        scratch = _ScratchPool()
        fpp, rule = self.params.get("fpp"), size_rule(self.params)

        def no_fast_path() -> None:
            if self.fused:
                raise ValueError(f"tokenizer {tok.name!r} has no fast path for {t}")

        def run(z0: int, z1: int) -> tuple | None:
            r0, r1 = int(zs[z0]), int(ends[z1 - 1])
            zend = ends[z0:z1] - r0
            if fixed:
                words, boff, nblk = bank.words, bank.block_offset[z0:z1], bank.num_blocks[z0:z1]
            sc = scratch.take()
            try:
                uoffs = None
                piece = vals.slice(r0, r1 - r0)
                if chunked:
                    pieces = [c for c in piece.chunks if len(c)]
                    piece = pieces[0] if len(pieces) == 1 else piece.combine_chunks()
                if fast:
                    if direct:
                        if tok.insert_zones(piece, zend, int(self.seed), words, boff, nblk):
                            return None
                    else:
                        uoffs = tok.distinct_zones(piece, zend, int(self.seed), sc)
                    if uoffs is None:
                        no_fast_path()
                if uoffs is None:
                    rows, hashes = tok.hash_column(piece, int(self.seed))
                    rows = np.ascontiguousarray(rows, dtype=np.int64)
                    hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
                    if direct:
                        kb.insert_by_row(words, boff, nblk, zend, rows, hashes, SALT)
                        return None
                    _, uoffs, sc.table = kb.dedup_by_zone_into(zend, rows, hashes, sc.table,
                                                               sc.reserve(hashes.shape[0] + 1))
                ndv = np.diff(uoffs)
                # the groups' summaries from the same distinct hashes (slices start on group bounds)
                summ = GroupSummary.build_slice(sc.uniq, uoffs, group, fpp, sc) if group else None
                if fixed:
                    # fixed size known up front: insert this slice's distinct hashes now (in the worker)
                    kb.bank_insert_grouped(words, boff, nblk, sc.uniq, uoffs, SALT)
                    return (ndv, summ)
                # adaptive: size, fill and measure this slice's filters here, in the
                # worker, while its distinct hashes are still in the scratch buffer
                nblk = sizing.num_bytes(ndv, fpp, rule) // 32
                boff = np.zeros(nblk.shape[0], dtype=np.int64)
                np.cumsum(nblk[:-1], out=boff[1:])
                words = np.zeros(int(nblk.sum()) * 8, dtype=np.uint32)
                kb.bank_insert_grouped(words, boff, nblk, sc.uniq, uoffs, SALT)
                fill, est = kb.bank_stats(words, boff, nblk)
                return ndv, nblk, words, fill, est, summ
            finally:
                scratch.give(sc)

        results = _run_slices(run, slices, self.threads or BUILD_THREADS)
        fill = est = None
        summary = None
        if group and results and all(r is not None and r[-1] is not None for r in results):
            summary = GroupSummary.from_slices([(z0, r[-1]) for (z0, _), r in zip(slices, results)], n,
                                               sizing.summary_fpp(fpp))
        if direct:
            ndv = None
        elif fixed:
            ndv = np.concatenate([r[0] for r in results]) if results else np.zeros(0, np.int64)
        else:
            ndv, nblk, words, fill, est = (
                [np.concatenate([r[k] for r in results]) for k in range(5)] if results
                else [np.zeros(0, t) for t in (np.int64, np.int64, np.uint32, np.float64, np.float64)])
            boff = np.zeros(nblk.shape[0], dtype=np.int64)
            np.cumsum(nblk[:-1], out=boff[1:])
            bank = SBBFBank(words, boff, nblk)
        g = SBBFGranules(self.type_name, self.params, tok.name, str(tok.version), zs, zl, nulls, bank, ndv, fill, est)
        g.summary = summary
        return g


class _ScratchPool:
    """Scratch buffers (:class:`DistinctScratch`) of one build, reused by every slice it runs:
    a fresh distinct-hash buffer per slice paid its page faults on every slice; a
    reused one is faulted in once per thread and build. At most one per build thread."""

    def __init__(self) -> None:
        self._free: list[kb.DistinctScratch] = []
        self._lock = threading.Lock()

    def take(self) -> kb.DistinctScratch:
        with self._lock:
            return self._free.pop() if self._free else kb.DistinctScratch()

    def give(self, sc: kb.DistinctScratch) -> None:
        with self._lock:
            self._free.append(sc)


def _run_slices(run, slices: list[tuple[int, int]], threads: int) -> list:
    """run(z0, z1) for every slice, on up to `threads` threads, results in slice order."""
    threads = min(threads, len(slices))
    if threads <= 1:
        return [run(z0, z1) for z0, z1 in slices]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads) as ex:
        return list(ex.map(lambda zz: run(*zz), slices))


def _variable_binary(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
        or pa.types.is_large_binary(t)


def _binary_like(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def _large(t: pa.DataType) -> bool:
    return pa.types.is_large_string(t) or pa.types.is_large_binary(t)


class SBBFCondition(IndexCondition):
    """A TokenRequirement checked against every zone's filter in one kernel call.

    Positive atoms: (may hold all tokens of some alternative, True).
    Negated atoms (``!=``, NOT IN, NOT LIKE): the requirement describes the
    positive predicate P, and NOT P can be false only where P can be true:
    (True, may hold P's tokens) -- ClickHouse's (1, contains). Such an atom
    never prunes alone (``can_prune`` False) but does under an outer NOT.
    NULL rows are neither true nor false, so an all-NULL zone answers
    (False, False) to every value atom. Saturated zones answer maybe.
    """

    def __init__(self, atom: Atom, requirement: TokenRequirement | None, seed: int, reason: str | None = None) -> None:
        self.atom = atom
        self.requirement = requirement
        self.seed = np.uint64(seed)
        self.reason = reason
        self.can_prune = requirement is not None and not requirement.negated
        # NOT (x != v) prunes where no row can equal v
        self.can_prove_true = requirement is not None and requirement.negated
        self._hashes: tuple[np.ndarray, np.ndarray] | None = None
        if requirement is not None:
            tokens = [t for group in requirement.any_of for t in group]
            lens = np.array([len(t) for t in tokens], dtype=np.int64)
            toffs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
            data = np.frombuffer(b"".join(tokens), dtype=np.uint8) if tokens else np.zeros(0, np.uint8)
            hashes = xxh64_spans(data, toffs, self.seed)
            goffs = np.concatenate([[0], np.cumsum([len(g) for g in requirement.any_of])]).astype(np.int64)
            self._hashes = (hashes, goffs)

    def describe(self) -> str:
        d = self.__dict__.get("_describe")
        if d is None:
            d = self._describe = self._describe_text()
        return d

    def _describe_text(self) -> str:
        text = atom_text(self.atom)
        if self.requirement is None:
            return f"{text}: {self.reason or 'cannot use the index'}"
        groups = [("{" + ", ".join(sql_literal(t)[1:-1] for t in g) + "}") for g in self.requirement.any_of]
        what = f"all of {groups[0]}" if len(groups) == 1 else "any of " + " | ".join(groups)
        if not groups:
            what = "no value can match"
        if self.requirement.negated:
            return f"{text}: negation of [{what}] (prunes only under NOT)"
        return f"{text}: {what}"

    def mask(self, granules: IndexGranules) -> BoolMask:
        return self._mask(granules, None)[0]

    def mask_at(self, granules: IndexGranules, zones: np.ndarray) -> BoolMask:
        """Only the filters of `zones` are probed (the granules earlier indexes kept)."""
        return self._mask(granules, np.asarray(zones, dtype=np.int64))[0]

    def mask_counted(self, granules: IndexGranules, zones: np.ndarray | None = None) -> tuple[BoolMask, int, int]:
        return self._mask(granules, None if zones is None else np.asarray(zones, dtype=np.int64))

    def _mask(self, granules: IndexGranules, zones: np.ndarray | None) -> tuple[BoolMask, int, int]:
        g = granules
        assert isinstance(g, SBBFGranules)
        non_null, has_null = g.non_null, g.has_null
        if zones is not None:
            non_null, has_null = non_null[zones], has_null[zones]
        n = non_null.shape[0]
        if self.atom.func in ("isNull", "isNotNull"):
            return null_mask(self.atom.func, has_null, non_null), 0, 0
        if self.requirement is None or self._hashes is None:
            return BoolMask.unknown(n), 0, 0
        hashes, goffs = self._hashes
        maybe, passed, probed = g.maybe_contains_grouped(zones, hashes, goffs)
        maybe = maybe | (g.saturated if zones is None else g.saturated[zones])
        maybe &= non_null     # a new array: maybe_contains' result | saturated
        if self.requirement.negated:
            return BoolMask(non_null.copy(), maybe), passed, probed
        return BoolMask(maybe, non_null.copy()), passed, probed


#: Bound SBBF conditions by (subject, tokenizer, column type, seed, atom).
#: Binding an atom encodes, tokenizes and hashes its constants (an IN list
#: of 10 ids: tens of microseconds of Python and Arrow per index). The
#: result depends only on that key, so ``bloom_filter`` and ``sbbf('value')``
#: on one column share one condition, and a repeated lookup reuses it.
#: Conditions are immutable once built (``mask`` reads them only), so sharing
#: them across queries and threads is safe.
_CONDITIONS = LRU(1024, "indexes.sbbf_conditions", "bound SBBF conditions, by (subject, tokenizer, type, seed, atom)")


class _SBBFIndexType(IndexType):
    """Shared plumbing of the four SBBF index types."""

    sizing: ClassVar[str]

    accepts_stored_params: ClassVar[bool] = True

    def __init__(self, definition: IndexDef, column_type: pa.DataType,
                 stored_params: dict[str, Any] | None = None) -> None:
        """`stored_params`: the params the table recorded at CREATE (IndexMeta.params), if the
        caller has them; recorded params without ``size_rule`` (a table made before it existed)
        keep Arrow's rule for new parts too, rather than the DDL's new default."""
        super().__init__(definition, column_type)
        if stored_params is None:
            self.params = self.validate(definition, column_type)
        else:
            with stored_definitions():
                self.params = self.validate(definition, column_type)
        if (stored_params is not None and "size_rule" in self.params and "size_rule" not in stored_params):
            self.params = {k: v for k, v in self.params.items() if k != "size_rule"}
        self.tokenizer = get_tokenizer(self.params["tokenizer"], **self.params["tokenizer_params"])

    @classmethod
    def _make_tokenizer(cls, definition: IndexDef, name: str, params: dict[str, Any],
                        column_type: pa.DataType) -> Tokenizer:
        try:
            tok = get_tokenizer(name, **params)
        except SkipidxError as e:
            raise index_error(definition, e.message) from None
        except TypeError as e:
            raise index_error(definition, f"bad parameters for tokenizer {name!r}: {e}") from None
        # Ask the tokenizer whether it can hash this column type (an empty column costs no
        # data work, but loads its kernels: skipped for definitions validated when stored).
        from skipidx.indexes._common import probe_tokenizers, value_type

        if not probe_tokenizers():
            return tok
        try:
            tok.hash_column(pa.nulls(0, value_type(column_type)), 0)
        except (SkipidxError, pa.ArrowException, TypeError, ValueError) as e:
            msg = e.message if isinstance(e, SkipidxError) else str(e)
            raise index_error(definition, f"tokenizer {name!r} cannot index column type {column_type}: {msg}") from None
        return tok

    def aggregator(self, threads: int | None = None) -> SBBFAggregator:
        return SBBFAggregator(self.name, self.params, self.tokenizer, threads=threads)

    def granules_from_arrow(self, table: pa.Table) -> SBBFGranules:
        g = SBBFGranules.from_arrow(table, self.name, json.loads(json.dumps(self.params)))
        if g.tokenizer_version != str(self.tokenizer.version):
            raise zones.CorruptionError(
                f"index table: built by tokenizer {g.tokenizer!r} version {g.tokenizer_version}, "
                f"this build has version {self.tokenizer.version}")
        return g

    def condition(self, atom: Atom) -> IndexCondition | None:
        """The condition for `atom` (None: not this index's subject), shared through
        :data:`_CONDITIONS` by every index and query that would build the same one."""
        d = self.definition
        if atom.column != d.column:
            return None    # the common case, before any key is built
        memo = self.__dict__.get("_memo_key")
        if memo is None:
            memo = self._memo_key = (
                d.column, d.expr_func, type(self.tokenizer).__module__, type(self.tokenizer).__qualname__,
                self.params["tokenizer"], str(self.tokenizer.version),
                # the tokenizer's own params AND the DDL's: a plugin tokenizer whose
                # `params` is empty is configured by the DDL's (n = 3 vs n = 5)
                json.dumps([self.tokenizer.params or {}, self.params.get("tokenizer_params")],
                           sort_keys=True, default=repr),
                str(self.column_type), int(self.params["seed"]))
        try:
            # repr: equal but differently typed constants (1, 1.0, True; 0.0, -0.0) are
            # equal atoms to Python, not to the encoder
            key = (memo, atom, repr(atom.args))
            hash(key)
        except TypeError:
            return self._condition(atom)
        found = _CONDITIONS.get(key)
        if found is not None:
            return found[0]
        cond = self._condition(atom)
        _CONDITIONS.put(key, (cond,))
        return cond

    def _condition(self, atom: Atom) -> IndexCondition | None:
        d = self.definition
        if null_subject_matches(d, atom):
            return _NullnessCondition(atom)
        func, args = atom.func, atom.args
        if func in _CASE_INSENSITIVE:
            # hasTokenCaseInsensitive(x, s) is hasToken(lower(x), lower(s)): only an
            # index on lower(x) can answer it (an index on x holds the original case).
            if not (d.expr_func == "lower" and atom.column == d.column and atom.expr_func in (None, "lower")):
                return None
            if func == "ilike" and not _ilike_is_ascii_folding(args[0] if args else None):
                return None
            func, args = _CASE_INSENSITIVE[func], tuple(_ascii_lower(a) for a in args)
        elif not subject_matches(d, atom):
            return None
        if func in ("equals", "notEquals") and (not args or args[0] is None):
            # x = NULL is NULL for every row: nothing can be true or false
            return _NullCondition(atom)
        if func in ("in", "notIn") and args and isinstance(args[0], tuple):
            args = (tuple(v for v in args[0] if v is not None),) + tuple(args[1:])
        req = self.tokenizer.requirement(func, args, self.column_type, expr=d.expr_func)
        if req is not None and any(len(group) == 0 for group in req.any_of):
            req = None   # an alternative that needs no token: always maybe
        if req is None:
            if func in _PATTERN_FUNCS and self.params["tokenizer"] != "value":
                return SBBFCondition(atom, None, self.params["seed"], reason=_PATTERN_FUNCS[func])
            return None
        return SBBFCondition(atom, req, self.params["seed"])


class _NullnessCondition(IndexCondition):
    """``IS [NOT] NULL`` from the per-zone NULL counts (exact)."""

    can_prove_true = True

    def describe(self) -> str:
        return f"{atom_text(self.atom)}: has_null"

    def mask(self, granules: IndexGranules) -> BoolMask:
        return null_mask(self.atom.func, granules.has_null, granules.non_null)


class _NullCondition(IndexCondition):
    """``x = NULL`` / ``x != NULL``: NULL for every row, so (False, False) everywhere."""

    can_prove_true = True

    def describe(self) -> str:
        return f"{atom_text(self.atom)}: comparison with NULL is never true"

    def mask(self, granules: IndexGranules) -> BoolMask:
        n = len(granules)
        return BoolMask(np.zeros(n, bool), np.zeros(n, bool))


def _no_kwargs(definition: IndexDef) -> None:
    if definition.kwargs:
        raise index_error(definition, f"{definition.type_name} takes no key = value parameters")


def _round_bytes(definition: IndexDef, b: Any) -> int:
    b = int_arg(definition, b, "the size of bloom filter (bytes)", minimum=1, maximum=sizing.MAX_BYTES)
    return (b + 31) // 32 * 32


def _clickhouse_args(definition: IndexDef, column_type: pa.DataType, names: tuple[str, ...]) -> tuple:
    """The positional arguments of tokenbf_v1 / ngrambf_v1 (a String column, exactly `names`)."""
    _no_kwargs(definition)
    if len(definition.args) != len(names):
        raise index_error(definition, f"{definition.type_name} must have exactly {len(names)} arguments "
                                      f"({', '.join(names)}), got {len(definition.args)}")
    _string_column(definition, column_type)
    return tuple(definition.args)


def _fixed_size(definition: IndexDef, b: Any, h: Any, s: Any) -> dict[str, Any]:
    """Params of a fixed-size filter from ClickHouse's (bytes, hashes, seed)."""
    return {"bytes": _round_bytes(definition, b),
            "hashes": int_arg(definition, h, "the number of hash functions", minimum=1, maximum=255),
            "seed": int_arg(definition, s, "seed", minimum=0, maximum=2**64 - 1),
            "sizing": "fixed"}


def _string_column(definition: IndexDef, column_type: pa.DataType) -> None:
    if not is_string_like(column_type):
        raise index_error(definition, f"{definition.type_name} can only be used with String, FixedString and "
                                      f"LowCardinality(String) columns, not {column_type}")


@register_index_type
class BloomFilterIndex(_SBBFIndexType):
    """``bloom_filter([fpp] [, seed = n])``: whole values, Parquet hashing, sized per zone from its
    distinct count. ``seed`` (default 0, Parquet's: the filter then equals the file's own) is
    for filters that must not share a Parquet filter's false positives (sidecars)."""

    name = "bloom_filter"
    version = 1

    @classmethod
    def validate(cls, definition: IndexDef, column_type: pa.DataType) -> dict[str, Any]:
        kwargs = dict(definition.kwargs)
        seed = int_arg(definition, kwargs.pop("seed", 0), "seed", minimum=0, maximum=2**64 - 1)
        if kwargs or len(dict(definition.kwargs)) != len(definition.kwargs):
            raise index_error(definition, "bloom_filter takes no key = value parameters but seed")
        if len(definition.args) > 1:
            raise index_error(definition, f"bloom_filter takes at most one argument (fpp), got {len(definition.args)}")
        fpp = fpp_arg(definition, definition.args[0]) if definition.args else 0.025
        cls._make_tokenizer(definition, "value", {}, column_type)
        return {"fpp": fpp, "seed": seed, "sizing": "ndv", "tokenizer": "value", "tokenizer_params": {}}


@register_index_type
class TokenBFIndex(_SBBFIndexType):
    """``tokenbf_v1(bytes, hashes, seed)``: tokens, fixed-size filters."""

    name = "tokenbf_v1"
    version = 1

    @classmethod
    def validate(cls, definition: IndexDef, column_type: pa.DataType) -> dict[str, Any]:
        b, h, s = _clickhouse_args(definition, column_type, ("bytes", "hashes", "seed"))
        params = {**_fixed_size(definition, b, h, s), "tokenizer": "token", "tokenizer_params": {}}
        cls._make_tokenizer(definition, "token", {}, column_type)
        return params


@register_index_type
class NgramBFIndex(_SBBFIndexType):
    """``ngrambf_v1(n, bytes, hashes, seed)``: n-grams of code points, fixed-size filters."""

    name = "ngrambf_v1"
    version = 1

    @classmethod
    def validate(cls, definition: IndexDef, column_type: pa.DataType) -> dict[str, Any]:
        n, b, h, s = _clickhouse_args(definition, column_type, ("n", "bytes", "hashes", "seed"))
        n = int_arg(definition, n, "ngram length", minimum=1, maximum=255)
        params = {"n": n, **_fixed_size(definition, b, h, s), "tokenizer": "ngram", "tokenizer_params": {"n": n}}
        tok = cls._make_tokenizer(definition, "ngram", {"n": n}, column_type)
        params["tokenizer_params"] = tok.params or {"n": n}
        return params


@register_index_type
class AdaptiveSBBFIndex(_SBBFIndexType):
    """``sbbf(tokenizer, key = value, ...)``: any tokenizer, each zone sized from its distinct tokens.

    Keys of its own: ``fpp`` (default 0.01), ``seed`` (default 0),
    ``size_rule`` ('exact' (default), 'parquet' or 'lance'; see the module docstring); every
    other key is a tokenizer parameter (e.g. ``n`` for ngram). The tokenizer
    may also be given as ``tokenizer = 'name'``.
    """

    name = "sbbf"
    version = 1

    @classmethod
    def validate(cls, definition: IndexDef, column_type: pa.DataType) -> dict[str, Any]:
        kwargs = dict(definition.kwargs)
        if len(kwargs) != len(definition.kwargs):
            raise index_error(definition, "a key is given twice")
        args = list(definition.args)
        if len(args) > 1:
            raise index_error(definition, f"sbbf takes one positional argument (the tokenizer), got {len(args)}")
        if args and "tokenizer" in kwargs:
            raise index_error(definition, "the tokenizer is given twice")
        name = args[0] if args else kwargs.pop("tokenizer", None)
        kwargs.pop("tokenizer", None)
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        if not isinstance(name, str) or not name:
            raise index_error(definition, "sbbf needs a tokenizer name, e.g. sbbf('ngram', n = 3)")
        fpp = fpp_arg(definition, kwargs.pop("fpp", 0.01), "fpp")
        seed = int_arg(definition, kwargs.pop("seed", 0), "seed", minimum=0, maximum=2**64 - 1)
        rule = kwargs.pop("size_rule", "exact")
        if isinstance(rule, bytes):
            rule = rule.decode("utf-8", "replace")
        if rule not in sizing.INDEX_RULES:
            raise index_error(definition, f"size_rule must be one of {', '.join(repr(r) for r in sizing.INDEX_RULES)}, "
                                          f"got {rule!r}")
        tok_params = {k: (v.decode("utf-8") if isinstance(v, bytes) else v) for k, v in kwargs.items()}
        tok = cls._make_tokenizer(definition, name, tok_params, column_type)
        return {"fpp": fpp, "seed": seed, "sizing": "ndv", "size_rule": rule, "tokenizer": name,
                "tokenizer_params": tok.params if tok.params else tok_params}


SBBF_TYPES = ("bloom_filter", "tokenbf_v1", "ngrambf_v1", "sbbf")
