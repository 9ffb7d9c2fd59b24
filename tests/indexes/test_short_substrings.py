"""#18 item 6: LIKE substrings shorter than an n-gram index's n prune when the index keeps
several gram lengths (sbbf('ngram', n = 4, min_n = 3), the demo's DDL) or sparse grams."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import skipidx
from skipidx.core.errors import SkipidxError
from skipidx.core.tokenizer_api import get_tokenizer

TEXT = st.text(st.sampled_from(list("abcab xyz") + ["п", "界", "😊"]), max_size=30)


@settings(max_examples=200, deadline=None)
@given(TEXT, st.data(), st.integers(1, 5), st.integers(0, 3))
def test_min_n_requirement_is_in_value(text, data, n, drop):
    """Every gram the query side asks for a substring is among the value's grams."""
    min_n = max(1, n - drop)
    tok = get_tokenizer("ngram", n=n, min_n=min_n)
    v = text.encode()
    a = data.draw(st.integers(0, len(v)))
    b = data.draw(st.integers(a, len(v)))
    req = tok.requirement("like", (b"%" + v[a:b] + b"%",))
    rows, hashes = tok.hash_column(pa.array([v], pa.binary()))
    assert np.all(np.diff(rows) >= 0)
    import xxhash

    toks = tok.tokenize(pa.array([v], pa.binary())).to_pylist()
    have = set(toks)
    if req is not None:
        assert any(set(g) <= have for g in req.any_of)
    assert hashes.tolist() == [xxhash.xxh64_intdigest(t) for t in toks]


def test_min_n_params():
    assert get_tokenizer("ngram", n=4).params == {"n": 4}            # existing indexes unchanged
    assert get_tokenizer("ngram", n=4, min_n=3).params == {"n": 4, "min_n": 3}
    for bad in (0, 5, "3", True):
        with pytest.raises(SkipidxError, match="min_n"):
            get_tokenizer("ngram", n=4, min_n=bad)


def test_demo_ddl_prunes_three_char_substrings():
    from skipidx.apps.demo import DEMO_INDEXES

    assert "sbbf('ngram', n = 4, min_n = 3" in DEMO_INDEXES
    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (id UInt64, s String, INDEX ng4 s TYPE sbbf('ngram', n = 4, min_n = 3, fpp = 0.01), "
               "INDEX old s TYPE sbbf('ngram', n = 4, fpp = 0.01)) ORDER BY id SETTINGS index_granularity = 64")
        rng = np.random.default_rng(3)
        words = ["alpha", "beta", "gamma", "delta", "omega", "kappa"]
        msgs = [" ".join(rng.choice(words, 4)) for _ in range(4096)]
        msgs[1000] = "needle xyzzy here"
        db.insert("t", pa.table({"id": np.arange(4096, dtype=np.uint64), "s": msgs}))
        for pat, want in (("%zzy%", 1), ("%xyz%", 1), ("%xyzzy h%", 1), ("%eta %", None)):
            r = db.sql(f"SELECT count() FROM t WHERE s LIKE '{pat}'")
            n = r.fetchall()[0][0]
            assert n == sum(1 for m in msgs if pat.strip("%") in m)
            if want is not None:
                assert r.stats.index("ng4").granules_after == want
        assert db.sql("SELECT count() FROM t WHERE s LIKE '%zzy%'").stats.index("old").granules_after == 64
