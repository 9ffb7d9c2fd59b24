"""Differential tests against ClickHouse 26.9 (chDB): the tokenizers' index side and
the query side's soundness.

Corpus: lines of the running interpreter's standard library sources (capped),
plus generated edge cases (2/3/4-byte UTF-8, invalid UTF-8, separators,
empty strings) and the golden rows of ``test_tokenizers.py``.

* ``tokens(s)`` and ``ngrams(s, n)`` of ClickHouse against ours, row by row
  (n-grams: equal on valid UTF-8; on invalid UTF-8 ours are a superset, see
  ``skipidx_tokenizers._kernels``).
* ``lower(s)`` against ``skipidx.expr.index_expressions.ascii_lower``.
* Soundness with ClickHouse as the judge: for LIKE / match / startsWith /
  endsWith / multiSearchAny / equals predicates built from the corpus,
  every row ClickHouse says matches holds all tokens of at least one
  required set.
"""
from __future__ import annotations

from skipidx.apps.research import chdb_session as chdb_oracle  # one chDB per process
import random
import re
import zlib
import sysconfig
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from skipidx.expr.index_expressions import ascii_lower
from skipidx.core.tokenizer_api import get_tokenizer

from test_tokenizers import NGRAM_GOLDEN, TOKEN_GOLDEN, ref_ngrams

chdb = pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

MAX_CORPUS_LINES = 12000
N_GENERATED = 2000


