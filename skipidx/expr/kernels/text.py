"""String functions beyond search (ClickHouse 26.9 semantics, checked against chDB).

Strings are bytes, as in ClickHouse: ``length``, ``substring`` and
``position`` count bytes; the ``...UTF8`` variants count code points.
NULL in gives NULL out. Constant arguments arrive as Python values.
"""
from __future__ import annotations


import numpy as np
import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import SkipidxError
ArrayLike = pa.Array | pa.ChunkedArray

_BIN = pa.binary()


def _bin(a: ArrayLike) -> pa.Array:
    """One binary array (dictionaries decoded, chunks combined): byte-wise kernels."""
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    if pa.types.is_dictionary(a.type):
        a = a.dictionary_decode()
    t = a.type
    if pa.types.is_string(t):
        return a.view(_BIN)
    if pa.types.is_large_string(t):
        return a.view(pa.large_binary()).cast(_BIN)
    if pa.types.is_binary(t):
        return a
    if pa.types.is_fixed_size_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string_view(t) \
            or pa.types.is_binary_view(t):
        return a.cast(_BIN)
    raise SkipidxError(f"expected a String argument, got {t}")


def _as_string(a: pa.Array) -> pa.Array:
    """Binary results back as String when they are valid UTF-8 (ClickHouse's String holds either)."""
    try:
        return a.cast(pa.string())
    except pa.ArrowInvalid:
        return a


def _const_bytes(v) -> bytes:
    return v.encode() if isinstance(v, str) else bytes(v)


def concat(*args: ArrayLike) -> pa.Array:
    """``concat(a, b, ...)``: non-String arguments are their text (the caller casts them)."""
    parts = [_bin(a) for a in args]
    return _as_string(pc.binary_join_element_wise(*parts, pa.scalar(b"", _BIN)))


def length_utf8(a: ArrayLike) -> pa.Array:
    """Code points; an invalid UTF-8 byte counts as one, as ClickHouse's UTF8 functions do."""
    b = _bin(a)
    data, offs = _data_offsets(b)
    # every byte that is not a continuation byte (10xxxxxx) starts a code point
    starts = np.concatenate([[0], np.cumsum((data & 0xC0) != 0x80)]) if data.size else np.zeros(1, np.int64)
    n = starts[offs[1:]] - starts[offs[:-1]]
    return pa.array(n.astype(np.uint64), pa.uint64(), mask=_null_mask(b))


