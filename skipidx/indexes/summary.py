"""Group summaries of the SBBF indexes: one Bloom filter per group of consecutive granules.

A part of ~12k index granules costs a lookup ~12k filter probes, each a cache
miss once the filters outgrow the cache. A summary filter holds every
distinct hash of a group of :data:`skipidx.core.sizing.SUMMARY_GROUP`
granules (built from the same distinct hashes as the granules' filters, sized
for the group's distinct count by :func:`skipidx.core.sizing.summary_num_bytes`),
so a lookup probes one filter per group and then only the granules of the
groups that may hold its value (ClickHouse issue #84974's hierarchy). An IN
list is checked value by value: a granule is probed for a value only where
that value's group passed.

A granule's answer with summaries is its flat answer AND its group's, and a
group's filter holds every hash of its granules, so a granule with a match is
never dropped, and the kept set is within the flat check's.

On disk: the summary of a build chunk rides in the custom metadata of the
chunk's record batch in the index file (key :data:`META_SUMMARY`, an Arrow IPC
stream of one row per group: first zone relative to the batch, zone count,
distinct count, filter bytes; :data:`SUMMARY_VERSION` in its schema metadata),
so the granule rows keep the Lance zone schema and files without it read as
before. A summary that does not check out is dropped (the flat check answers).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from skipidx.core import sizing
from skipidx.core._kernels import build as kb
from skipidx.core._kernels.sbbf import SALT
from skipidx.core.arrays import to_numpy
from skipidx.core.sbbf import SBBFBank, bank_check_pairs

META_SUMMARY = b"skipidx.summary"
META_SUMMARY_VERSION = b"skipidx.summary_version"
META_SUMMARY_FPP = b"skipidx.summary_fpp"
#: xxh64 (hex) of the stored summary's bytes: a summary whose bits changed would answer
#: "no" for present values, so its own check guards it beside the file's
META_SUMMARY_XXH64 = b"skipidx.summary_xxh64"
SUMMARY_VERSION = 1

#: A check uses the summary only when it would probe at least this many (granule,
#: hash) pairs flat: below it the flat probes cost less than the extra steps.
SUMMARY_MIN_PROBES = 1 << 13

_SCHEMA_FIELDS = [
    pa.field("first_zone", pa.uint64(), nullable=False),
    pa.field("zones", pa.uint64(), nullable=False),
    pa.field("ndv", pa.uint64(), nullable=False),
    pa.field("bloom_filter_data", pa.binary(), nullable=False),
]


class GroupSummary:
    """The summary filters of one index's granules: group k covers zones
    ``first[k] .. first[k] + count[k]``; zones in no group are checked flat."""

    __slots__ = ("first", "count", "ndv", "bank", "fpp", "n_zones", "_zone_group")

    def __init__(self, first: np.ndarray, count: np.ndarray, ndv: np.ndarray, bank: SBBFBank, fpp: float,
                 n_zones: int) -> None:
        self.first = first
        self.count = count
        self.ndv = ndv
        self.bank = bank
        self.fpp = float(fpp)
        self.n_zones = int(n_zones)
        self._zone_group: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.first.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.bank.words.nbytes)

    @property
    def zone_group(self) -> np.ndarray:
        """int64 per zone: its group, -1 for a zone no group covers."""
        zg = self._zone_group
        if zg is None:
            zg = np.full(self.n_zones, -1, dtype=np.int64)
            zg[_expand(self.first, self.count)] = np.repeat(np.arange(len(self), dtype=np.int64), self.count)
            self._zone_group = zg
        return zg

    # ---- building
    @staticmethod
    def build_slice(uniq: np.ndarray, uoffs: np.ndarray, group: int, index_fpp: float | None,
                    scratch: "kb.DistinctScratch") -> tuple:
        """The groups of a slice of zones from its zones' distinct hashes (``uniq[uoffs[z]:uoffs[z+1]]``
        for zone z of the slice; groups of `group` zones from the slice's first):
        (first, count, ndv, num_blocks, words), zones relative to the slice. Summaries are sized
        for their distinct count (never saturated), so no group is exempt from the check."""
        nz = uoffs.shape[0] - 1
        first = np.arange(0, nz, group, dtype=np.int64)
        count = np.minimum(first + group, nz) - first
        # a group's distinct hashes: the zones' distinct hashes deduplicated again per group
        zone_of = np.repeat(np.arange(nz, dtype=np.int64), np.diff(uoffs))
        out = np.empty(int(uoffs[-1]) + 1, dtype=np.uint64)
        u, goffs, scratch.table = kb.dedup_by_zone_into(first + count, zone_of, uniq[:int(uoffs[-1])],
                                                        scratch.table, out)
        ndv = np.diff(goffs)
        nblk = sizing.summary_num_bytes(ndv, index_fpp) // 32
        boff = np.zeros(nblk.shape[0], dtype=np.int64)
        np.cumsum(nblk[:-1], out=boff[1:])
        words = np.zeros(int(nblk.sum()) * 8, dtype=np.uint32)
        kb.bank_insert_grouped(words, boff, nblk, out[:u], goffs, SALT)
        return first, count, ndv, nblk, words

    @classmethod
    def from_slices(cls, pieces: list[tuple[int, tuple]], n_zones: int, fpp: float) -> "GroupSummary":
        """One summary from the slices' :meth:`build_slice` results, each with its first zone."""
        first = np.concatenate([p[0] + z0 for z0, p in pieces]) if pieces else np.zeros(0, np.int64)
        count, ndv, nblk, words = (
            [np.concatenate([p[k] for _, p in pieces]) for k in range(1, 5)] if pieces
            else [np.zeros(0, t) for t in (np.int64, np.int64, np.int64, np.uint32)])
        boff = np.zeros(nblk.shape[0], dtype=np.int64)
        np.cumsum(nblk[:-1], out=boff[1:])
        return cls(first, count, ndv, SBBFBank(words, boff, nblk), fpp, n_zones)

    @classmethod
    def concat(cls, parts: list[tuple[int, "GroupSummary | None"]], n_zones: int) -> "GroupSummary | None":
        """The summaries of consecutive granule ranges (each with its first zone) as one;
        a range without a summary is left uncovered (checked flat). None if none has one."""
        have = [(z0, s) for z0, s in parts if s is not None and len(s)]
        if not have:
            return None
        base = np.zeros(len(have), dtype=np.int64)
        np.cumsum([s.bank.words.shape[0] // 8 for _, s in have[:-1]], out=base[1:])
        bank = SBBFBank(np.concatenate([s.bank.words for _, s in have]),
                        np.concatenate([s.bank.block_offset + b for (_, s), b in zip(have, base)]),
                        np.concatenate([s.bank.num_blocks for _, s in have]))
        return cls(np.concatenate([s.first + z0 for z0, s in have]), np.concatenate([s.count for _, s in have]),
                   np.concatenate([s.ndv for _, s in have]), bank, max(s.fpp for _, s in have), n_zones)

    # ---- the file
    def metadata(self) -> dict[bytes, bytes] | None:
        """The record-batch custom metadata that stores this summary (zones relative to the batch)."""
        if not len(self):
            return None
        offs = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(self.bank.num_blocks * 32, out=offs[1:])
        data = pa.py_buffer(self.bank.words.astype("<u4", copy=False).view(np.uint8))
        filt = pa.Array.from_buffers(pa.binary(), len(self), [None, pa.py_buffer(offs.astype(np.int32)), data])
        schema = pa.schema(_SCHEMA_FIELDS, metadata={META_SUMMARY_VERSION: str(SUMMARY_VERSION).encode(),
                                                     META_SUMMARY_FPP: repr(self.fpp).encode()})
        t = pa.Table.from_arrays([pa.array(self.first.astype(np.uint64), pa.uint64()),
                                  pa.array(self.count.astype(np.uint64), pa.uint64()),
                                  pa.array(self.ndv.astype(np.uint64), pa.uint64()), filt], schema=schema)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema) as w:
            w.write_table(t)
        payload = sink.getvalue().to_pybytes()
        return {META_SUMMARY_VERSION: str(SUMMARY_VERSION).encode(), META_SUMMARY: payload,
                META_SUMMARY_XXH64: _digest(payload)}

    @classmethod
    def from_pieces(cls, pieces: list[tuple[int, int, dict]], n_zones: int) -> "GroupSummary | None":
        """The summary stored in an index file: per record batch (first zone, zones, custom
        metadata). None when no batch has one, or any does not check out (a damaged
        summary is never trusted; the flat check still answers)."""
        parts: list[tuple[int, GroupSummary | None]] = []
        for z0, nz, md in pieces:
            if not md or META_SUMMARY not in md:
                continue
            try:
                s = _decode(md, nz)
            except (pa.ArrowException, OSError, ValueError, TypeError, KeyError, IndexError):
                return None
            if s is None:
                return None
            parts.append((z0, s))
        return cls.concat(parts, n_zones) if parts else None

    # ---- checking
    def check(self, words: np.ndarray, block_offset: np.ndarray, num_blocks: np.ndarray,
              hashes: np.ndarray, goffs: np.ndarray, zones: np.ndarray | None) -> tuple[np.ndarray, int, int]:
        """Per asked zone (all, or the sorted ids `zones`): some alternative's hashes
        (``hashes[goffs[a]:goffs[a+1]]``) may all be in the zone's filter (the bank
        `words`/`block_offset`/`num_blocks`), probing a zone for an alternative only
        where its group's filter passes that alternative. Also (groups passing,
        groups probed)."""
        nz = self.n_zones if zones is None else int(zones.shape[0])
        ng = goffs.shape[0] - 1
        zg = self.zone_group
        if zones is None:
            gids = np.arange(len(self), dtype=np.int64)
            uncovered = np.flatnonzero(zg < 0)
        else:
            gz = zg[zones]
            gids = np.unique(gz[gz >= 0])
            uncovered = zones[gz < 0]
        out = np.zeros(nz, dtype=bool)
        if ng <= 0:
            return out, 0, int(gids.shape[0])
        nh = hashes.shape[0]
        sb = self.bank
        hit = bank_check_pairs(sb.words, sb.block_offset, sb.num_blocks, np.repeat(gids, nh),
                               np.tile(hashes, gids.shape[0])).reshape(gids.shape[0], nh)
        single = ng == nh
        alt_pass = hit if single else np.logical_and.reduceat(hit, goffs[:-1], axis=1)
        gi, ai = np.nonzero(alt_pass)
        passing = int(np.count_nonzero(alt_pass.any(axis=1))) if gids.shape[0] else 0
        g = gids[gi]
        if zones is None:
            zone_ids = _expand(self.first[g], self.count[g])
            alts = np.repeat(ai, self.count[g])
        else:
            lo = np.searchsorted(zones, self.first[g])
            hi = np.searchsorted(zones, self.first[g] + self.count[g])
            zone_ids = zones[_expand(lo, hi - lo)]
            alts = np.repeat(ai, hi - lo)
        if uncovered.shape[0]:
            zone_ids = np.concatenate([zone_ids, np.repeat(uncovered, ng)])
            alts = np.concatenate([alts, np.tile(np.arange(ng, dtype=np.int64), uncovered.shape[0])])
        if zone_ids.shape[0] == 0:
            return out, passing, int(gids.shape[0])
        if single:
            ok = bank_check_pairs(words, block_offset, num_blocks, zone_ids, hashes[alts])
        else:
            lens = (goffs[1:] - goffs[:-1])[alts]
            probe = bank_check_pairs(words, block_offset, num_blocks, np.repeat(zone_ids, lens),
                                     hashes[_expand(goffs[alts], lens)])
            starts = np.zeros(lens.shape[0], dtype=np.int64)
            np.cumsum(lens[:-1], out=starts[1:])
            ok = np.logical_and.reduceat(probe, starts)
        hits = zone_ids[ok]
        out[hits if zones is None else np.searchsorted(zones, hits)] = True
        return out, passing, int(gids.shape[0])


def _expand(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(start[i], start[i] + length[i])`` (int64)."""
    length = np.asarray(length, dtype=np.int64)
    total = int(length.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(length)
    shift = np.repeat(np.asarray(start, dtype=np.int64) - (ends - length), length)
    return np.arange(total, dtype=np.int64) + shift


def _digest(payload: bytes) -> bytes:
    import xxhash

    return xxhash.xxh64_hexdigest(payload).encode()


def _decode(md: dict, n_zones: int) -> GroupSummary | None:
    """One batch's summary (zones relative to the batch), or None if it does not check out."""
    if md.get(META_SUMMARY_VERSION) != str(SUMMARY_VERSION).encode() \
            or md.get(META_SUMMARY_XXH64) != _digest(md[META_SUMMARY]):
        return None
    t = pa.ipc.open_stream(pa.BufferReader(md[META_SUMMARY])).read_all()
    if t.schema.remove_metadata() != pa.schema(_SCHEMA_FIELDS) or t.num_rows == 0:
        return None
    t.validate(full=True)
    smd = t.schema.metadata or {}
    if smd.get(META_SUMMARY_VERSION) != str(SUMMARY_VERSION).encode():
        return None
    fpp = float(smd.get(META_SUMMARY_FPP, b"nan").decode("ascii", "replace"))
    if not 0.0 < fpp < 1.0:
        return None
    cols = [c.combine_chunks() for c in t.columns]
    if any(c.null_count for c in cols):
        return None
    first, count, ndv = (to_numpy(c).astype(np.int64) for c in cols[:3])
    if np.any(count <= 0) or first[0] < 0 or np.any(first[1:] != first[:-1] + count[:-1]) \
            or int(first[-1] + count[-1]) > n_zones:
        return None
    filt = cols[3]
    offs = np.frombuffer(filt.buffers()[1], dtype=np.int32, count=len(filt) + 1, offset=filt.offset * 4)
    sizes = np.diff(offs.astype(np.int64))
    if not np.array_equal(sizes, sizing.num_bytes(ndv, fpp, sizing.SUMMARY_RULE)):
        return None
    bank = SBBFBank.from_arrow(filt)
    return GroupSummary(first, count, ndv, bank, fpp, n_zones)
