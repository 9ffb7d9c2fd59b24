"""Differential tests of the query engine against chDB (embedded ClickHouse).

Same DDL, same data in both (chDB loads it from a Parquet file with
``INSERT INTO t SELECT * FROM file(...)``), several hundred seeded random
WHERE clauses over every supported function with AND/OR/NOT nesting, on

* a generated log table (:mod:`skipidx.apps.datagen`), and
* a real corpus: lines of the Python standard library's source files.

For every clause: ``count()``, ``sum(id)`` and the first ids (``ORDER BY id
LIMIT 5``) equal chDB's, and the granules the indexes kept are at least the
ideal (every granule that holds a true match -- computed by a full scan with
the exact evaluator; since the scan only reads kept granules, the count
equality already proves no match was pruned away, and this checks the
statistics say so too). Clauses that chDB rejects must be rejected here too.
"""
from __future__ import annotations

import os
import random
import re
import sysconfig
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.apps import datagen
from skipidx.core.errors import SkipidxError

chdb = pytest.importorskip("chdb")

pytestmark = pytest.mark.chdb

LOG_ROWS = 120_000
CORPUS_LINES = 60_000
N_LOG_QUERIES = 260
N_CORPUS_QUERIES = 200


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def sql_str(b: bytes | str) -> str:
    """A ClickHouse string literal for exactly these bytes."""
    if isinstance(b, str):
        b = b.encode()
    out = []
    for ch in b.decode("utf-8", "surrogateescape"):
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:
            out.append(f"\\x{o - 0xDC00:02X}")
        elif ch in "'\\":
            out.append("\\" + ch)
        elif o < 0x20:
            out.append(f"\\x{o:02X}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def like_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def chdb_session():
    """The process-wide chDB session (chDB's embedded server accepts a single data path)."""
    from skipidx.apps.research import chdb_session as _chdb

    return _chdb.session()


class Env:
    """One table loaded into skipidx and chDB."""

    def __init__(self, tmp: Path, name: str, ddl_ours: str, ddl_chdb: str, data: pa.Table) -> None:
        self.name = name
        self.db = skipidx.connect(str(tmp / "skipidx"))
        self.db.sql(ddl_ours)
        self.db.insert(name, data)
        self.ch = chdb_session()
        self.ch.query(f"DROP TABLE IF EXISTS {name}")
        self.ch.query(ddl_chdb)
        path = tmp / f"{name}.parquet"
        pq.write_table(data, path)
        self.ch.query(f"INSERT INTO {name} SELECT * FROM file('{path}', Parquet)")
        # the stored rows in part/granule order, for the ideal granule count
        tbl = self.db.catalog.table(name)
        snap = tbl.snapshot()
        self.meta = snap.meta
        self.stored = snap.read()
        gran = []
        off = 0
        for p in snap.parts:
            g = np.searchsorted(p.marks, np.arange(p.num_rows), side="right") - 1
            gran.append(g + off)
            off += p.n_granules
        self.total_granules = off
        self.granule_of_row = np.concatenate(gran) if gran else np.zeros(0, np.int64)
        snap.close()

    def chdb_rows(self, sql: str) -> list[list[str]]:
        out = str(self.ch.query(sql, "TSV")).strip("\n")
        return [line.split("\t") for line in out.split("\n")] if out else []

    def ideal(self, where: str) -> int:
        from skipidx.expr.evaluate import where_mask
        from skipidx.expr.binder import bind_where
        from skipidx.sql.parser import parse_expression

        bound = bind_where(self.meta, parse_expression(where))
        mask = where_mask(bound, self.stored)
        if mask is None:
            return self.total_granules
        hit = np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)
        return int(np.unique(self.granule_of_row[hit]).shape[0])

    def check(self, where: str) -> None:
        t = self.name
        try:
            ch_count = self.chdb_rows(f"SELECT count(), sum(id) FROM {t} WHERE {where}")
            ch_ids = self.chdb_rows(f"SELECT id FROM {t} WHERE {where} ORDER BY id LIMIT 5")
        except Exception as e:  # chDB rejects it: so must we
            with pytest.raises(SkipidxError):
                self.db.sql(f"SELECT count(), sum(id) FROM {t} WHERE {where}")
            return
        r = self.db.sql(f"SELECT count(), sum(id) FROM {t} WHERE {where}")
        got = r.fetchall()[0]
        want = (int(ch_count[0][0]), int(ch_count[0][1]))
        assert got == want, f"WHERE {where}: skipidx (count, sum) {got} != chDB {want}"
        ids = [row[0] for row in self.db.sql(f"SELECT id FROM {t} WHERE {where} ORDER BY id LIMIT 5").fetchall()]
        assert ids == [int(x[0]) for x in ch_ids], f"WHERE {where}: first ids {ids} != chDB {ch_ids}"
        ideal = self.ideal(where)
        st = r.stats
        assert st.granules_selected >= ideal, (
            f"WHERE {where}: kept {st.granules_selected} granules < {ideal} that hold a match")
        assert st.granules_total == self.total_granules
        for ix in st.indexes:
            assert ix.granules_after >= ideal, f"WHERE {where}: index {ix.name} alone kept {ix.granules_after} < {ideal}"


