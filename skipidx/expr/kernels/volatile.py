"""Functions that give a new value on every row (ClickHouse's non-deterministic
functions: ``generateUUIDv4``, ``rand``, ``rand64``, ``randCanonical``).

The binder never folds them; the evaluator calls these kernels with the number
of rows (their optional argument only keeps ClickHouse's common subexpression
merging apart, its value is ignored).
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from skipidx.core.types import uuid_array


def _random_bytes(n: int) -> np.ndarray:
    return np.frombuffer(os.urandom(n), dtype=np.uint8).copy() if n else np.zeros(0, np.uint8)


def generate_uuid_v4(n: int) -> pa.Array:
    """n random UUIDs with the RFC 9562 version 4 and variant bits set."""
    b = _random_bytes(16 * n).reshape(n, 16)
    b[:, 6] = (b[:, 6] & 0x0F) | 0x40     # version 4
    b[:, 8] = (b[:, 8] & 0x3F) | 0x80     # variant 10xx
    storage = pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(b.tobytes())])
    return uuid_array(storage)


def rand32(n: int) -> pa.Array:
    return pa.array(_random_bytes(4 * n).view(np.uint32), pa.uint32())


def rand64(n: int) -> pa.Array:
    return pa.array(_random_bytes(8 * n).view(np.uint64), pa.uint64())


def rand_canonical(n: int) -> pa.Array:
    """Uniform in [0, 1): the top 53 bits of a random 64-bit word."""
    return pa.array((_random_bytes(8 * n).view(np.uint64) >> np.uint64(11)) * (1.0 / (1 << 53)), pa.float64())
