"""The filter zoo: every per-granule membership structure on the same column, tokenizer and queries.

For one column cut into granules of `rows_per_granule` rows and one tokenizer,
each filter is built over every granule's distinct token hashes (64-bit xxh64,
the engine's hashes) and probed with

* present tokens (sampled from the data, seeded): granules kept against the
  ideal (granules that hold the token, from the exact sets);
* absent tokens (random strings not in the column): every keep is a false
  positive, so FPP measured = keeps / (probes x granules), next to the
  filter's analytic FPP (the mean over granules of its per-granule value)
  and an interval (`fpp_interval`: Wilson, widened for probes whose
  granules share false positives).

Filters: SBBF sized per granule (``parquet`` and ``exact`` rules of
`skipidx.core.sizing`), fixed-size SBBF (tokenbf_v1's), ClickHouse's classic
Bloom filter (k probes over m bits, positions ``h1 + i*h2 + i*i`` as its
``BloomFilter``), binary fuse / xor filters (the C library bundled with
`pyfusefilter`, fed the same 64-bit hashes), exact per-granule hash sets, and
the ``text`` index (built by the engine; bytes of its files, kept from its
pruning).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError


@dataclass
class GranuleSets:
    """Distinct token hashes of every granule: ``hashes[bounds[g]:bounds[g+1]]`` sorted."""
    hashes: np.ndarray
    bounds: np.ndarray
    rows_per_granule: int

    @property
    def n_granules(self) -> int:
        return int(self.bounds.shape[0] - 1)

    @property
    def ndv(self) -> np.ndarray:
        return np.diff(self.bounds)

    @property
    def granule_ids(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_granules, dtype=np.int64), self.ndv)


def granule_sets(values: pa.Array | pa.ChunkedArray, tokenizer, rows_per_granule: int) -> GranuleSets:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if rows_per_granule < 1:
        raise SkipidxError(f"rows_per_granule must be >= 1, got {rows_per_granule}")
    rows, hashes = tokenizer.hash_column(values, 0)
    g = rows // rows_per_granule
    order = np.lexsort((hashes, g))
    g, h = g[order], hashes[order]
    keep = np.ones(h.shape[0], dtype=bool)
    keep[1:] = (g[1:] != g[:-1]) | (h[1:] != h[:-1])
    g, h = g[keep], h[keep]
    n_g = (len(values) + rows_per_granule - 1) // rows_per_granule
    bounds = np.searchsorted(g, np.arange(n_g + 1)).astype(np.int64)
    return GranuleSets(np.ascontiguousarray(h), bounds, rows_per_granule)


# ----------------------------------------------------------------------------- filters
# Each filter: build(sets) -> None; nbytes; keep(probe_hashes) -> bool[n_probes, n_granules];
# analytic_fpp(sets) -> float (mean over granules).

class SbbfAdaptive:
    family = "sbbf per granule"

    def __init__(self, fpp: float, rule: str = "parquet"):
        self.fpp, self.rule = float(fpp), rule
        self.name = f"sbbf {rule} fpp={fpp:g}"

    def build(self, s: GranuleSets) -> None:
        from skipidx.core.sbbf import SBBFBank
        from skipidx.core.sizing import num_bytes

        self.bank = SBBFBank.from_num_bytes(num_bytes(s.ndv, self.fpp, self.rule))
        self.bank.insert(s.granule_ids, s.hashes)

    @property
    def nbytes(self) -> int:
        return int(self.bank.nbytes)

    def keep(self, probes: np.ndarray) -> np.ndarray:
        return self.bank.check_matrix(probes).T

    def analytic_fpp(self, s: GranuleSets) -> float:
        return float(self.bank.fpp_estimates(s.ndv).mean())


class SbbfFixed(SbbfAdaptive):
    family = "sbbf fixed"

    def __init__(self, num_bytes: int):
        self.num_bytes = int(num_bytes)
        self.name = f"sbbf fixed {num_bytes} B"

    def build(self, s: GranuleSets) -> None:
        from skipidx.core.sbbf import SBBFBank

        self.bank = SBBFBank.fixed(s.n_granules, self.num_bytes)
        self.bank.insert(s.granule_ids, s.hashes)


class ClassicBloom:
    """ClickHouse's tokenbf_v1 filter: m = 8*bytes bits, k positions per token."""
    family = "classic bloom"

    def __init__(self, num_bytes: int, k: int):
        self.num_bytes, self.k = int(num_bytes), int(k)
        self.m = 8 * self.num_bytes
        self.name = f"classic bloom {num_bytes} B k={k}"

    def _positions(self, h: np.ndarray) -> np.ndarray:
        h1 = (h & np.uint64(0xFFFFFFFF)).astype(np.uint64)
        h2 = (h >> np.uint64(32)).astype(np.uint64)
        i = np.arange(self.k, dtype=np.uint64)
        pos = h1[:, None] + i[None, :] * h2[:, None] + i[None, :] * i[None, :]
        return (pos % np.uint64(self.m)).astype(np.int64)          # [n, k]

    def build(self, s: GranuleSets) -> None:
        self.bits = np.zeros((s.n_granules, self.m), dtype=bool)
        pos = self._positions(s.hashes)
        self.bits[np.repeat(s.granule_ids, self.k), pos.reshape(-1)] = True

    @property
    def nbytes(self) -> int:
        return self.bits.shape[0] * self.num_bytes

    def keep(self, probes: np.ndarray) -> np.ndarray:
        pos = self._positions(probes)                                # [p, k]
        return self.bits[:, pos].all(axis=2).T                       # [p, g]

    def analytic_fpp(self, s: GranuleSets) -> float:
        n = s.ndv.astype(np.float64)
        return float(((1.0 - np.exp(-self.k * n / self.m)) ** self.k).mean())


