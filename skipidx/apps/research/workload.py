"""`skipidx advise --workload FILE`: one index per column, chosen by what the workload asks of it.

The workload is a file of SELECTs (``;``-separated). Each predicate on the
column is classified from its text: whole value (``col = 'x'``, ``col IN
(...)``), token (``hasToken``, ``hasTokenCaseInsensitive``, ``hasAnyTokens``,
``hasAllTokens``), substring (``LIKE '%x%'``, ``startsWith``, ``endsWith``,
``multiSearchAny``), or one no membership index can help (``!=``, ``NOT
LIKE``, ``NOT IN``, ``match``, range comparisons). The choice:

* only whole-value lookups -> ``bloom_filter(fpp)`` (never a token or n-gram
  index: hex trace ids are looked up whole, and their n-grams only cost bytes);
* token lookups and no substrings -> ``sbbf('token', fpp = p)``;
* substrings -> ``sbbf('ngram', n = n, fpp = p)``, n = the shortest literal
  run of the substring needles clamped to 3..4 (a shorter needle is listed
  as one no index helps).

Predicted bytes are the sizes the engine builds for that DDL (exact rule,
per sampled granule, scaled to the table); predicted kept/ideal is measured
on the sampled granules: ideal = granules whose exact token set holds the
needle's tokens, kept = ideal + the others times their analytic FPP.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError

_STR = r"'((?:[^'\\]|\\.|'')*)'"


@dataclass
class WorkloadAdvice:
    column: str
    kinds: dict                      # kind -> count of predicates
    ddl: str | None
    tokenizer: str | None
    predicted_bytes: float
    predicted_kept_over_ideal: float | None
    unhelped: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def classify(sql: str, column: str) -> tuple[dict[str, list[str]], list[str]]:
    """({kind: [needles]}, [predicates no index helps]) for `column` in the workload text."""
    c = re.escape(column)
    found: dict[str, list[str]] = {"value": [], "token": [], "substring": []}
    unhelped: list[str] = []
    text = re.sub(r"\s+", " ", sql)
    # NOT col LIKE ... : a negation no membership index can prove; take it out before the LIKE scan
    for m in re.finditer(rf"\bNOT\s+{c}\s+I?LIKE\s+{_STR}", text, re.I):
        unhelped.append(m.group(0))
    text = re.sub(rf"\bNOT\s+{c}\s+I?LIKE\s+{_STR}", " ", text, flags=re.I)
    for m in re.finditer(rf"\b(hasToken|hasTokenCaseInsensitive|hasTokenOrNull)\s*\(\s*{c}\s*,\s*{_STR}\s*\)", text,
                         re.I):
        found["token"].append(m.group(2))
    for m in re.finditer(rf"\b(hasAnyTokens|hasAllTokens)\s*\(\s*{c}\s*,\s*\[([^\]]*)\]", text, re.I):
        found["token"] += re.findall(_STR, m.group(2))
    for m in re.finditer(rf"\b(startsWith|endsWith)\s*\(\s*{c}\s*,\s*{_STR}\s*\)", text, re.I):
        found["substring"].append(m.group(2))
    for m in re.finditer(rf"\bmultiSearchAny\s*\(\s*{c}\s*,\s*\[([^\]]*)\]", text, re.I):
        found["substring"] += re.findall(_STR, m.group(1))
    for m in re.finditer(rf"(?<![\w.]){c}\s+(NOT\s+)?(I?LIKE)\s+{_STR}", text, re.I):
        if m.group(1) or m.group(2).upper() == "ILIKE":
            unhelped.append(m.group(0))
        else:
            found["substring"] += [p for p in re.split(r"[%_]", m.group(3)) if p]
    for m in re.finditer(rf"(?<![\w.(]){c}\s*(==|=)\s*{_STR}", text):
        found["value"].append(m.group(2))
    for m in re.finditer(rf"(?<![\w.]){c}\s+(NOT\s+)?IN\s*\(([^)]*)\)", text, re.I):
        if m.group(1):
            unhelped.append(m.group(0))
        else:
            found["value"] += re.findall(_STR, m.group(2))
    for m in re.finditer(rf"(?<![\w.]){c}\s*(!=|<>|<=|>=|<|>)\s*('[^']*'|\S+)", text):
        unhelped.append(m.group(0))
    for m in re.finditer(rf"\bmatch\s*\(\s*{c}\s*,\s*{_STR}\s*\)", text, re.I):
        unhelped.append(m.group(0))
    return found, unhelped


def recommend(values: pa.Array | pa.ChunkedArray, workload_sql: str, *, column: str, fpp: float = 0.01,
              index_granularity: int = 8192, granularity: int = 1, sample_granules: int = 64,
              seed: int = 1) -> WorkloadAdvice:
    from skipidx.apps.research.advise import sample_granule_starts
    from skipidx.apps.research.indexes import _hash_tokens
    from skipidx.apps.research.zoo import ExactSets, SbbfAdaptive, granule_sets
    from skipidx.core.tokenizer_api import get_tokenizer

    if not (0.0 < float(fpp) < 1.0):
        raise SkipidxError(f"fpp must lie in (0, 1), got {fpp!r}")
    found, unhelped = classify(workload_sql, column)
    kinds = {k: len(v) for k, v in found.items() if v}
    if not kinds:
        return WorkloadAdvice(column, kinds, None, None, 0.0, None, unhelped)
    if found["substring"]:
        # n-grams of 3..4 bytes: shorter grams pass nearly every granule; a needle shorter than n
        # yields no gram, so no index of this column helps it
        n = max(3, min(4, min(len(s.encode()) for s in found["substring"])))
        tok, label = get_tokenizer("ngram", n=n), f"ngram{n}"
        ddl_t = f"sbbf('ngram', n = {n}, fpp = {fpp:g})"
        unhelped += [f"substring '{s}' (shorter than the {n}-grams)" for s in found["substring"]
                     if len(s.encode()) < n]
        needles = [tok.substring_tokens(s.encode(), False, False) for s in found["substring"]
                   if len(s.encode()) >= n]
    elif found["token"]:
        tok, label = get_tokenizer("token"), "token"
        ddl_t = f"sbbf('token', fpp = {fpp:g})"
        needles = [tok.value_tokens(s.encode()) for s in found["token"]]
    else:
        tok, label = get_tokenizer("value"), "value"
        ddl_t = f"bloom_filter({fpp:g})"
        needles = [tok.value_tokens(s.encode()) for s in found["value"]]
    if found["substring"] or found["token"]:
        # whole-value lookups are answered by the token/ngram index only through the value's tokens
        needles += [tok.value_tokens(s.encode()) for s in found["value"]]
    if isinstance(values, pa.Array):
        values = pa.chunked_array([values])
    rows_per_ig = index_granularity * granularity
    starts = sample_granule_starts(len(values), rows_per_ig, sample_granules, seed)
    sample = pa.concat_arrays([values.slice(int(s), rows_per_ig).combine_chunks() for s in starts])
    sets = granule_sets(sample, tok, rows_per_ig)
    f = SbbfAdaptive(fpp, "exact")
    f.build(sets)
    n_ig = (len(values) + rows_per_ig - 1) // rows_per_ig
    exact = ExactSets()
    exact.build(sets)
    fpp_g = f.bank.fpp_estimates(sets.ndv)
    kept = ideal = 0.0
    for toks in needles:
        if not toks:
            continue
        has = exact.keep(np.unique(_hash_tokens(list(toks)))).all(axis=0)
        ideal += float(has.sum())
        kept += float(has.sum()) + float(fpp_g[~has].sum())
    ratio = kept / ideal if ideal else None
    ddl = f"INDEX idx_{column} {column} TYPE {ddl_t} GRANULARITY {granularity}"
    return WorkloadAdvice(column, kinds, ddl, label, f.nbytes / max(sets.n_granules, 1) * n_ig, ratio, unhelped)


def workload_markdown(w: WorkloadAdvice) -> str:
    out = [f"## Recommended for the workload: `{w.column}`", ""]
    out.append("predicates on the column: " + (", ".join(f"{k}: {v}" for k, v in w.kinds.items()) or "none"))
    if w.ddl:
        r = "n/a (no needle found in the sample)" if w.predicted_kept_over_ideal is None \
            else f"{w.predicted_kept_over_ideal:.3f}"
        out += ["", f"`{w.ddl}`", "", f"predicted index bytes: {w.predicted_bytes:,.0f}; predicted granules "
                f"kept / ideal over the workload's lookups on the sampled granules: {r}"]
    else:
        out += ["", "no index recommended: the workload has no predicate on this column that an index can answer"]
    if w.unhelped:
        out += ["", "no index can help: " + "; ".join(f"`{u}`" for u in w.unhelped)]
    return "\n".join(out) + "\n"
