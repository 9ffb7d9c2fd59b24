"""``skipidx bench indexes``: build candidate indexes over one column and measure how they prune.

For one string column of a Parquet file and a list of WHERE clauses, every
candidate index is built the way the engine builds it — tokenizer
``hash_column`` → 64-bit hashes → one SBBF per index granule in one
`SBBFBank` — and each query is answered from the filters alone (the
tokenizer's ``requirement`` → token hashes → ``check_any_of`` over the whole
bank). The clause goes through the engine's read pipeline: the SQL parser and
binder (:mod:`skipidx.apps.research.whereexpr`), the planner's RPN and BoolMask
evaluation (:mod:`skipidx.planner.rpn`), each atom answered by the engine's own
index condition (``sbbf`` over the candidate's tokenizer) on the candidate's
filters, and the engine's evaluator for the ideal. Nothing else runs between
the filter and the figure, so the figures are the index's own.

Candidates (`default_candidates`):

* ``fixed``: ClickHouse's ``tokenbf_v1(bytes, k, 0)`` / ``ngrambf_v1(n, bytes,
  k, 0)`` — as skipidx builds them, a fixed-size SBBF per granule;
* ``adaptive``: ``sbbf('token'|'ngram'|'value', fpp = p)`` — each granule's
  SBBF sized by `SBBF.for_ndv` from its distinct token count;
* ``same-bytes``: for every adaptive candidate, a fixed candidate with the
  same total bytes (its mean filter size, rounded up to whole 32-byte
  blocks) — the head-to-head of "fixed vs adaptive at equal space";
* each at GRANULARITY 1 and 4 (data granules per index granule).

Per candidate: build time (tokenize + hash + size + insert), index bytes and
bytes per row, mean fill ratio, mean distinct tokens per index granule and
the expected FPP (Putze); per query: granules kept, the ideal (granules that
truly hold a matching row, from a full scan with the engine's exact
functions), the false-positive granule rate ``(kept - ideal) / (total -
ideal)``, the pruning latency (measured) and an estimated query latency
(pruning + the full-scan time per granule x kept granules).

The granule figures are in data granules (``index_granularity`` rows), as
ClickHouse's ``EXPLAIN indexes = 1`` counts them, so chDB's numbers
(`skipidx.apps.research.chdb_compare`) sit next to them unchanged.

Build: the column is hashed once per tokenizer, in batches of whole
granules; each data granule keeps only its distinct hashes (one compiled
sort per granule), which give the distinct counts that size the adaptive
filters (and their same-bytes twins) and are then inserted into every
candidate's bank — inserting a hash twice changes nothing, and the engine
inserts distinct hashes too. Peak memory is one batch of hashes plus the
distinct hashes and banks of one tokenizer. A candidate's build time is the
tokenize + hash + dedup time of its tokenizer plus its own sizing and insert
time.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
from numba import njit

from skipidx.core.errors import SkipidxError
from skipidx.apps.research.fpp import wilson_interval
from skipidx.apps.research.querygen import Query
from skipidx.apps.research.whereexpr import bind, evaluate_exact
from skipidx.expr.bound import BExpr

DEFAULT_FIXED_BYTES = (256, 1024, 4096, 16384, 65536, 262144)
DEFAULT_FPPS = (0.1, 0.01, 0.001)
DEFAULT_TOKENIZERS = ("token", "ngram2", "ngram3", "ngram4", "ngram5", "value")


# --------------------------------------------------------------------------- candidates

def parse_tokenizer_spec(spec: str) -> tuple[str, int | None]:
    """``'token'`` -> ('token', None); ``'ngram3'`` -> ('ngram', 3); ``'value'``."""
    s = spec.strip().lower()
    if s in ("token", "value"):
        return s, None
    if s.startswith("ngram") and s[5:].isdigit() and 1 <= int(s[5:]) <= 16:
        return "ngram", int(s[5:])
    raise SkipidxError(f"unknown tokenizer {spec!r}: use token, value or ngramN (N = 1..16)")


@dataclass(frozen=True)
class Candidate:
    """One index definition under test."""

    tokenizer: str                 # token | ngram | value
    n: int | None                  # ngram length
    kind: str                      # fixed | adaptive | same-bytes
    granularity: int               # GRANULARITY (data granules per index granule)
    num_bytes: int | None = None   # fixed / same-bytes: filter size
    fpp: float | None = None       # adaptive: target FPP per granule
    matched_to: str | None = None  # same-bytes: the adaptive candidate it mirrors
    sizing: str = "parquet"        # adaptive: "parquet" (the engine's power-of-two rule) or "exact"

    @property
    def tok_label(self) -> str:
        return f"ngram{self.n}" if self.tokenizer == "ngram" else self.tokenizer

    @property
    def name(self) -> str:
        if self.kind == "adaptive":
            # An identifier in both dialects: 0.01 -> 0_01, 1e-05 -> 1em05.
            size = "fpp" + f"{self.fpp:g}".replace(".", "_").replace("-", "m")
        else:
            size = f"{self.num_bytes}B"
        if self.kind == "adaptive" and self.sizing == "exact":
            size += "_exact"
        pre = post = ""
        if self.kind == "same-bytes":
            # Two adaptive candidates may get the same mean size: name the twin after its adaptive one.
            pre = "same_"
            m = self.matched_to or ""
            post = "_for_" + m[len(self.tok_label) + 1:m.rfind("_g")] if m.startswith(self.tok_label + "_") else ""
        return f"{pre}{self.tok_label}_{size}{post}_g{self.granularity}"

    def index_type_sql(self, hashes: int = 3) -> str:
        """The TYPE clause in the skipidx (and, for fixed ones, ClickHouse) dialect."""
        if self.kind == "adaptive":
            if self.tokenizer == "ngram":
                t = f"sbbf('ngram', n = {self.n}, fpp = {self.fpp:g})"
            else:
                t = f"sbbf('{self.tokenizer}', fpp = {self.fpp:g})"
            # Exact sizing (the fewest blocks meeting the target, no power-of-two steps) is a
            # research variant here; the parquet candidates name the engine's rule explicitly
            # (sbbf's default size_rule is 'exact').
            return t + " [exact sizing: bench only]" if self.sizing == "exact" else t[:-1] + ", size_rule = 'parquet')"
        if self.tokenizer == "token":
            return f"tokenbf_v1({self.num_bytes}, {hashes}, 0)"
        if self.tokenizer == "ngram":
            return f"ngrambf_v1({self.n}, {self.num_bytes}, {hashes}, 0)"
        # The engine's sbbf() sizes from distinct counts only: a fixed whole-value SBBF has no DDL.
        return f"(fixed value SBBF, {self.num_bytes} bytes: no DDL)"

    @property
    def has_ddl(self) -> bool:
        if self.kind == "adaptive":
            return self.sizing == "parquet"
        return self.tokenizer != "value"

    def ddl(self, column: str, hashes: int = 3) -> str:
        return f"INDEX {self.name} {column} TYPE {self.index_type_sql(hashes)} GRANULARITY {self.granularity}"


def default_candidates(tokenizers: Sequence[str] = DEFAULT_TOKENIZERS,
                       fixed_bytes: Sequence[int] = DEFAULT_FIXED_BYTES,
                       fpps: Sequence[float] = DEFAULT_FPPS,
                       granularities: Sequence[int] = (1, 4), same_bytes: bool = True,
                       adaptive_sizings: Sequence[str] = ("parquet",)) -> list[Candidate]:
    """The candidate grid (same-bytes twins are added after sizing, in `run_bench_indexes`).

    ``adaptive_sizings``: ``"parquet"`` sizes each granule's filter as the engine does (Arrow's
    rule, a power of two); ``"exact"`` gives it the fewest 32-byte blocks whose Putze estimate
    meets the target (`putze_min_bytes`), so bytes follow distinct counts without power-of-two
    steps (a bench-only variant).
    """
    for sz in adaptive_sizings:
        if sz not in ("parquet", "exact"):
            raise SkipidxError(f"adaptive sizing must be 'parquet' or 'exact', got {sz!r}")
    out: list[Candidate] = []
    for b in fixed_bytes:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 32:
            raise SkipidxError(f"fixed filter size must be an integer >= 32 bytes, got {b!r}")
    for p in fpps:
        if not (0.0 < float(p) < 1.0):
            raise SkipidxError(f"fpp must lie in (0, 1), got {p!r}")
    for g in granularities:
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 1:
            raise SkipidxError(f"GRANULARITY must be an integer >= 1, got {g!r}")
    for spec in tokenizers:
        tok, n = parse_tokenizer_spec(spec)
        for g in granularities:
            if tok != "value":  # whole values: only adaptive sizing makes sense (bloom_filter(fpp))
                for b in fixed_bytes:
                    out.append(Candidate(tok, n, "fixed", int(g), num_bytes=int(-(-int(b) // 32) * 32)))
            for p in fpps:
                for sz in adaptive_sizings:
                    out.append(Candidate(tok, n, "adaptive", int(g), fpp=float(p), sizing=sz))
    return out


# --------------------------------------------------------------------------- kernels

@njit(cache=True)
def _dedup_segments(hashes, seg_start, seg_end):
    """The distinct hashes of every segment ``hashes[seg_start[i]:seg_end[i]]`` (concatenated, in
    first-seen order) and their counts.

    An open-addressing hash set per segment that starts small and doubles at half load, so a
    segment with few distinct values (n-grams of one granule: ~1M n-grams, a few thousand
    distinct) stays in cache; linear time where a sort would be n log n.
    """
    out = np.empty(hashes.shape[0], dtype=np.uint64)
    counts = np.zeros(seg_start.shape[0], dtype=np.int64)
    k = 0
    table = np.zeros(1 << 12, dtype=np.uint64)
    for i in range(seg_start.shape[0]):
        a, b = seg_start[i], seg_end[i]
        if b <= a:
            continue
        cap = 1 << 12
        table[:cap] = 0
        mask = np.uint64(cap - 1)
        seen_zero = False   # 0 marks an empty slot, so a zero hash is tracked apart
        cnt = 0
        for j in range(a, b):
            h = hashes[j]
            if h == np.uint64(0):
                if not seen_zero:
                    seen_zero = True
                    out[k] = h
                    k += 1
                    cnt += 1
                continue
            pos = (h >> np.uint64(7)) & mask
            while True:
                t = table[pos]
                if t == np.uint64(0):
                    table[pos] = h
                    out[k] = h
                    k += 1
                    cnt += 1
                    break
                if t == h:
                    break
                pos = (pos + np.uint64(1)) & mask
            if 2 * cnt > cap:
                # Grow: re-insert this segment's distinct hashes (out[k - cnt:k]) into a table twice the size.
                cap *= 2
                if table.shape[0] < cap:
                    table = np.zeros(cap, dtype=np.uint64)
                else:
                    table[:cap] = 0
                mask = np.uint64(cap - 1)
                for q in range(k - cnt, k):
                    v = out[q]
                    if v == np.uint64(0):
                        continue
                    p2 = (v >> np.uint64(7)) & mask
                    while table[p2] != np.uint64(0):
                        p2 = (p2 + np.uint64(1)) & mask
                    table[p2] = v
        counts[i] = cnt
    return out[:k].copy(), counts


@njit(cache=True)
def _distinct_per_segment(hashes, seg_start, seg_end):
    """Distinct values of hashes[seg_start[i]:seg_end[i]] for every segment i."""
    out = np.zeros(seg_start.shape[0], dtype=np.int64)
    for i in range(seg_start.shape[0]):
        a, b = seg_start[i], seg_end[i]
        if b <= a:
            continue
        s = np.sort(hashes[a:b])
        c = 1
        for j in range(1, s.shape[0]):
            if s[j] != s[j - 1]:
                c += 1
        out[i] = c
    return out


def _tokenizer(tok: str, n: int | None):
    from skipidx.core.tokenizer_api import get_tokenizer

    return get_tokenizer("ngram", n=n) if tok == "ngram" else get_tokenizer(tok)


def _hash_tokens(tokens: Sequence[bytes], seed: int = 0) -> np.ndarray:
    from skipidx.core._kernels.xxh64 import xxh64_offsets

    if not tokens:
        return np.empty(0, dtype=np.uint64)
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in tokens], out=offsets[1:])
    return xxh64_offsets(np.frombuffer(b"".join(tokens), dtype=np.uint8), offsets, np.uint64(seed))


# --------------------------------------------------------------------------- results

@dataclass
class QueryResult:
    kept: int                   # data granules kept
    prune_ms: float             # time to answer the WHERE from the filters
    est_ms: float               # prune_ms + kept x (full-scan ms per granule)


@dataclass
class CandidateResult:
    candidate: Candidate
    index_bytes: int = 0
    bytes_per_row: float = 0.0
    mean_filter_bytes: float = 0.0
    fill_mean: float = 0.0
    ndv_mean: float = 0.0              # distinct tokens per index granule
    expected_fpp: float = 0.0          # mean Putze estimate over the index granules
    saturated: int = 0                 # index granules whose filter answers "maybe" unchecked
    bits_fpp: float = 0.0              # FPP of the built filters from their bit counts (exact for random probes)
    probe_fpp: float = 0.0             # share of (index granule, absent token) lookups answering "maybe"
    probe_ci: tuple = (0.0, 0.0)       # its Wilson 99.9 % interval
    build_s: float = 0.0               # tokenize + hash + dedup + size + insert
    hash_s: float = 0.0                # the tokenize + hash share of build_s
    queries: list[QueryResult] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["candidate"] = asdict(self.candidate)
        d["name"] = self.candidate.name
        d["type_sql"] = self.candidate.index_type_sql()
        return d


@dataclass
class QueryInfo:
    query: Query
    ideal: int                  # data granules holding a matching row (full scan)
    matching_rows: int
    scan_ms: float              # exact evaluation over the whole column


@dataclass
class BenchResult:
    """Everything one `bench indexes` run measured."""

    source: str
    column: str
    rows: int
    index_granularity: int
    granules: int
    queries: list[QueryInfo]
    candidates: list[CandidateResult]
    tokenizer_stats: dict = field(default_factory=dict)   # per tokenizer: ndv per data granule, hash time
    chdb: dict | None = None                              # see chdb_compare.run_chdb
    engine: dict | None = None                            # see engine_compare.run_engine
    absent_probes: int = 0                                # random absent hashes behind probe_fpp
    params: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "source": self.source, "column": self.column, "rows": self.rows,
            "index_granularity": self.index_granularity, "granules": self.granules,
            "absent_probes": self.absent_probes,
            "params": self.params,
            "queries": [{**q.query.to_dict(), "ideal": q.ideal, "matching_rows": q.matching_rows,
                         "scan_ms": q.scan_ms} for q in self.queries],
            "tokenizer_stats": self.tokenizer_stats,
            "candidates": [c.to_dict() for c in self.candidates],
            "chdb": self.chdb,
            "engine": self.engine,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "BenchResult":
        """A result back from its JSON (`to_dict`), to re-render or merge reports of earlier runs."""
        import dataclasses

        try:
            cand_fields = {f.name for f in dataclasses.fields(Candidate)}
            res_fields = {f.name for f in dataclasses.fields(CandidateResult)} - {"candidate", "queries"}
            cands = []
            for c in d["candidates"]:
                r = CandidateResult(Candidate(**{k: v for k, v in c["candidate"].items() if k in cand_fields}))
                for k in res_fields:
                    if k in c:
                        setattr(r, k, tuple(c[k]) if k == "probe_ci" else c[k])
                r.queries = [QueryResult(q["kept"], q["prune_ms"], q["est_ms"]) for q in c["queries"]]
                cands.append(r)
            queries = [QueryInfo(Query(q["family"], q["where"], q.get("note", "")), q["ideal"], q["matching_rows"],
                                 q["scan_ms"]) for q in d["queries"]]
            return cls(source=d["source"], column=d["column"], rows=d["rows"],
                       index_granularity=d["index_granularity"], granules=d["granules"], queries=queries,
                       candidates=cands, tokenizer_stats=d.get("tokenizer_stats", {}), chdb=d.get("chdb"),
                       engine=d.get("engine"), absent_probes=d.get("absent_probes", 0),
                       params=d.get("params", {}))
        except (KeyError, TypeError) as e:
            raise SkipidxError(f"not a bench indexes result: missing or bad field {e}") from None


# --------------------------------------------------------------------------- masks

def _expand(mask_ig: np.ndarray, g: int, n_granules: int) -> np.ndarray:
    """Index-granule mask -> data-granule mask."""
    return np.repeat(mask_ig, g)[:n_granules] if g > 1 else mask_ig


class _Conditions:
    """The engine's conditions for one tokenizer: an ``sbbf`` index over the bench column
    (the condition depends on the tokenizer and seed only, not on filter sizes), one
    per atom of each query's RPN."""

    def __init__(self, tok: str, n: int | None, column: str, column_type: pa.DataType) -> None:
        from skipidx.indexes.base import IndexDef, get_index_type

        kwargs = (("n", n),) if n is not None else ()
        self.index = get_index_type("sbbf")(IndexDef("bench", column, None, "sbbf", (tok,), kwargs), column_type)
        self._by_query: dict[int, tuple] = {}

    def of(self, qi: int, rpn) -> tuple:
        """Query `qi`'s condition per RPN atom (None: the index cannot answer it, maybe)."""
        c = self._by_query.get(qi)
        if c is None:
            # A bad constant (a hasToken needle with a separator) raises SkipidxError here, as in the engine.
            c = self._by_query[qi] = tuple(self.index.condition(a) for a in rpn.atoms)
        return c


