"""PLAIN String pages read in place (skipidx.store.parquet_pages.string_pages, Part.string_pages)
and searched there (skipidx.expr.kernels._search.pages_rows with a gap): the values and the
hasToken / substring answers equal pyarrow's read plus the kernels over Arrow's strings, for
random strings (UTF-8, empty, NULL, long), several pages and row groups, data page v1 / v2 and
every codec; what the reader does not handle (DELTA_LENGTH_BYTE_ARRAY, dictionaries, a damaged
page) is refused so the caller falls back to pyarrow; and queries through the engine give the
same counts on both paths."""
from __future__ import annotations

import io

import numba  # noqa: F401  (the kernels' compiled path, not the numpy stand-in of a fresh process)
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import skipidx
from skipidx.core.errors import SkipidxError
from skipidx.expr.kernels._search import PageSearch, contains_rows, pages_rows, token_rows
from skipidx.store import parquet_pages as pp

_ALPHABET = st.sampled_from(list("ab self.de_f ") + ["é", "\u4e2d", "\n", "0", "Z"])
_VALUE = st.one_of(st.none(), st.text(_ALPHABET, max_size=12),
                   st.text(_ALPHABET, min_size=60, max_size=300))
_CODECS = ["lz4", "zstd", "snappy", "none", "gzip"]
_NEEDLES = [b"self", b"de", b"f", b"a", b"ab", b"\xc3\xa9", b"self.de", b"Z0", b"b s"]


