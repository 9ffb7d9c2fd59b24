"""SBBF: the Parquet spec to the bit, sizing, FPP, the batched bank, and bad input."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skipidx.core.sizing as sbbf_mod
from skipidx.core.errors import SkipidxError
from skipidx.core.sbbf import MAX_BYTES, SALT, SBBF, SBBFBank, optimal_num_bytes, sizing_table

SPEC_SALT = [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31]


def ref_insert(words: list[int], num_blocks: int, h: int) -> None:
    """The spec's pseudo-code, one hash at a time in plain Python ints (the oracle)."""
    block = ((h >> 32) * num_blocks) >> 32
    key = h & 0xFFFFFFFF
    for i in range(8):
        words[block * 8 + i] |= 1 << (((key * SPEC_SALT[i]) & 0xFFFFFFFF) >> 27)


def ref_check(words: list[int], num_blocks: int, h: int) -> bool:
    block = ((h >> 32) * num_blocks) >> 32
    key = h & 0xFFFFFFFF
    return all(words[block * 8 + i] >> (((key * SPEC_SALT[i]) & 0xFFFFFFFF) >> 27) & 1 for i in range(8))


def rand_hashes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)


# ------------------------------------------------------------ known answers

def test_salt_table_is_the_specs():
    assert SALT.dtype == np.uint32
    assert [int(s) for s in SALT] == SPEC_SALT


@pytest.mark.parametrize(
    "num_bytes, h, block, bits",
    [
        # key = 1: bit_i = SALT[i] >> 27, the top five bits of each salt.
        (128, (0x80000000 << 32) | 1, 2, [8, 8, 17, 20, 14, 5, 19, 11]),
        # key = 2**32 - 1: (-SALT[i] mod 2**32) >> 27; block = (0xFFFFFFFF * 4) >> 32 = 3.
        (128, 0xFFFFFFFF_FFFFFFFF, 3, [23, 23, 14, 11, 17, 26, 12, 20]),
        # top half 0x12345678 of 7 blocks -> (0x12345678 * 7) >> 32 = 0.
        (224, (0x12345678 << 32) | 0x12345678, 0, [12, 29, 23, 2, 15, 10, 4, 2]),
        # hash 0 -> block 0, key 0 -> bit 0 of every word.
        (32, 0, 0, [0] * 8),
    ],
    ids=["key1-block2of4", "all-ones-block3of4", "7-blocks", "zero"],
)
def test_hand_checked_block_and_bits(num_bytes, h, block, bits):
    f = SBBF(num_bytes)
    f.insert_hash(h)
    expected = bytearray(num_bytes)
    for i, b in enumerate(bits):
        word = int.from_bytes(expected[block * 32 + 4 * i: block * 32 + 4 * i + 4], "little") | (1 << b)
        expected[block * 32 + 4 * i: block * 32 + 4 * i + 4] = word.to_bytes(4, "little")
    assert f.to_bytes() == bytes(expected)
    assert f.check_hash(h)