def _granules(index, bank, fill: np.ndarray, est: np.ndarray, zone_start: np.ndarray, zone_length: np.ndarray,
              null_count: np.ndarray):
    """The candidate's bank as the engine's SBBF granules (its saturation rule included)."""
    from skipidx.indexes.bloom import SBBFGranules

    tok = index.tokenizer
    return SBBFGranules("sbbf", index.params, index.params["tokenizer"], str(tok.version), zone_start, zone_length,
                        null_count, bank, None, fill, est)


def _zones(n: int, rows: int, nulls: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(zone_start, zone_length, null_count) of index granules of `rows` rows over `n` rows."""
    start = np.arange(0, n, rows, dtype=np.int64)
    length = np.minimum(start + rows, n) - start
    null_count = np.add.reduceat(nulls, start) if nulls is not None else np.zeros(start.shape[0], np.int64)
    return start, length, null_count


def _kept(rpn, conditions: tuple, granules, g: int, n_granules: int) -> np.ndarray:
    """Data granules whose can_be_true the planner's RPN evaluation leaves set."""
    from skipidx.planner.rpn import evaluate

    n_ig = len(granules)
    m = evaluate(rpn, n_ig, lambda i: None if conditions[i] is None else conditions[i].mask(granules))
    return _expand(np.asarray(m.can_be_true, dtype=bool), g, n_granules)


# --------------------------------------------------------------------------- the bench

def load_column(path: str, column: str) -> pa.ChunkedArray:
    """One string column of a Parquet file (errors name the file and the column)."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise SkipidxError(f"cannot read Parquet file: {e}", path=path) from None
    if column not in schema.names:
        raise SkipidxError(f"column {column!r} not in the file; columns: {', '.join(schema.names)}", path=path)
    t = schema.field(column).type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)):
        raise SkipidxError(f"column {column!r} is {t}, the index bench needs a string column", path=path)
    try:
        col = pq.read_table(path, columns=[column]).column(column)
    except (OSError, pa.ArrowInvalid) as e:
        raise SkipidxError(f"cannot read column {column!r}: {e}", path=path) from None
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col


def compute_ideal(queries: Sequence[Query], values: pa.ChunkedArray, index_granularity: int,
                  progress: Callable[[int], None] | None = None) -> list[QueryInfo]:
    """Granules that truly hold a match, by a full scan with the engine's exact functions."""
    n = len(values)
    n_granules = (n + index_granularity - 1) // index_granularity
    out = []
    for i, q in enumerate(queries):
        expr = bind(q.where, values.type)
        t0 = time.perf_counter()
        rows = evaluate_exact(expr, values)
        scan_ms = (time.perf_counter() - t0) * 1000
        hit = np.flatnonzero(rows)
        ideal = int(np.unique(hit // index_granularity).shape[0]) if hit.size else 0
        assert ideal <= n_granules
        out.append(QueryInfo(q, ideal, int(hit.size), scan_ms))
        if progress is not None:
            progress(i + 1)
    return out


def ideal_granule_masks(queries: Sequence[Query], values: pa.ChunkedArray, index_granularity: int) -> list[np.ndarray]:
    """Per query, the bool mask of data granules holding a matching row (for checks and tests)."""
    n_granules = (len(values) + index_granularity - 1) // index_granularity
    out = []
    for q in queries:
        rows = evaluate_exact(bind(q.where, values.type), values)
        m = np.zeros(n_granules, dtype=bool)
        m[np.flatnonzero(rows) // index_granularity] = True
        out.append(m)
    return out


def run_bench_indexes(values: pa.ChunkedArray, queries: Sequence[Query], *, column: str = "msg",
                      source: str = "", index_granularity: int = 8192,
                      candidates: Sequence[Candidate] | None = None, same_bytes: bool = True,
                      batch_granules: int = 32, show_progress: bool = True,
                      keep_masks: bool = False, absent_probes: int = 16384) -> BenchResult:
    """Build every candidate over `values`, answer every query, measure (see the module doc).

    With ``keep_masks`` the per-query kept masks are attached to each result
    as ``result.masks`` (list of bool arrays), for tests.
    """
    from skipidx.core.progress import Progress
    from skipidx.core.sbbf import SBBF, SBBFBank

    if isinstance(values, pa.Array):
        values = pa.chunked_array([values])
    if isinstance(index_granularity, bool) or not isinstance(index_granularity, int) or index_granularity < 1:
        raise SkipidxError(f"index_granularity must be an integer >= 1, got {index_granularity!r}")
    if not queries:
        raise SkipidxError("bench indexes needs at least one query")
    from skipidx.expr.visitors import columns_of
    from skipidx.planner.rpn import build_rpn

    exprs: list[BExpr] = [bind(q.where, values.type) for q in queries]
    for q, e in zip(queries, exprs):
        bad = set(columns_of(e)) - {column}
        if bad:
            raise SkipidxError(f"query {q.where!r} reads column(s) {sorted(bad)}; the bench indexes only {column!r}")
    if candidates is None:
        candidates = default_candidates()
    n = len(values)
    if n == 0:
        raise SkipidxError("the column has no rows")
    n_granules = (n + index_granularity - 1) // index_granularity

    # -- ideal, by full scan
    bar = Progress("ideal scan", len(queries), unit="queries") if show_progress else None
    infos = compute_ideal(queries, values, index_granularity, progress=bar.update if bar else None)
    if bar:
        bar.__exit__(None, None, None)

    by_tok: dict[tuple[str, int | None], list[Candidate]] = {}
    for c in candidates:
        by_tok.setdefault((c.tokenizer, c.n), []).append(c)

    results: list[CandidateResult] = []
    tok_stats: dict = {}
    masks_out: dict[str, list[np.ndarray]] = {}
    gran_set = sorted({c.granularity for c in candidates})
    # Batches hold whole index granules of every GRANULARITY in play.
    unit = index_granularity * math.lcm(*gran_set)
    batch_rows = unit * max(1, batch_granules // math.lcm(*gran_set))
    n_batches = (n + batch_rows - 1) // batch_rows

    # One set of absent-token probes for every candidate (seeded: runs stay comparable).
    probe_hashes = np.random.default_rng(20240607).integers(0, 2**63, size=max(absent_probes, 0),
                                                            dtype=np.int64).astype(np.uint64) * np.uint64(2) + \
        np.uint64(1)

    for (tok_name, tok_n), cands in by_tok.items():
        tokenizer = _tokenizer(tok_name, tok_n)
        label = cands[0].tok_label
        # Warm the compiled kernels on a few rows so build times exclude JIT compilation.
        wr, wh = tokenizer.hash_column(values.slice(0, min(n, 64)), 0)
        _distinct_per_segment(wh, np.zeros(1, np.int64), np.full(1, wh.shape[0], np.int64))
        _dedup_segments(wh, np.zeros(1, np.int64), np.full(1, wh.shape[0], np.int64))
        n_ig = {g: (n_granules + g - 1) // g for g in gran_set}
        bar = Progress(f"build {label}", n_batches * 2, unit="steps") if show_progress else None

        # One pass over the column: hash, then keep each data granule's distinct hashes only
        # (inserting a hash twice changes nothing, and the engine inserts distinct hashes too).
        ndv = {g: np.zeros(n_ig[g], dtype=np.int64) for g in gran_set}
        hash_s = dedup_s = 0.0
        ndv_s = {g: 0.0 for g in gran_set}
        uniq_parts: list[np.ndarray] = []
        counts = np.zeros(n_granules, dtype=np.int64)
        for b in range(n_batches):
            start = b * batch_rows
            chunk = values.slice(start, min(batch_rows, n - start))
            t0 = time.perf_counter()
            rows, hashes = tokenizer.hash_column(chunk, 0)
            hash_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            dg = (rows + start) // index_granularity
            first = start // index_granularity
            last = (min(start + batch_rows, n) - 1) // index_granularity
            bounds = np.searchsorted(dg, np.arange(first, last + 2))
            u, cnt = _dedup_segments(hashes, bounds[:-1], bounds[1:])
            uniq_parts.append(u)
            counts[first:last + 1] = cnt
            del rows, hashes, dg
            dedup_s += time.perf_counter() - t0
            if bar:
                bar.update(b + 1)
        uniq = np.concatenate(uniq_parts) if uniq_parts else np.empty(0, dtype=np.uint64)
        del uniq_parts
        uoff = np.zeros(n_granules + 1, dtype=np.int64)
        np.cumsum(counts, out=uoff[1:])
        for g in gran_set:
            t0 = time.perf_counter()
            if g == 1:
                ndv[g] = counts.copy()
            else:
                # Distinct over the union of g data granules: re-count their concatenated distinct hashes.
                gb = uoff[np.minimum(np.arange(n_ig[g] + 1) * g, n_granules)]
                ndv[g] = _distinct_per_segment(uniq, gb[:-1], gb[1:])
            ndv_s[g] = time.perf_counter() - t0
        dg_of_uniq = np.repeat(np.arange(n_granules, dtype=np.int64), counts)
        tok_stats[label] = {
            **{f"ndv_per_index_granule_g{g}": {"mean": float(ndv[g].mean()), "p50": float(np.median(ndv[g])),
                                               "p95": float(np.percentile(ndv[g], 95)),
                                               "max": int(ndv[g].max())} for g in gran_set},
            "hash_s": hash_s,
            "dedup_s": dedup_s,
        }

        # Sizes of every candidate; same-bytes twins of the adaptive ones.
        all_cands = list(cands)
        sizes: dict[Candidate, np.ndarray] = {}
        for c in cands:
            if c.kind == "adaptive":
                nd = np.maximum(ndv[c.granularity], 1)
                sizes[c] = _adaptive_sizes(nd, c.fpp, c.sizing)
        if same_bytes:
            for c in cands:
                if c.kind == "adaptive":
                    mean = float(sizes[c].mean())
                    twin = Candidate(c.tokenizer, c.n, "same-bytes", c.granularity,
                                     num_bytes=int(math.ceil(mean / 32.0) * 32), matched_to=c.name)
                    all_cands.append(twin)
        for c in all_cands:
            if c.kind != "adaptive":
                sizes[c] = np.full(n_ig[c.granularity], c.num_bytes, dtype=np.int64)
        banks = {c: SBBFBank.from_num_bytes(sizes[c]) for c in all_cands}
        insert_s = {c: 0.0 for c in all_cands}

        # Insert every granule's distinct hashes into every candidate's bank.
        for i, c in enumerate(all_cands):
            t0 = time.perf_counter()
            fid = dg_of_uniq // c.granularity if c.granularity > 1 else dg_of_uniq
            banks[c].insert(fid, uniq)
            insert_s[c] = time.perf_counter() - t0
            if bar:
                bar.update(n_batches + int((i + 1) * n_batches / len(all_cands)))
        if bar:
            bar.__exit__(None, None, None)
        del uniq, dg_of_uniq

        # Queries.
        conditions = _Conditions(tok_name, tok_n, column, values.type)
        rpns = [build_rpn(e) for e in exprs]
        zone_cache: dict[int, tuple] = {}
        nulls = np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=np.int64) \
            if values.null_count else None
        for c in all_cands:
            bank = banks[c]
            g = c.granularity
            r = CandidateResult(c)
            r.index_bytes = bank.nbytes
            r.bytes_per_row = bank.nbytes / n
            r.mean_filter_bytes = float(sizes[c].mean())
            fill, est = _bank_stats(bank)
            zs = zone_cache.get(g)
            if zs is None:
                zs = zone_cache[g] = _zones(n, index_granularity * g, nulls)
            granules = _granules(conditions.index, bank, fill, est, *zs)
            saturated = granules.saturated    # the engine's rule: these answer "maybe" unchecked
            r.fill_mean = float(fill.mean())
            r.saturated = int(saturated.sum())
            r.bits_fpp = float(np.where(saturated, 1.0, est).mean())
            # Absent-token probes: random 64-bit hashes stand for tokens in no granule, so every "maybe"
            # is a false positive; thousands of them measure the index's granule FPP far more tightly
            # than a handful of absent queries can.
            if absent_probes:
                hits = bank.check_matrix(probe_hashes) | saturated[:, None]
                nh, nt = int(hits.sum()), int(hits.size)
                r.probe_fpp = nh / nt
                r.probe_ci = wilson_interval(nh, nt, 0.999)
            r.ndv_mean = float(ndv[g].mean())
            r.expected_fpp = float(bank.fpp_estimates(ndv[g].astype(np.float64)).mean())
            r.hash_s = hash_s
            r.build_s = hash_s + dedup_s + insert_s[c] + (ndv_s[g] if c.kind == "adaptive" else 0.0)
            cmasks = []
            for qi, (rpn, info) in enumerate(zip(rpns, infos)):
                conds = conditions.of(qi, rpn)
                t0 = time.perf_counter()
                ct = _kept(rpn, conds, granules, g, n_granules)
                prune_ms = (time.perf_counter() - t0) * 1000
                kept = int(ct.sum())
                r.queries.append(QueryResult(kept, prune_ms, prune_ms + info.scan_ms * kept / n_granules))
                if keep_masks:
                    cmasks.append(ct.copy())
            results.append(r)
            if keep_masks:
                masks_out[c.name] = cmasks
        del banks

    res = BenchResult(source=source, column=column, rows=n, index_granularity=index_granularity,
                      granules=n_granules, queries=infos, candidates=results, tokenizer_stats=tok_stats,
                      absent_probes=int(absent_probes))
    if keep_masks:
        res.masks = masks_out  # type: ignore[attr-defined]
    return res


def _bank_stats(bank) -> tuple[np.ndarray, np.ndarray]:
    """(fill ratio, FPP of an absent lookup from the bit counts) per filter, as the engine computes them."""
    from skipidx.core._kernels.build import bank_stats

    return bank_stats(bank.words, bank.block_offset, bank.num_blocks)


def putze_min_bytes(ndv: int, fpp: float) -> int:
    """Smallest SBBF (whole 32-byte blocks) whose Putze estimate at `ndv` distinct values is <= fpp."""
    from skipidx.core.sbbf import MAX_BYTES, SBBF

    if ndv <= 0:
        return 32
    lo, hi = 1, 1
    while SBBF.fpp_estimate(hi * 32, ndv) > fpp:
        if hi * 32 >= MAX_BYTES:
            return MAX_BYTES
        lo, hi = hi, min(hi * 2, MAX_BYTES // 32)
    while lo < hi:  # the smallest block count meeting the target, by bisection
        mid = (lo + hi) // 2
        if SBBF.fpp_estimate(mid * 32, ndv) <= fpp:
            hi = mid
        else:
            lo = mid + 1
    return hi * 32


def _adaptive_sizes(ndv: np.ndarray, fpp: float, sizing: str = "parquet") -> np.ndarray:
    """The engine's filter size (rule `sizing` of skipidx.core.sizing) for every distinct count."""
    from skipidx.core import sizing as rules

    return rules.num_bytes(ndv, fpp, sizing).reshape(np.shape(ndv))