class FuseFamily:
    """Xor8/Xor16/binary fuse 8/16 (the C library bundled with pyfusefilter), one per granule."""
    family = "xor / binary fuse"
    _C = {"xor8": ("xor8", 8), "xor16": ("xor16", 16), "fuse8": ("binary_fuse8", 8), "fuse16": ("binary_fuse16", 16)}

    def __init__(self, kind: str):
        if kind not in self._C:
            raise SkipidxError(f"unknown fuse filter {kind!r}; expected one of {', '.join(self._C)}")
        self.kind = kind
        self.prefix, self.fp_bits = self._C[kind]
        self.name = kind

    def build(self, s: GranuleSets) -> None:
        from pyfusefilter._xorfilter import ffi, lib

        self._ffi, self._lib = ffi, lib
        self.filters, self._nbytes = [], 0
        alloc = getattr(lib, f"{self.prefix}_allocate")
        pop = getattr(lib, f"{self.prefix}_buffered_populate" if self.prefix.startswith("xor")
                      else f"{self.prefix}_populate")
        size = getattr(lib, f"{self.prefix}_size_in_bytes")
        free = getattr(lib, f"{self.prefix}_free")
        for g in range(s.n_granules):
            keys = np.ascontiguousarray(s.hashes[s.bounds[g]:s.bounds[g + 1]])
            f = ffi.gc(ffi.new(f"{self.prefix}_t *"), free)
            if not alloc(max(int(keys.shape[0]), 1), f):
                raise SkipidxError(f"{self.kind}: cannot allocate a filter of {keys.shape[0]} keys")
            if keys.shape[0] and not pop(ffi.cast("uint64_t *", ffi.from_buffer(keys)), int(keys.shape[0]), f):
                raise SkipidxError(f"{self.kind}: construction failed for granule {g}")
            self.filters.append((f, keys.shape[0] > 0))
            self._nbytes += int(size(f))

    @property
    def nbytes(self) -> int:
        return self._nbytes

    def keep(self, probes: np.ndarray) -> np.ndarray:
        contain = getattr(self._lib, f"{self.prefix}_contain")
        out = np.zeros((probes.shape[0], len(self.filters)), dtype=bool)
        ps = [int(p) for p in probes]
        for g, (f, nonempty) in enumerate(self.filters):
            if nonempty:
                out[:, g] = [bool(contain(p, f)) for p in ps]
        return out

    def analytic_fpp(self, s: GranuleSets) -> float:
        return float((s.ndv > 0).mean() * 2.0 ** -self.fp_bits)


