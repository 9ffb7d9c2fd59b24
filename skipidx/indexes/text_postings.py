"""The text index's dictionary and posting-list codec (numba kernels, no Python per token).

Dictionary: the part's distinct tokens in bytewise order, cut into blocks of
``block_size`` tokens. Each block is front-coded: per token
``varint(shared prefix with the previous token of the block) varint(suffix
length) suffix varint(rows) varint(posting bytes * 2 + kind)``; the first
token of a block shares nothing, and the first tokens of all blocks are the
sparse header (a lookup bisects the header and decodes one block).

Posting list of a token: its sorted distinct part-relative rows, in the form
that takes fewer bytes (the delta form on a tie):

* kind 0 (delta): ``varint(r0) varint(r1 - r0) ...``;
* kind 1 (bitmap): ``varint(r0)`` then a little-endian bitmap of
  ``r_last - r0 + 1`` bits (bit i set: row r0 + i holds the token).

Dense tokens take ~1 bit per row of their span and rare ones ~1-3 bytes per
row (ClickHouse's roaring/bit-packed postings sit between the two).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(inline="always", cache=True)
def _vlen(x):
    n = 1
    while x >= 128:
        x >>= 7
        n += 1
    return n


@njit(inline="always", cache=True)
def _vput(buf, p, x):
    while x >= 128:
        buf[p] = np.uint8((x & 127) | 128)
        x >>= 7
        p += 1
    buf[p] = np.uint8(x)
    return p + 1


@njit(inline="always", cache=True)
def _vget(buf, p):
    x = np.int64(0)
    shift = 0
    while True:
        b = np.int64(buf[p])
        p += 1
        x |= (b & 127) << shift
        if b < 128:
            return x, p
        shift += 7


@njit(cache=True)
def _posting_cost(rows, a, b):
    """(bytes, kind) of the posting rows[a:b]."""
    d = _vlen(rows[a])
    for i in range(a + 1, b):
        d += _vlen(rows[i] - rows[i - 1])
    span = rows[b - 1] - rows[a] + 1
    bm = _vlen(rows[a]) + (span + 7) // 8
    if bm < d:
        return bm, 1
    return d, 0


@njit(cache=True, nogil=True)
def encode_dictionary(tok_data, tok_offs, post_rows, post_offs, block_size):
    """Front-coded blocks + postings of sorted distinct tokens.

    tok_data/tok_offs: the tokens (sorted, distinct); post_rows/post_offs: token t's
    rows are post_rows[post_offs[t]:post_offs[t+1]] (sorted, distinct, >= 1 each).
    Returns (tok_blob, tok_block_offs, post_blob, post_block_offs, first_of_block).
    """
    n = tok_offs.shape[0] - 1
    nb = (n + block_size - 1) // block_size
    costs = np.empty(n, dtype=np.int64)
    kinds = np.empty(n, dtype=np.int64)
    prefix = np.zeros(n, dtype=np.int64)
    tb = 0
    pb = 0
    for t in range(n):
        c, k = _posting_cost(post_rows, post_offs[t], post_offs[t + 1])
        costs[t] = c
        kinds[t] = k
        pb += c
        s0 = tok_offs[t]
        ln = tok_offs[t + 1] - s0
        pre = 0
        if t % block_size != 0:
            q0 = tok_offs[t - 1]
            lq = s0 - q0
            m = ln if ln < lq else lq
            while pre < m and tok_data[q0 + pre] == tok_data[s0 + pre]:
                pre += 1
        prefix[t] = pre
        tb += _vlen(pre) + _vlen(ln - pre) + (ln - pre) + _vlen(post_offs[t + 1] - post_offs[t]) + _vlen(c * 2 + k)
    tok_blob = np.empty(tb, dtype=np.uint8)
    post_blob = np.empty(pb, dtype=np.uint8)
    tbo = np.zeros(nb + 1, dtype=np.int64)
    pbo = np.zeros(nb + 1, dtype=np.int64)
    tp = 0
    pp = 0
    for t in range(n):
        if t % block_size == 0:
            tbo[t // block_size] = tp
            pbo[t // block_size] = pp
        s0 = tok_offs[t]
        ln = tok_offs[t + 1] - s0
        pre = prefix[t]
        tp = _vput(tok_blob, tp, pre)
        tp = _vput(tok_blob, tp, ln - pre)
        for q in range(s0 + pre, s0 + ln):
            tok_blob[tp] = tok_data[q]
            tp += 1
        a = post_offs[t]
        b = post_offs[t + 1]
        tp = _vput(tok_blob, tp, b - a)
        tp = _vput(tok_blob, tp, costs[t] * 2 + kinds[t])
        pp = _vput(post_blob, pp, post_rows[a])
        if kinds[t] == 0:
            for i in range(a + 1, b):
                pp = _vput(post_blob, pp, post_rows[i] - post_rows[i - 1])
        else:
            r0 = post_rows[a]
            nbytes = (post_rows[b - 1] - r0 + 1 + 7) // 8
            for q in range(nbytes):
                post_blob[pp + q] = 0
            for i in range(a, b):
                d = post_rows[i] - r0
                post_blob[pp + (d >> 3)] |= np.uint8(1 << (d & 7))
            pp += nbytes
    tbo[nb] = tp
    pbo[nb] = pp
    return tok_blob, tbo, post_blob, pbo


#: per byte: its lowest set bit, its set bits, its highest set bit
_TZ = np.array([(b & -b).bit_length() - 1 if b else 0 for b in range(256)], dtype=np.int64)
_POP = np.array([bin(b).count("1") for b in range(256)], dtype=np.int64)
_HB = np.array([b.bit_length() - 1 if b else 0 for b in range(256)], dtype=np.int64)


@njit(cache=True)
def _decode_posting_into(blob, p, nbytes, kind, count, out, k):
    r, q = _vget(blob, p)
    out[k] = r
    k += 1
    if kind == 0:
        for _ in range(count - 1):
            d, q = _vget(blob, q)
            r += d
            out[k] = r
            k += 1
        return k
    r0 = r
    end = p + nbytes
    base = r0
    tz = _TZ
    # the first byte's bit 0 is r0 itself, already written
    if q < end:
        byte = np.int64(blob[q]) & 0xFE
        while byte:
            out[k] = base + tz[byte]
            k += 1
            byte &= byte - 1
        q += 1
        base += 8
    while q < end:
        byte = np.int64(blob[q])
        while byte:   # one step per set bit (lowest first)
            out[k] = base + tz[byte]
            k += 1
            byte &= byte - 1
        q += 1
        base += 8
    return k


@njit(cache=True, nogil=True)
def find_in_block(tok_blob, ts, te, post_blob, ps, needle):
    """Rows of `needle` in the block tok_blob[ts:te] (postings from post_blob[ps:]), or an
    empty array when the block does not hold it."""
    prev = np.empty(te - ts, dtype=np.uint8)
    plen = 0
    p = ts
    pos = ps
    nl = needle.shape[0]
    while p < te:
        p, plen, cnt, ck = _read_entry(tok_blob, p, prev)
        nbytes = ck >> 1
        if plen == nl:
            same = True
            for q in range(nl):
                if prev[q] != needle[q]:
                    same = False
                    break
            if same:
                out = np.empty(cnt, dtype=np.int64)
                k = _decode_posting_into(post_blob, pos, nbytes, ck & 1, cnt, out, 0)
                return out[:k]
        pos += nbytes
    return np.empty(0, dtype=np.int64)


@njit(cache=True, nogil=True)
def decode_dictionary(tok_blob, tbo, post_blob, pbo, n_tokens):
    """All tokens and postings: (tok_data, tok_offs, post_rows int64, post_offs)."""
    return _decode(tok_blob, tbo, post_blob, pbo, n_tokens, np.zeros(0, np.int64), np.zeros(0, np.int64))


@njit(cache=True)
def _decode(tok_blob, tbo, post_blob, pbo, n_tokens, row_map, like):
    nb = tbo.shape[0] - 1
    tok_offs = np.zeros(n_tokens + 1, dtype=np.int64)
    post_offs = np.zeros(n_tokens + 1, dtype=np.int64)
    # first pass: sizes
    t = 0
    total_rows = 0
    total_bytes = 0
    for b in range(nb):
        p = tbo[b]
        last = 0
        while p < tbo[b + 1]:
            pre, p = _vget(tok_blob, p)
            sl, p = _vget(tok_blob, p)
            p += sl
            cnt, p = _vget(tok_blob, p)
            _ck, p = _vget(tok_blob, p)
            last = pre + sl
            total_bytes += last
            total_rows += cnt
            t += 1
            tok_offs[t] = total_bytes
            post_offs[t] = total_rows
    tok_data = np.empty(total_bytes, dtype=np.uint8)
    post_rows = np.empty(total_rows, dtype=like.dtype)
    mapped = row_map.shape[0] > 0
    t = 0
    for b in range(nb):
        p = tbo[b]
        pos = pbo[b]
        while p < tbo[b + 1]:
            pre, p = _vget(tok_blob, p)
            sl, p = _vget(tok_blob, p)
            s0 = tok_offs[t]
            if pre:
                q0 = tok_offs[t - 1]
                for q in range(pre):
                    tok_data[s0 + q] = tok_data[q0 + q]
            for q in range(sl):
                tok_data[s0 + pre + q] = tok_blob[p + q]
            p += sl
            cnt, p = _vget(tok_blob, p)
            ck, p = _vget(tok_blob, p)
            k1 = _decode_posting_into(post_blob, pos, ck >> 1, ck & 1, cnt, post_rows, post_offs[t])
            if mapped:
                for q in range(post_offs[t], k1):
                    post_rows[q] = row_map[post_rows[q]]
            pos += ck >> 1
            t += 1
    return tok_data, tok_offs, post_rows, post_offs


# ---------------------------------------------------------------- building postings
from skipidx.core._kernels.xxh64 import xxh64_span  # noqa: E402


@njit(inline="always", cache=True)
def _same(data, a0, a1, b0, b1):
    if a1 - a0 != b1 - b0:
        return False
    for q in range(a1 - a0):
        if data[a0 + q] != data[b0 + q]:
            return False
    return True


@njit(inline="always", cache=True)
def _cmp(data, a0, a1, b0, b1):
    """Bytewise order of data[a0:a1] and data[b0:b1]: -1, 0, 1."""
    la = a1 - a0
    lb = b1 - b0
    m = la if la < lb else lb
    for q in range(m):
        x = data[a0 + q]
        y = data[b0 + q]
        if x != y:
            return -1 if x < y else 1
    if la == lb:
        return 0
    return -1 if la < lb else 1


# ---------------------------------------------------------------- bucketed build
#: tokens are bucketed by their first two bytes, so buckets in key order are ranges of the
#: sorted dictionary: each bucket is deduplicated, sorted and given its postings alone,
#: in tables small enough for the cache
_NBUCKETS = 1 + 256 * 257


@njit(inline="always", cache=True)
def _bucket(data, s, e):
    ln = e - s
    if ln <= 0:
        return 0
    if ln == 1:
        return 1 + np.int64(data[s]) * 257
    return 2 + np.int64(data[s]) * 257 + np.int64(data[s + 1])


@njit(inline="always", cache=True)
def _be_word(data, p, e):
    """Up to 8 bytes at data[p:e] as a big-endian integer, zero-padded: orders as the bytes."""
    w = np.uint64(0)
    for q in range(8):
        w = w << np.uint64(8)
        if p + q < e:
            w |= np.uint64(data[p + q])
    return w


@njit(inline="always", cache=True)
def _less(data, wa, a0, a1, wb, b0, b1):
    if wa != wb:
        return wa < wb
    return _cmp(data, a0, a1, b0, b1) < 0


@njit(cache=True)
def _sort_tokens(idx, w, st, en, data, tmp):
    """Sort idx[:] (token ids) by bytes: w = big-endian prefix words, spans st/en; stable
    bottom-up merge sort with insertion-sorted runs of 16."""
    n = idx.shape[0]
    for a in range(0, n, 16):
        b = min(a + 16, n)
        for i in range(a + 1, b):
            x = idx[i]
            j = i - 1
            while j >= a and _less(data, w[x], st[x], en[x], w[idx[j]], st[idx[j]], en[idx[j]]):
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = x
    width = 16
    src = idx
    dst = tmp
    swapped = False
    while width < n:
        for a in range(0, n, 2 * width):
            m = min(a + width, n)
            b = min(a + 2 * width, n)
            i = a
            j = m
            o = a
            while i < m and j < b:
                x = src[i]
                y = src[j]
                if _less(data, w[y], st[y], en[y], w[x], st[x], en[x]):
                    dst[o] = y
                    j += 1
                else:
                    dst[o] = x
                    i += 1
                o += 1
            while i < m:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < b:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        swapped = not swapped
        width *= 2
    if swapped:
        idx[:] = src[:]


@njit(cache=True, nogil=True)
def build_postings(data, starts, ends, rows):
    """The sorted distinct tokens of (row, token span) occurrences in row order, with
    their postings: (token starts, token ends, post_offs, post_rows int32)."""
    n = starts.shape[0]
    nbk = _NBUCKETS
    cnt = np.zeros(nbk + 1, dtype=np.int64)
    keys = np.empty(n, dtype=np.int32)
    hs = np.empty(n, dtype=np.uint64)
    for k in range(n):
        s = starts[k]
        e = ends[k]
        b = _bucket(data, s, e)
        keys[k] = b
        hs[k] = xxh64_span(data, s, e - s, np.uint64(0))
        cnt[b + 1] += 1
    big = 0
    for b in range(nbk):
        if cnt[b + 1] > big:
            big = cnt[b + 1]
        cnt[b + 1] += cnt[b]
    pos = cnt[:-1].copy()
    # occurrences in bucket order (row order inside a bucket): later passes read sequentially
    bs_ = np.empty(n, dtype=np.int64)
    be_ = np.empty(n, dtype=np.int64)
    bh = np.empty(n, dtype=np.uint64)
    br = np.empty(n, dtype=np.int32)
    for k in range(n):
        b = keys[k]
        q = pos[b]
        pos[b] = q + 1
        bs_[q] = starts[k]
        be_[q] = ends[k]
        bh[q] = hs[k]
        br[q] = rows[k]
    cap = 16
    while cap < 2 * big:
        cap <<= 1
    table = np.full(cap, -1, dtype=np.int64)
    m = max(big, 1)
    slot = np.empty(m, dtype=np.int64)
    dh = np.empty(m, dtype=np.uint64)
    dst_ = np.empty(m, dtype=np.int64)
    den = np.empty(m, dtype=np.int64)
    dw = np.empty(m, dtype=np.uint64)
    lid = np.empty(m, dtype=np.int64)
    perm = np.empty(m, dtype=np.int64)
    tmp = np.empty(m, dtype=np.int64)
    rank = np.empty(m, dtype=np.int64)
    c = np.zeros(m + 1, dtype=np.int64)
    last = np.empty(m, dtype=np.int64)
    out_s = np.empty(max(n, 1), dtype=np.int64)
    out_e = np.empty(max(n, 1), dtype=np.int64)
    post_offs = np.zeros(n + 1, dtype=np.int64)
    post_rows = np.empty(max(n, 1), dtype=np.int32)
    nd = 0
    npost = 0
    for b in range(nbk):
        a0 = cnt[b]
        a1 = cnt[b + 1]
        if a0 == a1:
            continue
        bc = 16
        while bc < 2 * (a1 - a0):
            bc <<= 1
        mask = bc - 1
        d = 0
        for q in range(a0, a1):
            s = bs_[q]
            e = be_[q]
            h = bh[q]
            j = np.int64(h & np.uint64(mask))
            while True:
                t = table[j]
                if t < 0:
                    table[j] = d
                    slot[d] = j
                    dh[d] = h
                    dst_[d] = s
                    den[d] = e
                    lid[q - a0] = d
                    d += 1
                    break
                if dh[t] == h and _same(data, dst_[t], den[t], s, e):
                    lid[q - a0] = t
                    break
                j = (j + 1) & mask
        for t in range(d):
            table[slot[t]] = -1
            dw[t] = _be_word(data, dst_[t], den[t])
            perm[t] = t
        _sort_tokens(perm[:d], dw, dst_, den, data, tmp[:d])
        for i in range(d):
            rank[perm[i]] = i
            c[i + 1] = 0
            last[i] = -1
        for q in range(a0, a1):
            r = rank[lid[q - a0]]
            row = br[q]
            if last[r] != row:
                c[r + 1] += 1
                last[r] = row
        for i in range(d):
            c[i + 1] += c[i]
        for i in range(d):
            last[i] = -1
            tmp[i] = c[i]
        for q in range(a0, a1):
            r = rank[lid[q - a0]]
            row = br[q]
            if last[r] != row:
                post_rows[npost + tmp[r]] = row
                tmp[r] += 1
                last[r] = row
        for i in range(d):
            t = perm[i]
            out_s[nd + i] = dst_[t]
            out_e[nd + i] = den[t]
            post_offs[nd + i + 1] = npost + c[i + 1]
        nd += d
        npost += c[d]
    return out_s[:nd], out_e[:nd], post_offs[:nd + 1], post_rows[:npost]


# ---------------------------------------------------------------- hashed build
_HK = np.uint64(0x9E3779B97F4A7C15)


@njit(inline="always", cache=True)
def _token_key(data, s, e):
    """(big-endian word of the first 8 bytes, hash of all bytes) of data[s:e]."""
    w = np.uint64(0)
    ln = e - s
    for q in range(8):
        w = w << np.uint64(8)
        if q < ln:
            w |= np.uint64(data[s + q])
    h = (w ^ np.uint64(ln)) * _HK
    p = s + 8
    while p < e:
        x = np.uint64(0)
        for q in range(8):
            x = x << np.uint64(8)
            if p + q < e:
                x |= np.uint64(data[p + q])
        h = ((h ^ (h >> np.uint64(29))) ^ x) * _HK
        p += 8
    # murmur3's finalizer: the table takes the low bits, which the products above leave
    # depending on the token's last bytes only
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return w, h


@njit(cache=True)
def _grow_to(a, n):
    out = np.empty(n, dtype=a.dtype)
    out[:a.shape[0]] = a
    return out


@njit(cache=True, nogil=True)
def build_postings_hashed(data, starts, ends, rows):
    """build_postings by one hash table over the distinct tokens (ids in first-seen
    order), the distinct tokens sorted alone, and the occurrences placed by token rank
    (rows stay in order): for inputs with few distinct tokens per occurrence."""
    n = starts.shape[0]
    cap = 1024
    mask = cap - 1
    tab = np.full(cap, -1, dtype=np.int32)
    tabh = np.zeros(cap, dtype=np.uint64)
    dcap = 512
    ds = np.empty(dcap, dtype=np.int64)
    de = np.empty(dcap, dtype=np.int64)
    dw = np.empty(dcap, dtype=np.uint64)
    dh = np.empty(dcap, dtype=np.uint64)
    last = np.empty(dcap, dtype=np.int64)
    cnt = np.empty(dcap, dtype=np.int64)
    ot = np.empty(max(n, 1), dtype=np.int32)
    orow = np.empty(max(n, 1), dtype=np.int32)
    d = 0
    m = 0
    for k in range(n):
        s = starts[k]
        e = ends[k]
        w, h = _token_key(data, s, e)
        j = np.int64(h & np.uint64(mask))
        while True:
            t = tab[j]
            if t < 0:
                if d == dcap:
                    dcap *= 2
                    ds = _grow_to(ds, dcap)
                    de = _grow_to(de, dcap)
                    dw = _grow_to(dw, dcap)
                    dh = _grow_to(dh, dcap)
                    last = _grow_to(last, dcap)
                    cnt = _grow_to(cnt, dcap)
                t = d
                ds[t] = s
                de[t] = e
                dw[t] = w
                dh[t] = h
                last[t] = -1
                cnt[t] = 0
                d += 1
                tab[j] = t
                tabh[j] = h
                if 2 * d > cap:
                    cap *= 4
                    mask = cap - 1
                    tab = np.full(cap, -1, dtype=np.int32)
                    tabh = np.zeros(cap, dtype=np.uint64)
                    for u in range(d):
                        jj = np.int64(dh[u] & np.uint64(mask))
                        while tab[jj] >= 0:
                            jj = (jj + 1) & mask
                        tab[jj] = u
                        tabh[jj] = dh[u]
                break
            if tabh[j] == h and dw[t] == w and de[t] - ds[t] == e - s:
                same = True
                q0 = ds[t]
                for q in range(8, e - s):
                    if data[q0 + q] != data[s + q]:
                        same = False
                        break
                if same:
                    break
            j = (j + 1) & mask
        r = rows[k]
        if last[t] != r:
            last[t] = r
            cnt[t] += 1
            ot[m] = t
            orow[m] = r
            m += 1
    perm = np.arange(d)
    _sort_tokens(perm, dw, ds, de, data, np.empty(d, dtype=np.int64))
    out_s = np.empty(d, dtype=np.int64)
    out_e = np.empty(d, dtype=np.int64)
    post_offs = np.zeros(d + 1, dtype=np.int64)
    pos = last   # reused: each token's next posting slot
    for i in range(d):
        t = perm[i]
        out_s[i] = ds[t]
        out_e[i] = de[t]
        pos[t] = post_offs[i]
        post_offs[i + 1] = post_offs[i] + cnt[t]
    post_rows = np.empty(max(m, 1), dtype=np.int32)
    for q in range(m):
        t = ot[q]
        post_rows[pos[t]] = orow[q]
        pos[t] += 1
    return out_s, out_e, post_offs, post_rows[:m]


@njit(cache=True, nogil=True)
def merge_postings(data, offs, bounds, prow, poffs, sort_rows):
    """k-way merge of sorted distinct token lists with their postings: tokens
    bounds[i]..bounds[i+1] of (data, offs) are source i's, token t's rows are
    prow[poffs[t]:poffs[t+1]]. Equal tokens' rows are concatenated in source order
    (``sort_rows``: then sorted, a repeated row dropped). Returns (first source token
    of each output token, post_offs, post_rows) -- sequential writes only."""
    return merge_postings_range(data, offs, bounds[:-1].copy(), bounds[1:].copy(), prow, poffs, sort_rows)


@njit(cache=True, nogil=True)
def merge_postings_range(data, offs, lo, hi, prow, poffs, sort_rows):
    """merge_postings of source i's tokens lo[i]..hi[i] (a key range of every source)."""
    k = lo.shape[0]
    n = 0
    nr = 0
    for i in range(k):
        n += hi[i] - lo[i]
        if hi[i] > lo[i]:
            nr += poffs[hi[i]] - poffs[lo[i]]
    first = np.empty(max(n, 1), dtype=np.int64)
    out_offs = np.zeros(n + 1, dtype=np.int64)
    out = np.empty(max(nr, 1), dtype=prow.dtype)
    head = lo.copy()
    hw = np.zeros(max(k, 1), dtype=np.uint64)
    for i in range(k):
        if head[i] < hi[i]:
            hw[i] = _be_word(data, offs[head[i]], offs[head[i] + 1])
    r = 0
    w = 0
    while True:
        best = -1
        for i in range(k):
            if head[i] < hi[i]:
                if best < 0:
                    best = i
                else:
                    a = head[i]
                    b = head[best]
                    if _less(data, hw[i], offs[a], offs[a + 1], hw[best], offs[b], offs[b + 1]):
                        best = i
        if best < 0:
            break
        b = head[best]
        b0 = offs[b]
        b1 = offs[b + 1]
        wb = hw[best]
        first[r] = b
        start = w
        for i in range(k):
            a = head[i]
            if a < hi[i] and hw[i] == wb and _cmp(data, offs[a], offs[a + 1], b0, b1) == 0:
                for q in range(poffs[a], poffs[a + 1]):
                    out[w] = prow[q]
                    w += 1
                a += 1
                head[i] = a
                if a < hi[i]:
                    hw[i] = _be_word(data, offs[a], offs[a + 1])
        if sort_rows:
            ok = True
            for q in range(start + 1, w):
                if out[q] <= out[q - 1]:
                    ok = False
                    break
            if not ok:
                seg = np.sort(out[start:w])
                w = start
                for q in range(seg.shape[0]):
                    if q == 0 or seg[q] != seg[q - 1]:
                        out[w] = seg[q]
                        w += 1
        r += 1
        out_offs[r] = w
    return first[:r].copy(), out_offs[:r + 1].copy(), out[:w].copy()


