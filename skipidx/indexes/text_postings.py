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
    base = 0
    while q < end:
        byte = blob[q]
        if byte:
            for bit in range(8):
                if (byte >> bit) & 1:
                    v = r0 + base + bit
                    if v != r0:
                        out[k] = v
                        k += 1
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
        pre, p = _vget(tok_blob, p)
        sl, p = _vget(tok_blob, p)
        for q in range(sl):
            prev[pre + q] = tok_blob[p + q]
        p += sl
        plen = pre + sl
        cnt, p = _vget(tok_blob, p)
        ck, p = _vget(tok_blob, p)
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
    """All tokens and postings: (tok_data, tok_offs, post_rows, post_offs)."""
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
    post_rows = np.empty(total_rows, dtype=np.int64)
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
            _decode_posting_into(post_blob, pos, ck >> 1, ck & 1, cnt, post_rows, post_offs[t])
            pos += ck >> 1
            t += 1
    return tok_data, tok_offs, post_rows, post_offs


@njit(cache=True, nogil=True)
def dedup_pairs(ranks, rows):
    """Keep-mask of (rank, row) pairs sorted by rank then row: first of each equal run."""
    n = ranks.shape[0]
    keep = np.ones(n, dtype=np.bool_)
    for i in range(1, n):
        if ranks[i] == ranks[i - 1] and rows[i] == rows[i - 1]:
            keep[i] = False
    return keep


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
def _word(data, p, e):
    """Up to 8 bytes at data[p:e] as a little-endian integer (0 past e)."""
    w = np.uint64(0)
    m = e - p
    if m > 8:
        m = 8
    for q in range(m if m > 0 else 0):
        w |= np.uint64(data[p + q]) << np.uint64(8 * q)
    return w


@njit(cache=True, nogil=True)
def distinct_tokens(data, starts, ends):
    """Token ids by content (exact: hash tables on xxh64, then length, the first 16 bytes
    and -- for longer tokens -- a byte compare): (ids int64 per token, first span of each
    distinct token as (starts, ends)).

    Tokens are first partitioned by the top byte of their hash (sequential writes), then
    each of the 256 partitions gets its own small table, and a probe compares against the
    partition's distinct tokens' hash/length/leading words (kept together, in cache):
    one table over all tokens of a part missed the cache on nearly every probe."""
    n = starts.shape[0]
    hs = np.empty(n, dtype=np.uint64)
    cnt = np.zeros(257, dtype=np.int64)
    for k in range(n):
        h = xxh64_span(data, starts[k], ends[k] - starts[k], np.uint64(0))
        hs[k] = h
        cnt[(h >> np.uint64(56)) + 1] += 1
    for b in range(256):
        cnt[b + 1] += cnt[b]
    pos = cnt[:-1].copy()
    # scatter every token's key into its partition, in partition order (sequential reads later)
    ph = np.empty(n, dtype=np.uint64)
    pw0 = np.empty(n, dtype=np.uint64)
    pw1 = np.empty(n, dtype=np.uint64)
    pln = np.empty(n, dtype=np.int64)
    pk = np.empty(n, dtype=np.int64)
    for k in range(n):
        h = hs[k]
        b = h >> np.uint64(56)
        q = pos[b]
        pos[b] += 1
        s0 = starts[k]
        e0 = ends[k]
        ph[q] = h
        pw0[q] = _word(data, s0, e0)
        pw1[q] = _word(data, s0 + 8, e0)
        pln[q] = e0 - s0
        pk[q] = k
    ids = np.empty(n, dtype=np.int64)
    m = max(n, 1)
    ds = np.empty(m, dtype=np.int64)
    de = np.empty(m, dtype=np.int64)
    dh = np.empty(m, dtype=np.uint64)
    dw0 = np.empty(m, dtype=np.uint64)
    dw1 = np.empty(m, dtype=np.uint64)
    dln = np.empty(m, dtype=np.int64)
    nd = 0
    cap = 1024
    table = np.full(cap, -1, dtype=np.int64)
    for b in range(256):
        table[:] = -1
        used = 0
        for q in range(cnt[b], cnt[b + 1]):
            h = ph[q]
            w0 = pw0[q]
            w1 = pw1[q]
            ln = pln[q]
            mask = cap - 1
            j = np.int64((h >> np.uint64(20)) & np.uint64(mask))
            while True:
                t = table[j]
                if t < 0:
                    k = pk[q]
                    table[j] = nd
                    ds[nd] = starts[k]
                    de[nd] = ends[k]
                    dh[nd] = h
                    dw0[nd] = w0
                    dw1[nd] = w1
                    dln[nd] = ln
                    ids[k] = nd
                    nd += 1
                    used += 1
                    break
                if dh[t] == h and dw0[t] == w0 and dw1[t] == w1 and dln[t] == ln:
                    if ln <= 16:
                        ids[pk[q]] = t
                        break
                    k = pk[q]
                    if _same(data, ds[t], de[t], starts[k], ends[k]):
                        ids[k] = t
                        break
                j = (j + 1) & mask
            if 2 * used > cap:
                # grow this partition's table: reinsert its distinct tokens
                cap <<= 1
                mask = cap - 1
                table = np.full(cap, -1, dtype=np.int64)
                for t in range(nd - used, nd):
                    jj = np.int64((dh[t] >> np.uint64(20)) & np.uint64(mask))
                    while table[jj] >= 0:
                        jj = (jj + 1) & mask
                    table[jj] = t
    return ids, ds[:nd], de[:nd]