def _data_offsets(b: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    bufs = b.buffers()
    offs = np.frombuffer(bufs[1], np.int32, len(b) + 1, b.offset * 4).astype(np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offs


def _null_mask(a: pa.Array) -> np.ndarray | None:
    return a.is_null().to_numpy(zero_copy_only=False) if a.null_count else None


def upper_utf8(a: ArrayLike) -> pa.Array:
    return _map_valid_utf8(a, pc.utf8_upper)


def lower_utf8(a: ArrayLike) -> pa.Array:
    return _map_valid_utf8(a, pc.utf8_lower)


def _map_valid_utf8(a: ArrayLike, fn) -> pa.Array:
    b = _bin(a)
    try:
        s = b.cast(pa.string())
    except pa.ArrowInvalid:
        # rows that are not UTF-8 stay as they are (ClickHouse leaves invalid sequences)
        vals = [None if v is None else _try_utf8(v, fn) for v in b.to_pylist()]
        return _as_string(pa.array(vals, _BIN))
    return fn(s)


def _try_utf8(v: bytes, fn) -> bytes:
    try:
        return fn(pa.array([v.decode()]))[0].as_py().encode()
    except UnicodeDecodeError:
        return v


def substring(a: ArrayLike, offset, length=None) -> pa.Array:
    """ClickHouse's ``substring(s, offset[, length])``: 1-based bytes; a negative offset
    counts from the end; offset 0 gives ''; a negative length drops that many bytes at the end."""
    b = _bin(a)
    data, offs = _data_offsets(b)
    lens = offs[1:] - offs[:-1]
    off = _int_arg(offset, len(b))
    start = np.where(off > 0, off - 1, np.where(off < 0, lens + off, lens))  # off == 0: empty
    start = np.where(off == 0, lens, start)
    start = np.clip(start, 0, lens)
    neg_before = np.where((off < 0) & (lens + off < 0), lens + off, 0)     # start before the string
    if length is None:
        end = lens.copy()
    else:
        ln = _int_arg(length, len(b))
        end = np.where(ln >= 0, np.clip(start + ln + neg_before, start, lens), np.clip(lens + ln, start, lens))
    end = np.maximum(end, start)
    return _slices(b, offs[:-1] + start, offs[:-1] + end, data)


def _int_arg(v, n: int) -> np.ndarray:
    if isinstance(v, (pa.Array, pa.ChunkedArray)):
        return np.asarray(v.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    return np.full(n, int(v), np.int64)


def _slices(b: pa.Array, s: np.ndarray, e: np.ndarray, data: np.ndarray) -> pa.Array:
    n = e - s
    out_offs = np.zeros(len(n) + 1, np.int64)
    np.cumsum(n, out=out_offs[1:])
    if out_offs[-1]:
        idx = np.repeat(s - out_offs[:-1], n) + np.arange(out_offs[-1])
        out = data[idx]
    else:
        out = np.zeros(0, np.uint8)
    arr = pa.Array.from_buffers(pa.large_binary(), len(n),
                                [b.buffers()[0] if b.null_count and b.offset == 0 else None,
                                 pa.py_buffer(out_offs.tobytes()), pa.py_buffer(out.tobytes())])
    if b.null_count and b.offset != 0:
        arr = pc.if_else(b.is_null(), pa.scalar(None, pa.large_binary()), arr)
    return _as_string(arr.cast(_BIN))


def position(a: ArrayLike, needle, case_insensitive: bool = False) -> pa.Array:
    """1-based byte position of the first occurrence, 0 if none; an empty needle is at 1."""
    b = _bin(a)
    nd = _const_bytes(needle)
    hay = b
    if case_insensitive:
        hay = pc.ascii_lower(b.cast(pa.string(), safe=False)).view(_BIN) if _valid_utf8(b) else _ascii_fold(b)
        nd = nd.lower() if nd.isascii() else bytes(x + 32 if 65 <= x <= 90 else x for x in nd)
    if not nd:
        return pa.array(np.ones(len(b), np.uint64), pa.uint64(), mask=_null_mask(b))
    idx = pc.find_substring(hay, pattern=nd)
    return pc.add(idx, 1).cast(pa.uint64())


def _valid_utf8(b: pa.Array) -> bool:
    try:
        b.cast(pa.string())
        return True
    except pa.ArrowInvalid:
        return False


def _ascii_fold(b: pa.Array) -> pa.Array:
    data, offs = _data_offsets(b)
    up = (data >= 65) & (data <= 90)
    d = data.copy()
    d[up] += 32
    return pa.Array.from_buffers(_BIN, len(b), [b.buffers()[0], b.buffers()[1], pa.py_buffer(d.tobytes())],
                                 b.null_count, b.offset)


def replace_all(a: ArrayLike, needle, replacement) -> pa.Array:
    """Every occurrence of `needle` (an empty needle changes nothing, as in ClickHouse)."""
    nd, rp = _const_bytes(needle), _const_bytes(replacement)
    b = _bin(a)
    if not nd:
        return _as_string(b)
    return _as_string(pc.replace_substring(b, pattern=nd, replacement=rp))


def _re2_replacement(rep: bytes) -> bytes:
    r"""ClickHouse writes groups as ``\0``..``\9`` (RE2's rewrite); Arrow too, so only ``$`` needs no change."""
    return rep


def replace_regexp_all(a: ArrayLike, pattern, replacement) -> pa.Array:
    pat, rp = _const_bytes(pattern), _const_bytes(replacement)
    b = _bin(a)
    try:
        return _as_string(pc.replace_substring_regex(b, pattern=pat, replacement=_re2_replacement(rp)))
    except pa.ArrowInvalid as e:
        raise SkipidxError(f"bad regular expression {pat!r}: {e}") from None


def _first_group(pat: bytes) -> tuple[bytes, str]:
    """`pat` with every capturing group named, and the name of its first one (the
    whole pattern wrapped when it has none): Arrow's RE2 extract wants named groups."""
    out, first, k = [], None, 0
    i, n, in_class = 0, len(pat), False
    while i < n:
        c = pat[i:i + 1]
        if c == b"\\":
            if pat[i + 1:i + 2] == b"Q":  # \Q...\E quotes its text literally
                end = pat.find(b"\\E", i + 2)
                j = n if end < 0 else end + 2
            else:
                j = i + 2
            out.append(pat[i:j])
            i = j
            continue
        if in_class:
            in_class = c != b"]"
        elif c == b"[":
            in_class = True
            j = i + 1 + (pat[i + 1:i + 2] == b"^")
            j += pat[j:j + 1] == b"]"  # a ']' first in a class is literal
            out.append(pat[i:j])
            i = j
            continue
        elif c == b"(":
            rest = pat[i + 1:]
            if not rest.startswith(b"?"):
                k += 1
                name = f"skipidx_g{k}"
                first = first or name
                out.append(f"(?P<{name}>".encode())
                i += 1
                continue
            for lead in (b"?P<", b"?<"):
                if rest.startswith(lead) and rest[len(lead):len(lead) + 1] not in (b"=", b"!") and b">" in rest:
                    first = first or rest[len(lead):rest.index(b">")].decode()
        out.append(c)
        i += 1
    if first is None:
        return b"(?P<skipidx_g0>" + pat + b")", "skipidx_g0"
    return b"".join(out), first


def extract(a: ArrayLike, pattern) -> pa.Array:
    """The first match of `pattern` (RE2, as ClickHouse), or of its first group when it has one; '' when none."""
    pat, name = _first_group(_const_bytes(pattern))
    b = _bin(a)
    # String input runs RE2 in UTF-8 mode as ClickHouse does; invalid UTF-8 falls back to bytes
    # RE2 in UTF-8 mode as ClickHouse runs it, invalid bytes included: the bytes are viewed,
    # not validated, as String (RE2 reads an invalid byte as a character no class matches)
    try:
        text, rx = b.view(pa.string()), pat.decode()
    except UnicodeDecodeError:
        text, rx = b, pat
    try:
        found = pc.extract_regex(text, pattern=rx)
    except pa.ArrowInvalid as e:
        raise SkipidxError(f"bad regular expression {_const_bytes(pattern)!r}: {e}") from None
    out = found.field(name).fill_null("" if text is not b else b"")
    if b.null_count:
        out = pc.if_else(b.is_null(), pa.scalar(None, out.type), out)
    return _as_string(out.view(_BIN) if pa.types.is_string(out.type) else out)


def trim(a: ArrayLike, left: bool = True, right: bool = True) -> pa.Array:
    """ClickHouse's trimBoth/trimLeft/trimRight remove ASCII spaces only (not tabs or newlines)."""
    b = _bin(a)
    s = b.cast(pa.string(), safe=False) if _valid_utf8(b) else None
    if s is not None:
        fn = pc.utf8_trim if left and right else (pc.utf8_ltrim if left else pc.utf8_rtrim)
        return fn(s, characters=" ")
    vals = [None if v is None else (v.strip(b" ") if left and right else v.lstrip(b" ") if left else v.rstrip(b" "))
            for v in b.to_pylist()]
    return _as_string(pa.array(vals, _BIN))


def split_by_char(sep, a: ArrayLike) -> pa.Array:
    """``splitByChar(sep, s)``: Array(String); an empty string gives ['']."""
    sp = _const_bytes(sep)
    if len(sp) != 1:
        raise SkipidxError("splitByChar: the separator must be exactly one character")
    b = _bin(a)
    if _valid_utf8(b):
        out = pc.split_pattern(b.cast(pa.string()), pattern=sp.decode("latin-1") if sp < b"\x80" else sp.decode())
    else:
        out = pc.split_pattern(b, pattern=sp)
    # Array(String): the items are never NULL
    return out.cast(pa.list_(pa.field("item", out.type.value_type, nullable=False)))


def reverse(a: ArrayLike) -> pa.Array:
    """reverse(s): the bytes in reverse order (as ClickHouse; reverseUTF8 keeps code points)."""
    return _as_string(pc.binary_reverse(_bin(a)))


def repeat(a: ArrayLike, n) -> pa.Array:
    """repeat(s, n): s n times (n < 0 gives '')."""
    b = _bin(a)
    k = n if isinstance(n, int) else pc.max_element_wise(n, pa.scalar(0, n.type)).cast(pa.int64())
    if isinstance(k, int):
        k = max(k, 0)
    return _as_string(pc.binary_repeat(b, k))


def array_string_concat(a: ArrayLike, sep=b"") -> pa.Array:
    """arrayStringConcat(arr[, sep]): the items' text joined by sep (NULL items skipped)."""
    from skipidx.expr.kernels.convert import to_string

    x = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    values = x.values
    vt = values.type
    if not (pa.types.is_string(vt) or pa.types.is_large_string(vt) or pa.types.is_binary(vt)):
        values = to_string(values)
    lst = pa.ListArray.from_arrays(x.offsets, _bin(values), mask=x.is_null() if x.null_count else None)
    return _as_string(pc.binary_join(_drop_null_items(lst), _const_bytes(sep)))


def _drop_null_items(lst: pa.ListArray) -> pa.ListArray:
    flat = lst.flatten()
    if not flat.null_count:
        return lst
    parents = pc.list_parent_indices(lst)
    keep = flat.is_valid()
    vals = flat.filter(keep)
    counts = np.bincount(np.asarray(parents.filter(keep)), minlength=len(lst))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), vals, mask=lst.is_null())


def empty(a: ArrayLike) -> pa.Array:
    return pc.equal(pc.binary_length(_bin(a)), 0)


def not_empty(a: ArrayLike) -> pa.Array:
    return pc.not_equal(pc.binary_length(_bin(a)), 0)


# --------------------------------------------------------------------------- arrays

def _list_parts(a: ArrayLike) -> tuple[pa.Array, np.ndarray, int]:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    if not (pa.types.is_list(a.type) or pa.types.is_large_list(a.type)):
        raise SkipidxError(f"expected an Array argument, got {a.type}")
    flat = pc.list_flatten(a)
    parents = np.asarray(pc.list_parent_indices(a).to_numpy(zero_copy_only=False), dtype=np.int64)
    return flat, parents, len(a)


def _row_any(hit: pa.Array, parents: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    h = np.asarray(hit.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    out[parents[h]] = True
    return out


def _const_values(values, t: pa.DataType) -> pa.Array:
    vals = list(values) if isinstance(values, (list, tuple)) else [values]
    vals = [v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) and (pa.types.is_string(t)) else v
            for v in vals]
    return pa.array(vals, t) if vals else pa.array([], t)


def has(a: ArrayLike, value) -> pa.Array:
    """has(arr, x): x is an element (NULL finds a NULL element, as in ClickHouse)."""
    flat, parents, n = _list_parts(a)
    if value is None:
        return pa.array(_row_any(flat.is_null(), parents, n))
    return pa.array(_row_any(pc.equal(flat, _const_values([value], flat.type)[0]), parents, n))


def has_any(a: ArrayLike, values) -> pa.Array:
    flat, parents, n = _list_parts(a)
    return pa.array(_row_any(pc.is_in(flat, value_set=_const_values(values, flat.type)), parents, n))


def has_all(a: ArrayLike, values) -> pa.Array:
    flat, parents, n = _list_parts(a)
    want = _const_values(values, flat.type)
    want = pc.unique(want)
    if len(want) == 0:
        return pa.array(np.ones(n, dtype=bool))
    idx = pc.index_in(flat, value_set=want).to_numpy(zero_copy_only=False)
    ok = ~np.isnan(idx.astype(np.float64)) if idx.dtype.kind == "f" else np.ones(len(idx), bool)
    idx = np.nan_to_num(idx.astype(np.float64), nan=-1).astype(np.int64)
    ok = idx >= 0
    seen = np.zeros((n, len(want)), dtype=bool)
    seen[parents[ok], idx[ok]] = True
    return pa.array(seen.all(axis=1))


def array_length(a: ArrayLike) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    return pc.list_value_length(a).cast(pa.uint64())


def count_substrings(a: ArrayLike, needle) -> pa.Array:
    """countSubstrings(s, needle): non-overlapping occurrences (0 for an empty needle)."""
    b = _bin(a)
    nd = _const_bytes(needle)
    if not nd:
        return pa.array(np.zeros(len(b), np.uint64), pa.uint64(), mask=_null_mask(b))
    return pc.count_substring(b, pattern=nd).cast(pa.uint64())


def split_by_string(sep, a: ArrayLike) -> pa.Array:
    """splitByString(sep, s): Array(String); an empty separator splits into bytes is not
    ClickHouse's code points, so it is refused."""
    sp = _const_bytes(sep)
    if not sp:
        raise SkipidxError("splitByString: an empty separator is not supported")
    out = pc.split_pattern(_bin(a), pattern=sp)
    values = _as_string(out.values)
    lst = pa.ListArray.from_arrays(out.offsets, values, mask=out.is_null() if out.null_count else None)
    return lst.cast(pa.list_(pa.field("item", values.type, nullable=False)))


def left_right(a: ArrayLike, n, right: bool, utf8: bool) -> pa.Array:
    """left/right(s, n) (bytes) and leftUTF8/rightUTF8 (code points): the first / last n;
    a negative n drops that many from the other end."""
    if not isinstance(n, int):
        raise SkipidxError("the length must be a constant integer")
    if utf8:
        s = _bin(a).cast(pa.string())
        sl = pc.utf8_slice_codeunits
    else:
        s = _bin(a)
        sl = pc.binary_slice
    big = 1 << 62
    if not right:
        out = sl(s, start=0, stop=n)
    elif n > 0:
        out = sl(s, start=-n, stop=big)
    elif n == 0:
        out = sl(s, start=0, stop=0)
    else:
        out = sl(s, start=-n, stop=big)
    return _as_string(out) if not utf8 else out


_HEX_DIGITS = np.frombuffer(b"0123456789ABCDEF", np.uint8)


def _hex_of_rows(data: np.ndarray, offs: np.ndarray, mask: np.ndarray | None) -> pa.Array:
    """Upper-case hex text of each row's bytes (rows given by data[offs[i]:offs[i+1]])."""
    lo, hi = int(offs[0]), int(offs[-1])
    d = data[lo:hi]
    out = np.empty(2 * d.size, np.uint8)
    out[0::2] = _HEX_DIGITS[d >> 4]
    out[1::2] = _HEX_DIGITS[d & 15]
    new_offs = ((offs - lo) * 2).astype(np.int32)
    n = offs.size - 1
    validity = pa.array(~mask).buffers()[1] if mask is not None else None
    return pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(new_offs.tobytes()), pa.py_buffer(out.tobytes())],
                                 null_count=int(mask.sum()) if mask is not None else 0)


