"""The Split Block Bloom Filter (public name; the code lives in skipidx.core.sbbf)."""
from skipidx.core.sbbf import (  # noqa: F401
    SALT,
    BYTES_PER_BLOCK,
    WORDS_PER_BLOCK,
    MIN_BYTES,
    MAX_BYTES,
    optimal_num_bytes,
    exact_num_bytes,
    SBBF,
    SBBFBank,
    sizing_table,
)

__all__ = ['SALT', 'BYTES_PER_BLOCK', 'WORDS_PER_BLOCK', 'MIN_BYTES', 'MAX_BYTES', 'optimal_num_bytes', 'exact_num_bytes', 'SBBF', 'SBBFBank', 'sizing_table']