class WhereGen:
    """Seeded random WHERE clauses from atom makers, nested with AND/OR/NOT."""

    def __init__(self, rng: random.Random, atoms: list) -> None:
        self.rng = rng
        self.atoms = atoms

    def atom(self) -> str:
        return self.rng.choice(self.atoms)(self.rng)

    def expr(self, depth: int) -> str:
        r = self.rng.random()
        if depth <= 0 or r < 0.35:
            return self.atom()
        if r < 0.5:
            return f"NOT ({self.expr(depth - 1)})"
        op = "AND" if r < 0.78 else "OR"
        n = self.rng.choice([2, 2, 3])
        return "(" + f" {op} ".join(self.expr(depth - 1) for _ in range(n)) + ")"


def _tokens(texts: list[str]) -> Counter:
    c: Counter = Counter()
    for s in texts:
        c.update(re.findall(r"[A-Za-z0-9\x80-\U0010ffff]+", s))
    return c


def _pools(texts: list[str], rng: random.Random) -> dict[str, list[str]]:
    toks = _tokens(texts)
    common = [t for t, _ in toks.most_common(60)]
    rare = [t for t, n in toks.items() if n <= 2 and len(t) >= 3]
    rng.shuffle(rare)
    words = common + rare[:200]
    subs = []
    for s in rng.sample(texts, min(300, len(texts))):
        if len(s) >= 6:
            i = rng.randrange(0, len(s) - 4)
            subs.append(s[i:i + rng.randint(3, 8)])
    return {"common": common, "rare": rare[:200], "words": words, "subs": subs,
            "absent": ["zyzzyva", "qqqxqqq", "absentword1"]}


def string_atoms(col: str, pools: dict[str, list[str]]) -> list:
    """Atom makers over a String column (every supported string function)."""
    def word(r: random.Random) -> str:
        k = r.random()
        if k < 0.45:
            return r.choice(pools["common"])
        if k < 0.85:
            return r.choice(pools["rare"])
        return r.choice(pools["absent"])

    def sub(r: random.Random) -> str:
        return r.choice(pools["subs"]) if r.random() < 0.7 else word(r)

    return [
        lambda r: f"hasToken({col}, {sql_str(word(r))})",
        lambda r: f"hasToken({col}, {sql_str(word(r))})",
        lambda r: f"hasTokenCaseInsensitive({col}, {sql_str(word(r).upper())})",
        lambda r: f"hasTokenOrNull({col}, {sql_str(word(r))})",
        lambda r: f"{col} LIKE {sql_str('%' + like_escape(sub(r)) + '%')}",
        lambda r: f"{col} NOT LIKE {sql_str('%' + like_escape(sub(r)) + '%')}",
        lambda r: f"{col} LIKE {sql_str('%' + like_escape(word(r)) + '_' + '%')}",
        lambda r: f"{col} LIKE {sql_str(like_escape(sub(r)[:3]) + '%')}",
        lambda r: f"{col} ILIKE {sql_str('%' + like_escape(word(r).upper()) + '%')}",
        lambda r: f"startsWith({col}, {sql_str(sub(r)[:4])})",
        lambda r: f"endsWith({col}, {sql_str(sub(r)[-3:])})",
        lambda r: f"multiSearchAny({col}, [{', '.join(sql_str(sub(r)) for _ in range(r.randint(1, 3)))}])",
        lambda r: f"match({col}, {sql_str(re.escape(word(r)) + '|' + re.escape(word(r)))})",
        lambda r: f"lower({col}) LIKE {sql_str('%' + like_escape(word(r).lower()) + '%')}",
        lambda r: f"hasToken(lower({col}), {sql_str(word(r).lower())})",
        lambda r: f"{col} = {sql_str(r.choice(pools['exact']))}" if pools.get("exact") else "1",
        lambda r: f"{col} IN ({', '.join(sql_str(r.choice(pools['exact'])) for _ in range(3))})"
        if pools.get("exact") else "0",
    ]