def hex_(a: ArrayLike) -> pa.Array:
    """hex(x): a String's (FixedString's) bytes, or an integer's big-endian bytes without leading
    zero bytes (at least one; a negative one as its type's two's complement), upper-case."""
    x = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    if pa.types.is_dictionary(x.type):
        x = x.dictionary_decode()
    t = x.type
    if pa.types.is_integer(t):
        mask = _null_mask(x)
        u = np.asarray(x.fill_null(0).to_numpy(zero_copy_only=False)).astype(
            np.dtype(f"u{t.bit_width // 8}")).astype(np.uint64)
        mat = u.astype(">u8").view(np.uint8).reshape(-1, 8)
        nz = mat != 0
        lead = np.where(nz.any(axis=1), nz.argmax(axis=1), 7)
        keep = np.arange(8)[None, :] >= lead[:, None]
        offs = np.concatenate([[0], np.cumsum(8 - lead)]).astype(np.int64)
        return _hex_of_rows(mat[keep], offs, mask)
    b = _bin(x)
    data, offs = _data_offsets(b)
    return _hex_of_rows(data, offs, _null_mask(b))


_NIBBLE = np.zeros(256, np.uint8)
for _i, _c in enumerate(b"0123456789ABCDEF"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"abcdef"):
    _NIBBLE[_c] = 10 + _i


def unhex(a: ArrayLike) -> pa.Array:
    """unhex(s): the bytes of a hex text (an odd length reads as if a '0' led it)."""
    b = _bin(a)
    data, offs = _data_offsets(b)
    lo = int(offs[0])
    nib = _NIBBLE[data[lo:int(offs[-1])]]
    rel = offs - lo
    lengths = np.diff(rel)
    odd = (lengths % 2) == 1
    if odd.any():
        nib = np.insert(nib, rel[:-1][odd], 0)
        rel = rel + np.concatenate([[0], np.cumsum(odd)])
    out = ((nib[0::2] << 4) | nib[1::2]).astype(np.uint8)
    mask = _null_mask(b)
    validity = pa.array(~mask).buffers()[1] if mask is not None else None
    res = pa.Array.from_buffers(_BIN, len(b), [validity, pa.py_buffer((rel // 2).astype(np.int32).tobytes()),
                                               pa.py_buffer(out.tobytes())],
                                null_count=int(mask.sum()) if mask is not None else 0)
    return _as_string(res)