class ExactSets:
    """Every granule's sorted distinct 64-bit hashes (8 bytes per key)."""
    family = "exact sets"
    name = "exact hash sets"

    def build(self, s: GranuleSets) -> None:
        self.s = s

    @property
    def nbytes(self) -> int:
        return int(self.s.hashes.nbytes)

    def keep(self, probes: np.ndarray) -> np.ndarray:
        s = self.s
        out = np.zeros((probes.shape[0], s.n_granules), dtype=bool)
        for g in range(s.n_granules):
            seg = s.hashes[s.bounds[g]:s.bounds[g + 1]]
            if seg.shape[0]:
                i = np.minimum(np.searchsorted(seg, probes), seg.shape[0] - 1)
                out[:, g] = seg[i] == probes
        return out

    def analytic_fpp(self, s: GranuleSets) -> float:
        return float(s.ndv.mean() * 2.0 ** -64)


def budget_bytes(sets: GranuleSets, fpps: Sequence[float] = (0.1, 0.01, 0.001)) -> list[int]:
    """Mean bytes per granule of the per-granule SBBF (exact rule) at each fpp: the byte budgets
    at which fixed-size filters (ours and ClickHouse's) are compared."""
    from skipidx.core.sizing import num_bytes

    return [int(np.asarray(num_bytes(sets.ndv, p, "exact")).mean()) for p in fpps]