# ---------------------------------------------------------------------------
# the log table
# ---------------------------------------------------------------------------

LOG_INDEXES_COMMON = """,
    INDEX msg_tok msg TYPE tokenbf_v1(4096, 3, 0) GRANULARITY 1,
    INDEX msg_ng msg TYPE ngrambf_v1(3, 8192, 2, 0) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX user_bf user_id TYPE bloom_filter GRANULARITY 2,
    INDEX ts_mm ts TYPE minmax GRANULARITY 1,
    INDEX id_mm id TYPE minmax GRANULARITY 4,
    INDEX status_set http_status TYPE set(100) GRANULARITY 2,
    INDEX svc_set service TYPE set(30) GRANULARITY 1"""
LOG_INDEXES_OURS = LOG_INDEXES_COMMON + """,
    INDEX msg_sbbf_tok msg TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX msg_sbbf_ng msg TYPE sbbf('ngram', n = 4, fpp = 0.01) GRANULARITY 1,
    INDEX msg_lower lower(msg) TYPE sbbf('token', fpp = 0.01) GRANULARITY 1"""
SETTINGS = " SETTINGS index_granularity = 1024"


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Env:
    data = datagen.generate_table(LOG_ROWS, seed=11)
    tmp = tmp_path_factory.mktemp("difflogs")
    env = Env(tmp, "logs",
              datagen.SCHEMA_SQL.format(table="logs", indexes=LOG_INDEXES_OURS) + SETTINGS,
              datagen.SCHEMA_SQL.format(table="logs", indexes=LOG_INDEXES_COMMON) + SETTINGS,
              data)
    yield env
    env.db.close()


def log_atoms(env: Env, rng: random.Random) -> list:
    msgs = env.stored.column("msg").to_pylist()
    pools = _pools(rng.sample(msgs, 4000), rng)
    pools["rare"] = pools["rare"] + [datagen.RARE_TOKEN] * 20
    pools["exact"] = rng.sample(msgs, 30)
    traces = env.stored.column("trace_id").to_pylist()
    users = env.stored.column("user_id").to_pylist()
    ts = env.stored.column("ts")
    t_lo, t_hi = ts[0].as_py(), ts[len(ts) - 1].as_py()

    def a_trace(r):
        return f"trace_id = {sql_str(r.choice(traces) if r.random() < 0.8 else 'f' * 32)}"

    def a_trace_in(r):
        vals = [r.choice(traces) for _ in range(r.randint(1, 5))] + ["0" * 32]
        return f"trace_id {'NOT ' if r.random() < 0.2 else ''}IN ({', '.join(sql_str(v) for v in vals)})"

    def a_user(r):
        vals = [r.choice(users) for _ in range(r.randint(1, 10))]
        return f"user_id IN ({', '.join(str(v) for v in vals)})"

    def a_user_cmp(r):
        return f"user_id {r.choice(['=', '!=', '<', '>=', '<='])} {r.choice(users)}"

    def a_ts(r):
        frac = r.random()
        t = t_lo + (t_hi - t_lo) * frac
        return f"ts {r.choice(['<', '<=', '>', '>=', '='])} {sql_str(t.strftime('%Y-%m-%d %H:%M:%S'))}"

    def a_ts_between(r):
        a, b = sorted([r.random(), r.random()])
        fa = (t_lo + (t_hi - t_lo) * a).strftime('%Y-%m-%d %H:%M:%S')
        fb = (t_lo + (t_hi - t_lo) * b).strftime('%Y-%m-%d %H:%M:%S')
        return f"ts BETWEEN {sql_str(fa)} AND {sql_str(fb)}"

    def a_status(r):
        return r.choice(["http_status IS NULL", "http_status IS NOT NULL", "http_status = 404",
                         "http_status IN (500, 502, 503)", "http_status != 200", "http_status > 400",
                         "http_status = 70000", "http_status NOT IN (200, 70000)", "http_status < -1"])

    def a_misc(r):
        return r.choice([
            f"id < {r.randrange(LOG_ROWS)}", f"id >= {r.randrange(LOG_ROWS)}", "id = -1", "id > -1",
            f"id IN ({r.randrange(LOG_ROWS)}, {r.randrange(LOG_ROWS)}, -5)", f"id < {r.randrange(LOG_ROWS)}.5",
            "level = 'ERROR'", "level IN ('WARN', 'ERROR')", "service = 'search'", "service IN ('api', 'web')",
            "service != 'api'", f"id % 7 = {r.randrange(7)}", "1", "0", "NULL",
        ])

    return string_atoms("msg", pools) + [a_trace, a_trace, a_trace_in, a_user, a_user_cmp, a_ts, a_ts_between,
                                          a_status, a_status, a_misc, a_misc]


