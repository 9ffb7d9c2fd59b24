"""Arrow plumbing shared by the text tokenizers: any string-like column in, kernel calls out.

A tokenizer's kernel works on one flat binary-like array (offsets + data +
validity). This module reduces everything a column can be to such arrays and
maps token rows back to the column's rows:

* ``string``/``binary``/``large_*`` — zero-copy views of the buffers (a
  sliced array keeps its offset: the offsets are cut, not rebased);
* ``string_view``/``binary_view`` — cast to the large variant;
* ``fixed_size_binary`` — synthesized offsets over the data buffer;
* ``ChunkedArray`` — chunk by chunk, rows shifted by the chunk's start;
* dictionary arrays (``LowCardinality``) — the dictionary is hashed once and
  each row takes its entry's hashes (``tokenize`` decodes instead);
* lists of strings (``Array(String)``) — every element's tokens belong to
  the element's row, as ClickHouse indexes an Array(String) column;
* the ``null`` type — no tokens.

``threads > 1`` splits each flat array into that many row ranges of about
equal bytes and runs the kernel on them at once (the kernels release the
GIL): the same result as one call. Arrays under ``SPLIT_MIN_BYTES`` of text
run in one call. A tokenizer may pass a ``shared`` split driver (``token``
does: `token_hashes_shared`, `token_tokens_shared`) that lets the pieces fill
shares of one output allocated on the calling thread; otherwise, or when a
piece outgrows its share, each piece allocates its own outputs and they are
concatenated with rows shifted. (Outputs allocated on a pool thread come from
that thread's malloc arena, which hands freed pages back to the OS: many more
page faults than the single-threaded path.)

The default is one thread: the store already hashes slices of a part on
several threads, and nested splitting would only oversubscribe the cores.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
from skipidx.core.tokenizer_api import Tokens
from skipidx.core.lazy import kernels

K = kernels("skipidx_tokenizers._kernels")


#: kernel(data, offsets, validity, voff) -> (rows, hashes)
HashKernel = Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]
#: kernel(data, offsets, validity, voff) -> (rows, token offsets, token bytes)
TokensKernel = Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray, np.ndarray]]

_EMPTY_U8 = np.empty(0, dtype=np.uint8)

#: Below this much text a flat array is not split across threads (handing a
#: piece to a thread costs tens of microseconds; a kernel does ~1 MB per ms).
SPLIT_MIN_BYTES = 1 << 20

#: Upper bound of the pool's threads (started on demand: only as many as pieces ever ran at once).
POOL_MAX_WORKERS = 64

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The process-wide pool for split kernel calls (created once: never replaced or shut
    down under a caller that is submitting to it)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=POOL_MAX_WORKERS, thread_name_prefix="skipidx-tok")
        return _POOL


def _check_threads(threads: int) -> int:
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise SkipidxError(f"threads must be an integer >= 1, got {threads!r}")
    return threads


def split_rows(offsets: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """Row ranges [a, b) covering ``offsets``' rows in order, at most `parts` of them, of
    about equal bytes (empty ranges dropped; a single long row stays whole)."""
    n = offsets.shape[0] - 1
    if n <= 0:
        return []
    lo, hi = int(offsets[0]), int(offsets[n])
    targets = lo + (hi - lo) * np.arange(1, parts, dtype=np.float64) / parts
    cuts = np.searchsorted(offsets, targets.astype(offsets.dtype), side="left")
    bounds = sorted({0, n, *(int(c) for c in cuts if 0 < c < n)})
    return list(zip(bounds[:-1], bounds[1:]))


def _split_ranges(offsets: np.ndarray, threads: int) -> list[tuple[int, int]]:
    """The row ranges a call with `threads` runs at once (one range: no split)."""
    nbytes = int(offsets[-1]) - int(offsets[0]) if offsets.shape[0] else 0
    if threads > 1 and nbytes >= SPLIT_MIN_BYTES:
        return split_rows(offsets, threads)
    return []


def _run_pieces(fn: Callable[[int], tuple], n: int) -> list[tuple]:
    """[fn(0), ..., fn(n - 1)], piece 0 on the calling thread and the rest on the pool."""
    futures = [_pool().submit(fn, p) for p in range(1, n)]
    first = fn(0)
    return [first] + [f.result() for f in futures]


def _split_call(kernel, data: np.ndarray, offsets: np.ndarray, validity: np.ndarray, voff: int,
                ranges: list[tuple[int, int]]) -> list[tuple[int, tuple]]:
    """``kernel`` over the array's row `ranges` at once: [(first row, kernel output)] in row
    order. Each piece allocates its own outputs (on its thread)."""
    if len(ranges) <= 1:
        return [(0, kernel(data, offsets, validity, voff))]

    def piece(p: int) -> tuple:
        a, b = ranges[p]
        # the piece's rows count from 0: cut offsets, shifted validity bit offset
        return kernel(data, offsets[a:b + 1], validity, voff + a)

    return list(zip([a for a, _b in ranges], _run_pieces(piece, len(ranges))))


#: A split driver (``SharedSplit``): (data, offsets, validity, voff, ranges) -> the whole
#: output, or None when a piece outgrew its share (the caller then splits per piece).
SharedSplit = Callable[[np.ndarray, np.ndarray, np.ndarray, int, list], tuple | None]


def _shares(offsets: np.ndarray, ranges: list[tuple[int, int]]) -> tuple[np.ndarray, int]:
    """Token capacity bases of the ranges' shares in one output (len(ranges) + 1), longest row."""
    caps = [K._token_guess(offsets[a:b + 1])[0] for a, b in ranges]
    return np.concatenate([[0], np.cumsum(caps)]).astype(np.int64), K._token_guess(offsets)[2]