@pytest.mark.parametrize("num_bytes", [32, 96, 1024, 4000 * 32, 1 << 16, 1 << 21, (1 << 20) + 96], ids=lambda n: f"{n}B")
def test_kernels_equal_the_spec_pseudocode(num_bytes):
    h = rand_hashes(3000, num_bytes)
    f = SBBF(num_bytes)
    f.insert_hashes(h)
    words = [0] * (num_bytes // 4)
    for x in h.tolist():
        ref_insert(words, num_bytes // 32, x)
    assert f.words.tolist() == words
    probes = rand_hashes(3000, num_bytes + 1)
    got = f.check_hashes(probes)
    assert got.tolist() == [ref_check(words, num_bytes // 32, x) for x in probes.tolist()]


def test_same_block_many_hashes_in_one_call():
    # 32 bytes = one block: every hash lands in it and all their bits must be set.
    h = rand_hashes(50, 7)
    f = SBBF(32)
    f.insert_hashes(h)
    assert f.check_hashes(h).all()
    words = [0] * 8
    for x in h.tolist():
        ref_insert(words, 1, x)
    assert f.words.tolist() == words


def test_bytes_round_trip_and_layout_is_little_endian():
    f = SBBF(64)
    f.words[0] = 0x04030201
    b = f.to_bytes()
    assert b[:4] == b"\x01\x02\x03\x04" and len(b) == 64
    g = SBBF.from_bytes(b)
    assert g == f and g.num_bytes == 64 and g.num_blocks == 2
    assert SBBF.from_bytes(bytearray(b)) == f
    assert SBBF.from_bytes(np.frombuffer(b, dtype=np.uint8)) == f
    assert SBBF.from_bytes(memoryview(b)[0:64]) == f


def test_check_hashes_keeps_shape():
    f = SBBF(1024)
    h = rand_hashes(12, 3).reshape(3, 4)
    f.insert_hashes(h[0])
    out = f.check_hashes(h)
    assert out.shape == (3, 4) and out.dtype == np.bool_ and out[0].all()


# ----------------------------------------------------------------- sizing

@pytest.mark.parametrize(
    "ndv, fpp, expected",
    [
        (1, 0.5, 32),            # below the minimum -> one block
        (10, 0.1, 32),
        (1000, 0.01, 2048),      # m = 9585 bits -> 16384 bits
        (10_000, 0.05, 16384),   # m = 68749 bits -> 131072 bits
        (1_048_576, 0.05, 1 << 20),  # pyarrow's defaults
        (10**9, 0.001, MAX_BYTES),   # clamped at 128 MiB
    ],
    ids=["tiny", "10@0.1", "1000@0.01", "10k@0.05", "pyarrow-default", "clamp"],
)
def test_for_ndv_arrow_rule(ndv, fpp, expected):
    m = -8 * ndv / math.log(1 - fpp ** (1 / 8))
    assert SBBF.for_ndv(ndv, fpp).num_bytes == expected, f"m = {m:.1f} bits"


def test_parquet_java_rule_differs_only_near_powers_of_two():
    differ = 0
    for ndv in range(1, 60_000, 13):
        for fpp in (0.1, 0.05, 0.01, 0.001):
            a = optimal_num_bytes(ndv, fpp, "parquet")
            b = optimal_num_bytes(ndv, fpp, "parquet-java")
            if a != b:
                differ += 1
                m = sbbf_mod._parquet_bits(ndv, fpp)
                p2 = 1 << int(m).bit_length()
                assert min(p2 - m, m - p2 // 2) < 256, (ndv, fpp, m, a, b)
    assert differ > 0  # the rules are really different near the boundaries


@pytest.mark.parametrize("ndv", [1, 100, 5_000, 77_777, 1_000_000])
@pytest.mark.parametrize("fpp", [0.2, 0.01, 0.0005])
def test_lance_sizing_is_smallest_power_of_two_meeting_target(ndv, fpp):
    nb = optimal_num_bytes(ndv, fpp, "lance")
    assert nb & (nb - 1) == 0
    assert SBBF.fpp_estimate(nb, ndv) <= fpp
    if nb > 32:
        assert SBBF.fpp_estimate(nb // 2, ndv) > fpp


def test_max_bytes_caps_the_size():
    assert SBBF.for_ndv(10**7, 0.01, max_bytes=1 << 20).num_bytes == 1 << 20
    assert SBBF.for_ndv(10**7, 0.01, sizing="parquet-java", max_bytes=1 << 20).num_bytes == 1 << 20


def test_docstring_sizing_table_is_current():
    assert sizing_table() in sbbf_mod.__doc__


# -------------------------------------------------------------------- FPP

@pytest.mark.parametrize(
    "bits_per_insert, spec_fpp", [(6.0, 0.10), (10.5, 0.01), (16.9, 0.001)], ids=["10pct", "1pct", "0.1pct"]
)
def test_spec_table_bits_per_insert(bits_per_insert, spec_fpp):
    num_bytes = 1 << 18  # 2 Mi bits, 8192 blocks
    ndv = int(num_bytes * 8 / bits_per_insert)
    f = SBBF(num_bytes)
    f.insert_hashes(rand_hashes(ndv, 1))
    n_probe = 4_000_000
    probes = rand_hashes(n_probe, 2)  # independent of the inserted hashes (a collision is ~2**-40)
    measured = f.check_hashes(probes).mean()
    expected = SBBF.fpp_estimate(num_bytes, ndv)
    sigma = math.sqrt(expected * (1 - expected) / n_probe)
    # The estimate is the spec's figure to within 2 %...
    assert abs(expected - spec_fpp) <= 0.02 * spec_fpp, (expected, spec_fpp)
    # ...and the measurement matches it within 5 binomial sigmas plus 3 % for the
    # variation between filter instances (block loads of one random draw).
    assert abs(measured - expected) <= 5 * sigma + 0.03 * expected, (measured, expected, sigma)


def test_fpp_estimate_edges():
    assert SBBF.fpp_estimate(32, 0) == 0.0
    assert SBBF.fpp_estimate(32, 10_000) > 0.999
    a = [SBBF.fpp_estimate(4096, n) for n in (10, 100, 1000, 10_000)]
    assert a == sorted(a)


def test_no_false_negative_over_a_million_inserts():
    h = rand_hashes(1_000_000, 11)
    for f in (SBBF.for_ndv(1_000_000, 0.01), SBBF(32 * 1024), SBBF(32)):
        f.insert_hashes(h)
        assert f.check_hashes(h).all(), f
    bank = SBBFBank.from_num_bytes(np.array([32, 1024, 32 * 1024, 4 << 20] * 50))
    ids = np.random.default_rng(12).integers(0, len(bank), size=h.shape[0])
    bank.insert(ids, h)
    assert bank.check_pairs(ids, h).all()


def test_fill_ratio():
    f = SBBF(4096)
    assert f.fill_ratio() == 0.0
    f.insert_hashes(rand_hashes(2000, 5))
    bits = np.unpackbits(np.frombuffer(f.to_bytes(), dtype=np.uint8)).sum()
    assert f.fill_ratio() == bits / (4096 * 8)
    sat = SBBF.from_bytes(b"\xff" * 64)
    assert sat.fill_ratio() == 1.0


# ------------------------------------------------------------------ merge

def test_merge_is_the_filter_of_the_union():
    a, b = rand_hashes(500, 20), rand_hashes(700, 21)
    fa, fb, fu = SBBF(2048), SBBF(2048), SBBF(2048)
    fa.insert_hashes(a)
    fb.insert_hashes(b)
    fu.insert_hashes(np.concatenate([a, b]))
    assert (fa | fb) == fu
    fa |= fb
    assert fa == fu
    assert fa.merge(SBBF(2048)) is fa


def test_merge_rejects_other_sizes():
    with pytest.raises(SkipidxError, match="different sizes"):
        SBBF(64).merge(SBBF(32))
    with pytest.raises(SkipidxError):
        SBBF(64).merge(b"\x00" * 64)


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize(
    "num_bytes",
    [0, 31, 33, 48, -32, MAX_BYTES + 32, 2 * MAX_BYTES, 32.0, True, "32", None],
    ids=["0", "31", "33", "48", "neg", "max+32", "2max", "float", "bool", "str", "none"],
)
def test_bad_sizes(num_bytes):
    with pytest.raises(SkipidxError):
        SBBF(num_bytes)


@pytest.mark.parametrize(
    "ndv, fpp",
    [(0, 0.01), (-5, 0.01), (10, 0.0), (10, 1.0), (10, -0.1), (10, 1.5), (10, float("nan")),
     (10, "0.1"), (1.5, 0.1), (True, 0.1), (10, None)],
    ids=["ndv0", "ndv-neg", "fpp0", "fpp1", "fpp-neg", "fpp>1", "fpp-nan", "fpp-str", "ndv-float", "ndv-bool",
         "fpp-none"],
)
def test_bad_ndv_fpp(ndv, fpp):
    for sizing in ("parquet", "parquet-java", "lance"):
        with pytest.raises(SkipidxError):
            SBBF.for_ndv(ndv, fpp, sizing=sizing)


def test_unknown_sizing():
    with pytest.raises(SkipidxError, match="sizing"):
        SBBF.for_ndv(10, 0.1, sizing="guava")


@pytest.mark.parametrize(
    "h",
    [np.arange(4, dtype=np.int64), np.arange(4, dtype=np.float64), np.arange(4, dtype=np.uint32), [1, 2, 3], 5],
    ids=["int64", "float64", "uint32", "list", "int"],
)
def test_wrongly_typed_hashes(h):
    f = SBBF(64)
    with pytest.raises(SkipidxError, match="uint64"):
        f.insert_hashes(h)
    with pytest.raises(SkipidxError, match="uint64"):
        f.check_hashes(h)
    bank = SBBFBank.fixed(2, 64)
    with pytest.raises(SkipidxError, match="uint64"):
        bank.check_all(h)


@pytest.mark.parametrize("h", [-1, 2**64, 1.0, "1"], ids=["neg", "2**64", "float", "str"])
def test_bad_single_hash(h):
    with pytest.raises(SkipidxError):
        SBBF(32).insert_hash(h)


@pytest.mark.parametrize(
    "b", [b"", b"\x00" * 31, b"\x00" * 33, b"\x00" * 48, np.zeros(8, dtype=np.uint32), "x" * 32, None],
    ids=["empty", "31", "33", "48", "uint32-array", "str", "none"],
)
def test_from_bytes_rejects_bad_bitsets(b):
    with pytest.raises(SkipidxError):
        SBBF.from_bytes(b)


# ------------------------------------------------------------------- bank

def test_bank_layout_and_insert_equal_separate_filters():
    sizes = np.array([32, 64, 1024, 96, 32 * 1024])
    bank = SBBFBank.from_num_bytes(sizes)
    assert len(bank) == 5 and bank.nbytes == sizes.sum()
    assert bank.block_offset.tolist() == [0, 1, 3, 35, 38] and bank.num_blocks.tolist() == [1, 2, 32, 3, 1024]
    h = rand_hashes(20_000, 30)
    ids = np.random.default_rng(31).integers(0, 5, size=h.shape[0])
    bank.insert(ids, h)
    for i, nb in enumerate(sizes):
        f = SBBF(int(nb))
        f.insert_hashes(h[ids == i])
        assert bank.filter(i) == f, i
    assert np.allclose(bank.fill_ratios(), [bank.filter(i).fill_ratio() for i in range(5)])


def test_bank_sparse_batched_path_equals_separate_filters():
    # 64 x 32 KiB = 2 MiB of filters and fewer hashes than blocks: the kernels' batched path.
    bank = SBBFBank.fixed(64, 32 * 1024)
    h = rand_hashes(20_000, 33)
    ids = np.random.default_rng(34).integers(0, 64, size=h.shape[0])
    bank.insert(ids, h)
    for i in range(64):
        f = SBBF(32 * 1024)
        f.insert_hashes(h[ids == i])
        assert bank.filter(i) == f, i
    probe = np.concatenate([h, rand_hashes(20_000, 35)])
    pid = np.concatenate([ids, ids])
    assert bank.check_pairs(pid, probe).tolist() == [
        bank.filter(int(i)).check_hash(int(x)) for i, x in zip(pid, probe)]


def test_bank_check_all_any_matrix_against_single_filters():
    bank = SBBFBank.fixed(300, 256)
    h = rand_hashes(3000, 40)
    ids = np.random.default_rng(41).integers(0, 300, size=h.shape[0])
    bank.insert(ids, h)
    filters = [bank.filter(i) for i in range(300)]
    probe = np.concatenate([h[:3], rand_hashes(3, 42)])
    matrix = bank.check_matrix(probe)
    assert matrix.shape == (300, 6)
    assert matrix.tolist() == [f.check_hashes(probe).tolist() for f in filters]
    assert bank.check_all(probe[:1]).tolist() == matrix[:, 0].tolist()
    assert bank.check_all(probe[:2]).tolist() == (matrix[:, 0] & matrix[:, 1]).tolist()
    assert bank.check_all(np.empty(0, dtype=np.uint64)).all()
    assert bank.check_all(probe[:1])[ids[0]]  # the granule that holds h[0] is kept
    groups = [probe[0:2], probe[3:5]]
    expect = (matrix[:, 0] & matrix[:, 1]) | (matrix[:, 3] & matrix[:, 4])
    assert bank.check_any_of(groups).tolist() == expect.tolist()
    assert not bank.check_any_of([]).any()
    assert bank.check_any_of([np.empty(0, dtype=np.uint64)]).all()


def test_bank_as_2d_is_a_view():
    bank = SBBFBank.fixed(4, 64)
    two = bank.as_2d()
    assert two.shape == (4, 16) and two.dtype == np.uint32
    two[2, 0] = 1
    assert bank.filter(2).words[0] == 1
    with pytest.raises(SkipidxError, match="one size"):
        SBBFBank.from_num_bytes([32, 64]).as_2d()


def test_bank_arrow_round_trip():
    bank = SBBFBank.from_num_bytes([32, 1024, 64])
    h = rand_hashes(500, 50)
    bank.insert(np.random.default_rng(51).integers(0, 3, size=500), h)
    arr = bank.to_arrow()
    assert arr.type == pa.binary() and len(arr) == 3
    assert [len(x) for x in arr.to_pylist()] == [32, 1024, 64]
    assert arr[1].as_py() == bank.filter(1).to_bytes()
    back = SBBFBank.from_arrow(arr)
    assert np.array_equal(back.words, bank.words) and np.array_equal(back.num_blocks, bank.num_blocks)
    # sliced, large_binary, chunked and fixed_size_binary inputs
    assert SBBFBank.from_arrow(arr.slice(1, 2)).filter(0) == bank.filter(1)
    assert SBBFBank.from_arrow(arr.cast(pa.large_binary())).filter(2) == bank.filter(2)
    assert SBBFBank.from_arrow(pa.chunked_array([arr.slice(0, 1), arr.slice(1)])).filter(1) == bank.filter(1)
    fixed = pa.array([bank.filter(0).to_bytes()] * 2, pa.binary(32))
    assert SBBFBank.from_arrow(fixed).filter(1) == bank.filter(0)
    assert len(SBBFBank.from_arrow(pa.array([], pa.binary()))) == 0


def _ipc_round_trip(arr: pa.Array, compression: str | None) -> tuple[pa.Buffer, pa.Array]:
    """(the file's bytes in a buffer of their own, `arr` read back from it), as an index load reads it."""
    sink = pa.BufferOutputStream()
    opts = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_file(sink, pa.schema([("f", arr.type)]), options=opts) as w:
        w.write_batch(pa.record_batch([arr], names=["f"]))
    buf = pa.allocate_buffer(len(sink.getvalue()))
    np.frombuffer(buf, np.uint8)[:] = np.frombuffer(sink.getvalue(), np.uint8)
    return buf, pa.ipc.open_file(pa.BufferReader(buf)).get_batch(0).column(0)


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
def test_bank_from_arrow_without_copy_views_the_read_buffer(compression):
    """copy=False: the same bank, its words a writable view of the buffer the file was read
    (or decompressed) into; a copy where the memory is not the bank's to write to."""
    bank = SBBFBank.from_num_bytes([32, 1024, 64, 256])
    bank.insert(np.random.default_rng(52).integers(0, 4, size=400), rand_hashes(400, 53))
    buf, arr = _ipc_round_trip(bank.to_arrow(), compression)
    for a in (arr, arr.slice(1, 3), arr.cast(pa.large_binary()), pa.chunked_array([arr])):
        want = SBBFBank.from_arrow(a)
        got = SBBFBank.from_arrow(a, copy=False)
        assert np.array_equal(got.words, want.words) and got.words.dtype == np.uint32
        assert np.array_equal(got.block_offset, want.block_offset)
        assert np.array_equal(got.num_blocks, want.num_blocks)
        probe = rand_hashes(50, 54)
        assert got.words.flags.writeable and np.array_equal(got.check_all(probe), want.check_all(probe))
    view = SBBFBank.from_arrow(arr, copy=False)
    if compression is None:
        assert np.shares_memory(view.words, np.frombuffer(buf, np.uint8))
    assert not np.shares_memory(SBBFBank.from_arrow(arr).words, view.words)
    # memory that is not writable (a Python bytes object) is copied, never aliased read-only
    raw = bank.filter(0).to_bytes() + bank.filter(1).to_bytes()
    data = pa.py_buffer(raw)
    assert not data.is_mutable
    frozen = pa.Array.from_buffers(pa.binary(), 2, [None, pa.py_buffer(np.array([0, 32, 1056], np.int32)), data])
    got = SBBFBank.from_arrow(frozen, copy=False)
    assert got.words.flags.writeable and got.filter(1) == bank.filter(1)
    assert not np.shares_memory(got.words, np.frombuffer(data, np.uint8))
    # sizes are validated on both paths
    with pytest.raises(SkipidxError):
        SBBFBank.from_arrow(_ipc_round_trip(pa.array([b"\x00" * 33]), compression)[1], copy=False)
    assert len(SBBFBank.from_arrow(pa.array([], pa.binary()), copy=False)) == 0


@pytest.mark.parametrize(
    "arr",
    [pa.array([b"\x00" * 32, None]), pa.array([b"\x00" * 33]), pa.array([b""]), pa.array(["x" * 32]),
     pa.array([1, 2])],
    ids=["null", "33B", "empty", "string", "int"],
)
def test_bank_from_arrow_rejects(arr):
    with pytest.raises(SkipidxError):
        SBBFBank.from_arrow(arr)
    with pytest.raises(SkipidxError):
        SBBFBank.from_arrow(arr, copy=False)


def test_bank_from_filters_and_fpp_estimates():
    fs = [SBBF(32), SBBF(2048)]
    fs[1].insert_hashes(rand_hashes(100, 60))
    bank = SBBFBank.from_filters(fs)
    assert bank.filter(1) == fs[1] and bank.filter(-1) == fs[1]
    est = bank.fpp_estimates(np.array([0, 100]))
    assert est[0] == 0.0 and est[1] == pytest.approx(SBBF.fpp_estimate(2048, 100))


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.insert(np.array([0, 5]), rand_hashes(2, 0)),
        lambda b: b.insert(np.array([-1]), rand_hashes(1, 0)),
        lambda b: b.insert(np.array([0]), rand_hashes(2, 0)),
        lambda b: b.insert(np.array([0.0]), rand_hashes(1, 0)),
        lambda b: b.insert([0], rand_hashes(1, 0)),
        lambda b: b.check_pairs(np.array([3]), rand_hashes(1, 0)),
        lambda b: b.filter(3),
        lambda b: b.filter("0"),
        lambda b: b.fpp_estimates([1.0]),
        lambda b: b.fpp_estimates(np.array([1.0, -1.0, 1.0])),
        lambda b: b.check_any_of([np.array([1], dtype=np.int64)]),
        lambda b: b.fpp_estimates(["a", "b", "c"]),
    ],
    ids=["id-too-big", "id-negative", "length-mismatch", "float-ids", "list-ids", "pairs-range", "filter-range",
         "filter-str", "ndv-length", "ndv-negative", "group-dtype", "ndv-strings"],
)
def test_bank_rejects_bad_calls(call):
    with pytest.raises(SkipidxError):
        call(SBBFBank.fixed(3, 64))


@pytest.mark.parametrize(
    "sizes", [[32, 31], [0], [32, MAX_BYTES + 32], np.array([[32]]), np.array([32.0])],
    ids=["31", "0", "too-big", "2-D", "float"],
)
def test_bank_rejects_bad_sizes(sizes):
    with pytest.raises(SkipidxError):
        SBBFBank.from_num_bytes(sizes)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40).map(lambda b: 32 * b), min_size=1, max_size=8),
    data=st.data(),
)
def test_bank_property_equals_separate_filters(sizes, data):
    bank = SBBFBank.from_num_bytes(sizes)
    n = data.draw(st.integers(0, 300))
    h = np.array(data.draw(st.lists(st.integers(0, 2**64 - 1), min_size=n, max_size=n)), dtype=np.uint64)
    ids = np.array(data.draw(st.lists(st.integers(0, len(sizes) - 1), min_size=n, max_size=n)), dtype=np.int64)
    bank.insert(ids, h)
    for i, nb in enumerate(sizes):
        f = SBBF(nb)
        f.insert_hashes(h[ids == i])
        assert bank.filter(i) == f
    assert bank.check_pairs(ids, h).all()


# ------------------------------------------------------------------- fold

@pytest.mark.parametrize("big, small", [(1024, 512), (1024, 32), (96, 32), (32 * 12, 32 * 4), (4096, 4096)],
                         ids=["half", "to-one-block", "3-to-1", "12-to-4", "same"])
def test_fold_equals_the_filter_built_at_the_smaller_size(big, small):
    h = rand_hashes(5000, big + small)
    f, g = SBBF(big), SBBF(small)
    f.insert_hashes(h)
    g.insert_hashes(h)
    assert f.fold(small) == g
    assert f.num_bytes == big  # fold returns a new filter


@pytest.mark.parametrize("small", [64 * 3, 2048, 31], ids=["not-divisor", "bigger", "bad-size"])
def test_fold_rejects(small):
    with pytest.raises(SkipidxError):
        SBBF(1024).fold(small)


def test_fold_to_target_fpp():
    h = rand_hashes(1000, 70)
    big = SBBF.for_ndv(1_000_000, 0.01)
    big.insert_hashes(h)
    folded = big.fold_to_target_fpp(0.01)
    # the estimate: fill f -> 1 - (1 - f)**2 per fold, FPP = fill**8; the result meets it, one more fold would not
    assert folded.fill_ratio() ** 8 <= 0.01 * 1.05
    assert (1 - (1 - folded.fill_ratio()) ** 2) ** 8 > 0.01 * 0.95
    direct = SBBF(folded.num_bytes)
    direct.insert_hashes(h)
    assert folded == direct and folded.check_hashes(h).all()
    assert big.folds_for_target_fpp(0.01) == int(math.log2(big.num_bytes // folded.num_bytes))
    assert SBBF(4096).fold_to_target_fpp(0.01) == SBBF(32)  # empty -> one empty block
    sat = SBBF.from_bytes(b"\xff" * 1024)
    assert sat.fold_to_target_fpp(0.5) == sat  # over the target already: unchanged
    odd = SBBF(96)  # 3 blocks: no factor of two to fold
    odd.insert_hash(1)
    assert odd.fold_to_target_fpp(0.5) == odd
    for bad in (0.0, 1.0, "x"):
        with pytest.raises(SkipidxError):
            big.fold_to_target_fpp(bad)