def test_logs_fixed_queries(logs: Env) -> None:
    """Hand-written clauses that exercise every index at least once."""
    for w in [
        f"hasToken(msg, '{datagen.RARE_TOKEN}')",
        f"hasToken(msg, '{datagen.ABSENT_TOKEN}')",
        f"hasToken(msg, '{datagen.FREQUENT_TOKEN}')",
        f"msg LIKE '%{datagen.RARE_TOKEN}%'",
        f"hasToken(msg, '{datagen.RARE_TOKEN}') OR trace_id = '0123'",
        f"NOT hasToken(msg, '{datagen.FREQUENT_TOKEN}')",
        "http_status IS NULL", "http_status IS NOT NULL AND http_status = 404",
        "ts < '2024-01-01 00:30:00'", "service IN ('geo', 'ledger')",
        f"multiSearchAny(msg, ['{datagen.RARE_TOKEN}', '{datagen.ABSENT_TOKEN}'])",
        "hasTokenCaseInsensitive(msg, 'KRAKEN')", "lower(msg) LIKE '%café%'",
        "match(msg, 'kraken|zyzzyva')", "startsWith(msg, 'GET /login')", "endsWith(msg, 'sighted')",
    ]:
        logs.check(w)


@pytest.mark.parametrize("block", range(4), ids=lambda b: f"block{b}")
def test_logs_random_where(logs: Env, block: int) -> None:
    rng = random.Random(1000 + block)
    gen = WhereGen(rng, log_atoms(logs, rng))
    for _ in range(N_LOG_QUERIES // 4):
        logs.check(gen.expr(rng.choice([0, 1, 2, 2, 3])))


def test_logs_pruning_is_effective(logs: Env) -> None:
    """A rare token keeps few granules; an absent one keeps none (all indexes read)."""
    r = logs.db.sql(f"SELECT count() FROM logs WHERE hasToken(msg, '{datagen.ABSENT_TOKEN}')")
    assert r.fetchall() == [(0,)]
    assert r.stats.granules_selected <= r.stats.granules_total // 10, r.stats
    r = logs.db.sql(f"SELECT count() FROM logs WHERE hasToken(msg, '{datagen.RARE_TOKEN}')")
    assert r.stats.granules_selected <= 3 * datagen.RARE_ROWS, r.stats
    r = logs.db.sql("SELECT count() FROM logs WHERE trace_id = 'ffffffffffffffffffffffffffffffff'")
    assert r.stats.granules_selected <= r.stats.granules_total // 10, r.stats


# ---------------------------------------------------------------------------
# the corpus: lines of the Python standard library
# ---------------------------------------------------------------------------

def stdlib_lines(limit: int) -> pa.Table:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py") if p.is_file())
    paths, nos, lines = [], [], []
    for p in files:
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for i, line in enumerate(text.split("\n")):
            paths.append(p.name)
            nos.append(i + 1)
            lines.append(line)
            if len(lines) >= limit:
                break
        if len(lines) >= limit:
            break
    n = len(lines)
    return pa.table({"id": pa.array(np.arange(n, dtype=np.uint64)), "file": pa.array(paths, pa.string()),
                     "lineno": pa.array(nos, pa.uint32()), "line": pa.array(lines, pa.string())})


CORPUS_DDL = """CREATE TABLE src (
    id UInt64, file LowCardinality(String), lineno UInt32, line String,
    INDEX line_tok line TYPE tokenbf_v1(2048, 3, 0) GRANULARITY 1,
    INDEX line_ng line TYPE ngrambf_v1(3, 4096, 2, 0) GRANULARITY 1,
    INDEX file_bf file TYPE bloom_filter GRANULARITY 1,
    INDEX lineno_mm lineno TYPE minmax GRANULARITY 1,
    INDEX file_set file TYPE set(50) GRANULARITY 2{extra}
) ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 1024"""
CORPUS_EXTRA = """,
    INDEX line_sbbf line TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX line_lower lower(line) TYPE sbbf('token', fpp = 0.01) GRANULARITY 1,
    INDEX line_ng4 line TYPE sbbf('ngram', n = 4, fpp = 0.02) GRANULARITY 2"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Env:
    data = stdlib_lines(CORPUS_LINES)
    tmp = tmp_path_factory.mktemp("diffsrc")
    env = Env(tmp, "src", CORPUS_DDL.format(extra=CORPUS_EXTRA), CORPUS_DDL.format(extra=""), data)
    yield env
    env.db.close()


def corpus_atoms(env: Env, rng: random.Random) -> list:
    lines = env.stored.column("line").to_pylist()
    pools = _pools(rng.sample(lines, 5000), rng)
    pools["exact"] = [l for l in rng.sample(lines, 200) if l.strip()][:30]
    files = sorted(set(env.stored.column("file").to_pylist()))
    n = env.stored.num_rows

    def a_file(r):
        return r.choice([f"file = {sql_str(r.choice(files))}",
                         f"file IN ({sql_str(r.choice(files))}, {sql_str(r.choice(files))}, 'nope.py')",
                         f"file != {sql_str(r.choice(files))}", f"startsWith(file, {sql_str(r.choice(files)[:2])})"])

    def a_lineno(r):
        return f"lineno {r.choice(['<', '>', '=', '<=', '>='])} {r.choice([1, 10, 100, 500, 2000, 5000, -3, 1e10])}"

    def a_misc(r):
        return r.choice([f"id < {r.randrange(n)}", f"id BETWEEN {r.randrange(n)} AND {r.randrange(n)}",
                         "line = ''", "line != ''", "length(line) > 80", "lineno % 10 = 0"])

    return string_atoms("line", pools) + [a_file, a_lineno, a_misc]


def test_corpus_fixed_queries(corpus: Env) -> None:
    for w in ["hasToken(line, 'def')", "hasToken(line, 'import') AND startsWith(line, 'from ')",
              "line LIKE '%self.%'", "multiSearchAny(line, ['lambda', 'yield'])",
              "match(line, '^\\\\s*class ')", "lower(line) LIKE '%http%'", "file = 'os.py'",
              "NOT (hasToken(line, 'return') OR hasToken(line, 'def'))", "endsWith(line, ':')",
              "hasTokenCaseInsensitive(line, 'NONE')"]:
        corpus.check(w)


@pytest.mark.parametrize("block", range(4), ids=lambda b: f"block{b}")
def test_corpus_random_where(corpus: Env, block: int) -> None:
    rng = random.Random(2000 + block)
    gen = WhereGen(rng, corpus_atoms(corpus, rng))
    for _ in range(N_CORPUS_QUERIES // 4):
        corpus.check(gen.expr(rng.choice([0, 1, 2, 2, 3])))


def test_errors_agree_with_chdb(logs: Env) -> None:
    """Clauses ClickHouse rejects at analysis are rejected here, whatever the pruning."""
    for w in ["hasToken(user_id, 'x')", "msg = 1", "hasToken(msg, msg)",
              "match(msg, '(')", "multiSearchAny(msg, [])", "lower(id) = 'a'", "id = 'abc'",
              "msg LIKE 1", "nosuchfunc(msg)", "nosuchcol = 1", "'a'"]:
        with pytest.raises(Exception):
            logs.ch.query(f"SELECT count() FROM logs WHERE {w}", "TSV")
        with pytest.raises(SkipidxError):
            logs.db.sql(f"SELECT count() FROM logs WHERE {w}")
        # and the database still answers
        assert logs.db.sql("SELECT count() FROM logs").fetchall() == [(LOG_ROWS,)]


def test_separator_needle_always_raises(logs: Env) -> None:
    """hasToken with a separator in the needle is an error even when every granule is pruned.

    (ClickHouse raises it only when the function runs: on this table its token
    index prunes every granule for 'a zyzzyva' and chDB answers 0. skipidx
    checks the constant at bind time, so the answer does not depend on pruning.)
    """
    for w in ["hasToken(msg, 'a b')", f"hasToken(msg, '{datagen.ABSENT_TOKEN} x')",
              f"hasToken(msg, 'x') AND hasToken(msg, '{datagen.ABSENT_TOKEN}.')"]:
        with pytest.raises(SkipidxError, match="separator"):
            logs.db.sql(f"SELECT count() FROM logs WHERE {w}")
