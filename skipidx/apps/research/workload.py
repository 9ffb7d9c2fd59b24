"""`skipidx advise` with a workload: one index per column (or indexed expression), chosen by
what the workload's SELECTs ask of it and measured on a sample by the engine itself.

The workload is a file of SELECTs or, for a database directory, its log of
recent SELECTs (``query_log``, engine/query_log.py) on the table. Each
statement goes through the engine's parser (``skipidx.sql.parser.parse``),
its logged parameters are bound (a parameter without a value gets a
placeholder of its type: the predicate is seen, its needle is unknown), and
its WHERE/PREWHERE through the binder; the bound tree is walked with a
:class:`~skipidx.expr.visitors.BoundVisitor`. So ``lower(col) = ...``,
``hasToken(lower(col), ...)``, ``IN``, ``LIKE``, ``ILIKE`` (on
``lower(col)``), ``startsWith``, ``endsWith``, ``multiSearchAny``,
``position(col, s) > 0`` and parameters are all seen, each on its target
expression. An atom is

* **value**: ``=`` / ``IN`` (and ``LIKE`` without wildcards);
* **token**: ``hasToken[OrNull]``, ``hasTokenCaseInsensitive`` (on
  ``lower(col)``), ``hasAnyTokens``, ``hasAllTokens``;
* **substring**: ``LIKE`` with literal runs, ``startsWith``, ``endsWith``,
  ``multiSearchAny``, ``position(...) > 0``;
* **range**: ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``;
* or one no index can help: anything under ``NOT``, ``!=``, ``NOT IN``,
  ``NOT LIKE``, ``match``, a substring shorter than 3 bytes (no gram of
  any index is that short).

Candidates per target: value only -> ``bloom_filter(fpp)`` (and ``minmax``
for numbers and dates) -- never a token, n-gram or text index (hex trace ids
are looked up whole, and their grams only cost bytes); tokens ->
``sbbf('token', fpp)`` and ``text(tokenizer = 'splitByNonAlpha')``;
substrings -> ``sbbf('ngram', n = 3)``, ``sbbf('ngram', n = 4)`` (with
``min_n = 3`` when a needle is 3 bytes long) and ``text(tokenizer =
ngrams(3))``; ranges -> ``minmax``. Each Bloom-type and minmax candidate at
``GRANULARITY`` 1, 2, 4 and 8.

Measurement: whole windows of 8 data granules are sampled (seeded), written
to a temporary table with every candidate as an index, and every measurable
atom runs as ``SELECT count() ... WHERE atom`` with the other indexes
ignored: granules kept per candidate, the ideal from ``uniqExact(intDiv(row,
G))`` without indexes, bytes from the index files (scaled to the table).

Choice: the candidate with the fewest expected bytes read per query over the
target's atoms -- index bytes read (all of a Bloom-type or minmax index; for
a text index the share of its dictionary and postings the needles touch:
needles' tokens plus one dictionary block of 128, over its distinct tokens)
plus granules kept x the column's bytes per granule -- if it beats reading
every granule; among candidates within 5 % of that cost, the fewest index
bytes. The GRANULARITY is the one that
minimises that cost among the measured ones.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.expr.bound import BAgg, BCall, BColumn, BConst, BFolded
from skipidx.expr.visitors import BoundVisitor, columns_of, visit

GRANULARITIES = (1, 2, 4, 8)
_WINDOW = max(GRANULARITIES)
_TEXT_BLOCK = 128
_PLACEHOLDER = "zzadviseparam"

_TOKEN_FUNCS = {"hasToken", "hasTokenOrNull", "hasTokenCaseInsensitive", "hasTokenCaseInsensitiveOrNull",
                "hasAnyTokens", "hasAllTokens"}
_SUBSTRING_FUNCS = {"startsWith", "endsWith", "multiSearchAny"}
_RANGE_FUNCS = {"less", "greater", "lessOrEquals", "greaterOrEquals"}
_NEVER = {"notEquals", "notIn", "notLike", "notILike", "match"}


@dataclass
class Atom:
    kind: str                    # value | token | substring | range | none
    target: str                  # the indexed expression as SQL: msg, lower(msg)
    column: str                  # the table column under it
    text: str                    # the predicate as SQL (bound, parameters substituted)
    needles: tuple = ()          # bytes: values / tokens / substrings
    known: bool = True           # False: a parameter without a value stands in
    why: str = ""                # kind none: why no index helps


class _Atoms(BoundVisitor[list]):
    """Post-order: each node returns the atoms under it; NOT marks its atoms as unhelpable."""

    def visit_column(self, e: BColumn) -> list:
        return []

    def visit_const(self, e: BConst) -> list:
        return []

    def visit_folded(self, e: BFolded, source) -> list:
        return []

    def visit_agg(self, e: BAgg, arg) -> list:
        return []

    def visit_call(self, e: BCall, args: list) -> list:
        if e.func in ("and", "or"):
            return [a for sub in args for a in sub]
        if e.func == "not":
            out = []
            for sub in args:
                for a in sub:
                    out.append(Atom("none", a.target, a.column, e.text or a.text, a.needles, a.known,
                                    "a negation: a filter says 'maybe present', never 'absent in every row'"))
            return out
        atom = classify_call(e)
        return [atom] if atom is not None else [a for sub in args for a in sub]


def _target(e) -> tuple[str, str] | None:
    """(SQL of the indexed expression, its column) when `e` is a column or a function of exactly
    one column with constants (lower(msg), toDate(ts)); None otherwise."""
    if isinstance(e, BColumn):
        return e.name, e.name
    if isinstance(e, BCall):
        cols = columns_of(e)
        if len(cols) == 1:
            return e.text or "", next(iter(cols))
    return None


def _consts(v) -> tuple:
    if isinstance(v, (tuple, list)):
        return tuple(x for x in v if isinstance(x, (bytes, str)))
    return (v,) if isinstance(v, (bytes, str)) else ()


def _b(x) -> bytes:
    return x if isinstance(x, bytes) else str(x).encode()


def classify_call(e: BCall) -> Atom | None:
    """The atom of one predicate call (None: not a predicate on one indexed expression)."""
    from skipidx.core.text_patterns import like_runs

    args = e.args
    if not args:
        return None
    f = e.func
    if f in ("greater", "greaterOrEquals") and len(args) == 2 and isinstance(args[0], BCall) \
            and args[0].func == "position" and isinstance(args[1], BConst) and args[1].value in (0, 1) \
            and (f == "greater") == (args[1].value == 0):
        e, args, f = args[0], args[0].args, "position"          # position(x, s) > 0: a substring
    tg = _target(args[0])
    if tg is None or not all(isinstance(a, BConst) for a in args[1:]):
        if f in _RANGE_FUNCS and len(args) == 2 and isinstance(args[0], BConst) and _target(args[1]):
            tg = _target(args[1])
            return Atom("range", tg[0], tg[1], e.text)
        return None
    target, col = tg
    vals = args[1].value if len(args) > 1 else None
    needles = tuple(_b(x) for x in _consts(vals))
    known = not any(_PLACEHOLDER.encode() in n for n in needles)
    if f in _NEVER:
        return Atom("none", target, col, e.text, needles, known, f"{f}: a filter cannot prove every row differs")
    if f in ("equals", "in"):
        if isinstance(vals, (bytes, str)) or (isinstance(vals, tuple) and needles):
            return Atom("value", target, col, e.text, needles, known)
        return Atom("range", target, col, e.text, (), known)         # = / IN on numbers and dates
    if f in _RANGE_FUNCS:
        return Atom("range", target, col, e.text, (), known)
    if f in _TOKEN_FUNCS:
        if "CaseInsensitive" in f:
            target = f"lower({target})" if target == col else target
            needles = tuple(n.lower() for n in needles)
        return Atom("token", target, col, e.text, needles, known)
    if f in ("like", "ilike"):
        pat = needles[0] if needles else b""
        if f == "ilike":
            target, pat = (f"lower({target})" if target == col else target), pat.lower()
        runs = like_runs(pat)
        if len(runs) == 1 and runs[0].at_start and runs[0].at_end and runs[0].text == pat:
            return Atom("value", target, col, e.text, (pat,), known)
        long = tuple(r.text for r in runs if len(r.text) >= 3)
        if not long:
            return Atom("none", target, col, e.text, tuple(r.text for r in runs), known,
                        "no literal run of 3 bytes or more: no gram of any index is that short")
        return Atom("substring", target, col, e.text, long, known)
    if f in _SUBSTRING_FUNCS or f == "position":
        long = tuple(n for n in needles if len(n) >= 3)
        if f == "multiSearchAny" and len(long) < len(needles):
            return Atom("none", target, col, e.text, needles, known,
                        "an alternative shorter than 3 bytes matches granules no gram index can rule out")
        if not long:
            return Atom("none", target, col, e.text, needles, known,
                        "a needle shorter than 3 bytes: no gram of any index is that short")
        return Atom("substring", target, col, e.text, long, known)
    return None


# ----------------------------------------------------------------------------- the workload

def statements_from_text(sql: str) -> list[tuple[Any, dict]]:
    """(SELECT AST, params) of every SELECT of a workload file (the engine's parser)."""
    from skipidx.sql import ast as A
    from skipidx.sql.parser import parse

    out = []
    for s in parse(sql):
        if isinstance(s, A.Explain):
            s = s.select
        if isinstance(s, A.Select):
            out.append((s, {}))
    return out


def statements_from_log(db, table: str) -> list[tuple[Any, dict]]:
    """(SELECT AST, logged params) of the database's query log entries that read `table`."""
    import json

    from skipidx.sql import ast as A
    from skipidx.sql.parser import parse

    out = []
    log = db.query_log()
    for q, p in zip(log.column("query").to_pylist(), log.column("query_parameters").to_pylist()):
        try:
            stmts = parse(q)
        except SkipidxError:
            continue
        for s in stmts:
            # `t` or `default.t`: a system table of the same name is not this table
            if (isinstance(s, A.Select) and s.table is not None and s.table.name == table
                    and getattr(s.table, "database", None) in (None, "default")):
                out.append((s, json.loads(p or "{}")))
    return out


def _fill_params(stmt, params: dict):
    """`stmt` with `params` bound; a parameter without a value gets a placeholder of its type."""
    from skipidx.sql.params import bind_params, statement_params

    vals = dict(params)
    for p in statement_params(stmt):
        if p.name not in vals:
            t = p.type_name
            if "Array" in t:
                vals[p.name] = [_PLACEHOLDER + p.name]
            elif "Int" in t or "Float" in t or "Decimal" in t:
                vals[p.name] = 0
            elif "Date" in t:
                vals[p.name] = "1970-01-02"
            else:
                vals[p.name] = _PLACEHOLDER + p.name
    return bind_params(stmt, vals)


def workload_atoms(meta, statements: Sequence[tuple[Any, dict]]) -> tuple[list[Atom], list[str]]:
    """Every atom of the statements' WHERE/PREWHERE bound against `meta`; and the statements that
    could not be bound (with the reason)."""
    from skipidx.expr.binder import Binder

    from skipidx.sql import ast as A

    def bind(w) -> list[Atom]:
        b = Binder(meta)._filter(w, "WHERE")
        return visit(b, _Atoms()) if b is not None else []

    atoms: list[Atom] = []
    skipped: list[str] = []
    for stmt, params in statements:
        try:
            s = _fill_params(stmt, params)
        except SkipidxError as e:
            skipped.append(f"{stmt.to_sql()[:120]}: {getattr(e, 'message', e)}")
            continue
        for w in (s.where, s.prewhere):
            if w is None:
                continue
            try:
                atoms += bind(w)
            except SkipidxError as e:
                # a conjunct on a column the data lacks (a sample of some columns): the others still count
                parts = w.args if isinstance(w, A.BoolOp) and w.op == "and" else ()
                ok = False
                for part in parts:
                    try:
                        atoms += bind(part)
                        ok = True
                    except SkipidxError:
                        pass
                if not ok:
                    skipped.append(f"{stmt.to_sql()[:120]}: {getattr(e, 'message', e)}")
    return atoms, skipped


# ----------------------------------------------------------------------------- candidates

@dataclass
class Candidate:
    target: str
    type_sql: str
    granularity: int
    label: str                   # family: bloom_filter, minmax, sbbf token, sbbf ngram3, text, ...
    index_name: str = ""
    bytes_sample: int = 0
    bytes_table: float = 0.0
    kept: int = 0                # data granules kept over the measured atoms (sample)
    ideal: int = 0
    cost_per_query: float = 0.0  # expected bytes read per query, whole table
    kept_over_ideal: float | None = None


def _numeric_or_date(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)
            or pa.types.is_decimal(t))


