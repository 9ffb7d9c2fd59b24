"""The ``text`` index type: ClickHouse's text index (an exact token dictionary with
posting lists at row resolution), one per part.

DDL as ClickHouse's: ``INDEX i msg TYPE text(tokenizer = splitByNonAlpha |
ngrams[(n)] | sparseGrams[(min[, max[, cutoff]])] | array | 'any registered
skipidx tokenizer' [, key = value ...])``. ClickHouse's other keys
(``dictionary_block_size`` (default 128), ``dictionary_block_frontcoding_compression``,
``posting_list_block_size``, ``posting_list_codec``) are accepted;
``dictionary_block_size`` sets the tokens per dictionary block, the others
are stored and change nothing (blocks are always front-coded, postings
always take their smaller form). The tokenizers map to skipidx's:
splitByNonAlpha -> ``token``, ngrams(n) -> ``ngram`` (n = 3 by default),
sparseGrams -> ``sparse_grams`` with ``utf8 = 1``, array -> ``value``
(the whole value), splitByString([seps]) -> ``split_by_string``. A skipidx tokenizer name takes its parameters as further
keys: ``text(tokenizer = 'sparse_grams', min_length = 4)``.

The file (Arrow IPC, readable by pyarrow) has one row per dictionary block::

    first_token  binary   the block's first token (the sparse header)
    num_tokens   uint32   tokens in the block
    tokens       binary   front-coded tokens with their posting sizes (text_postings)
    postings     binary   the block's posting lists, in token order

and schema metadata ``skipidx.index_type = text``, ``skipidx.params``,
``skipidx.format_version``, ``skipidx.tokenizer[_version]``, ``skipidx.rows``
and ``skipidx.zones`` (JSON ``[[zone_length, null_count], ...]``).

A predicate the tokenizer can translate (``TokenRequirement``: ANY of ALL-sets
of tokens) is answered by intersecting the postings of each ALL-set and
uniting the sets, so a granule is kept only if one of its rows holds every
token of a set; for whole-token predicates of the ``token`` tokenizer and
``=``/``IN`` of the ``array`` tokenizer those rows are exactly the matching
rows (:meth:`TextCondition.exact_rows`), which answers ``count()`` without
reading the column.

Merging parts merges dictionaries and postings (``TextAggregator.use_merged``,
driven by the store's merge): the result is byte for byte the file a rebuild writes.
"""
from __future__ import annotations

import bisect
import json
import os
import re
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.core.lazy import kernels
from skipidx.core.tokenizer_api import (
    TokenRequirement, Tokenizer, get_tokenizer, has_separator, split_by_non_alpha,
)
from skipidx.indexes import zones
from skipidx.indexes._common import (
    atom_text, index_error, is_string_like, null_counts, null_mask, null_subject_matches, plain, sql_literal,
    subject_matches, value_type,
)
from skipidx.indexes.base import (
    Atom, BoolMask, IndexAggregator, IndexCondition, IndexDef, IndexGranules, IndexType, register_index_type,
)

TP = kernels("skipidx.indexes.text_postings")   # numba kernels: loaded when a text index is read or built

TYPE = "text"
META_ROWS = b"skipidx.rows"
META_ZONES = b"skipidx.zones"

#: ClickHouse tokenizer name -> (skipidx tokenizer, its positional parameter names, defaults)
CH_TOKENIZERS: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {
    "splitByNonAlpha": ("token", (), {}),
    "ngrams": ("ngram", ("n",), {"n": 3}),
    "sparseGrams": ("sparse_grams", ("min_length", "max_length", "min_cutoff_length"), {"utf8": 1}),
    "array": ("value", (), {}),
    "splitByString": ("split_by_string", ("separators",), {}),
}
CH_KEYS = ("tokenizer", "dictionary_block_size", "dictionary_block_frontcoding_compression",
           "posting_list_block_size", "posting_list_codec", "preprocessor")

_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)


def _parse_call_args(definition: IndexDef, text: str) -> list[Any]:
    """The constants of ``name(a, b, ...)`` as the parser printed them (ints, strings, [..])."""
    import ast

    if not text.strip():
        return []
    try:
        v = ast.literal_eval("[" + text + "]")
    except (ValueError, SyntaxError):
        raise index_error(definition, f"bad tokenizer arguments ({text})") from None
    return list(v)