@njit(cache=True, nogil=True)
def lower_bound(data, offs, lo, hi, key_data, k0, k1):
    """First token index in lo..hi (sorted) not less than data[k0:k1] of key_data."""
    while lo < hi:
        m = (lo + hi) >> 1
        # compare data[offs[m]:offs[m+1]] with the key
        a0 = offs[m]
        la = offs[m + 1] - a0
        lb = k1 - k0
        c = 0
        for q in range(min(la, lb)):
            x = data[a0 + q]
            y = key_data[k0 + q]
            if x != y:
                c = -1 if x < y else 1
                break
        if c == 0 and la != lb:
            c = -1 if la < lb else 1
        if c < 0:
            lo = m + 1
        else:
            hi = m
    return lo


@njit(inline="always", cache=True)
def _read_entry(tok_blob, p, cur):
    """One front-coded dictionary entry at tok_blob[p:]: its suffix written after the kept
    prefix in `cur` (which holds the previous token); (next p, token length, row count,
    posting kind-and-bytes word)."""
    pre, p = _vget(tok_blob, p)
    sl, p = _vget(tok_blob, p)
    for q in range(sl):
        cur[pre + q] = tok_blob[p + q]
    p += sl
    cnt, p = _vget(tok_blob, p)
    ck, p = _vget(tok_blob, p)
    return p, pre + sl, cnt, ck