def token_hashes_shared(data: np.ndarray, offsets: np.ndarray, validity: np.ndarray, voff: int,
                        ranges: list[tuple[int, int]], seed) -> tuple[np.ndarray, np.ndarray] | None:
    """`K.token_hashes` over row `ranges` at once, into one output allocated here.

    Each piece fills its share (sized by the token estimate of its rows), then
    the shares are moved down to close the gaps, rows shifted by the piece's
    first row. Allocating on the calling thread keeps the outputs in its
    malloc arena, where freed blocks are reused (a worker's arena returns them
    to the OS, and every call would fault them in again).
    """
    bases, longest = _shares(offsets, ranges)
    rows = np.empty(int(bases[-1]), dtype=np.int64)
    hashes = np.empty(int(bases[-1]), dtype=np.uint64)
    seed = np.uint64(seed)

    def piece(p: int) -> tuple[int, int]:
        a, b = ranges[p]
        lo, hi = int(bases[p]), int(bases[p + 1])
        return K.token_hashes_into(data, offsets[a:b + 1], validity, voff + a, seed, rows[lo:hi], hashes[lo:hi],
                                   np.empty(longest + 2, dtype=np.uint64), 0, 0)

    done = _run_pieces(piece, len(ranges))
    if any(stop < b - a for (_k, stop), (a, b) in zip(done, ranges)):
        return None
    total = 0
    for p, ((k, _stop), (a, _b)) in enumerate(zip(done, ranges)):
        src = slice(int(bases[p]), int(bases[p]) + k)
        # moving down within one array: numpy buffers overlapping operands
        np.add(rows[src], a, out=rows[total:total + k])
        hashes[total:total + k] = hashes[src]
        total += k
    return K._trim(rows, total), K._trim(hashes, total)