def _tokenizer_spec(definition: IndexDef, value: Any, extra: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        raise index_error(definition, f"Tokenizer name must be a string, got: {value!r}")
    m = _CALL.match(value)
    if not m:
        raise index_error(definition, f"Unknown tokenizer: {value!r}")
    name, argtext = m.group(1), m.group(2)
    args = _parse_call_args(definition, argtext) if argtext is not None else []
    if name in CH_TOKENIZERS:
        sk, names, defaults = CH_TOKENIZERS[name]
        if extra:
            raise index_error(definition, f"Unexpected text index arguments: {', '.join(sorted(extra))}")
        if len(args) > len(names):
            raise index_error(definition, f"{name!r} tokenizer accepts at most {len(names)} parameters, "
                                          f"but got {len(args)}")
        params = dict(defaults)
        for k, a in zip(names, args):
            if k == "separators":
                if not isinstance(a, list) or not all(isinstance(x, str) for x in a):
                    raise index_error(definition, f"Tokenizer argument 'separators' expected to be of type "
                                                  f"Array(String), but got {a!r}")
                params[k] = a
                continue
            if isinstance(a, bool) or not isinstance(a, int):
                raise index_error(definition, f"Tokenizer argument {k!r} expected to be of type UInt64, "
                                              f"but got {a!r}")
            params[k] = a
        if name == "ngrams" and params["n"] < 1:
            raise index_error(definition, f"Incorrect parameter of tokenizer 'ngrams': ngram length must be "
                                          f"at least 1, but got {params['n']}")
        return sk, params
    if args:
        raise index_error(definition, f"Unknown tokenizer: {value!r} (a skipidx tokenizer takes its "
                                      f"parameters as keys: text(tokenizer = 'ngram', n = 4))")
    return name, dict(extra)


def _zones_json(zone_length: np.ndarray, null_count: np.ndarray) -> bytes:
    return json.dumps([[int(a), int(b)] for a, b in zip(zone_length, null_count)], separators=(",", ":")).encode()


class TextGranules(IndexGranules):
    """A part's dictionary blocks and postings, with the zone bookkeeping."""

    def __init__(self, params: dict[str, Any], tokenizer: str, tokenizer_version: str,
                 zone_start: np.ndarray, zone_length: np.ndarray, null_count: np.ndarray,
                 header: list[bytes], num_tokens: np.ndarray, tok_blob: np.ndarray, tbo: np.ndarray,
                 post_blob: np.ndarray, pbo: np.ndarray) -> None:
        self.params = params
        self.tokenizer = tokenizer
        self.tokenizer_version = tokenizer_version
        self.zone_start = np.asarray(zone_start, dtype=np.int64)
        self.zone_length = np.asarray(zone_length, dtype=np.int64)
        self.null_count = np.asarray(null_count, dtype=np.int64)
        self.has_null = self.null_count > 0
        self.header = header
        self.num_tokens = num_tokens
        self.tok_blob, self.tbo, self.post_blob, self.pbo = tok_blob, tbo, post_blob, pbo
        self._cache: dict[bytes, np.ndarray] = {}
        self._nbytes = int(tok_blob.nbytes + post_blob.nbytes + sum(len(h) for h in header))

    @property
    def n_rows(self) -> int:
        return int(self.zone_length.sum())

    @property
    def non_null(self) -> np.ndarray:
        return (self.zone_length - self.null_count) > 0

    @property
    def n_tokens(self) -> int:
        return int(self.num_tokens.sum())

    @property
    def nbytes(self) -> int:
        return self._nbytes

    def rows_of(self, token: bytes) -> np.ndarray:
        """Sorted part-relative rows holding `token` (int64; empty if none): one block decoded."""
        got = self._cache.get(token)
        if got is not None:
            return got
        b = bisect.bisect_right(self.header, token) - 1
        if b < 0:
            rows = np.empty(0, dtype=np.int64)
        else:
            rows = TP.find_in_block(self.tok_blob, int(self.tbo[b]), int(self.tbo[b + 1]), self.post_blob,
                                    int(self.pbo[b]), np.frombuffer(token, dtype=np.uint8))
        if len(self._cache) < 4096:
            self._cache[token] = rows
        return rows

    def rows_of_requirement(self, req: TokenRequirement) -> np.ndarray:
        """Rows holding all tokens of some group of `req` (sorted, distinct)."""
        out = None
        for group in req.any_of:
            rows = None
            for tok in sorted(group, key=lambda t: self.rows_of(t).shape[0]):
                r = self.rows_of(tok)
                if rows is None:
                    rows = r
                else:
                    # smallest first: look each kept row up in the longer list (no sort of both)
                    i = np.searchsorted(r, rows)
                    hit = i < r.shape[0]
                    hit[hit] = r[i[hit]] == rows[hit]
                    rows = rows[hit]
                if rows.shape[0] == 0:
                    break
            if rows is None:
                continue
            out = rows if out is None else np.union1d(out, rows)
        return np.empty(0, dtype=np.int64) if out is None else out

    def zones_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """bool per zone: some of `rows` (sorted) lies in it."""
        return self.rows_per_zone(rows) > 0

    def rows_per_zone(self, rows: np.ndarray) -> np.ndarray:
        """How many of `rows` (sorted) lie in each zone: the zone bounds are searched in the
        rows (zones are few, rows of a frequent token many)."""
        bounds = np.append(self.zone_start, self.n_rows)
        return np.diff(np.searchsorted(rows, bounds, side="left")).astype(np.int64)

    def decode_all(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(tok_data, tok_offs, post_rows, post_offs) of the whole dictionary."""
        return TP.decode_dictionary(self.tok_blob, self.tbo, self.post_blob, self.pbo, self.n_tokens)

    def to_arrow(self, part: str) -> pa.Table:
        md = zones.make_metadata(TYPE, self.params, self.FORMAT_VERSION, items_per_zone=int(self.zone_length.max())
                                 if len(self) else 0, tokenizer=self.tokenizer,
                                 tokenizer_version=self.tokenizer_version)
        # no part name in the file: a merged part's index equals its rebuild byte for byte
        md[META_ROWS] = str(self.n_rows).encode()
        md[META_ZONES] = _zones_json(self.zone_length, self.null_count)
        nb = len(self.header)
        first = pa.array(self.header, pa.binary())
        tok = pa.Array.from_buffers(pa.large_binary(), nb, [None, pa.py_buffer(self.tbo.astype(np.int64)),
                                                            pa.py_buffer(self.tok_blob)])
        post = pa.Array.from_buffers(pa.large_binary(), nb, [None, pa.py_buffer(self.pbo.astype(np.int64)),
                                                             pa.py_buffer(self.post_blob)])
        schema = pa.schema([pa.field("first_token", pa.binary(), nullable=False),
                            pa.field("num_tokens", pa.uint32(), nullable=False),
                            pa.field("tokens", pa.large_binary(), nullable=False),
                            pa.field("postings", pa.large_binary(), nullable=False)], metadata=md)
        return pa.Table.from_arrays([first, pa.array(self.num_tokens.astype(np.uint32), pa.uint32()), tok, post],
                                    schema=schema)

    @classmethod
    def from_arrow(cls, table: pa.Table) -> "TextGranules":
        bad = zones.CorruptionError
        if not isinstance(table, pa.Table):
            raise bad("index table: expected a pyarrow Table")
        raw = table.schema.metadata or {}
        md = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in raw.items()}
        if md.get(zones.META_TYPE.decode()) != TYPE:
            raise bad(f"index table: index type {md.get(zones.META_TYPE.decode())!r} where 'text' was expected")
        if md.get(zones.META_FORMAT.decode()) != str(cls.FORMAT_VERSION):
            raise bad("index table: missing or unsupported format version")
        try:
            params = json.loads(md[zones.META_PARAMS.decode()])
            zl_nc = json.loads(md[META_ZONES.decode()])
            n_rows = int(md[META_ROWS.decode()])
            tok = md[zones.META_TOKENIZER.decode()]
            tok_v = md[zones.META_TOKENIZER_VERSION.decode()]
        except (KeyError, ValueError):
            raise bad("index table: missing or bad metadata") from None
        if (not isinstance(params, dict) or not isinstance(zl_nc, list)
                or not all(isinstance(x, list) and len(x) == 2 and all(isinstance(y, int) for y in x) for x in zl_nc)):
            raise bad("index table: bad params or zones")
        zl = np.array([x[0] for x in zl_nc], dtype=np.int64)
        nc = np.array([x[1] for x in zl_nc], dtype=np.int64)
        if np.any(zl < 0) or np.any(nc < 0) or np.any(nc > zl) or int(zl.sum()) != n_rows:
            raise bad("index table: zones are inconsistent")
        zs = np.zeros(zl.shape[0], dtype=np.int64)
        if zl.shape[0]:
            np.cumsum(zl[:-1], out=zs[1:])
        first = zones.column(table, "first_token", pa.binary())
        num = zones.column(table, "num_tokens", pa.uint32()).to_numpy().astype(np.int64)
        tcol = zones.column(table, "tokens", pa.large_binary())
        pcol = zones.column(table, "postings", pa.large_binary())

        def flat(a: pa.Array) -> tuple[np.ndarray, np.ndarray]:
            offs = np.frombuffer(a.buffers()[1], dtype=np.int64, count=len(a) + 1, offset=a.offset * 8).copy()
            data = np.frombuffer(a.buffers()[2], dtype=np.uint8) if a.buffers()[2] is not None else np.zeros(0, np.uint8)
            return data[offs[0]:offs[-1]].copy(), offs - offs[0]

        tok_blob, tbo = flat(tcol)
        post_blob, pbo = flat(pcol)
        header = first.to_pylist()
        if np.any(num < 1) or header != sorted(header) or len(set(header)) != len(header):
            raise bad("index table: dictionary header is not sorted")
        g = cls(params, tok, tok_v, zs, zl, nc, header, num, tok_blob, tbo, post_blob, pbo)
        # every block holds its token count and sorted rows inside the part (walked, not decoded)
        if TP.check_dictionary(tok_blob, tbo, post_blob, pbo, num, max(n_rows, 1)) != 0:
            raise bad("index table: damaged dictionary or postings")
        return g


#: rows tokenized and indexed at once (one task of the build's threads); their sorted
#: dictionaries are merged at ``finish``. Sparse grams make ~250 tokens per log line.
SLICE_ROWS = 1 << 15

#: the least tokens (of the largest part) per key range of a threaded merge, and the
#: least dictionary blocks per range of a threaded encoding
MERGE_RANGE_TOKENS = 4096
ENCODE_RANGE_BLOCKS = 64
#: the least dictionary blocks (of the part with the most) per key range of a threaded
#: OPTIMIZE merge of encoded dictionaries
MERGE_RANGE_BLOCKS = 64

#: a built or decoded dictionary: (token bytes, token offsets, posting offsets, posting rows)
Postings = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _empty_postings() -> Postings:
    return np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int32)


class TextAggregator(IndexAggregator):
    """Tokenizes chunks of a part (``add``: slices of ``SLICE_ROWS`` rows, each deduplicated,
    sorted and given its postings by one compiled pass, on ``threads`` threads) and merges
    the slices' sorted dictionaries at ``finish``; ``build`` does both for one chunk."""

    whole_part: ClassVar[bool] = True

    def __init__(self, params: dict[str, Any], tokenizer: Tokenizer, threads: int | None = None) -> None:
        self.params = params
        self.tokenizer = tokenizer
        self.threads = max(1, int(threads)) if threads else _build_threads()
        self._parts: list[Postings] = []
        self._zl: list[np.ndarray] = []
        self._nc: list[np.ndarray] = []
        # ("encoded", blobs and offsets, header, tokens), or ("pending", its future)
        self._merged: tuple | None = None

    def use_merged(self, sources: list[TextGranules], row_maps: list[np.ndarray]) -> None:
        """Take the postings from the merged parts' indexes (rows mapped into this part)
        instead of tokenizing the chunks; ``add`` then only counts zones and NULLs. The
        parts' encoded dictionaries are merged block by block into the encoded result."""
        merge = self._merger(sources, row_maps)
        # the kernel releases the GIL: it runs while the store merges the parts' rows, and
        # ``finish`` waits for it
        from concurrent.futures import ThreadPoolExecutor

        ex = ThreadPoolExecutor(1)
        self._merged = ("pending", ex.submit(merge))
        ex.shutdown(wait=False)

    def use_merged_later(self, load) -> None:
        """``use_merged`` of what ``load()`` returns, (sources, row_maps), loaded on a thread
        beside the store's read of the rows instead of before it; None from ``load``: the
        sources cannot be used, and the chunks are tokenized (``add`` waits for the load
        only, to know which)."""
        from concurrent.futures import Future, ThreadPoolExecutor

        loaded: Future = Future()

        def run():
            try:
                got = load()
            except BaseException as e:
                loaded.set_exception(e)
                raise
            loaded.set_result(got is not None)
            return None if got is None else self._merger(*got)()

        ex = ThreadPoolExecutor(1)
        self._merged = ("pending", ex.submit(run), loaded)
        ex.shutdown(wait=False)

    def _merger(self, sources: list[TextGranules], row_maps: list[np.ndarray]):
        """The merge of `sources`' encoded dictionaries, as a function to run."""
        bs = int(self.params["dictionary_block_size"])
        srcs = [(g, np.ascontiguousarray(m, np.int64)) for g, m in zip(sources, row_maps) if g.n_tokens]
        max_token = max([int(np.diff(g.tbo).max()) for g, _ in srcs] + [8])
        n_rows = sum(int(m.shape[0]) for _, m in srcs)

        if not srcs:
            return lambda: ("encoded", np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(0, np.uint8),
                            np.zeros(1, np.int64), [], 0)
        # a source whose rows land as one run in the merged part (parts of consecutive keys)
        shifts = np.array([int(m[0]) if m.shape[0] and int(m[-1]) - int(m[0]) == m.shape[0] - 1
                           and bool(np.all(np.diff(m) == 1)) else -1 for _, m in srcs], np.int64)
        pack = TP.pack
        args = (pack([g.tok_blob for g, _ in srcs]), pack([g.tbo for g, _ in srcs]), pack([g.post_blob for g, _ in srcs]),
                pack([g.pbo for g, _ in srcs]), pack([m for _, m in srcs]), shifts, max_token, n_rows, bs)

        nblocks = [int(g.tbo.shape[0]) - 1 for g, _ in srcs]
        nr = max(1, min(self.threads, max(nblocks) // MERGE_RANGE_BLOCKS))

        def merge() -> tuple:
            if nr == 1:
                tb, tbo, pb, pbo, fa, fl, n = TP.merge_encoded(*args)
            else:
                tb, tbo, pb, pbo, fa, fl, n = _merge_encoded_ranges(srcs, args, nr, max_token, bs)
            header = [bytes(tb[a:a + b]) for a, b in zip(fa.tolist(), fl.tolist())]
            return "encoded", tb, tbo, pb, pbo, header, int(n)

        return merge

    def add(self, values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray, row0: int) -> None:
        raw = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        vals = plain(raw) if not pa.types.is_list(raw.type) else raw
        zs, zl = zones.check_zones(len(vals), zone_start, zone_length)
        self._zl.append(zl)
        self._nc.append(null_counts(vals, zs, zl))
        merged = self._merged
        if merged is not None:
            if len(merged) == 3 and not merged[2].result():
                self._merged = None   # the sources could not be loaded: tokenized below
            else:
                return
        n = len(raw)
        if row0 + n >= 1 << 31:
            raise SkipidxError(f"text index: a part of {row0 + n} rows is too large (at most 2^31 - 1)")
        # slices of at least SLICE_ROWS rows, one per thread where the chunk has enough
        # (the hashed kernel's cost is per occurrence; fewer slices, less to merge)
        step = SLICE_ROWS if hasattr(self.tokenizer, "token_spans") else max(SLICE_ROWS, -(-n // self.threads))
        starts = list(range(0, n, step))
        self._parts.extend(_run(lambda a: _slice_postings(self.tokenizer, raw.slice(a, step), row0 + a),
                                starts, self.threads))

    def finish(self) -> TextGranules:
        zl = np.concatenate(self._zl) if self._zl else np.zeros(0, np.int64)
        nc = np.concatenate(self._nc) if self._nc else np.zeros(0, np.int64)
        merged = self._merged
        if merged is not None:
            self._merged = None
            if merged[0] == "pending":
                merged = merged[1].result()
        if merged is not None:
            self._parts = []
            _, tb, tbo, pb, pbo, header, n = merged
            return _encoded_granules(self.params, self.tokenizer, zl, nc, tb, tbo, pb, pbo, header, n)
        post = _merge(self._parts, False, self.threads)
        self._parts = []
        return _granules(self.params, self.tokenizer, zl, nc, post, self.threads)

    def build(self, values: pa.Array, zone_start: np.ndarray, zone_length: np.ndarray) -> TextGranules:
        self.__init__(self.params, self.tokenizer, self.threads)
        self.add(values, zone_start, zone_length, 0)
        return self.finish()


def _first_token(g: "TextGranules", b: int) -> bytes:
    a, n = TP.block_first_token(g.tok_blob, g.tbo, b)
    return bytes(g.tok_blob[a:a + n])


def _block_at(g: "TextGranules", key: bytes) -> int:
    """The last block of `g` whose first token is <= key (0 if none is)."""
    lo, hi = 0, int(g.tbo.shape[0]) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _first_token(g, mid) <= key:
            lo = mid
        else:
            hi = mid
    return lo


def _merge_encoded_ranges(srcs: list, args: tuple, nr: int, max_token: int, bs: int) -> tuple:
    """merge_encoded on `nr` key ranges at once, byte for byte its answer: the key space
    is cut at block first tokens of the source with the most blocks; each range starts
    every source at the block holding its lower key (found by bisecting the block first
    tokens) and merges its tokens with no block cut (merge_encoded_range); once the
    ranges' token counts are known, each range's stream is cut into the merged
    dictionary's blocks (recut_blocks) and the pieces are concatenated."""
    big = max(range(len(srcs)), key=lambda i: int(srcs[i][0].tbo.shape[0]))
    g0 = srcs[big][0]
    nb0 = int(g0.tbo.shape[0]) - 1
    keys = sorted({_first_token(g0, nb0 * j // nr) for j in range(1, nr)})
    bounds: list[bytes | None] = [None, *keys, None]
    none = np.zeros(0, np.uint8)
    tok_blobs, tbos, post_blobs, pbos, row_maps, shifts, _mt, n_rows, _bs = args

    def phase1(j: int):
        lo, hi = bounds[j], bounds[j + 1]
        start = np.array([0 if lo is None else _block_at(g, lo) for g, _ in srcs], np.int64)
        end = np.array([-1 if hi is None else _block_at(g, hi) for g, _ in srcs], np.int64)
        return TP.merge_encoded_range(tok_blobs, tbos, post_blobs, pbos, row_maps, shifts, max_token, n_rows,
                                      start, end,
                                      none if lo is None else np.frombuffer(lo, np.uint8), lo is not None,
                                      none if hi is None else np.frombuffer(hi, np.uint8), hi is not None)

    ranges = _run(phase1, range(len(bounds) - 1), nr)
    t0 = np.cumsum([0] + [int(r[2]) for r in ranges])
    prevs: list[np.ndarray | None] = []
    last = None
    for r in ranges:
        prevs.append(last)
        if int(r[2]):
            last = r[3]

    def phase2(j: int):
        tb, _pb, n, _last = ranges[j]
        prev = prevs[j]
        return TP.recut_blocks(tb, int(n), int(t0[j]), bs, none if prev is None else prev, prev is not None,
                               max(max_token, 8))

    cut = _run(phase2, range(len(ranges)), nr)
    tsz = np.cumsum([0] + [c[0].shape[0] for c in cut])
    psz = np.cumsum([0] + [r[1].shape[0] for r in ranges])
    tok_blob = np.concatenate([c[0] for c in cut])
    post_blob = np.concatenate([r[1] for r in ranges])
    tbo = np.concatenate([c[1] + tsz[j] for j, c in enumerate(cut)] + [np.array([tsz[-1]], np.int64)])
    pbo = np.concatenate([c[2] + psz[j] for j, c in enumerate(cut)] + [np.array([psz[-1]], np.int64)])
    fa = np.concatenate([c[3] + tsz[j] for j, c in enumerate(cut)])
    fl = np.concatenate([c[4] for c in cut])
    return tok_blob, tbo, post_blob, pbo, fa, fl, int(t0[-1])


def _build_threads() -> int:
    try:
        n = int(os.environ.get("SKIPIDX_BUILD_THREADS", "0"))
    except ValueError:
        n = 0
    if n:
        return max(1, n)
    # the cores this process may run on (its affinity): with one, threads and key ranges
    # only add work
    from skipidx.core.threads import available_cores

    return available_cores()


def _run(fn, items, threads: int) -> list:
    """fn over items, in order, on up to `threads` threads (the kernels release the GIL)."""
    items = list(items)
    if threads <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(threads, len(items))) as ex:
        return list(ex.map(fn, items))


def _slice_postings(tokenizer: Tokenizer, raw: pa.Array, row0: int) -> Postings:
    """One slice's sorted distinct tokens with their postings (rows + row0)."""
    spans_of = getattr(tokenizer, "token_spans", None)
    spans = spans_of(raw) if spans_of is not None else None
    if spans is not None:
        # the tokens as spans of the values buffer: no copy of every token
        rows, data, st, en = spans
    else:
        tk = tokenizer.tokenize(raw)
        offs = np.asarray(tk.offsets, dtype=np.int64)
        rows, data, st, en = tk.rows, tk.data, offs[:-1], offs[1:]
    if len(st) == 0:
        return _empty_postings()
    # spans (sparse grams): nearly as many distinct tokens as occurrences, which the
    # bucketed kernel keeps in cache-sized tables; else one hash table of the distinct
    # tokens, which are few
    build = TP.build_postings if spans is not None else TP.build_postings_hashed
    ts, te, po, pr = build(data, np.ascontiguousarray(st, np.int64), np.ascontiguousarray(en, np.int64),
                           np.ascontiguousarray(rows, np.int64))
    from skipidx.core._kernels.spans import gather_spans

    to, td = gather_spans(data, ts, te)
    if row0:
        pr += np.int32(row0)
    return td, to, po, pr


def _merge(parts: list[Postings], sort_rows: bool, threads: int = 1) -> Postings:
    """One sorted dictionary from several: equal tokens' rows concatenated in part order
    (``sort_rows``: the parts' rows may interleave, so each token's rows are sorted). With
    ``threads``, the key space is cut at tokens of the largest part and the ranges merged
    at once."""
    parts = [p for p in parts if p[1].shape[0] > 1]
    if not parts:
        return _empty_postings()
    if len(parts) == 1 and not sort_rows:
        return parts[0]
    data = np.concatenate([p[0] for p in parts])
    tb = np.cumsum([0] + [p[0].shape[0] for p in parts])
    offs = np.concatenate([p[1][:-1] + tb[i] for i, p in enumerate(parts)] + [np.array([tb[-1]], np.int64)])
    pb = np.cumsum([0] + [p[3].shape[0] for p in parts])
    poffs = np.concatenate([p[2][:-1] + pb[i] for i, p in enumerate(parts)] + [np.array([pb[-1]], np.int64)])
    rows = np.concatenate([p[3] for p in parts])
    bounds = np.cumsum([0] + [p[1].shape[0] - 1 for p in parts]).astype(np.int64)
    k = len(parts)
    big = int(np.argmax(np.diff(bounds)))
    nr = max(1, min(threads, int(bounds[big + 1] - bounds[big]) // MERGE_RANGE_TOKENS))
    # cuts[j][i]: source i's first token of range j (pivots: evenly spaced tokens of the largest part)
    cuts = [bounds[:-1].copy()]
    for j in range(1, nr):
        t = int(bounds[big] + (bounds[big + 1] - bounds[big]) * j // nr)
        k0, k1 = int(offs[t]), int(offs[t + 1])
        cuts.append(np.array([TP.lower_bound(data, offs, int(bounds[i]), int(bounds[i + 1]), data, k0, k1)
                              for i in range(k)], dtype=np.int64))
    cuts.append(bounds[1:].copy())
    res = _run(lambda j: TP.merge_postings_range(data, offs, cuts[j], cuts[j + 1], rows, poffs, sort_rows),
               range(nr), threads)
    first = np.concatenate([r[0] for r in res])
    rb = np.cumsum([0] + [r[2].shape[0] for r in res])
    po = np.concatenate([r[1][:-1] + rb[j] for j, r in enumerate(res)] + [np.array([rb[-1]], np.int64)])
    pr = np.concatenate([r[2] for r in res]) if len(res) > 1 else res[0][2]
    from skipidx.core._kernels.spans import gather_spans

    to, td = gather_spans(data, offs[first], offs[first + 1])
    return td, to, po, pr


def _encode(data: np.ndarray, offs: np.ndarray, pr: np.ndarray, po: np.ndarray, bs: int, threads: int):
    """encode_dictionary, on ranges of whole blocks at once (front coding restarts at each
    block, so the concatenation is the one-pass encoding byte for byte)."""
    n = offs.shape[0] - 1
    nb = (n + bs - 1) // bs
    nr = max(1, min(threads, nb // ENCODE_RANGE_BLOCKS))
    if nr == 1:
        return TP.encode_dictionary(data, offs, pr, po, bs)
    tcut = [min(n, (nb * j // nr) * bs) for j in range(nr + 1)]

    def one(j: int):
        a, b = tcut[j], tcut[j + 1]
        return TP.encode_dictionary(data, offs[a:b + 1], pr, po[a:b + 1], bs)

    res = _run(one, range(nr), threads)
    tb = np.cumsum([0] + [r[0].shape[0] for r in res])
    pb = np.cumsum([0] + [r[2].shape[0] for r in res])
    tok_blob = np.concatenate([r[0] for r in res])
    post_blob = np.concatenate([r[2] for r in res])
    tbo = np.concatenate([r[1][:-1] + tb[j] for j, r in enumerate(res)] + [np.array([tb[-1]], np.int64)])
    pbo = np.concatenate([r[3][:-1] + pb[j] for j, r in enumerate(res)] + [np.array([pb[-1]], np.int64)])
    return tok_blob, tbo, post_blob, pbo


def _granules(params, tokenizer: Tokenizer | tuple[str, str], zl, nc, post: Postings,
              threads: int = 1) -> TextGranules:
    data, offs0, po, pr = post
    n = offs0.shape[0] - 1
    bs = int(params["dictionary_block_size"])
    tok_blob, tbo, post_blob, pbo = _encode(data, offs0, pr, po, bs, threads)
    header = [bytes(data[offs0[i]:offs0[i + 1]]) for i in range(0, n, bs)]
    return _encoded_granules(params, tokenizer, zl, nc, tok_blob, tbo, post_blob, pbo, header, n)


def _encoded_granules(params, tokenizer: Tokenizer | tuple[str, str], zl, nc, tok_blob, tbo, post_blob, pbo,
                      header: list[bytes], n: int) -> TextGranules:
    zs = np.zeros(zl.shape[0], dtype=np.int64)
    if zl.shape[0]:
        np.cumsum(zl[:-1], out=zs[1:])
    bs = int(params["dictionary_block_size"])
    starts = np.arange(0, n, bs)
    num = np.minimum(starts + bs, n) - starts
    name, version = (tokenizer.name, str(tokenizer.version)) if not isinstance(tokenizer, tuple) else tokenizer
    return TextGranules(params, name, version, zs, zl, nc, header, num.astype(np.int64), tok_blob, tbo,
                        post_blob, pbo)


class TextCondition(IndexCondition):
    """One atom answered from the postings."""

    def __init__(self, atom: Atom, req: TokenRequirement | None, exact: bool, reason: str | None = None) -> None:
        self.atom = atom
        self.requirement = req
        self.exact = exact and req is not None
        self.reason = reason
        self.can_prune = req is not None and not req.negated
        self.can_prove_true = self.exact

    def describe(self) -> str:
        text = atom_text(self.atom)
        if self.requirement is None:
            return f"{text}: {self.reason or 'cannot help'}"
        groups = " OR ".join("{" + ", ".join(sql_literal(t) for t in g) + "}" for g in self.requirement.any_of)
        how = "exact rows" if self.exact else "rows holding all tokens of"
        neg = "negation of " if self.requirement.negated else ""
        return f"{text}: postings, {neg}{how} {groups}"

    def exact_rows(self, granules: IndexGranules) -> np.ndarray | None:
        """The rows (part-relative, sorted) where the atom is true -- when the postings say
        exactly (whole tokens of the token tokenizer, whole values of the array one)."""
        if not self.exact or self.requirement.negated:
            return None
        return granules.rows_of_requirement(self.requirement)

    def mask(self, granules: IndexGranules) -> BoolMask:
        g = granules
        assert isinstance(g, TextGranules)
        non_null = g.non_null
        if self.requirement is None:
            return BoolMask.unknown(len(g))
        rows = g.rows_of_requirement(self.requirement)
        per_zone = g.rows_per_zone(rows)
        maybe = per_zone > 0
        if self.exact:
            # a zone where every non-NULL row holds the tokens cannot be false
            full = per_zone == (g.zone_length - g.null_count)
            can_false = non_null & ~full
        else:
            can_false = non_null.copy()
        if self.requirement.negated:
            # x != v: true where some row differs; false where some row equals
            if self.exact:
                return BoolMask(can_false, maybe)
            return BoolMask(non_null.copy(), maybe)
        return BoolMask(maybe, can_false)


class _NullnessCondition(IndexCondition):
    can_prove_true = True

    def __init__(self, atom: Atom) -> None:
        self.atom = atom

    def describe(self) -> str:
        return f"{atom_text(self.atom)}: null counts"

    def mask(self, granules: IndexGranules) -> BoolMask:
        return null_mask(self.atom.func, granules.has_null, (granules.zone_length - granules.null_count) > 0)


#: atoms whose rows the postings give exactly, per tokenizer
_EXACT = {"token": {"hasToken", "hasTokenOrNull", "hasAnyTokens", "hasAllTokens"},
          "value": {"equals", "in", "notEquals", "notIn", "has", "hasAny"}}


@register_index_type
class TextIndex(IndexType):
    """``text(tokenizer = ..., ...)``: see the module docstring."""

    name = TYPE
    version = 1

    def __init__(self, definition: IndexDef, column_type: pa.DataType) -> None:
        super().__init__(definition, column_type)
        self.params = self.validate(definition, column_type)
        self.tokenizer = get_tokenizer(self.params["tokenizer"], **self.params["tokenizer_params"])

    @classmethod
    def validate(cls, definition: IndexDef, column_type: pa.DataType) -> dict[str, Any]:
        if definition.args:
            raise index_error(definition, "Cannot mix key-value pair and single argument as text index arguments"
                              if definition.kwargs else "Text index argument 'tokenizer' is required")
        kw: dict[str, Any] = {}
        for k, v in definition.kwargs:
            if k in kw:
                raise index_error(definition, f"Text index {k!r} argument is specified more than once")
            kw[k] = v
        if "tokenizer" not in kw:
            raise index_error(definition, "Text index argument 'tokenizer' is required")
        t = value_type(column_type)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            t = value_type(t.value_type)
        if not is_string_like(t):
            raise index_error(definition, f"Text index must be created on columns of type with base type of "
                                          f"String or FixedString, got: {column_type}")
        bs = kw.pop("dictionary_block_size", 128)
        if isinstance(bs, bool) or not isinstance(bs, int) or bs < 1:
            raise index_error(definition, f"Text index argument 'dictionary_block_size' must be greater than 0, "
                                          f"but got {bs!r}")
        stored = {}
        for k in ("dictionary_block_frontcoding_compression", "posting_list_block_size", "posting_list_codec"):
            if k in kw:
                v = kw.pop(k)
                stored[k] = v.decode() if isinstance(v, bytes) else v
        if "preprocessor" in kw:
            # ClickHouse's preprocessor = lower(col): not supported; an index on the expression is
            raise index_error(definition, "the preprocessor argument is not supported: index the expression "
                                          "instead (INDEX i lower(col) TYPE text(...))")
        tok_value = kw.pop("tokenizer")
        ch_name = tok_value.decode() if isinstance(tok_value, bytes) else tok_value
        name, tparams = _tokenizer_spec(definition, tok_value, kw)
        try:
            tok = get_tokenizer(name, **tparams)
        except SkipidxError as e:
            msg = e.message if hasattr(e, "message") else str(e)
            if msg.startswith("unknown tokenizer"):
                raise index_error(definition, f"Unknown tokenizer: {ch_name!r}") from None
            raise index_error(definition, msg) from None
        except TypeError as e:
            raise index_error(definition, f"bad parameters for tokenizer {name!r}: {e}") from None
        return {"tokenizer": name, "tokenizer_params": tok.params if tok.params else tparams,
                "dictionary_block_size": bs, **stored}

    def aggregator(self, threads: int | None = None) -> TextAggregator:
        return TextAggregator(self.params, self.tokenizer, threads)

    def granules_from_arrow(self, table: pa.Table) -> TextGranules:
        g = TextGranules.from_arrow(table)
        if json.loads(json.dumps(self.params)) != g.params:
            raise CorruptionError(f"index table: built with params {g.params}, the table declares {self.params}")
        if g.tokenizer != self.params["tokenizer"] or g.tokenizer_version != str(self.tokenizer.version):
            raise CorruptionError(f"index table: built by tokenizer {g.tokenizer!r} version {g.tokenizer_version}")
        return g

    def condition(self, atom: Atom) -> IndexCondition | None:
        d = self.definition
        if null_subject_matches(d, atom):
            return _NullnessCondition(atom)
        func, args = atom.func, atom.args
        if func.startswith("hasTokenCaseInsensitive"):
            if not (d.expr_func == "lower" and atom.column == d.column and atom.expr_func in (None, "lower")):
                return None
            func = func.replace("CaseInsensitive", "")
            args = tuple(a.lower() if isinstance(a, (bytes, bytearray)) else a for a in args)
        elif not subject_matches(d, atom):
            return None
        if func in ("equals", "notEquals") and (not args or args[0] is None):
            return None
        if func in ("in", "notIn") and args and isinstance(args[0], tuple):
            if any(v is None for v in args[0]):
                return None
        try:
            req = self.tokenizer.requirement(func, args, self.column_type, expr=d.expr_func)
        except SkipidxError:
            return None
        if req is not None and any(len(g) == 0 for g in req.any_of):
            req = None
        if req is None:
            from skipidx.indexes.bloom import _PATTERN_FUNCS

            if func in _PATTERN_FUNCS and self.params["tokenizer"] != "value":
                return TextCondition(atom, None, False, _PATTERN_FUNCS[func])
            return None
        exact = func in _EXACT.get(self.params["tokenizer"], ())
        if exact and func in ("hasToken", "hasTokenOrNull", "hasAnyTokens", "hasAllTokens"):
            exact = self._token_atom_exact(func, args)
        return TextCondition(atom, req, exact)

    @staticmethod
    def _token_atom_exact(func: str, args: tuple) -> bool:
        """The requirement equals the atom's rows: single-token needles only."""
        a = args[0] if args else None
        if func.startswith("hasToken"):
            return isinstance(a, (bytes, bytearray)) and bool(a) and not has_separator(bytes(a))
        if isinstance(a, (bytes, bytearray)):
            return bool(split_by_non_alpha(bytes(a)))
        return isinstance(a, (tuple, list)) and all(isinstance(v, (bytes, bytearray)) and v and
                                                    not has_separator(bytes(v)) for v in a)
