"""Seeded query generator: realistic WHERE clauses proposed from the data itself.

Families (each a list of skipidx/ClickHouse WHERE clauses over one string column):

=================  =====================================================================
family             predicate
=================  =====================================================================
token_rare         ``hasToken(col, t)``, t in at most ~1 % of the granules
token_medium       ``hasToken(col, t)``, t in ~5-40 % of the granules
token_frequent     ``hasToken(col, t)``, t in most granules
substring_rare     ``col LIKE '%s%'``, s a 5-character slice of a rare token
substring_medium   ``col LIKE '%s%'``, s a slice of a medium token
absent_token       ``hasToken(col, t)``, t in no row (checked over the whole column)
absent_substring   ``col LIKE '%s%'``, s in no row
value_eq           ``col = v``, v a whole value of a random row
=================  =====================================================================

Rarity is measured in *granules*, over the whole column: candidate tokens are
drawn from a row sample, then the number of granules holding each is counted
exactly in one streaming pass (token hashes, ``np.isin``), so "rare" means
rare for pruning, not merely rare in the sample.

Everything is driven by one ``numpy.random.Generator(seed)``: the same data
and seed give the same queries.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.apps.research.whereexpr import parse_where, quote

FAMILIES = ("token_rare", "token_medium", "token_frequent", "substring_rare", "substring_medium",
            "absent_token", "absent_substring", "value_eq")


@dataclass(frozen=True)
class Query:
    """One generated (or read) WHERE clause, with its family."""

    family: str
    where: str
    note: str = ""            # how it was chosen (e.g. "token in 3/1221 granules")

    def to_dict(self) -> dict:
        return asdict(self)


def _token_hashes_by_granule(values: pa.ChunkedArray, granularity: int, batch_rows: int):
    """Yield (granule ids, token hashes) per batch of rows (token tokenizer, seed 0)."""
    from skipidx.core.tokenizer_api import get_tokenizer

    tok = get_tokenizer("token")
    n = len(values)
    for start in range(0, n, batch_rows):
        chunk = values.slice(start, min(batch_rows, n - start))
        rows, hashes = tok.hash_column(chunk, 0)
        yield (rows + start) // granularity, hashes


def _hash_tokens(tokens: list[bytes]) -> np.ndarray:
    from skipidx.core._kernels.xxh64 import xxh64_offsets

    if not tokens:
        return np.empty(0, dtype=np.uint64)
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in tokens], out=offsets[1:])
    data = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    return xxh64_offsets(data, offsets, np.uint64(0))


def granule_frequency(values: pa.ChunkedArray, tokens: list[bytes], granularity: int,
                      batch_rows: int = 262_144, progress=None) -> np.ndarray:
    """For each token: in how many granules (of `granularity` rows) does it occur as a token?"""
    # Whole granules per batch, so a granule's (granule, token) keys are all deduplicated together.
    batch_rows = max(1, batch_rows // granularity) * granularity
    uh, inv = np.unique(_hash_tokens(tokens), return_inverse=True)   # repeated tokens count once
    m = np.int64(max(uh.shape[0], 1))
    counts = np.zeros(uh.shape[0], dtype=np.int64)
    done = 0
    for gids, hashes in _token_hashes_by_granule(values, granularity, batch_rows):
        if uh.shape[0] == 0:
            break
        pos = np.searchsorted(uh, hashes)
        np.minimum(pos, uh.shape[0] - 1, out=pos)
        hit = uh[pos] == hashes
        if hit.any():
            # One int64 key per (granule, candidate): distinct keys = granules holding the candidate.
            keys = np.unique(gids[hit] * m + pos[hit])
            np.add.at(counts, keys % m, 1)
        done += 1
        if progress is not None:
            progress(min(done * batch_rows, len(values)))
    return counts[inv.reshape(-1)]


def _sample_tokens(values: pa.ChunkedArray, rng: np.random.Generator, sample_rows: int) -> list[bytes]:
    from skipidx.core.tokenizer_api import get_tokenizer

    n = len(values)
    idx = np.sort(rng.choice(n, size=min(sample_rows, n), replace=False))
    sample = values.take(pa.array(idx))
    toks = get_tokenizer("token").tokenize(sample)
    uniq = sorted(set(toks.to_pylist()))
    return uniq


def _random_word(rng: np.random.Generator, length: int) -> bytes:
    # Consonant-heavy letters keep made-up words readable and unlikely to exist.
    letters = np.frombuffer(b"bcdfghjklmnpqrstvwxzyq", dtype=np.uint8)
    return bytes(rng.choice(letters, size=length).tolist())


def _slice(token: bytes, rng: np.random.Generator, length: int = 5) -> bytes | None:
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < length:
        return None
    i = int(rng.integers(0, len(text) - length + 1))
    return text[i:i + length].encode("utf-8")


def generate_queries(values: pa.Array | pa.ChunkedArray, column: str, *, seed: int = 7, per_family: int = 3,
                     granularity: int = 8192, sample_rows: int = 50_000, families: tuple[str, ...] = FAMILIES,
                     max_candidates: int = 3000, progress=None) -> list[Query]:
    """Propose ``per_family`` WHERE clauses of every family from the data (seeded)."""
    if isinstance(values, pa.Array):
        values = pa.chunked_array([values])
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
            or pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
        raise SkipidxError(f"query generation needs a string column, {column!r} is {values.type}")
    unknown = set(families) - set(FAMILIES)
    if unknown:
        raise SkipidxError(f"unknown query families {sorted(unknown)}; known: {', '.join(FAMILIES)}")
    if per_family < 1:
        raise SkipidxError(f"per_family must be >= 1, got {per_family}")
    n = len(values)
    if n == 0:
        raise SkipidxError(f"column {column!r} has no rows to propose queries from")
    rng = np.random.default_rng(seed)
    n_granules = (n + granularity - 1) // granularity

    sample = _sample_tokens(values, rng, sample_rows)
    if len(sample) > max_candidates:
        pick = np.sort(rng.choice(len(sample), size=max_candidates, replace=False))
        sample = [sample[i] for i in pick]
    absent = [_random_word(rng, 9) for _ in range(4 * per_family)]
    cands = sample + absent
    freq = granule_frequency(values, cands, granularity, progress=progress)
    tok_freq = freq[:len(sample)]
    abs_freq = freq[len(sample):]

    def pick_tokens(lo: float, hi: float, k: int) -> list[tuple[bytes, int]]:
        ok = np.flatnonzero((tok_freq >= max(lo, 1)) & (tok_freq <= hi))
        if ok.size == 0:  # widen to the nearest frequencies rather than give up on the family
            target = (lo + hi) / 2.0
            ok = np.argsort(np.abs(tok_freq - target), kind="stable")[:k]
            ok = ok[tok_freq[ok] > 0]
        chosen = rng.choice(ok, size=min(k, ok.size), replace=False) if ok.size else []
        return [(sample[i], int(tok_freq[i])) for i in chosen]

    rare_hi = max(1.0, 0.01 * n_granules)
    # Rare tokens: prefer long ones (they also give substrings).
    rare = pick_tokens(1, rare_hi, 3 * per_family)
    medium = pick_tokens(0.05 * n_granules, 0.4 * n_granules, 3 * per_family)
    frequent = pick_tokens(0.8 * n_granules, n_granules, per_family)
    col = column
    out: list[Query] = []

    def add(family: str, where: str, note: str) -> None:
        if family in families and sum(q.family == family for q in out) < per_family:
            parse_where(where)  # every generated clause must parse
            out.append(Query(family, where, note))

    for t, f in rare:
        add("token_rare", f"hasToken({col}, {quote(t)})", f"token in {f}/{n_granules} granules")
    for t, f in medium:
        add("token_medium", f"hasToken({col}, {quote(t)})", f"token in {f}/{n_granules} granules")
    for t, f in frequent:
        add("token_frequent", f"hasToken({col}, {quote(t)})", f"token in {f}/{n_granules} granules")
    for family, pool in (("substring_rare", rare), ("substring_medium", medium)):
        for t, f in pool:
            s = _slice(t, rng)
            if s is not None and b"%" not in s and b"_" not in s and b"\\" not in s:
                add(family, f"{col} LIKE {quote(b'%' + s + b'%')}", f"slice of a token in {f} granules")
    for t, f in zip(absent, abs_freq):
        if f == 0:
            add("absent_token", f"hasToken({col}, {quote(t)})", "token in no row")
    for t in absent:
        # A made-up pair of consonant runs: absent with overwhelming odds (the bench's full scan
        # reports its true count as the ideal).
        s = t[:4] + b" " + t[4:7]
        add("absent_substring", f"{col} LIKE {quote(b'%' + s + b'%')}", "substring of a made-up word pair")
    if "value_eq" in families:
        rows = rng.choice(n, size=min(per_family, n), replace=False)
        for r in np.sort(rows):
            v = values[int(r)].as_py()
            if v is None:
                continue
            vb = v.encode("utf-8") if isinstance(v, str) else v
            add("value_eq", f"{col} = {quote(vb)}", f"the value of row {int(r)}")
    order = {f: i for i, f in enumerate(FAMILIES)}
    return sorted(out, key=lambda q: order[q.family])


def write_queries(queries: list[Query], path: str) -> str:
    """The queries file format: ``-- family: NAME`` lines, then one WHERE clause per line."""
    lines = ["-- skipidx bench queries: one WHERE clause per line; '-- family: X' starts a family"]
    fam = None
    for q in queries:
        if q.family != fam:
            lines.append(f"-- family: {q.family}")
            fam = q.family
        lines.append(q.where + (f"  -- {q.note}" if q.note else ""))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def read_queries(path: str) -> list[Query]:
    """Read a queries file (see `write_queries`); each clause is parsed, errors name the line."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SkipidxError(f"cannot read queries file: {e.strerror}", path=path) from None
    out: list[Query] = []
    family = "custom"
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("--"):
            body = line[2:].strip()
            if body.lower().startswith("family:"):
                family = body.split(":", 1)[1].strip() or "custom"
            continue
        note = ""
        # A trailing comment (outside string literals) is a note.
        clause = _strip_comment(line)
        if clause != line:
            note = line[len(clause):].strip()[2:].strip()
        try:
            parse_where(clause)
        except SkipidxError as e:
            raise SkipidxError(f"queries file line {lineno}: {e}", path=path) from None
        out.append(Query(family, clause, note))
    if not out:
        raise SkipidxError("queries file holds no WHERE clause", path=path)
    return out


def _strip_comment(line: str) -> str:
    in_str = False
    i = 0
    while i < len(line):
        c = line[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == "'":
                in_str = False
        elif c == "'":
            in_str = True
        elif line.startswith("--", i):
            return line[:i].rstrip()
        i += 1
    return line