@njit(cache=True)
def _vget_checked(buf, p, end):
    """A varint inside buf[:end]: (value, next position), or (-1, -1) if it runs out."""
    x = np.int64(0)
    shift = 0
    while p < end and shift < 63:
        b = np.int64(buf[p])
        p += 1
        x |= (b & 127) << shift
        if b < 128:
            return x, p
        shift += 7
    return np.int64(-1), np.int64(-1)


@njit(cache=True, nogil=True)
def check_dictionary(tok_blob, tbo, post_blob, pbo, num_tokens, n_rows):
    """Walk every block without decoding into memory: 0 when each block holds its token
    count, every token is in bounds and every posting is sorted rows inside [0, n_rows);
    else the (1-based) number of the first bad block."""
    nb = tbo.shape[0] - 1
    tl = tok_blob.shape[0]
    pl = post_blob.shape[0]
    if pbo.shape[0] != nb + 1 or num_tokens.shape[0] != nb:
        return 1
    for b in range(nb):
        p = tbo[b]
        te = tbo[b + 1]
        pos = pbo[b]
        pe = pbo[b + 1]
        if p < 0 or te > tl or p > te or pos < 0 or pe > pl or pos > pe:
            return b + 1
        last = 0
        t = 0
        while p < te:
            pre, p = _vget_checked(tok_blob, p, te)
            if p < 0:
                return b + 1
            sl, p = _vget_checked(tok_blob, p, te)
            if p < 0 or pre > last or (t == 0 and pre != 0) or p + sl > te:
                return b + 1
            p += sl
            last = pre + sl
            cnt, p = _vget_checked(tok_blob, p, te)
            if p < 0 or cnt < 1:
                return b + 1
            ck, p = _vget_checked(tok_blob, p, te)
            if p < 0:
                return b + 1
            nbytes = ck >> 1
            if pos + nbytes > pe or nbytes < 1:
                return b + 1
            # the posting: cnt sorted rows in range, exactly nbytes long
            r, q = _vget_checked(post_blob, pos, pos + nbytes)
            if q < 0 or r >= n_rows:
                return b + 1
            if ck & 1 == 0:
                for _ in range(cnt - 1):
                    d, q = _vget_checked(post_blob, q, pos + nbytes)
                    if q < 0 or d < 1:
                        return b + 1
                    r += d
                if q != pos + nbytes or r >= n_rows:
                    return b + 1
            else:
                seen = 1
                hi = r
                pop = _POP
                for qq in range(q, pos + nbytes):
                    byte = np.int64(post_blob[qq])
                    if qq == q:
                        byte &= 0xFE   # bit 0: r itself
                    if byte:
                        seen += pop[byte]
                        hi = r + (qq - q) * 8 + _HB[byte]
                if seen != cnt or hi >= n_rows:
                    return b + 1
            pos += nbytes
            t += 1
        if t != num_tokens[b] or pos != pe:
            return b + 1
    return 0