@njit(cache=True, nogil=True)
def postings_by_rank(rank_of_id, ids, rows, n_ranks, sort_segments):
    """Counting sort of (rank, row) pairs by rank, keeping row order inside a rank and
    dropping a repeated row of a token; ``sort_segments``: rows are not in order, sort and
    dedup each token's rows. Returns (post_offs, post_rows)."""
    n = ids.shape[0]
    cnt = np.zeros(n_ranks + 1, dtype=np.int64)
    last = np.full(n_ranks, -1, dtype=np.int64)
    for k in range(n):
        r = rank_of_id[ids[k]]
        if sort_segments or last[r] != rows[k]:
            cnt[r + 1] += 1
            last[r] = rows[k]
    for r in range(n_ranks):
        cnt[r + 1] += cnt[r]
    pos = cnt[:-1].copy()
    out = np.empty(cnt[n_ranks], dtype=np.int64)
    last[:] = -1
    for k in range(n):
        r = rank_of_id[ids[k]]
        if sort_segments or last[r] != rows[k]:
            out[pos[r]] = rows[k]
            pos[r] += 1
            last[r] = rows[k]
    if not sort_segments:
        return cnt, out
    # each token's rows sorted, duplicates dropped, compacted
    offs = np.zeros(n_ranks + 1, dtype=np.int64)
    w = 0
    for r in range(n_ranks):
        seg = np.sort(out[cnt[r]:cnt[r + 1]])
        prev = -1
        for v in seg:
            if v != prev:
                out[w] = v
                w += 1
                prev = v
        offs[r + 1] = w
    return offs, out[:w]


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


@njit(cache=True, nogil=True)
def merge_sorted_dictionaries(data, offs, bounds):
    """k-way merge of sorted, distinct token lists: tokens bounds[i]..bounds[i+1] of the
    concatenation (data, offs) are source i's. Returns (rank of every token, first token
    index of every rank): equal tokens of several sources share a rank."""
    k = bounds.shape[0] - 1
    n = offs.shape[0] - 1
    rank = np.empty(n, dtype=np.int64)
    first = np.empty(max(n, 1), dtype=np.int64)
    head = bounds[:-1].copy()
    r = 0
    while True:
        best = -1
        for i in range(k):
            if head[i] < bounds[i + 1]:
                if best < 0:
                    best = i
                else:
                    a = head[i]
                    b = head[best]
                    if _cmp(data, offs[a], offs[a + 1], offs[b], offs[b + 1]) < 0:
                        best = i
        if best < 0:
            break
        b = head[best]
        first[r] = b
        for i in range(k):
            a = head[i]
            if a < bounds[i + 1] and _cmp(data, offs[a], offs[a + 1], offs[b], offs[b + 1]) == 0:
                rank[a] = r
                head[i] = a + 1
        r += 1
    return rank, first[:r]