def _write(values: list, codec: str, version: str, nullable: bool, **kw) -> pa.Buffer:
    field = pa.field("msg", pa.string(), nullable=nullable)
    t = pa.table({"msg": pa.array(values, pa.string())}, schema=pa.schema([field]))
    sink = io.BytesIO()
    pq.write_table(t, sink, compression=codec, data_page_version=version, use_dictionary=False,
                   row_group_size=max(1, len(values) // 3 + 1), data_page_size=512, write_batch_size=16, **kw)
    return pa.py_buffer(sink.getvalue())


def _arrow_offsets(chunk: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    o = np.frombuffer(chunk.buffers()[1], dtype=np.int32)[chunk.offset:chunk.offset + len(chunk) + 1]
    d = chunk.buffers()[2]
    return o, (np.frombuffer(d, dtype=np.uint8) if d is not None else np.zeros(0, dtype=np.uint8))


def _pages_of(buf: pa.Buffer) -> tuple[list[list], pa.Table]:
    pf = pq.ParquetFile(pa.BufferReader(buf))
    md = pf.metadata
    max_def = md.schema.column(0).max_definition_level
    out = []
    for g in range(md.num_row_groups):
        lay = pp.chunk_layout(buf, md.row_group(g).column(0), md.row_group(g).num_rows)
        out.append(list(pp.string_pages(buf, lay, max_def)))
    return out, pf.read()


def _values(pages: list) -> list:
    vals = []
    for p in pages:
        it = iter(bytes(p.data[a:b - 4]).decode() for a, b in zip(p.bounds()[:-1], p.bounds()[1:]))
        ok = np.ones(p.rows, dtype=bool) if p.valid is None else p.valid
        vals.extend(next(it) if v else None for v in ok)
    return vals


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_VALUE, min_size=1, max_size=120), st.sampled_from(_CODECS), st.sampled_from(["1.0", "2.0"]),
       st.booleans())
def test_string_pages_equal_pyarrow_and_kernels(values, codec, version, nullable):
    if not nullable:
        values = [v if v is not None else "" for v in values]
    buf = _write(values, codec, version, nullable)
    groups, table = _pages_of(buf)
    assert table.column(0).to_pylist() == values
    got = [v for pages in groups for v in _values(pages)]
    assert got == values
    assert sum(p.rows for pages in groups for p in pages) == len(values)
    # a row group holding several data pages' worth of bytes is written as several pages
    per_group = max(1, len(values) // 3 + 1)
    for g, pages in enumerate(groups):
        plain = sum(4 + len((v or "").encode()) for v in values[g * per_group:(g + 1) * per_group])
        assert len(pages) > 1 or plain < 4 * 512, f"row group {g}: {plain} bytes in one page"
    arrow = table.column(0).chunks
    for needle in _NEEDLES:
        for token in (False, True):
            if token and not all(bytes([c]).isalnum() or c >= 0x80 for c in needle):
                continue
            ref_fn = token_rows if token else contains_rows
            want = np.concatenate([ref_fn(*_arrow_offsets(c), needle) & c.is_valid().to_numpy(zero_copy_only=False)
                                   for c in arrow])
            have = []
            per_value = []
            for pages in groups:
                res = pages_rows([(p.bounds(), p.data) for p in pages], needle, token, gap=4)
                per_value.extend(res)
                for p, r in zip(pages, res):
                    full = np.zeros(p.rows, dtype=bool)
                    if p.valid is None:
                        full[:] = r
                    else:
                        full[p.valid] = r
                    have.append(full)
            np.testing.assert_array_equal(np.concatenate(have), want, err_msg=f"{needle!r} token={token}")
            # one page at a time (no shared anchors) gives the same
            one = [ref_fn(p.bounds(), p.data, needle, gap=4) for pages in groups for p in pages]
            assert sum(int(x.sum()) for x in one) == int(want.sum())
            # the kernel whose row cursor walks the lengths itself, anchors shared across pages
            search = PageSearch(needle, token, gap=4)
            walked = [search.plain(p.data, p.start, p.values) for pages in groups for p in pages]
            np.testing.assert_array_equal(np.concatenate(walked), np.concatenate(per_value),
                                          err_msg=f"plain {needle!r} token={token}")


def test_gap_rows_do_not_match_across_lengths():
    # a needle present only across the 4-byte length between two values must not match
    values = ["ab", "cd", "self", "selfish", "x self", "self y", ""]
    buf = _write(values, "none", "1.0", False)
    groups, _ = _pages_of(buf)
    pages = [p for g in groups for p in g]
    flat = lambda res: np.concatenate([r for r in res])  # noqa: E731
    assert flat(pages_rows([(p.bounds(), p.data) for p in pages], b"self", True, gap=4)).tolist() == \
        [False, False, True, False, True, True, False]
    # "b" + length bytes + "c": the substring "bc" is in no value
    assert not flat(pages_rows([(p.bounds(), p.data) for p in pages], b"bc", False, gap=4)).any()
    assert flat(pages_rows([(p.bounds(), p.data) for p in pages], b"f", False, gap=4)).tolist() == \
        [False, False, True, True, True, True, False]
    # the next value's length is 97 = b"a\0\0\0": "xxa" and the token "xxa" run into it, "xx" ends at the row's end
    values = ["xx", "a" * 97, "zxx", "xxa"]
    pages = [p for g in _pages_of(_write(values, "none", "1.0", False))[0] for p in g]
    assert pages[0].values >= 2      # "xx" and the 97 bytes in one page
    for needle, token, want in ((b"xxa", False, [False, False, False, True]), (b"xxa", True, [False, False, False, True]),
                                (b"xx", True, [True, False, False, False]), (b"x\x61", False, [False, False, False, True])):
        s = PageSearch(needle, token, gap=4)
        for got in (flat(pages_rows([(p.bounds(), p.data) for p in pages], needle, token, gap=4)),
                    flat([s.plain(p.data, p.start, p.values) for p in pages])):
            assert got.tolist() == want, (needle, token)


@pytest.mark.parametrize("kw", [{"column_encoding": {"msg": "DELTA_LENGTH_BYTE_ARRAY"}},
                                {"column_encoding": {"msg": "DELTA_BYTE_ARRAY"}}])
def test_other_encodings_are_refused(kw):
    buf = _write([f"v{i} self" for i in range(200)], "lz4", "1.0", False, **kw)
    with pytest.raises(SkipidxError):
        _pages_of(buf)


def test_dictionary_chunks_are_refused():
    t = pa.table({"msg": pa.array(["a", "b"] * 100)})
    sink = io.BytesIO()
    pq.write_table(t, sink, use_dictionary=True)
    buf = pa.py_buffer(sink.getvalue())
    md = pq.ParquetFile(pa.BufferReader(buf)).metadata
    lay = pp.chunk_layout(buf, md.row_group(0).column(0), md.row_group(0).num_rows)
    with pytest.raises(SkipidxError):
        list(pp.string_pages(buf, lay, 0))


def test_damaged_page_is_refused():
    values = [f"value {i} self" for i in range(300)]
    raw = bytearray(_write(values, "none", "1.0", False).to_pybytes())
    md = pq.ParquetFile(pa.BufferReader(pa.py_buffer(bytes(raw)))).metadata
    buf0 = pa.py_buffer(bytes(raw))
    lay = pp.chunk_layout(buf0, md.row_group(0).column(0), md.row_group(0).num_rows)
    pos = int(lay.offsets[0]) + int(lay.header_lengths[0])
    for bad in (10 ** 6, len(values[0]) - 1):     # a length past the page; values that no longer fill it
        raw[pos:pos + 4] = bad.to_bytes(4, "little")
        page = next(pp.string_pages(pa.py_buffer(bytes(raw)), lay, 0))
        with pytest.raises(SkipidxError):
            page.bounds()
        for needle in (b"self", b"value", b"zz"):
            with pytest.raises(ValueError):
                PageSearch(needle, True, gap=4).plain(page.data, page.start, page.values)


def _counts(db, where: str, direct: int = 0) -> list[int]:
    return [db.sql(f"SELECT count() FROM t WHERE {where} SETTINGS query_plan_direct_read_from_text_index = {direct}"
                   f", text_index_row_filter = {rf}").fetchall()[0][0] for rf in (0, 1)]


def _true(m) -> int:
    return int(np.count_nonzero(np.asarray(pa.compute.fill_null(m, False))))


@pytest.mark.parametrize("nullable,unique", [(False, True), (True, True), (True, False)])
def test_engine_counts_equal_on_page_path(tmp_path, nullable, unique):
    # unique values: PLAIN pages (the page path); repeated ones: another encoding (pyarrow's read)
    rng = np.random.default_rng(5)
    words = np.array(["self", "def", "selfish", "x.self", "é", "", "con", "config"])
    n = 30_000
    msg = [None if nullable and rng.random() < 0.1 else " ".join(rng.choice(words, rng.integers(0, 5)))
           + (f" {i}" if unique else "") for i in range(n)]
    db = skipidx.connect(str(tmp_path / "db"))
    typ = "Nullable(String)" if nullable else "String"
    db.sql(f"CREATE TABLE t (id UInt64, msg {typ}, INDEX tok msg TYPE text(tokenizer = splitByNonAlpha)) "
           "ORDER BY id SETTINGS index_granularity = 1024")
    db.insert("t", pa.table({"id": pa.array(np.arange(n, dtype=np.uint64)), "msg": pa.array(msg, pa.string())}))
    arr = pa.array(msg, pa.string())
    from skipidx.expr.kernels.strings import has_token, has_tokens, like

    def ref(kind: str, x: str) -> int:
        m = has_token(arr, x) if kind == "t" else like(arr, f"%{x}%")
        return int(pa.compute.sum(pa.compute.fill_null(m, False)).as_py() or 0)

    cases = [("hasToken(msg, 'self')", ref("t", "self")),
             ("hasToken(msg, 'def')", ref("t", "def")),
             ("msg LIKE '%con%'", ref("s", "con")),
             ("msg LIKE '%lf %'", ref("s", "lf ")),
             ("hasToken(msg, 'self') OR msg LIKE '%conf%'",
              int(np.count_nonzero(np.asarray(pa.compute.fill_null(pa.compute.or_(has_token(arr, "self"),
                                                                                       like(arr, "%conf%")), False))))),
             ("hasAnyTokens(msg, ['con', 'selfish', 'x'])", _true(has_tokens(arr, ("con", "selfish", "x"), False))),
             ("hasAllTokens(msg, ['self', 'def'])", _true(has_tokens(arr, ("self", "def"), True))),
             ("hasAnyTokens(msg, 'self x.config')", _true(has_tokens(arr, "self x.config", False))),
             ("hasAllTokens(msg, ['self', 'a b'])", 0),
             ("hasAnyTokens(msg, ['def']) OR msg LIKE '%lf %'",
              _true(pa.compute.or_(has_tokens(arr, ("def",), False), like(arr, "%lf %")))),
             ("hasToken(msg, 'self') AND hasToken(msg, 'def')",
              int(np.count_nonzero(np.asarray(pa.compute.fill_null(pa.compute.and_(has_token(arr, "self"),
                                                                                        has_token(arr, "def")), False)))))]
    first = {w: _counts(db, w) for w, _ in cases}       # pyarrow's read (checks UTF-8 on the way)
    for w, want in cases:
        assert first[w] == [want, want], w
        assert _counts(db, w) == [want, want], w       # the page path
        assert _counts(db, w, direct=1)[0] == want, w
    from skipidx.store.table import Table

    with Table(str(tmp_path / "db" / "t")).snapshot() as s:
        part = s.parts[0]
        pages = part.string_pages("msg", [(0, part.n_granules)])
        if unique:
            assert pages is not None and sum(p.rows for p in pages[0]) == n
        else:
            # (the writer chose DELTA_LENGTH_BYTE_ARRAY for these repeated values)
            assert (part.manifest.get("encodings") or {}).get("msg") == "DELTA_LENGTH_BYTE_ARRAY" and pages is None