def candidates_for(target: str, atoms: Sequence[Atom], value_type: pa.DataType, fpp: float) -> list[Candidate]:
    kinds = {a.kind for a in atoms}
    out: list[tuple[str, str, bool]] = []      # (type_sql, label, granular)
    strings = pa.types.is_string(value_type) or pa.types.is_large_string(value_type) \
        or pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type)
    if "substring" in kinds and strings:
        short = any(len(n) == 3 for a in atoms if a.kind == "substring" for n in a.needles)
        out += [(f"sbbf('ngram', n = 3, fpp = {fpp:g})", "sbbf ngram3", True),
                (f"sbbf('ngram', n = 4{', min_n = 3' if short else ''}, fpp = {fpp:g})",
                 "sbbf ngram4" + (" min_n=3" if short else ""), True),
                ("text(tokenizer = ngrams(3))", "text ngrams(3)", False)]
    elif "token" in kinds and strings:
        out += [(f"sbbf('token', fpp = {fpp:g})", "sbbf token", True),
                ("text(tokenizer = 'splitByNonAlpha')", "text splitByNonAlpha", False)]
    elif "value" in kinds:
        # whole values only: never a token / n-gram / text index
        out.append((f"bloom_filter({fpp:g})", "bloom_filter", True))
    if ("range" in kinds or ("value" in kinds and not strings)) and (_numeric_or_date(value_type) or strings):
        out.append(("minmax", "minmax", True))
    cands = []
    for type_sql, label, granular in out:
        for g in (GRANULARITIES if granular else (1,)):
            cands.append(Candidate(target, type_sql, g, label))
    return cands


