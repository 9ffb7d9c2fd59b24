"""The ``token`` tokenizer's fast paths give exactly the per-row reference's output.

Covers what the speed work added: resumed kernels (outputs that start too small
and grow), the fixed 16-byte token copy and its byte-wise fallback (long
tokens, tokens near the end of the values buffer), and the threaded split
(``threads=``) on sliced, chunked, null, empty, dictionary and list arrays.
Reference: ``re.findall`` per row for tokens, ``xxhash`` for hashes.
"""
from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipidx_tokenizers._arrow as A
import skipidx_tokenizers._kernels as K
from skipidx.core.errors import SkipidxError
from skipidx.core.tokenizer_api import get_tokenizer

TOKEN = get_tokenizer("token")
_REF = re.compile(rb"[0-9A-Za-z\x80-\xff]+")


def reference(values: list[bytes | None]) -> list[tuple[int, bytes]]:
    return [(i, t) for i, v in enumerate(values) if v is not None for t in _REF.findall(v)]


@contextlib.contextmanager
def patched(**attrs) -> Iterator[None]:
    """Set module attributes of _arrow / _kernels for the block (hypothesis-friendly)."""
    saved = []
    for key, value in attrs.items():
        mod = A if hasattr(A, key) else K
        saved.append((mod, key, getattr(mod, key)))
        setattr(mod, key, value)
    try:
        yield
    finally:
        for mod, key, value in saved:
            setattr(mod, key, value)


def check_column(col, expected: list[tuple[int, bytes]], seed: int, threads: int) -> None:
    tk = TOKEN.tokenize(col, threads=threads)
    assert tk.rows.dtype == np.int64 and tk.offsets.dtype == np.int64 and tk.data.dtype == np.uint8
    assert list(zip(tk.rows.tolist(), tk.to_pylist())) == expected, f"tokenize, threads={threads}"
    assert int(tk.offsets[-1]) == tk.data.shape[0] == sum(len(t) for _, t in expected)
    rows, hashes = TOKEN.hash_column(col, seed, threads=threads)
    assert rows.dtype == np.int64 and hashes.dtype == np.uint64
    assert rows.tolist() == [r for r, _ in expected], f"hash_column rows, threads={threads}"
    assert hashes.tolist() == [xxhash.xxh64_intdigest(t, seed) for _, t in expected], \
        f"hash_column hashes, threads={threads}"


PIECES = [b"a", b"Zz9", b"token", b" ", b"-", b".", b"_", b"\x00", "é".encode(), "日本".encode(), b"\xff",
          b"x" * 15, b"y" * 16, b"w" * 17, b"v" * 31, b"u" * 32, b"q" * 70]
values = st.one_of(st.none(), st.lists(st.sampled_from(PIECES), max_size=12).map(b"".join), st.binary(max_size=40))


@given(st.lists(values, max_size=60), st.integers(0, 60), st.integers(0, 60), st.integers(1, 4),
       st.sampled_from([0.0, 0.01, 0.25]), st.sampled_from([1, 1 << 26]), st.sampled_from([0, 2**64 - 1]),
       st.booleans())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_threads_and_resumes_match_reference(vals, start, length, threads, per_byte, max_first, seed, chunked):
    """Any split into threads and any initial output size (0 per byte, or a first capacity of
    1: rows resume into grown outputs) gives the reference tokens, rows and hashes; sliced and
    chunked arrays too."""
    arr = pa.array(vals, pa.binary()).slice(min(start, len(vals)), length)
    sliced = arr.to_pylist()
    col = arr
    if chunked and len(arr) > 1:
        cut = len(arr) // 2
        col = pa.chunked_array([arr.slice(0, cut), pa.array([], pa.binary()), arr.slice(cut)])
    with patched(SPLIT_MIN_BYTES=0, TOKENS_PER_BYTE=per_byte, MAX_FIRST_TOKENS=max_first):
        check_column(col, reference(sliced), seed, threads)


@pytest.mark.parametrize("length", [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 70])
@pytest.mark.parametrize("layout", ["last-row", "last-bytes-sep", "one-row"], ids=str)
def test_token_copy_at_buffer_end(length, layout):
    """Tokens of every copy-path length as the very last bytes of the values buffer (the
    16-byte copy must not read past it) and right before a final separator."""
    tok = bytes(b"abcdefghijklmnopqrstuvwxyz0123456789"[i % 36] for i in range(length))
    vals = {"last-row": [b"lead in " * 3, b"x " + tok],
            "last-bytes-sep": [b"lead in " * 3, tok + b"."],
            "one-row": [tok]}[layout]
    for per_byte in (0.0, 0.25):
        with patched(TOKENS_PER_BYTE=per_byte):
            check_column(pa.array(vals, pa.binary()), reference(vals), 5, 1)


@pytest.mark.parametrize("col,vals", [
    (pa.array([], pa.string()), []),
    (pa.array([None, None], pa.string()), [None, None]),
    (pa.array(["", "", ""], pa.large_string()), [b"", b"", b""]),
    (pa.array(["a b", None, "c.d"] * 50000, pa.large_string()), [b"a b", None, b"c.d"] * 50000),
    (pa.array(["ab cd", "é-f", None] * 40000).dictionary_encode(), [b"ab cd", "é-f".encode(), None] * 40000),
], ids=["empty", "all-null", "all-empty", "large-string-nulls", "dictionary"])
@pytest.mark.parametrize("threads", [1, 2, 5])
def test_threads_on_shapes(col, vals, threads):
    """Real splits (arrays over SPLIT_MIN_BYTES) and the degenerate ones."""
    with patched(SPLIT_MIN_BYTES=1 << 10):
        check_column(col, reference(vals), 0, threads)