# ---------------------------------------------------------------- merging encoded parts
@njit(inline="always", cache=True)
def _grow(buf, need):
    if need <= buf.shape[0]:
        return buf
    m = buf.shape[0] * 2
    while m < need:
        m *= 2
    out = np.empty(m, dtype=buf.dtype)
    out[:buf.shape[0]] = buf
    return out


@njit(inline="always", cache=True)
def _advance(i, tbf, tbb, tbof, tbob, pbof, pbb, nbk, blk, tp, pp, cur, cur_len, cnt, ck, ppos, hw, live):
    """Decode source i's next token into cur[i] (front coding within its block): its row
    count, posting kind/bytes and posting position; live[i] = False past its last token.
    The sources' arrays are flat (see `pack`): source i's token blob is tbf[tbb[i]:], its
    block offsets tbof[tbob[i]:] (relative to its blob), its posting blob pbf[pbb[i]:] with
    block offsets pbof[tbob[i]:]; tp/pp/ppos are absolute positions. No array is made or
    taken from a list here: each would cost a reference count update per token."""
    nb = nbk[i]
    p = tp[i]
    b = blk[i]
    if b >= nb:
        live[i] = False
        return
    ob = tbob[i]
    if p >= tbb[i] + tbof[ob + b + 1]:
        b += 1
        if b >= nb:
            blk[i] = b
            live[i] = False
            return
        blk[i] = b
        p = tbb[i] + tbof[ob + b]
        pp[i] = pbb[i] + pbof[ob + b]
    pre, p = _vget(tbf, p)
    sl, p = _vget(tbf, p)
    for q in range(sl):
        cur[i, pre + q] = tbf[p + q]
    p += sl
    c, p = _vget(tbf, p)
    k, p = _vget(tbf, p)
    ln = pre + sl
    cur_len[i] = ln
    cnt[i] = c
    ck[i] = k
    ppos[i] = pp[i]
    pp[i] += k >> 1
    tp[i] = p
    w = np.uint64(0)
    for q in range(8):
        w = w << np.uint64(8)
        if q < ln:
            w |= np.uint64(cur[i, q])
    hw[i] = w