# ----------------------------------------------------------------------------- measurement

def sample_windows(n_rows: int, index_granularity: int, sample_granules: int, seed: int) -> np.ndarray:
    """Start rows of the sampled windows of _WINDOW data granules (all of them when few)."""
    w = index_granularity * _WINDOW
    n_w = max(1, (n_rows + w - 1) // w)
    k = max(1, sample_granules // _WINDOW)
    rng = np.random.default_rng(seed)
    pick = np.arange(n_w) if n_w <= k else np.sort(rng.choice(n_w, size=k, replace=False))
    return pick * w


@dataclass
class WorkloadAdvice:
    column: str                      # the target expression
    kinds: dict                      # kind -> count of predicates
    ddl: str | None
    tokenizer: str | None            # the recommended family (bloom_filter, sbbf token, text ..., minmax)
    predicted_bytes: float
    predicted_kept_over_ideal: float | None
    unhelped: list = field(default_factory=list)
    granularity: int | None = None
    candidates: list = field(default_factory=list)
    scan_cost_per_query: float = 0.0
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _needle_tokens(a: Atom, label: str) -> int:
    from skipidx.core.tokenizer_api import get_tokenizer

    tok = get_tokenizer("ngram", n=3) if "ngram" in label else get_tokenizer("token")
    n = 0
    for s in a.needles:
        n += len(tok.substring_tokens(s, False, False)) if a.kind == "substring" else max(1, len(tok.value_tokens(s)))
    return max(n, 1)


def recommend_table(data: pa.Table, statements: Sequence[tuple[Any, dict]], *, columns: Sequence[str] | None = None,
                    fpp: float = 0.01, index_granularity: int = 8192, sample_granules: int = 32,
                    seed: int = 1, meta=None) -> tuple[list[WorkloadAdvice], list[str]]:
    """One WorkloadAdvice per target expression of `columns` (default: every column the workload's
    predicates touch) from `statements`, measured on a sample of `data` (see the module doc).
    `meta`: the table's metadata to bind against (default: the data's own columns)."""
    import pyarrow.parquet as pq

    import skipidx

    if not (0.0 < float(fpp) < 1.0):
        raise SkipidxError(f"fpp must lie in (0, 1), got {fpp!r}")
    for nm, v in (("index_granularity", index_granularity), ("sample_granules", sample_granules)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise SkipidxError(f"{nm} must be an integer >= 1, got {v!r}")
    if data.num_rows == 0:
        raise SkipidxError("the data has no rows")
    if columns is not None:
        for c in columns:
            if c not in data.column_names:
                raise SkipidxError(f"no column {c!r} in the data; columns: {', '.join(data.column_names)}")
    root = tempfile.mkdtemp(prefix="skipidx-advise-")
    try:
        starts = sample_windows(data.num_rows, index_granularity, sample_granules, seed)
        w = index_granularity * _WINDOW
        sample = pa.concat_tables([data.slice(int(s), w) for s in starts]).combine_chunks()
        sample = sample.append_column("__advise_row", pa.array(np.arange(sample.num_rows, dtype=np.uint64)))
        path = os.path.join(root, "sample.parquet")
        pq.write_table(sample, path)
        n_sample_g = (sample.num_rows + index_granularity - 1) // index_granularity
        n_table_g = (data.num_rows + index_granularity - 1) // index_granularity
        scale = n_table_g / max(n_sample_g, 1)
        with skipidx.connect(os.path.join(root, "db")) as db:
            db.sql(f"CREATE TABLE s ENGINE = MergeTree ORDER BY __advise_row SETTINGS index_granularity = "
                   f"{index_granularity} AS SELECT * FROM file('{path}', Parquet)")
            atoms, skipped = workload_atoms(meta if meta is not None else db.table_meta("s"), statements)
            targets: dict[str, list[Atom]] = {}
            for a in atoms:
                if columns is None or a.column in columns:
                    targets.setdefault(a.target, []).append(a)
            out = []
            key = list((getattr(meta, "primary_key", None) or getattr(meta, "order_by", None) or [])
                       if meta is not None else [])
            for target, ats in targets.items():
                if key and target == key[0]:
                    kinds: dict[str, int] = {}
                    for x in ats:
                        kinds[x.kind] = kinds.get(x.kind, 0) + 1
                    out.append(WorkloadAdvice(target, kinds, None, None, 0.0, None, note=(
                        "it leads the table's ORDER BY key: the primary key's min/max per granule already "
                        "prunes these predicates")))
                    continue
                out.append(_advise_target(db, sample, target, ats, fpp=fpp, index_granularity=index_granularity,
                                          scale=scale, n_table_g=n_table_g))
            for c in columns or ():
                if not any(t.column == c for ats in targets.values() for t in ats):
                    out.append(WorkloadAdvice(c, {}, None, None, 0.0, None))
        return out, skipped
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _advise_target(db, sample: pa.Table, target: str, atoms: list[Atom], *, fpp: float, index_granularity: int,
                   scale: float, n_table_g: int) -> WorkloadAdvice:
    kinds: dict[str, int] = {}
    for a in atoms:
        kinds[a.kind] = kinds.get(a.kind, 0) + 1
    unhelped = list(dict.fromkeys(f"{a.text} ({a.why})" for a in atoms if a.kind == "none"))
    helped = [a for a in atoms if a.kind != "none"]
    col = atoms[0].column
    vt = sample.schema.field(col).type
    if target != col:
        vt = pa.string() if target.startswith("lower(") else vt
    cands = candidates_for(target, helped, vt, fpp)
    if not cands:
        return WorkloadAdvice(target, kinds, None, None, 0.0, None, unhelped,
                              note="no index type answers these predicates")
    for i, c in enumerate(cands):
        c.index_name = f"adv{i}"
        db.sql(f"ALTER TABLE s ADD INDEX {c.index_name} {target} TYPE {c.type_sql} GRANULARITY {c.granularity}")
        db.sql(f"ALTER TABLE s MATERIALIZE INDEX {c.index_name}")
    sizes = _index_sizes(db)
    n_sample_g = (sample.num_rows + index_granularity - 1) // index_granularity
    col_bytes = float(sample.column(col).nbytes) / max(n_sample_g, 1)   # the scan's bytes per granule
    names = [c.index_name for c in cands]

    def ideal_of(text: str) -> int:
        return int(db.sql(f"SELECT uniqExact(intDiv(__advise_row, {index_granularity})) FROM s WHERE {text} "
                          "SETTINGS use_skip_indexes = 0, log_queries = 0").fetchall()[0][0])

    # A lookup whose value the sample lacks (it lives in granules not sampled) is measured with a
    # stand-in of the same shape drawn from the sample (seeded): the typical lookup finds rows.
    rng = np.random.default_rng(len(target))
    measured, ideal, stand_ins = [], [], 0
    for a in helped:
        if not a.known:
            continue
        i = ideal_of(a.text)
        if i == 0 and a.kind in ("value", "token", "substring") and a.needles:
            alt = _stand_in(a, sample.column(col), target, rng)
            if alt is not None:
                i2 = ideal_of(alt.text)
                if i2 > 0:
                    a, i = alt, i2
                    stand_ins += 1
        measured.append(a)
        ideal.append(i)
    ideal_sum = sum(ideal)
    q = max(len(measured), 1)
    scan_cost = n_table_g * col_bytes
    distinct = {}
    for c in cands:
        c.bytes_sample = sizes.get(c.index_name, 0)
        c.bytes_table = c.bytes_sample * scale
        others = ",".join(n for n in names if n != c.index_name)
        kept = 0
        idx_read = 0.0
        for a in measured:
            r = db.sql(f"SELECT count() FROM s WHERE {a.text} SETTINGS log_queries = 0"
                       + (f", ignore_data_skipping_indices = '{others}'" if others else ""))
            kept += int(r.stats.granules_selected)
            if c.label.startswith("text"):
                if c.label not in distinct:
                    distinct[c.label] = _distinct_tokens(sample.column(col), target, c.label)
                share = min(1.0, (_needle_tokens(a, c.label) + _TEXT_BLOCK) / max(distinct[c.label], 1))
                idx_read += c.bytes_table * share
            else:
                idx_read += c.bytes_table
        c.kept, c.ideal = kept, ideal_sum
        c.kept_over_ideal = kept / ideal_sum if ideal_sum else None
        c.cost_per_query = (idx_read + kept * scale * col_bytes) / q if measured else c.bytes_table
    for c in cands:    # the next target measures its own candidates alone
        db.sql(f"ALTER TABLE s DROP INDEX {c.index_name}")
    # within 5 % of the cheapest per query the difference is the sample's noise: fewer index bytes win
    low = min(c.cost_per_query for c in cands)
    best = min((c for c in cands if c.cost_per_query <= 1.05 * low), key=lambda c: (c.bytes_table, c.cost_per_query))
    rec = best if (not measured or best.cost_per_query < scan_cost) else None
    note = "" if measured else "no predicate with a known value to measure (parameters without values)"
    if stand_ins:
        note = (f"{stand_ins} of {len(measured)} measured predicates look up values the sample lacks; each was "
                "measured with a value of the same kind drawn from the sample")
    if rec is None:
        return WorkloadAdvice(target, kinds, None, None, 0.0, None, unhelped, None,
                              [asdict(c) for c in cands], scan_cost,
                              "no candidate reads fewer bytes than scanning every granule")
    name = "idx_" + "".join(ch if ch.isalnum() else "_" for ch in target).strip("_")
    ddl = f"INDEX {name} {target} TYPE {rec.type_sql} GRANULARITY {rec.granularity}"
    return WorkloadAdvice(target, kinds, ddl, rec.label, rec.bytes_table, rec.kept_over_ideal, unhelped,
                          rec.granularity, [asdict(c) for c in cands], scan_cost, note)


def _stand_in(a: Atom, values, target: str, rng) -> Atom | None:
    """`a` with its needles replaced by ones drawn from the sample's values of the column."""
    import pyarrow.compute as pc

    from skipidx.sql.ast import quote_string

    v = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if target.startswith("lower("):
        v = pc.utf8_lower(v.cast(pa.string()))
    elif target != a.column:
        return None
    py = [x for x in v.cast(pa.string()).to_pylist()[:: max(1, len(v) // 4096)] if x]
    if not py:
        return None
    picks = [py[int(rng.integers(0, len(py)))].encode() for _ in a.needles]
    if a.kind == "value":
        new = tuple(picks)
        return Atom("value", a.target, a.column, f"{target} IN ({', '.join(quote_string(x) for x in new)})", new)
    if a.kind == "token":
        from skipidx.core.tokenizer_api import split_by_non_alpha

        toks = [t for p in picks for t in split_by_non_alpha(p)][:1]
        return Atom("token", a.target, a.column, f"hasToken({target}, {quote_string(toks[0])})", tuple(toks)) \
            if toks else None
    subs = []
    for p, n in zip(picks, a.needles):
        L = min(len(n), len(p))
        j = int(rng.integers(0, len(p) - L + 1))
        sub = p[j:j + L]
        if L >= 3 and not any(c in sub for c in (b"%", b"_", b"\\")):
            subs.append(sub)
    if not subs:
        return None
    return Atom("substring", a.target, a.column, " AND ".join(f"{target} LIKE {quote_string(b'%' + x + b'%')}"
                                                              for x in subs), tuple(subs))


def _distinct_tokens(values, target: str, label: str) -> int:
    import pyarrow.compute as pc

    from skipidx.core.tokenizer_api import get_tokenizer

    v = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if target.startswith("lower("):
        v = pc.utf8_lower(v.cast(pa.string()))
    tok = get_tokenizer("ngram", n=3) if "ngram" in label else get_tokenizer("token")
    _, h = tok.hash_column(v, 0)
    return int(np.unique(h).shape[0])


def _index_sizes(db) -> dict[str, int]:
    out: dict[str, int] = {}
    for dp, _, fns in os.walk(os.path.join(str(db.path), "s")):
        for fn in fns:
            if fn.startswith("idx."):
                nm = fn.split(".")[1]
                out[nm] = out.get(nm, 0) + os.path.getsize(os.path.join(dp, fn))
    return out


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f}"


def workload_markdown(w: WorkloadAdvice) -> str:
    out = [f"## Recommended for the workload: `{w.column}`", ""]
    out.append("predicates on it: " + (", ".join(f"{k}: {v}" for k, v in w.kinds.items()) or "none"))
    if w.ddl:
        r = "n/a" if w.predicted_kept_over_ideal is None else f"{w.predicted_kept_over_ideal:.3f}"
        out += ["", f"`{w.ddl}`", "", f"predicted index bytes: {_fmt_bytes(w.predicted_bytes)}; granules kept / "
                f"ideal over the workload's predicates on the sample: {r}"]
    else:
        out += ["", "no index recommended: " + (w.note or "the workload has no predicate on this column that an "
                                                "index can answer")]
    if w.note and w.ddl:
        out += ["", w.note]
    if w.candidates:
        from skipidx.apps.research.report import markdown_table

        out += ["", f"candidates (bytes read per query by a full scan of the column: {_fmt_bytes(w.scan_cost_per_query)}):",
                "", markdown_table(["index", "GRANULARITY", "bytes (table)", "granules kept (sample)", "ideal",
                                    "kept / ideal", "bytes read / query"],
                                   [[f"`{c['type_sql']}`", c["granularity"], _fmt_bytes(c["bytes_table"]), c["kept"],
                                     c["ideal"], "" if c["kept_over_ideal"] is None else f"{c['kept_over_ideal']:.3f}",
                                     _fmt_bytes(c["cost_per_query"])] for c in w.candidates], align="lrrrrrr")]
    if w.unhelped:
        out += ["", "no index can help: " + "; ".join(f"`{u}`" for u in w.unhelped)]
    return "\n".join(out) + "\n"


def recommend(values: pa.Array | pa.ChunkedArray, workload_sql: str, *, column: str, fpp: float = 0.01,
              index_granularity: int = 8192, sample_granules: int = 32, seed: int = 1) -> WorkloadAdvice:
    """One column's advice from a workload text (the column alone as the table)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    got, _ = recommend_table(pa.table({column: values}), statements_from_text(workload_sql), columns=[column],
                             fpp=fpp, index_granularity=index_granularity, sample_granules=sample_granules, seed=seed)
    own = [w for w in got if w.column == column]
    return own[0] if own else got[0]