def _stdlib_lines() -> list[bytes]:
    root = Path(sysconfig.get_paths()["stdlib"])
    seen: dict[bytes, None] = {}
    for f in sorted(root.glob("*.py")):
        for line in f.read_bytes().splitlines():
            if line.strip():
                seen.setdefault(line, None)
    lines = list(seen)
    step = max(1, len(lines) // MAX_CORPUS_LINES)
    return lines[::step][:MAX_CORPUS_LINES]


_ALPHABET = [b"a", b"Z", b"7", b"_", b" ", b"-", b".", b"/", b":", b"\t", b"\x00", b"%", b"\\",
             "é".encode(), "ß".encode(), "日".encode(), "，".encode(), "\u00a0".encode(), "😀".encode(),
             b"\x80", b"\xbf", b"\xc3", b"\xe4", b"\xf0", b"\xf8", b"\xff"]


_VALID = [a for a in _ALPHABET if a.decode("utf-8", "replace") == a.decode("utf-8", "ignore")]


def _generated(n: int, seed: int = 20261121) -> list[bytes]:
    """n strings over valid UTF-8 pieces, then n over all pieces (mostly invalid UTF-8)."""
    rng = random.Random(seed)
    out = [b"", b" ", bytes(range(256))]
    for alphabet in (_VALID, _ALPHABET):
        for _ in range(n):
            k = rng.randrange(0, 24)
            out.append(b"".join(rng.choice(alphabet) for _ in range(k)))
    return out


@pytest.fixture(scope="module")
def corpus() -> list[bytes]:
    golden = [g[1] for g in TOKEN_GOLDEN] + [g[2] for g in NGRAM_GOLDEN]
    return golden + _stdlib_lines() + _generated(N_GENERATED)


@pytest.fixture(scope="module")
def corpus_file(corpus, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("chdb") / "corpus.parquet"
    pq.write_table(pa.table({"id": pa.array(range(len(corpus)), pa.int64()),
                             "s": pa.array(corpus, pa.binary())}), path)
    return str(path)


def _ch(sql: str) -> pa.Table:
    return chdb_oracle.query(sql, "ArrowTable")


def _per_row(tokens, nrows: int) -> list[list[bytes]]:
    out: list[list[bytes]] = [[] for _ in range(nrows)]
    for r, t in zip(tokens.rows.tolist(), tokens.to_pylist()):
        out[r].append(t)
    return out


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_corpus_is_large_and_varied(corpus):
    assert len(corpus) > 10000
    assert sum(not _is_utf8(s) for s in corpus) > 500, "needs invalid UTF-8 rows"
    assert sum(_is_utf8(s) and any(b > 0x7F for b in s) for s in corpus) > 500, "needs multi-byte UTF-8 rows"


def test_tokens_equal_clickhouse(corpus, corpus_file):
    ch = _ch(f"SELECT id, arrayMap(x -> hex(x), tokens(s)) AS t FROM file('{corpus_file}', Parquet) ORDER BY id")
    expected = [[bytes.fromhex(h) for h in row] for row in ch.column("t").to_pylist()]
    got = _per_row(get_tokenizer("token").tokenize(pa.array(corpus, pa.binary())), len(corpus))
    bad = [(corpus[i], expected[i], got[i]) for i in range(len(corpus)) if expected[i] != got[i]]
    assert not bad, f"{len(bad)} rows differ from ClickHouse tokens(); first: {bad[:3]}"


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ngrams_match_clickhouse(corpus, corpus_file, n):
    ch = _ch(f"SELECT id, arrayMap(x -> hex(x), ngrams(s, {n})) AS t FROM file('{corpus_file}', Parquet) ORDER BY id")
    expected = [[bytes.fromhex(h) for h in row] for row in ch.column("t").to_pylist()]
    got = _per_row(get_tokenizer("ngram", n=n).tokenize(pa.array(corpus, pa.binary())), len(corpus))
    extra_rows = 0
    for s, e, g in zip(corpus, expected, got):
        if _is_utf8(s):
            assert g == e, f"{n}-grams of valid UTF-8 {s!r}: ClickHouse {e}, ours {g}"
        else:
            assert not (Counter(e) - Counter(g)), f"{n}-grams of {s!r}: ClickHouse's {e} not all in ours {g}"
            assert g == ref_ngrams(s, n)
            extra_rows += g != e
    if n > 1:
        assert extra_rows > 0, "the invalid-UTF-8 rows should exercise the extra (resync) grams"


def test_lower_equals_clickhouse(corpus, corpus_file):
    ch = _ch(f"SELECT id, hex(lower(s)) AS l FROM file('{corpus_file}', Parquet) ORDER BY id")
    expected = [bytes.fromhex(h) for h in ch.column("l").to_pylist()]
    got = ascii_lower(pa.array(corpus, pa.binary())).to_pylist()
    assert got == expected


# ---------------------------------------------------------------- soundness, judged by ClickHouse


def _like_escape(piece: bytes) -> bytes:
    return re.sub(rb"([%_\\])", rb"\\\1", piece)


_RE2_PUNCT = set(b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _re2_escape(piece: bytes) -> bytes:
    return b"".join(b"\\" + bytes([c]) if c in _RE2_PUNCT else bytes([c]) for c in piece)


def _cut(rng: random.Random, s: bytes) -> tuple[int, int]:
    i = rng.randrange(0, len(s) + 1)
    j = rng.randrange(i, min(len(s), i + 30) + 1)
    return i, j


def _like_pattern(rng: random.Random, s: bytes, other: bytes) -> bytes:
    kind = rng.randrange(7)
    i, j = _cut(rng, s)
    if kind == 6:
        # backslashes left as they are: ClickHouse reads `\x` (x not %, _, \) as a
        # literal backslash and x, and `\\` as one backslash
        p = b"%" + re.sub(rb"([%_])", rb"\\\1", s[i:j])
        return p + (b"%" if not p.endswith(b"\\") or rng.random() < 0.5 else b"\\%")
    if kind == 0:
        return b"%" + _like_escape(s[i:j]) + b"%"
    if kind == 1:
        return _like_escape(s[:j]) + b"%"
    if kind == 2:
        return b"%" + _like_escape(s[i:])
    if kind == 3:  # two pieces, wildcard between
        k, m = _cut(rng, s[j:])
        return b"%" + _like_escape(s[i:j]) + rng.choice([b"%", b"_"]) + _like_escape(s[j + k:j + m]) + b"%"
    if kind == 4:  # whole value with one byte replaced by `_`
        if not s:
            return b""
        p = rng.randrange(len(s))
        return _like_escape(s[:p]) + b"_" + _like_escape(s[p + 1:])
    return b"%" + _like_escape(other[i:j]) + b"%"  # mostly false: keeps the judge honest


def _regex(rng: random.Random, s: bytes, other: bytes) -> bytes:
    kind = rng.randrange(6)
    i, j = _cut(rng, s)
    if kind == 5:
        oi, oj = _cut(rng, other)
        return _re2_escape(other[oi:oj]) + b".*x"  # mostly false
    if kind == 0:
        return _re2_escape(s[i:j])
    if kind == 1:
        k, m = _cut(rng, s[j:])
        return _re2_escape(s[i:j]) + b".*" + _re2_escape(s[j + k:j + m])
    if kind == 2:
        return b"^" + _re2_escape(s[:j]) + (b"$" if j == len(s) else b"")
    if kind == 3:
        oi, oj = _cut(rng, other)
        return b"(" + _re2_escape(s[i:j]) + b"|" + _re2_escape(other[oi:oj]) + b")"
    return _re2_escape(s[i:j]) + b"(x )?" + _re2_escape(s[j:j + 5])


def _pairs(corpus: list[bytes], count: int, seed: int) -> list[tuple[bytes, bytes]]:
    rng = random.Random(seed)
    texts = [s for s in corpus if s and _is_utf8(s) and not re.search(rb"[\x00-\x08\x0a-\x1f]", s)]
    return [(rng.choice(texts), rng.choice(texts)) for _ in range(count)]


TOKENIZERS = [("token", {}), ("ngram", {"n": 3}), ("ngram", {"n": 1}), ("value", {})]


def _check_sound(values: list[bytes], truth: list[bool], reqs: dict[str, list]) -> dict[str, int]:
    """For each tokenizer: every true row holds some required set; return how often a
    requirement was not None (so the test knows it exercised something)."""
    used = {}
    for key, req_list in reqs.items():
        name, params = key.split(":")[0], eval_params(key)
        tok = get_tokenizer(name, **params)
        rows = [i for i, t in enumerate(truth) if t]
        toks = _per_row(tok.tokenize(pa.array([values[i] for i in rows], pa.binary())), len(rows))
        for k, i in enumerate(rows):
            req = req_list[i]
            if req is None:
                continue
            have = set(toks[k])
            assert any(set(alt) <= have for alt in req.any_of), \
                f"{key}: false negative for value {values[i]!r}: needs {req.any_of}, has {sorted(have)[:20]}"
        used[key] = sum(r is not None for r in req_list)
    return used


def eval_params(key: str) -> dict:
    return {"n": int(key.split("n=")[1])} if "n=" in key else {}


def _keys():
    return [f"{n}:" + ",".join(f"{k}={v}" for k, v in p.items()) for n, p in TOKENIZERS]


def _judge(tmp_path, values, patterns, sql_expr: str) -> list[bool]:
    path = tmp_path / "pairs.parquet"
    pq.write_table(pa.table({"id": pa.array(range(len(values)), pa.int64()),
                             "s": pa.array(values, pa.binary()), "p": pa.array(patterns, pa.binary())}), path)
    t = _ch(f"SELECT id, toUInt8({sql_expr}) AS r FROM file('{path}', Parquet) ORDER BY id")
    return [bool(x) for x in t.column("r").to_pylist()]


@pytest.mark.parametrize("func", ["like", "match", "startsWith", "endsWith", "multiSearchAny", "equals"])
def test_requirements_sound_vs_clickhouse(corpus, tmp_path, func):
    rng = random.Random(func)
    pairs = _pairs(corpus, 3000, seed=zlib.crc32(func.encode()))
    values = [s for s, _ in pairs]
    if func == "like":
        patterns = [_like_pattern(rng, s, o) for s, o in pairs]
        sql = "s LIKE p"
    elif func == "match":
        patterns = [_regex(rng, s, o) for s, o in pairs]
        # a cut through a multi-byte character makes an invalid pattern; keep valid UTF-8 only
        keep = [i for i, p in enumerate(patterns) if _is_utf8(p)]
        values, patterns = [values[i] for i in keep], [patterns[i] for i in keep]
        sql = "match(s, p)"
    elif func == "startsWith":
        patterns = [s[:_cut(rng, s)[1]] if rng.random() < 0.8 else o[:8] for s, o in pairs]
        sql = "startsWith(s, p)"
    elif func == "endsWith":
        patterns = [s[_cut(rng, s)[0]:] if rng.random() < 0.8 else o[-8:] for s, o in pairs]
        sql = "endsWith(s, p)"
    elif func == "multiSearchAny":
        patterns = []
        for s, o in pairs:
            src = s if rng.random() < 0.7 else o + b"~"  # `~` end: mostly not in s
            i, j = _cut(rng, src)
            patterns.append(src[i:j] if src is s else src[i:])
        sql = "multiSearchAny(s, [assumeNotNull(p), 'zzqqxx not here'])"
    else:
        patterns = [s if rng.random() < 0.7 else o for s, o in pairs]
        sql = "s = p"
    truth = _judge(tmp_path, values, patterns, sql)
    assert 0.2 * len(truth) < sum(truth) < len(truth), "the generator should give both true and false rows"
    reqs = {}
    for key, (name, params) in zip(_keys(), TOKENIZERS):
        tok = get_tokenizer(name, **params)
        args_of = (lambda p: ((p, b"zzqqxx not here"),)) if func == "multiSearchAny" else (lambda p: (p,))
        reqs[key] = [tok.requirement(func, args_of(p), pa.binary()) for p in patterns]
    used = _check_sound(values, truth, reqs)
    assert used["token:"] > 0.1 * len(values), f"token requirements rarely usable: {used}"
    assert used["ngram:n=3"] > 0.3 * len(values), f"ngram requirements rarely usable: {used}"
    if func == "equals":
        assert used["value:"] == len(values)
    elif func != "like":  # (a LIKE pattern without wildcards would be an equality)
        assert used["value:"] == 0, "the value tokenizer only answers equality"


def test_has_token_needles_sound_vs_clickhouse(corpus):
    # hasToken needs a constant needle in ClickHouse: one query per needle, many rows each.
    rng = random.Random(5)
    lines = [s for s in corpus if s and _is_utf8(s)]
    haystack = rng.sample(lines, 400)
    path_rows = pa.array(haystack, pa.binary())
    tok = get_tokenizer("token")
    toks = _per_row(tok.tokenize(path_rows), len(haystack))
    needles = sorted({t for row in toks[:40] for t in row})[:60]
    tbl = pa.table({"s": path_rows})
    for needle in needles:
        lit = "unhex('" + needle.hex() + "')"
        res = chdb_oracle.query(f"SELECT toUInt8(hasToken(s, {lit})) AS r FROM Python(tbl)", "ArrowTable")
        truth = res.column("r").to_pylist()
        req = tok.requirement("hasToken", (needle,), pa.binary())
        assert req is not None
        for k, t in enumerate(truth):
            if t:
                assert any(set(alt) <= set(toks[k]) for alt in req.any_of), (needle, haystack[k])
        assert sum(truth) >= 1
