"""Bloom filters inside Parquet files (public name; the code lives in skipidx.core.parquet_bloom)."""
from skipidx.core.parquet_bloom import (  # noqa: F401
    BloomFilterHeader,
    serialize_bloom_filter,
    parse_bloom_filter,
    read_bloom_filter,
    read_bloom_filters,
    bloom_filter_options,
)

__all__ = ['BloomFilterHeader', 'serialize_bloom_filter', 'parse_bloom_filter', 'read_bloom_filter', 'read_bloom_filters', 'bloom_filter_options']