def test_threads_list_column():
    vals = [["a.b", None, "c"], None, [], ["dé f"] * 3] * 3000
    col = pa.array(vals, pa.list_(pa.string()))
    expected = [(i, t) for i, v in enumerate(vals) if v for e in v if e is not None
                for t in _REF.findall(e.encode())]
    with patched(SPLIT_MIN_BYTES=0):
        for threads in (1, 3):
            check_column(col, expected, 9, threads)


@pytest.mark.parametrize("offsets,parts,expected", [
    ([0], 2, []),
    ([0, 10], 4, [(0, 1)]),
    ([0, 10, 20, 30, 40], 2, [(0, 2), (2, 4)]),
    ([0, 10, 20, 30, 40], 1, [(0, 4)]),
    ([0, 100, 101, 102], 3, [(0, 1), (1, 3)]),
    ([5, 5, 5, 5], 2, [(0, 3)]),
    ([3, 13, 23, 33, 43], 4, [(0, 1), (1, 2), (2, 3), (3, 4)]),
], ids=["no-rows", "one-row", "halves", "one-part", "long-first-row", "no-bytes", "sliced-offsets"])
def test_split_rows(offsets, parts, expected):
    for dtype in (np.int32, np.int64):
        got = A.split_rows(np.array(offsets, dtype=dtype), parts)
        assert got == expected, f"{offsets} into {parts} ({dtype.__name__})"


def test_split_call_really_splits():
    arr = pa.array(["word " * 20] * 1000)
    data, offsets, validity, voff = A.buffer_views(arr)
    with patched(SPLIT_MIN_BYTES=0):
        pieces = A._split_call(K.token_tokens, data, offsets, validity, voff, A._split_ranges(offsets, 3))
    starts = [a for a, _ in pieces]
    assert len(starts) == 3 and starts[0] == 0 and starts == sorted(set(starts)), starts
    assert sum(len(out[0]) for _a, out in pieces) == 20 * 1000


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"], ids=str)
def test_bad_threads(threads):
    with pytest.raises(SkipidxError, match="threads"):
        TOKEN.hash_column(pa.array(["a"]), 0, threads=threads)
    with pytest.raises(SkipidxError, match="threads"):
        TOKEN.tokenize(pa.array(["a"]), threads=threads)


def test_outputs_do_not_keep_the_estimate():
    """Outputs are trimmed in place: each owns exactly its data (no view of a bigger block)."""
    arr = pa.array(["a"] + ["." * 1000] * 100)
    tk = TOKEN.tokenize(arr)
    rows, hashes = TOKEN.hash_column(arr)
    for a in (tk.rows, tk.offsets, tk.data, rows, hashes):
        assert a.base is None and a.flags.owndata, "an output is a view of a larger buffer"
    assert len(tk) == len(rows) == 1


def test_threaded_calls_from_many_threads():
    """Callers on several threads share the split pool; each gets its own exact answer."""
    from concurrent.futures import ThreadPoolExecutor

    cols = [pa.array([f"c{c} r{r}.x" if r % 7 else None for r in range(3000)]) for c in range(6)]
    expected = [reference([v.encode() if v is not None else None for v in col.to_pylist()]) for col in cols]
    with patched(SPLIT_MIN_BYTES=0):
        with ThreadPoolExecutor(4) as ex:
            got = list(ex.map(lambda col: TOKEN.hash_column(col, 3, threads=3), cols * 3))
    for i, (rows, hashes) in enumerate(got):
        exp = expected[i % len(cols)]
        assert rows.tolist() == [r for r, _ in exp], f"caller {i}: rows"
        assert hashes.tolist() == [xxhash.xxh64_intdigest(t, 3) for _, t in exp], f"caller {i}: hashes"


@pytest.mark.parametrize("per_byte,fits", [(0.25, True), (0.0, False)], ids=["shares-fit", "shares-overflow"])
def test_shared_split_drivers(per_byte, fits):
    """The one-output split drivers equal the single call; a share too small for its piece
    gives None (the caller then falls back to per-piece outputs, which grow)."""
    vals = [None if i % 11 == 0 else f"request {i} from upstream-worker é.x{i % 13}" for i in range(5000)]
    arr = pa.array(vals).slice(3)
    data, offsets, validity, voff = A.buffer_views(arr)
    ranges = A.split_rows(offsets, 3)
    assert len(ranges) == 3
    one_r, one_h = K.token_hashes(data, offsets, validity, voff, 11)
    one_t = K.token_tokens(data, offsets, validity, voff)
    with patched(TOKENS_PER_BYTE=per_byte):
        got_h = A.token_hashes_shared(data, offsets, validity, voff, ranges, 11)
        got_t = A.token_tokens_shared(data, offsets, validity, voff, ranges)
    if not fits:
        assert got_h is None and got_t is None
        return
    assert got_h[0].tolist() == one_r.tolist() and got_h[1].tolist() == one_h.tolist()
    for g, o, name in zip(got_t, one_t, ["rows", "offsets", "data"]):
        assert g.dtype == o.dtype and g.tolist() == o.tolist(), name