def token_tokens_shared(data: np.ndarray, offsets: np.ndarray, validity: np.ndarray, voff: int,
                        ranges: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`K.token_tokens` over row `ranges` at once, into one output allocated here (as
    `token_hashes_shared`; token offsets are shifted by the bytes of the pieces before)."""
    bases, longest = _shares(offsets, ranges)
    nparts = len(ranges)
    nb = [int(offsets[b]) - int(offsets[a]) + K.TOKENS_OUT_SLACK for a, b in ranges]
    obases = np.concatenate([[0], np.cumsum(nb)]).astype(np.int64)
    rows = np.empty(int(bases[-1]), dtype=np.int64)
    offs = np.empty(int(bases[-1]) + nparts, dtype=np.int64)   # one more per share
    out = np.empty(int(obases[-1]), dtype=np.uint8)

    def piece(p: int) -> tuple[int, int, int]:
        a, b = ranges[p]
        lo, hi = int(bases[p]), int(bases[p + 1])
        return K.token_tokens_into(data, offsets[a:b + 1], validity, voff + a, rows[lo:hi],
                                   offs[lo + p:hi + p + 1], out[int(obases[p]):int(obases[p + 1])],
                                   np.empty(longest + 2, dtype=np.uint64), 0, 0, 0)

    done = _run_pieces(piece, nparts)
    if any(stop < b - a for (_k, _j, stop), (a, b) in zip(done, ranges)):
        return None
    total, nbytes = 0, 0
    for p, ((k, j, _stop), (a, _b)) in enumerate(zip(done, ranges)):
        lo = int(bases[p])
        np.add(rows[lo:lo + k], a, out=rows[total:total + k])
        # share p's offsets start at 0 (offs[lo + p]); token ends move after the bytes before
        np.add(offs[lo + p + 1:lo + p + 1 + k], nbytes, out=offs[total + 1:total + 1 + k])
        out[nbytes:nbytes + j] = out[int(obases[p]):int(obases[p]) + j]
        total += k
        nbytes += j
    offs[0] = 0
    return K._trim(rows, total), K._trim(offs, total + 1), K._trim(out, nbytes)


def _empty_hashes() -> tuple[np.ndarray, np.ndarray]:
    return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint64)


def _is_binary_like(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_string(t) or pa.types.is_large_binary(t))


def buffer_views(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(data uint8, offsets int32/int64 [len+1], validity uint8 bitmap or empty, bit offset).

    ``arr`` is a string/binary/large_string/large_binary or fixed_size_binary
    array. No copy except for fixed_size_binary's synthesized offsets.
    """
    t = arr.type
    n = len(arr)
    bufs = arr.buffers()
    if arr.null_count and bufs[0] is not None:
        validity = np.frombuffer(bufs[0], dtype=np.uint8)
        voff = arr.offset
    else:
        validity, voff = _EMPTY_U8, 0
    if pa.types.is_fixed_size_binary(t):
        w = t.byte_width
        data = np.frombuffer(bufs[1], dtype=np.uint8) if bufs[1] is not None else _EMPTY_U8
        offsets = (np.arange(n + 1, dtype=np.int64) + arr.offset) * w
        return data, offsets, validity, voff
    odt = np.int64 if (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) else np.int32
    if n == 0 or bufs[1] is None:
        return _EMPTY_U8, np.zeros(1, dtype=odt), _EMPTY_U8, 0
    offsets = np.frombuffer(bufs[1], dtype=odt)[arr.offset: arr.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else _EMPTY_U8
    return data, offsets, validity, voff


def _bad_type(tokenizer: str, t: pa.DataType) -> SkipidxError:
    return SkipidxError(
        f"tokenizer {tokenizer!r} needs a String/binary column (or LowCardinality/Array of it), got {t}")


def _supported(t: pa.DataType) -> bool:
    """Whether a column of type `t` holds text the kernels can read (checked before any data,
    so an empty column of a wrong type is refused too)."""
    if pa.types.is_dictionary(t):
        return _supported(t.value_type)
    if _is_list(t):
        return _supported(t.value_type)
    return (pa.types.is_null(t) or _is_binary_like(t) or pa.types.is_fixed_size_binary(t) or _is_view(t))


def _as_array(values) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    if isinstance(values, (list, tuple)):
        return pa.array(values)
    raise SkipidxError(f"expected a pyarrow Array or ChunkedArray, got {type(values).__name__}")


def _concat_rows(pieces: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """The pieces' row numbers (each counted from its first row `a`) as one int64 array
    of the whole array's rows."""
    rows = np.concatenate([r for _a, r in pieces]).astype(np.int64, copy=False)
    k = 0
    for a, r in pieces:
        if a:
            rows[k:k + r.shape[0]] += a   # the fresh concatenation: shifted in place
        k += r.shape[0]
    return rows


def _run_flat(values: pa.Array, kernel, threads: int, shared: SharedSplit | None) -> list[tuple[int, tuple]]:
    """`kernel` over one flat binary-like array: [(first row, output)] per piece, or one
    piece holding the whole output when the `shared` split driver wrote it."""
    data, offsets, validity, voff = buffer_views(values)
    ranges = _split_ranges(offsets, threads)
    if len(ranges) > 1 and shared is not None:
        whole = shared(data, offsets, validity, voff, ranges)
        if whole is not None:
            return [(0, whole)]
    return _split_call(kernel, data, offsets, validity, voff, ranges)


def hash_rows(values, kernel: HashKernel, tokenizer: str, threads: int = 1,
              shared: SharedSplit | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run a fused hash kernel over any string-like column: (rows int64, hashes uint64).

    ``threads``: split each flat array over this many threads (see the module doc);
    ``shared``: a split driver writing one output (tried first when an array is split).
    """
    threads = _check_threads(threads)
    values = _as_array(values)
    if not _supported(values.type):
        raise _bad_type(tokenizer, values.type)
    if isinstance(values, pa.ChunkedArray):
        parts_r, parts_h, base = [], [], 0
        for chunk in values.chunks:
            r, h = hash_rows(chunk, kernel, tokenizer, threads, shared)
            parts_r.append(r + base if base else r)
            parts_h.append(h)
            base += len(chunk)
        if not parts_r:
            return _empty_hashes()
        return np.concatenate(parts_r), np.concatenate(parts_h)
    t = values.type
    if pa.types.is_null(t) or len(values) == 0:
        return _empty_hashes()
    if _is_binary_like(t) or pa.types.is_fixed_size_binary(t):
        pieces = _run_flat(values, kernel, threads, shared)
        if len(pieces) == 1:
            return pieces[0][1]
        return (_concat_rows([(a, out[0]) for a, out in pieces]),
                np.concatenate([out[1] for _a, out in pieces]))
    if _is_view(t):
        return hash_rows(values.cast(_large_of(t)), kernel, tokenizer, threads, shared)
    if pa.types.is_dictionary(t):
        dictionary = values.dictionary
        d_rows, d_hashes = hash_rows(dictionary, kernel, tokenizer, threads, shared)
        idx = values.indices
        validity = _validity(idx)
        codes = np.frombuffer(idx.buffers()[1], dtype=idx.type.to_pandas_dtype())[idx.offset: idx.offset + len(idx)]
        return K.expand_by_index(codes, validity[0], validity[1], d_rows, d_hashes, len(dictionary))
    if _is_list(t):
        flat = values.flatten()
        parents = _list_parents(values)
        r, h = hash_rows(flat, kernel, tokenizer, threads, shared)
        return parents[r], h
    raise _bad_type(tokenizer, t)


def token_rows(values, kernel: TokensKernel, tokenizer: str, threads: int = 1,
               shared: SharedSplit | None = None) -> Tokens:
    """Run a tokens kernel over any string-like column: the tokens with their rows.

    ``threads``: split each flat array over this many threads (see the module doc);
    ``shared``: a split driver writing one output (tried first when an array is split).
    """
    threads = _check_threads(threads)
    values = _as_array(values)
    if not _supported(values.type):
        raise _bad_type(tokenizer, values.type)
    if isinstance(values, pa.ChunkedArray):
        parts, base = [], 0
        for chunk in values.chunks:
            tk = token_rows(chunk, kernel, tokenizer, threads, shared)
            parts.append(Tokens(tk.rows + base, tk.offsets, tk.data))
            base += len(chunk)
        return concat_tokens(parts)
    t = values.type
    if pa.types.is_null(t) or len(values) == 0:
        return empty_tokens()
    if _is_binary_like(t) or pa.types.is_fixed_size_binary(t):
        pieces = _run_flat(values, kernel, threads, shared)
        if len(pieces) == 1:
            return Tokens(*pieces[0][1])
        tk = concat_tokens([Tokens(*out) for _a, out in pieces])
        return Tokens(_concat_rows([(a, out[0]) for a, out in pieces]), tk.offsets, tk.data)
    if _is_view(t):
        return token_rows(values.cast(_large_of(t)), kernel, tokenizer, threads, shared)
    if pa.types.is_dictionary(t):
        return token_rows(values.dictionary_decode(), kernel, tokenizer, threads, shared)
    if _is_list(t):
        flat = values.flatten()
        parents = _list_parents(values)
        tk = token_rows(flat, kernel, tokenizer, threads, shared)
        return Tokens(parents[tk.rows], tk.offsets, tk.data)
    raise _bad_type(tokenizer, t)


def empty_tokens() -> Tokens:
    return Tokens(np.empty(0, dtype=np.int64), np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.uint8))


def concat_tokens(parts: list[Tokens]) -> Tokens:
    if not parts:
        return empty_tokens()
    if len(parts) == 1:
        return parts[0]
    rows = np.concatenate([p.rows for p in parts])
    data = np.concatenate([p.data for p in parts])
    offs = [np.zeros(1, dtype=np.int64)]
    base = 0
    for p in parts:
        offs.append(p.offsets[1:] + base)
        base += int(p.offsets[-1])
    return Tokens(rows, np.concatenate(offs), data)


def _validity(arr: pa.Array) -> tuple[np.ndarray, int]:
    bufs = arr.buffers()
    if arr.null_count and bufs[0] is not None:
        return np.frombuffer(bufs[0], dtype=np.uint8), arr.offset
    return _EMPTY_U8, 0


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _is_view(t: pa.DataType) -> bool:
    return pa.types.is_string_view(t) or pa.types.is_binary_view(t)


def _large_of(t: pa.DataType) -> pa.DataType:
    return pa.large_string() if pa.types.is_string_view(t) else pa.large_binary()


def _list_parents(values: pa.Array) -> np.ndarray:
    """Row of each element of ``values.flatten()`` (null lists contribute no elements)."""
    parents = pc.list_parent_indices(values)
    return parents.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