def pack(xs: list) -> tuple:
    """`xs` (same-dtype 1-D arrays, at least one) as (flat, offsets) for the merge kernels:
    a list of arrays from Python needs numba's typed List, whose methods are compiled
    in every new process (about a second), never cached."""
    offs = np.zeros(len(xs) + 1, dtype=np.int64)
    offs[1:] = np.cumsum([x.shape[0] for x in xs])
    return np.ascontiguousarray(np.concatenate(xs)), offs


@njit(cache=True, nogil=True)
def merge_encoded(tok_blobs_p, tbos_p, post_blobs_p, pbos_p, row_maps_p, shifts, max_token, n_rows, block_size):
    """Merge several parts' encoded dictionaries into the merged part's, without decoding
    them into memory: a k-way merge over their front-coded blocks, each token's postings
    decoded with rows mapped (row_maps[i][r]), sorted when the parts' rows interleave, and
    encoded as encode_dictionary does. shifts[i] >= 0: source i's row map is r -> r +
    shifts[i], so a token only it holds keeps its posting's bytes but the first row (a
    posting's kind and deltas do not change with a shift); -1: mapped row by row.
    Returns (tok_blob, tbo, post_blob, pbo, first_at, first_len, n_tokens): block j's
    first token is tok_blob[first_at[j]:+first_len[j]]. The per-source arrays come
    packed (see `pack`)."""
    k = shifts.shape[0]
    none = np.zeros(0, dtype=np.uint8)
    return _merge_range(tok_blobs_p, tbos_p, post_blobs_p, pbos_p, row_maps_p, shifts, max_token, n_rows, block_size,
                        np.zeros(k, dtype=np.int64), np.full(k, -1, dtype=np.int64), none, False, none, False)[:7]