def default_filters(*, fpps: Sequence[float] = (0.1, 0.01, 0.001), fixed_bytes: Sequence[int] = (),
                    fuse: Sequence[str] = ("xor8", "fuse8", "fuse16"), max_ndv: int = 1024,
                    budgets: Sequence[int] = (), mean_ndv: float | None = None) -> list:
    """A zoo that spans the same byte range: fixed/classic sizes follow the fullest granule
    (4/8/16 bits per key: a fixed filter must fit it) and, given `budgets` (bytes per granule),
    match them (SBBF: whole 32-byte blocks below; classic: k = ClickHouse's best k for the bits
    per mean key)."""
    from skipidx.apps.research.fpp import clickhouse_best_k

    out: list = []
    for p in fpps:
        out += [SbbfAdaptive(p, "parquet"), SbbfAdaptive(p, "exact")]
    for bpk in (4, 8, 16):
        b = max(32, int(math.ceil(bpk * max(max_ndv, 1) / 8 / 32)) * 32)
        out.append(SbbfFixed(b))
        out.append(ClassicBloom(b, max(1, round(bpk * math.log(2)))))
    seen = {f.name for f in out}
    for b in budgets:
        bits = 8.0 * b / max(mean_ndv or max_ndv, 1)
        for f in (SbbfFixed(max(32, (int(b) // 32) * 32)), ClassicBloom(max(1, int(b)), clickhouse_best_k(bits))):
            if f.name not in seen:
                seen.add(f.name)
                out.append(f)
    for b in fixed_bytes:
        out.append(SbbfFixed(b))
    try:
        import pyfusefilter  # noqa: F401
        out += [FuseFamily(k) for k in fuse]
    except ImportError:
        pass
    out.append(ExactSets())
    return out


#: The zoo's tokenizers: (skipidx tokenizer, its params), the text index's tokenizer, ClickHouse's
#: Bloom-filter index for it (bytes, k filled in), and the query kind (hasToken or LIKE '%s%').
ZOO_TOKENIZERS: dict[str, tuple[str, dict, str, str, str]] = {
    "token": ("token", {}, "'splitByNonAlpha'", "tokenbf_v1({b}, {k}, 0)", "token"),
    "ngram3": ("ngram", {"n": 3}, "ngrams(3)", "ngrambf_v1(3, {b}, {k}, 0)", "substring"),
    "ngram4": ("ngram", {"n": 4}, "ngrams(4)", "ngrambf_v1(4, {b}, {k}, 0)", "substring"),
    "sparse_grams": ("sparse_grams", {"min_length": 3, "max_length": 100, "utf8": 1}, "sparseGrams(3, 100)",
                     "sparse_grams(3, 100, {b}, {k}, 0)", "substring"),
}


def zoo_tokenizer(label: str):
    from skipidx.core.tokenizer_api import get_tokenizer

    if label not in ZOO_TOKENIZERS:
        raise SkipidxError(f"unknown zoo tokenizer {label!r}; expected one of {', '.join(ZOO_TOKENIZERS)}")
    name, params, *_ = ZOO_TOKENIZERS[label]
    return get_tokenizer(name, **params)


_NEEDLE_OK = np.zeros(256, dtype=bool)
_NEEDLE_OK[[ord(c) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;=()[]{}<>+-*/#@!?&|"]] = True


def substring_needles(values: pa.Array | pa.ChunkedArray, n: int, seed: int, min_len: int = 3,
                      max_len: int = 12) -> list[str]:
    """`n` distinct substrings of the column (lengths uniform in [min_len, max_len], seeded), of
    printable ASCII without quotes, backslashes or LIKE wildcards, not blank: present needles."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    rng = np.random.default_rng(seed + 3)
    py = values.to_pylist()
    out: dict[str, None] = {}
    for _ in range(50 * n):
        v = py[int(rng.integers(0, len(py)))]
        if not v:
            continue
        b = v.encode("utf-8", "replace")
        L = int(rng.integers(min_len, max_len + 1))
        if len(b) < L:
            continue
        i = int(rng.integers(0, len(b) - L + 1))
        cand = b[i:i + L]
        if _NEEDLE_OK[np.frombuffer(cand, np.uint8)].all() and cand.strip():
            out.setdefault(cand.decode(), None)
        if len(out) >= n:
            break
    return list(out)


def substring_truth(values: pa.Array | pa.ChunkedArray, needles: Sequence[str], rows_per_granule: int) -> np.ndarray:
    """bool[needle, granule]: the granule holds a row containing the needle (a scan)."""
    import pyarrow.compute as pc

    n = len(values)
    n_g = (n + rows_per_granule - 1) // rows_per_granule
    pad = n_g * rows_per_granule - n
    out = np.zeros((len(needles), n_g), dtype=bool)
    for i, s in enumerate(needles):
        m = pc.fill_null(pc.match_substring(values, s), False).to_numpy(zero_copy_only=False)
        out[i] = np.concatenate([m, np.zeros(pad, bool)]).reshape(n_g, rows_per_granule).any(axis=1)
    return out


def query_wheres(kind: str, needles: Sequence[str], column: str = "msg") -> list[str]:
    """The SQL condition of each needle (the same text in skipidx and ClickHouse)."""
    if kind == "token":
        return [f"hasToken({column}, '{t}')" for t in needles]
    return [f"{column} LIKE '%{t}%'" for t in needles]


# ----------------------------------------------------------------------------- run

@dataclass
class ZooRow:
    corpus: str
    tokenizer: str
    family: str
    filter: str
    bytes: int
    bits_per_key: float
    build_s: float
    probe_s: float
    kept: int
    ideal: int
    kept_over_ideal: float
    absent_trials: int
    absent_fp: int
    fpp_measured: float
    fpp_analytic: float
    fpp_ci_lo: float
    fpp_ci_hi: float
    queries: int = 0                   # queries probed (hasToken / LIKE)
    engine: str = "skipidx"            # skipidx | chDB
    bytes_compressed: int = -1         # on disk where the engine reports it (chDB; -1: not measured)


def absent_probes(sets: GranuleSets, n: int, seed: int) -> np.ndarray:
    """`n` distinct random 64-bit hashes that are in no granule (stand-ins for absent tokens:
    xxh64 of a token absent from the column is uniform over 64 bits)."""
    rng = np.random.default_rng(seed)
    cand = np.unique(rng.integers(0, 2 ** 63, size=n + 64, dtype=np.int64).astype(np.uint64) * np.uint64(2)
                     + rng.integers(0, 2, size=n + 64).astype(np.uint64))
    present = np.isin(cand, sets.hashes)
    return rng.permutation(cand[~present])[:n]


def present_probes(sets: GranuleSets, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    u = np.unique(sets.hashes)
    return u[rng.choice(u.shape[0], size=min(n, u.shape[0]), replace=False)] if u.shape[0] else u


def _timed_keep(f, probes: np.ndarray, reps: int) -> tuple[np.ndarray, float]:
    f.keep(probes[:1])  # warm-up (JIT, caches) excluded from the timing
    best = float("inf")
    out = None
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        out = f.keep(probes)
        best = min(best, time.perf_counter() - t0)
    return out, best


def fpp_interval(ka: np.ndarray, conf: float) -> tuple[float, float]:
    """Interval of the FPP from the keeps of absent probes (bool[probe, granule]): the Wilson
    interval of all (probe, granule) trials, widened to the probes' cluster interval (mean of the
    per-probe rates +- z s / sqrt(probes)): granules of similar content hold similar filters and
    share false positives, so the trials of one probe are not independent."""
    import statistics

    from skipidx.apps.research.fpp import wilson_interval

    lo, hi = wilson_interval(int(ka.sum()), int(ka.size), conf)
    if ka.shape[0] > 1:
        r = ka.mean(axis=1)
        z = statistics.NormalDist().inv_cdf(0.5 + conf / 2)
        half = z * float(r.std(ddof=1)) / math.sqrt(ka.shape[0])
        lo, hi = min(lo, max(0.0, float(r.mean()) - half)), max(hi, float(r.mean()) + half)
    return lo, hi


def query_keep(kp: np.ndarray, inverse: Sequence[np.ndarray], n_granules: int) -> np.ndarray:
    """Per query, granules kept by a filter: the AND over its tokens' rows of `kp` (a query with
    no token, e.g. a needle shorter than the n-gram, keeps every granule)."""
    out = np.ones((len(inverse), n_granules), dtype=bool)
    for q, ix in enumerate(inverse):
        if ix.shape[0]:
            out[q] = kp[ix].all(axis=0)
    return out


def run_zoo(sets: GranuleSets, filters: Sequence, *, corpus: str, tokenizer: str, n_present: int = 200,
            n_absent: int = 2000, seed: int = 1, conf: float = 0.999, reps: int = 3,
            present: np.ndarray | None = None, queries: Sequence[np.ndarray] | None = None,
            truth: np.ndarray | None = None) -> list[ZooRow]:
    """Build and probe every filter. Queries are either single present tokens (`present` hashes,
    or `n_present` drawn from the data; ideal from the exact sets) or `queries` (each the token
    hashes a granule must all hold, e.g. a LIKE needle's n-grams) with `truth` (bool[query,
    granule]: the granules that really match, e.g. by a substring scan)."""

    exact = ExactSets()
    exact.build(sets)
    if queries is None:
        if present is None:
            present = present_probes(sets, n_present, seed)
        queries = [present[i:i + 1] for i in range(present.shape[0])]
        truth = None
    queries = [np.asarray(q, dtype=np.uint64) for q in queries]
    allq = np.concatenate(queries) if queries else np.empty(0, np.uint64)
    uniq, inv = np.unique(allq, return_inverse=True)
    bounds = np.cumsum([0] + [q.shape[0] for q in queries])
    inverse = [inv[bounds[i]:bounds[i + 1]] for i in range(len(queries))]
    if truth is None:
        truth = query_keep(exact.keep(uniq), inverse, sets.n_granules)
    truth = np.asarray(truth, dtype=bool)
    absent = absent_probes(sets, n_absent, seed)
    ideal = int(truth.sum())
    keys = max(int(sets.hashes.shape[0]), 1)
    rows: list[ZooRow] = []
    for f in filters:
        f.build(GranuleSets(sets.hashes[:0], np.zeros(2, np.int64), sets.rows_per_granule))  # warm-up
        t0 = time.perf_counter()
        f.build(sets)
        build_s = time.perf_counter() - t0
        kp, probe_s = _timed_keep(f, uniq, reps)
        kept_m = query_keep(kp, inverse, sets.n_granules)
        if (truth & ~kept_m).any():
            raise SkipidxError(f"{f.name}: false negative (a granule holding a match was dropped)")
        ka, _ = _timed_keep(f, absent, 1)
        trials = int(ka.size)
        fp = int(ka.sum())
        lo, hi = fpp_interval(ka, conf) if trials else (0.0, 1.0)
        kept = int(kept_m.sum())
        rows.append(ZooRow(corpus, tokenizer, f.family, f.name, f.nbytes, 8.0 * f.nbytes / keys, build_s,
                           probe_s, kept, ideal, kept / max(ideal, 1), trials, fp,
                           fp / max(trials, 1), f.analytic_fpp(sets), lo, hi, queries=len(queries)))
    return rows


def rows_to_dicts(rows: Sequence[ZooRow]) -> list[dict]:
    return [asdict(r) for r in rows]


def text_index_row(values: pa.Array | pa.ChunkedArray, wheres: Sequence[str], ideal: int, *,
                   corpus: str, rows_per_granule: int, keys: int, tokenizer: str = "token",
                   text_tokenizer: str = "'splitByNonAlpha'") -> ZooRow:
    """The engine's ``text`` index with `text_tokenizer` on the same rows and granules: bytes of
    its index files, build = insert time less a plain table's insert time, kept = the granules
    its pruning selects for each WHERE of `wheres` (``SELECT count() ... WHERE w``)."""
    import os

    import skipidx

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    tbl = pa.table({"msg": values.cast(pa.string())})
    settings = f"ORDER BY tuple() SETTINGS index_granularity = {int(rows_per_granule)}"
    with skipidx.connect() as db:
        db.sql(f"CREATE TABLE p (msg String) {settings}")
        db.sql(f"CREATE TABLE t (msg String, INDEX i msg TYPE text(tokenizer = {text_tokenizer})) {settings}")
        db.insert("p", tbl.slice(0, 1))
        db.insert("t", tbl.slice(0, 1))   # warm-up (JIT) excluded
        db.sql("TRUNCATE TABLE p")
        db.sql("TRUNCATE TABLE t")
        t0 = time.perf_counter()
        db.insert("p", tbl)
        t1 = time.perf_counter()
        db.insert("t", tbl)
        build_s = max(0.0, (time.perf_counter() - t1) - (t1 - t0))
        nbytes = 0
        for dp, _, fns in os.walk(os.path.join(str(db.path), "t")):
            nbytes += sum(os.path.getsize(os.path.join(dp, fn)) for fn in fns if fn.startswith("idx."))
        kept = 0
        if wheres:
            db.sql(f"SELECT count() FROM t WHERE {wheres[0]} SETTINGS log_queries = 0")
        t0 = time.perf_counter()
        for w in wheres:
            kept += int(db.sql(f"SELECT count() FROM t WHERE {w} SETTINGS log_queries = 0").stats.granules_selected)
        probe_s = time.perf_counter() - t0
    return ZooRow(corpus, tokenizer, "text index", f"text({text_tokenizer.strip(chr(39))})", nbytes,
                  8.0 * nbytes / max(keys, 1), build_s, probe_s, kept, int(ideal), kept / max(int(ideal), 1),
                  0, 0, 0.0, 0.0, 0.0, 0.0, queries=len(wheres))


def present_tokens(values: pa.Array | pa.ChunkedArray, n: int, seed: int) -> list[str]:
    """`n` distinct tokens (ClickHouse's: runs of ASCII alnum / bytes >= 0x80) drawn from the column."""
    from skipidx.core.tokenizer_api import get_tokenizer

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    toks = get_tokenizer("token").tokenize(values)
    data = bytes(memoryview(toks.data)) if not isinstance(toks.data, (bytes, bytearray)) else bytes(toks.data)
    off = np.asarray(toks.offsets)
    rng = np.random.default_rng(seed + 2)
    pick = rng.permutation(off.shape[0] - 1)
    seen: dict[bytes, None] = {}
    for i in pick:
        t = data[off[i]:off[i + 1]]
        if t.isascii():
            seen.setdefault(t, None)
        if len(seen) >= n:
            break
    return [t.decode() for t in seen]


def run_corpus(values: pa.Array, *, corpus: str, rows_per_granule: int, tokens: Sequence[str] | None = None,
               tokenizer: str = "token", needles: Sequence[str] | None = None, seed: int = 1,
               n_absent: int = 2000, reps: int = 3, conf: float = 0.999, with_text: bool = True,
               with_chdb: bool = False) -> list[ZooRow]:
    """The zoo on one corpus with one tokenizer of ZOO_TOKENIZERS. The token tokenizer probes
    hasToken of `tokens`; the n-gram and sparse-gram ones ``LIKE '%needle%'`` of `needles` (ideal:
    the granules a scan finds the needle in). Random absent hashes give the FPP. The engine's
    text index (same tokenizer) and, with `with_chdb`, ClickHouse's Bloom-filter index at the
    same byte budgets and its text index (zoo_chdb) answer the same WHEREs."""
    from skipidx.apps.research.indexes import _hash_tokens

    tok = zoo_tokenizer(tokenizer)
    _, _, text_tok, ch_bloom, kind = ZOO_TOKENIZERS[tokenizer]
    sets = granule_sets(values, tok, rows_per_granule)
    if kind == "token":
        if tokens is None:
            raise SkipidxError("the token tokenizer needs present tokens")
        needles = list(tokens)
        queries = [_hash_tokens([t.encode()]) for t in needles]
        truth = None
    else:
        if needles is None:
            raise SkipidxError(f"tokenizer {tokenizer!r} needs substring needles")
        needles = list(needles)
        queries = [np.unique(_hash_tokens(tok.substring_tokens(t.encode(), False, False))) for t in needles]
        truth = substring_truth(values, needles, rows_per_granule)
    budgets = budget_bytes(sets)
    filters = default_filters(max_ndv=int(sets.ndv.max()), budgets=budgets, mean_ndv=float(sets.ndv.mean()))
    rows = run_zoo(sets, filters, corpus=corpus, tokenizer=tokenizer, n_absent=n_absent, seed=seed, conf=conf,
                   reps=reps, queries=queries, truth=truth)
    ideal = rows[0].ideal
    keys = int(sets.hashes.shape[0])
    wheres = query_wheres(kind, needles)
    if with_text:
        rows.append(text_index_row(values, wheres, ideal, corpus=corpus, rows_per_granule=rows_per_granule,
                                   keys=keys, tokenizer=tokenizer, text_tokenizer=text_tok))
    if with_chdb:
        from skipidx.apps.research.fpp import clickhouse_best_k
        from skipidx.apps.research.zoo_chdb import chdb_zoo_rows

        mean_ndv = max(float(sets.ndv.mean()), 1.0)
        specs = []
        for i, b in enumerate(budgets):
            b = max(1, int(b))
            specs.append((f"bf{i}", ch_bloom.format(b=b, k=clickhouse_best_k(8.0 * b / mean_ndv)),
                          "chDB Bloom index"))
        specs.append(("txt", f"text(tokenizer = {text_tok})", "chDB text index"))
        rows += chdb_zoo_rows(values, wheres, specs, corpus=corpus, tokenizer=tokenizer,
                              rows_per_granule=rows_per_granule, ideal=ideal, keys=keys, row=ZooRow)
    return rows
