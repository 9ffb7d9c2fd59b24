"""Parquet-compatible value hashing (public name; the code lives in skipidx.core.hashing)."""
from skipidx.core.hashing import (  # noqa: F401
    ArrayLike,
    xxh64_array_with_validity,
    xxh64_array,
    parquet_xxh64,
    parquet_xxh64_with_validity,
    xxh64_bytes,
    physical_type,
    plain_encode,
    cityhash64,
)

__all__ = ['ArrayLike', 'xxh64_array_with_validity', 'xxh64_array', 'parquet_xxh64', 'parquet_xxh64_with_validity', 'xxh64_bytes', 'physical_type', 'plain_encode', 'cityhash64']