@njit(inline="always", cache=True)
def _cur_cmp_key(cur, cur_len, i, key):
    """-1, 0, 1: source i's current token against `key`, bytewise."""
    la = cur_len[i]
    lb = key.shape[0]
    m = la if la < lb else lb
    for q in range(m):
        if cur[i, q] != key[q]:
            return -1 if cur[i, q] < key[q] else 1
    if la == lb:
        return 0
    return -1 if la < lb else 1


@njit(cache=True, nogil=True)
def block_first_token(tok_blob, tbo, b):
    """(start, length) in tok_blob of block b's first token (it shares no prefix)."""
    p = tbo[b]
    _pre, p = _vget(tok_blob, p)
    sl, p = _vget(tok_blob, p)
    return p, sl


@njit(cache=True, nogil=True)
def merge_encoded_range(tok_blobs_p, tbos_p, post_blobs_p, pbos_p, row_maps_p, shifts, max_token, n_rows, start_blk,
                        end_blk, lo, has_lo, hi, has_hi):
    """merge_encoded over the tokens t with lo <= t < hi only (a bound applies if has_*),
    each source read from block start_blk[i] on (a block whose first token is <= lo; its
    output sized for its blocks up to end_blk[i], -1: the last), with
    no block cut: every token but the first is front-coded against the one before it
    (recut_blocks cuts the blocks once the ranges' token counts are known). Returns
    (tok_blob, post_blob, n_tokens, last token). The per-source arrays come packed (see `pack`)."""
    tb, _tbo, pb, _pbo, _fa, _fl, n, last = _merge_range(
        tok_blobs_p, tbos_p, post_blobs_p, pbos_p, row_maps_p, shifts, max_token, n_rows, 1 << 62, start_blk, end_blk,
        lo, has_lo, hi, has_hi)
    return tb, pb, n, last


@njit(cache=True, nogil=True)
def recut_blocks(tok_blob, n, t0, block_size, prev, has_prev, max_token):
    """A range's token stream from merge_encoded_range, cut into the merged dictionary's
    blocks: its tokens are numbered from t0, a token at a multiple of block_size starts a
    block (no shared prefix), the range's first token is front-coded against `prev` (the
    previous range's last token) when it does not. Returns (tok_blob, tbo, pbo, first_at,
    first_len) with block starts relative to this range's token and posting bytes."""
    nbs = (t0 + n + block_size - 1) // block_size - (t0 + block_size - 1) // block_size
    out = np.empty(tok_blob.shape[0] + (nbs + 2) * (max_token + 20), dtype=np.uint8)
    tbo = np.zeros(nbs, dtype=np.int64)
    pbo = np.zeros(nbs, dtype=np.int64)
    first_at = np.zeros(nbs, dtype=np.int64)
    first_len = np.zeros(nbs, dtype=np.int64)
    cur = np.zeros(max(max_token, 8), dtype=np.uint8)
    p = 0
    w = 0
    pp = 0
    nb = 0
    seg = 0   # entries from here to the current one are copied as they are, in one piece
    for t in range(n):
        s0 = p
        # _read_entry written out (a call updates its arrays' reference counts per token)
        pre, p = _vget(tok_blob, p)
        sl, p = _vget(tok_blob, p)
        for q in range(sl):
            cur[pre + q] = tok_blob[p + q]
        p += sl
        c, p = _vget(tok_blob, p)
        kk, p = _vget(tok_blob, p)
        ln = pre + sl
        starts = (t0 + t) % block_size == 0
        if starts or t == 0:
            if s0 > seg:
                out[w:w + s0 - seg] = tok_blob[seg:s0]
                w += s0 - seg
            seg = p
        if starts:
            tbo[nb] = w
            pbo[nb] = pp
            w = _vput(out, w, 0)
            w = _vput(out, w, ln)
            first_at[nb] = w
            first_len[nb] = ln
            nb += 1
            for q in range(ln):
                out[w + q] = cur[q]
            w += ln
            w = _vput(out, w, c)
            w = _vput(out, w, kk)
        elif t == 0:
            pr = 0
            if has_prev:
                lim = ln if ln < prev.shape[0] else prev.shape[0]
                while pr < lim and prev[pr] == cur[pr]:
                    pr += 1
            w = _vput(out, w, pr)
            w = _vput(out, w, ln - pr)
            for q in range(pr, ln):
                out[w] = cur[q]
                w += 1
            w = _vput(out, w, c)
            w = _vput(out, w, kk)
        pp += kk >> 1
    if p > seg:
        out[w:w + p - seg] = tok_blob[seg:p]
        w += p - seg
    return out[:w], tbo, pbo, first_at, first_len


# ---------------------------------------------------------------- concatenated postings
@njit(inline="always", cache=True)
def _posting_last(blob, p, nbytes, kind, r0, q):
    """The last row of the posting at blob[p:p + nbytes] whose first row r0 ends at q."""
    end = p + nbytes
    if kind == 1:
        return r0 + (end - 1 - q) * 8 + _HB[np.int64(blob[end - 1])]
    r = r0
    while q < end:
        d, q = _vget(blob, q)
        r += d
    return r


@njit(inline="always", cache=True)
def _bitmap_delta_bytes(blob, q, end):
    """Bytes of the deltas between the set bits of the bitmap blob[q:end] (its bit 0 set)."""
    total = 0
    prev = 0
    tz = _TZ
    base = 0
    first = True
    while q < end:
        byte = np.int64(blob[q])
        while byte:
            r = base + tz[byte]
            if first:
                first = False
            else:
                total += _vlen(r - prev)
            prev = r
            byte &= byte - 1
        q += 1
        base += 8
    return total


