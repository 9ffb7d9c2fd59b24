"""Split Block Bloom Filter bit twiddling as numba functions (Parquet spec).

A filter is a uint32 array of ``8 * num_blocks`` words (block-major, the
little-endian on-disk layout viewed as uint32). For hash h:

    block = ((h >> 32) * num_blocks) >> 32
    key   = lo32(h)
    bit i = (key * SALT[i] mod 2**32) >> 27      (i = 0..7, one bit per word)

A *bank* is many filters in one flat uint32 array: filter f occupies blocks
``block_offset[f] .. block_offset[f] + num_blocks[f]``; that is the batched
layout the store and the planner use (one numpy call over all granules).
"""
from __future__ import annotations

import numpy as np
from numba import njit

SALT = np.array(
    [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
     0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31],
    dtype=np.uint32,
)


@njit(inline="always", cache=True)
def block_index(h, num_blocks):
    return np.int64(((h >> np.uint64(32)) * np.uint64(num_blocks)) >> np.uint64(32))


@njit(inline="always", cache=True)
def insert_one(words, first_block, num_blocks, h, salt):
    """Set h's 8 bits in the filter whose blocks start at `first_block` of `words`."""
    base = (first_block + block_index(h, num_blocks)) * 8
    key = np.uint32(h & np.uint64(0xFFFFFFFF))
    for i in range(8):
        bit = np.uint32(key * salt[i]) >> np.uint32(27)
        words[base + i] |= np.uint32(1) << bit


@njit(inline="always", cache=True)
def check_one(words, first_block, num_blocks, h, salt):
    base = (first_block + block_index(h, num_blocks)) * 8
    key = np.uint32(h & np.uint64(0xFFFFFFFF))
    for i in range(8):
        bit = np.uint32(key * salt[i]) >> np.uint32(27)
        if (words[base + i] & (np.uint32(1) << bit)) == 0:
            return False
    return True


@njit(cache=True)
def insert_hashes(words, num_blocks, hashes, salt):
    for j in range(hashes.shape[0]):
        insert_one(words, 0, num_blocks, hashes[j], salt)


@njit(cache=True)
def check_hashes(words, num_blocks, hashes, salt):
    out = np.empty(hashes.shape[0], dtype=np.bool_)
    for j in range(hashes.shape[0]):
        out[j] = check_one(words, 0, num_blocks, hashes[j], salt)
    return out


@njit(cache=True)
def bank_insert(words, block_offset, num_blocks, filter_ids, hashes, salt):
    """Insert hashes[j] into filter filter_ids[j] of a bank."""
    for j in range(hashes.shape[0]):
        f = filter_ids[j]
        insert_one(words, block_offset[f], num_blocks[f], hashes[j], salt)


@njit(cache=True)
def bank_check_all(words, block_offset, num_blocks, hashes, salt):
    """out[f] = every hash in `hashes` may be in filter f (AND over hashes)."""
    nf = block_offset.shape[0]
    out = np.ones(nf, dtype=np.bool_)
    for f in range(nf):
        for j in range(hashes.shape[0]):
            if not check_one(words, block_offset[f], num_blocks[f], hashes[j], salt):
                out[f] = False
                break
    return out
