"""Byte-span kernels shared by the tokenizers and the index builds."""
from __future__ import annotations

import numpy as np
from skipidx.core.lazy import njit

__all__ = ["gather_spans"]


@njit(cache=True, nogil=True)
def gather_spans(data, starts, ends):
    """Copy the byte ranges into one contiguous buffer: (offsets int64[n+1], data uint8)."""
    n = starts.shape[0]
    offs = np.empty(n + 1, dtype=np.int64)
    offs[0] = 0
    for k in range(n):
        offs[k + 1] = offs[k] + (ends[k] - starts[k])
    out = np.empty(offs[n], dtype=np.uint8)
    j = 0
    for k in range(n):
        for p in range(starts[k], ends[k]):  # tokens are short: a byte loop beats slicing
            out[j] = data[p]
            j += 1
    return offs, out