@njit(cache=True)
def _concat_plan(pbf, ppos, ck, cnt, shifts, sel, ns, f0, q0, lastrow):
    """The posting of rows that are the sources sel[:ns]'s postings (each shifted by its
    shifts[i]) one after the other, rows increasing: (bytes, kind, rows), as
    encode_dictionary would choose them; f0/q0/lastrow: each source's shifted first row,
    the position after its first row's varint, its shifted last row."""
    d = 0
    m = 0
    lb_bits = 0
    for s in range(ns):
        i = sel[s]
        blob = pbf
        p = ppos[i]
        nb = ck[i] >> 1
        kd = ck[i] & 1
        r0, q = _vget(blob, p)
        f0[s] = r0 + shifts[i]
        q0[s] = q
        lastrow[s] = _posting_last(blob, p, nb, kd, r0, q) + shifts[i]
        if s == 0:
            d += _vlen(f0[s])
        else:
            d += _vlen(f0[s] - lastrow[s - 1])
        if kd == 0:
            d += nb - (q - p)
        else:
            # each delta takes a byte at least: a lower bound, made exact below if it decides
            d += cnt[i] - 1
            lb_bits += 1
        m += cnt[i]
    bm = _vlen(f0[0]) + (lastrow[ns - 1] - f0[0] + 1 + 7) // 8
    if bm < d:
        return bm, 1, m
    if lb_bits:
        for s in range(ns):
            i = sel[s]
            if ck[i] & 1:
                d += _bitmap_delta_bytes(pbf, q0[s], ppos[i] + (ck[i] >> 1)) - (cnt[i] - 1)
        if bm < d:
            return bm, 1, m
    return d, 0, m


@njit(cache=True)
def _concat_write(pbf, ppos, ck, sel, ns, f0, q0, lastrow, kind, pout, wp):
    """Write the posting _concat_plan planned at pout[wp:]; the next position."""
    r_first = f0[0]
    wp = _vput(pout, wp, r_first)
    if kind == 0:
        for s in range(ns):
            i = sel[s]
            blob = pbf
            end = ppos[i] + (ck[i] >> 1)
            if s > 0:
                wp = _vput(pout, wp, f0[s] - lastrow[s - 1])
            if ck[i] & 1 == 0:
                for q in range(q0[s], end):
                    pout[wp] = blob[q]
                    wp += 1
            else:
                prev = 0
                base = 0
                first = True
                tz = _TZ
                q = q0[s]
                while q < end:
                    byte = np.int64(blob[q])
                    while byte:
                        r = base + tz[byte]
                        if first:
                            first = False
                        else:
                            wp = _vput(pout, wp, r - prev)
                        prev = r
                        byte &= byte - 1
                    q += 1
                    base += 8
        return wp
    nbytes = (lastrow[ns - 1] - r_first + 1 + 7) // 8
    for q in range(nbytes):
        pout[wp + q] = 0
    for s in range(ns):
        i = sel[s]
        blob = pbf
        end = ppos[i] + (ck[i] >> 1)
        off = f0[s] - r_first
        if ck[i] & 1:
            # the source's bitmap, moved to bit `off`
            sh = off & 7
            o = wp + (off >> 3)
            for q in range(q0[s], end):
                v = np.int64(blob[q])
                if v:
                    pout[o] |= np.uint8((v << sh) & 255)
                    hi = v >> (8 - sh) if sh else 0
                    if hi:
                        pout[o + 1] |= np.uint8(hi)
                o += 1
        else:
            r = off
            pout[wp + (r >> 3)] |= np.uint8(1 << (r & 7))
            q = q0[s]
            while q < end:
                dd, q = _vget(blob, q)
                r += dd
                pout[wp + (r >> 3)] |= np.uint8(1 << (r & 7))
    return wp + nbytes


@njit(cache=True, nogil=True)
def _merge_range(tok_blobs_p, tbos_p, post_blobs_p, pbos_p, row_maps_p, shifts, max_token, n_rows, block_size,
                 start_blk, end_blk, lo, has_lo, hi, has_hi):
    tbf, tbb = tok_blobs_p
    tbof, tbob = tbos_p
    pbf, pbb = post_blobs_p
    pbof, _pbob = pbos_p
    rmf, rmb = row_maps_p
    k = shifts.shape[0]
    nbk = np.empty(k, dtype=np.int64)
    for i in range(k):
        nbk[i] = tbob[i + 1] - tbob[i] - 1
    cur = np.zeros((k, max(max_token, 8)), dtype=np.uint8)
    cur_len = np.zeros(k, dtype=np.int64)
    cnt = np.zeros(k, dtype=np.int64)
    ck = np.zeros(k, dtype=np.int64)
    ppos = np.zeros(k, dtype=np.int64)
    hw = np.zeros(k, dtype=np.uint64)
    blk = np.zeros(k, dtype=np.int64)
    tp = np.zeros(k, dtype=np.int64)
    pp = np.zeros(k, dtype=np.int64)
    live = np.ones(k, dtype=np.bool_)
    tot_t = 0
    tot_p = 0
    for i in range(k):
        b0 = start_blk[i]
        blk[i] = b0
        nbi = nbk[i]
        if b0 >= nbi:
            live[i] = False
            continue
        ob = tbob[i]
        tp[i] = tbb[i] + tbof[ob + b0]
        pp[i] = pbb[i] + pbof[ob + b0]
        e0 = nbi if end_blk[i] < 0 or end_blk[i] + 1 > nbi else end_blk[i] + 1
        tot_t += tbof[ob + e0] - tbof[ob + b0]
        tot_p += pbof[ob + e0] - pbof[ob + b0]
        _advance(i, tbf, tbb, tbof, tbob, pbof, pbb, nbk, blk, tp, pp, cur, cur_len, cnt, ck, ppos, hw, live)
        while has_lo and live[i] and _cur_cmp_key(cur, cur_len, i, lo) < 0:
            _advance(i, tbf, tbb, tbof, tbob, pbof, pbb, nbk, blk, tp, pp, cur, cur_len, cnt, ck, ppos, hw, live)
    tout = np.empty(max(tot_t + 64, 64), dtype=np.uint8)
    pout = np.empty(max(tot_p + 64, 64), dtype=np.uint8)
    tbo = np.zeros(16, dtype=np.int64)
    pbo = np.zeros(16, dtype=np.int64)
    first_at = np.zeros(16, dtype=np.int64)
    first_len = np.zeros(16, dtype=np.int64)
    rows = np.empty(max(n_rows, 1), dtype=np.int64)
    prev = np.zeros(max(max_token, 8), dtype=np.uint8)
    prev_len = 0
    same = np.zeros(k, dtype=np.bool_)
    # the sources in the order of their rows' shifts; scratch of the concatenated postings
    sorder = np.argsort(shifts)
    n_shifted = 0
    for i in range(k):
        if shifts[i] >= 0:
            n_shifted += 1
    sel = np.zeros(k, dtype=np.int64)
    f0 = np.zeros(k, dtype=np.int64)
    q0 = np.zeros(k, dtype=np.int64)
    lastrow = np.zeros(k, dtype=np.int64)
    t = 0
    w = 0
    wp = 0
    nb = 0
    while True:
        # The per-token steps are written out here, not called: a call (inlined or not)
        # updates the reference count of every array it takes, twice, which cost the
        # merge more than its own work.
        best = -1
        for i in range(k):
            if live[i]:
                if best < 0 or hw[i] < hw[best]:
                    best = i
                elif hw[i] == hw[best]:
                    # the same first 8 bytes: the rest decides
                    la = cur_len[i]
                    lb = cur_len[best]
                    less = la < lb
                    for q in range(8, la if la < lb else lb):
                        if cur[i, q] != cur[best, q]:
                            less = cur[i, q] < cur[best, q]
                            break
                    if less:
                        best = i
        if best < 0:
            break
        if has_hi:
            la = cur_len[best]
            lb = hi.shape[0]
            ge = la >= lb
            for q in range(la if la < lb else lb):
                if cur[best, q] != hi[q]:
                    ge = cur[best, q] > hi[q]
                    break
            if ge:
                break
        nsame = 0
        for i in range(k):
            sm = False
            if live[i]:
                if i == best:
                    sm = True
                elif hw[i] == hw[best] and cur_len[i] == cur_len[best]:
                    sm = True
                    for q in range(8, cur_len[i]):
                        if cur[i, q] != cur[best, q]:
                            sm = False
                            break
            same[i] = sm
            if sm:
                nsame += 1
        copy = nsame == 1 and shifts[best] >= 0
        concat = False
        if not copy and n_shifted:
            # every source holding the token has its rows shifted (parts of consecutive
            # keys): the postings are concatenated without decoding every row
            concat = True
            ns = 0
            for u in range(k):
                i = sorder[u]
                if same[i]:
                    if shifts[i] < 0:
                        concat = False
                        break
                    sel[ns] = i
                    ns += 1
        if concat:
            c, kind, m = _concat_plan(pbf, ppos, ck, cnt, shifts, sel, ns, f0, q0, lastrow)
        elif copy:
            # one source, rows shifted: its posting's bytes after the first row stay
            src_p = ppos[best]
            r0_old, src_q = _vget(pbf, src_p)
            r0_new = r0_old + shifts[best]
            tail = (ck[best] >> 1) - (src_q - src_p)
            c = _vlen(r0_new) + tail
            kind = ck[best] & 1
            m = cnt[best]
        else:
            # rows of every source holding this token, mapped, in source order
            m = 0
            for i in range(k):
                if same[i]:
                    s0 = m
                    m = _decode_posting_into(pbf, ppos[i], ck[i] >> 1, ck[i] & 1, cnt[i], rows, m)
                    rb = rmb[i]
                    for q in range(s0, m):
                        rows[q] = rmf[rb + rows[q]]
            ok = True
            for q in range(1, m):
                if rows[q] <= rows[q - 1]:
                    ok = False
                    break
            if not ok:
                seg = np.sort(rows[:m])
                mm = 0
                for q in range(m):
                    if q == 0 or seg[q] != seg[q - 1]:
                        rows[mm] = seg[q]
                        mm += 1
                m = mm
            c, kind = _posting_cost(rows, 0, m)
        # the token, front-coded against the previous token of its block
        ln = cur_len[best]
        if t % block_size == 0:
            if nb + 1 >= tbo.shape[0]:
                tbo = _grow(tbo, nb + 2)
                pbo = _grow(pbo, nb + 2)
                first_at = _grow(first_at, nb + 2)
                first_len = _grow(first_len, nb + 2)
            tbo[nb] = w
            pbo[nb] = wp
            pre = 0
        else:
            pre = 0
            lim = ln if ln < prev_len else prev_len
            while pre < lim and prev[pre] == cur[best, pre]:
                pre += 1
        # (the test first: a call that returns the array updates its reference count)
        if w + 40 + ln > tout.shape[0]:
            tout = _grow(tout, w + 40 + ln)
        if wp + c + 16 > pout.shape[0]:
            pout = _grow(pout, wp + c + 16)
        w = _vput(tout, w, pre)
        w = _vput(tout, w, ln - pre)
        if t % block_size == 0:
            first_at[nb] = w
            first_len[nb] = ln
            nb += 1
        for q in range(pre, ln):
            tout[w] = cur[best, q]
            w += 1
        w = _vput(tout, w, m)
        w = _vput(tout, w, c * 2 + kind)
        if concat:
            wp = _concat_write(pbf, ppos, ck, sel, ns, f0, q0, lastrow, kind, pout, wp)
        elif copy:
            wp = _vput(pout, wp, r0_new)
            for q in range(tail):
                pout[wp + q] = pbf[src_q + q]
            wp += tail
        elif kind == 0:
            wp = _vput(pout, wp, rows[0])
            for q in range(1, m):
                wp = _vput(pout, wp, rows[q] - rows[q - 1])
        else:
            wp = _vput(pout, wp, rows[0])
            r0 = rows[0]
            nbytes = (rows[m - 1] - r0 + 1 + 7) // 8
            for q in range(nbytes):
                pout[wp + q] = 0
            for q in range(m):
                d = rows[q] - r0
                pout[wp + (d >> 3)] |= np.uint8(1 << (d & 7))
            wp += nbytes
        for q in range(ln):
            prev[q] = cur[best, q]
        prev_len = ln
        t += 1
        # _advance of each source that held the token
        for i in range(k):
            if not same[i]:
                continue
            p = tp[i]
            b = blk[i]
            ob = tbob[i]
            if p >= tbb[i] + tbof[ob + b + 1]:
                b += 1
                blk[i] = b
                if b >= nbk[i]:
                    live[i] = False
                    continue
                p = tbb[i] + tbof[ob + b]
                pp[i] = pbb[i] + pbof[ob + b]
            pre, p = _vget(tbf, p)
            sl, p = _vget(tbf, p)
            for q in range(sl):
                cur[i, pre + q] = tbf[p + q]
            p += sl
            c_, p = _vget(tbf, p)
            k_, p = _vget(tbf, p)
            ln = pre + sl
            cur_len[i] = ln
            cnt[i] = c_
            ck[i] = k_
            ppos[i] = pp[i]
            pp[i] += k_ >> 1
            tp[i] = p
            hwi = np.uint64(0)
            for q in range(8):
                hwi = hwi << np.uint64(8)
                if q < ln:
                    hwi |= np.uint64(cur[i, q])
            hw[i] = hwi
    tbo[nb] = w
    pbo[nb] = wp
    # views, not copies: the blobs are most of the buffers (a copy page-faults them again)
    return tout[:w], tbo[:nb + 1], pout[:wp], pbo[:nb + 1], first_at[:nb], first_len[:nb], t, prev[:prev_len].copy()
