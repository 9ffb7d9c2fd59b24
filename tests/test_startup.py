"""Start-up: what a new process loads to answer one indexed query, and the pieces that
keep it small (the generated parser tables, the kernel-free small paths).

Timings are in bench/bench_startup.py; here only what must hold on every machine.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import skipidx
from skipidx.core import hashing as H
from skipidx.core._kernels import sbbf as KS
from skipidx.core._kernels import xxh64 as KX
from skipidx.core.arrays import array_of, from_numpy, scalar, to_numpy
from skipidx.core.sbbf import SALT, bank_check_any_of, bank_check_any_of_numpy, bank_check_pairs_numpy

#: Never on the query path: each costs ~0.3-1 s to import, or is an optional extra.
FORBIDDEN = ("pandas", "pyspark", "matplotlib", "chdb", "duckdb", "polars")

DDL = """CREATE TABLE logs (
    ts DateTime, level LowCardinality(String), trace_id String, user_id UInt64,
    status Nullable(UInt16), msg String,
    INDEX msg_tokens msg TYPE tokenbf_v1(4096, 3, 0) GRANULARITY 1,
    INDEX msg_ngrams msg TYPE ngrambf_v1(3, 4096, 2, 0) GRANULARITY 1,
    INDEX msg_auto msg TYPE sbbf('ngram', n = 4, min_n = 3, fpp = 0.01) GRANULARITY 1,
    INDEX trace_bf trace_id TYPE bloom_filter GRANULARITY 1,
    INDEX ts_mm ts TYPE minmax GRANULARITY 1
) ENGINE = MergeTree ORDER BY ts SETTINGS index_granularity = 256"""


@pytest.fixture(scope="module")
def logs_db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("startup") / "db")
    rng = np.random.default_rng(3)
    n = 3000
    words = np.array(["alpha", "beta", "timeout", "gamma", "delta", "kraken"])
    msg = [" ".join(words[rng.integers(0, 5, 6)]) for _ in range(n)]
    msg[1234] = "found the kraken here"
    with skipidx.connect(path) as db:
        db.sql(DDL)
        db.insert("logs", pa.table({
            "ts": pa.array(np.arange(n, dtype=np.int64) + 1_700_000_000, pa.int64()).cast(pa.timestamp("s")),
            "level": pa.array(np.array(["INFO", "WARN"])[rng.integers(0, 2, n)]),
            "trace_id": pa.array([f"{i:032x}" for i in rng.integers(0, 2**62, n)]),
            "user_id": pa.array(rng.integers(1, 1000, n, dtype=np.uint64)),
            "status": pa.array([None if i % 7 == 0 else 200 for i in range(n)], pa.uint16()),
            "msg": pa.array(msg),
        }))
    return path


def _run(code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code) + _REPORT], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


_REPORT = """
import json, sys
mods = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"result": RESULT, "modules": mods}))
"""


def test_import_skipidx_is_light():
    got = _run("import skipidx\nRESULT = None")
    for m in ("lark", "numba", "pyarrow", "numpy", *FORBIDDEN):
        assert m not in got["modules"], m
    # skipidx.sql stays callable and its names load on use
    got = _run("import skipidx\nfrom skipidx.sql import parse\n"
               "RESULT = [skipidx.sql('SELECT 1').fetchall(), type(parse('SELECT 2')[0]).__name__]")
    assert got["result"] == [[[1]], "Select"]


QUERIES = [
    ("SELECT count() FROM logs WHERE hasToken(msg, 'kraken')", [[1]]),
    ("SELECT count() FROM logs WHERE msg LIKE '%kraken%'", [[1]]),
    ("SELECT count() FROM logs WHERE hasToken(msg, 'timeout') AND level = 'WARN'", None),
    ("SELECT ts, msg, status FROM logs WHERE hasToken(msg, 'kraken')", None),
    ("SELECT count() FROM logs WHERE trace_id = 'nope'", [[0]]),
    # an IN list of integers (its membership plan once went through pandas' dtypes)
    ("SELECT count() > 0 FROM logs WHERE user_id IN (5, 17, 900) OR status IN (200, 404)", [[True]]),
]


@pytest.mark.parametrize("query,expected", QUERIES)
def test_query_path_imports_no_heavy_module(logs_db, query, expected):
    got = _run(f"""
        import skipidx
        db = skipidx.connect({logs_db!r})
        rows = [list(r) for r in db.sql({query!r}).fetchall()]
        RESULT = [[str(v) for v in r] for r in rows] if len(rows) > 1 or len(rows[0]) > 1 else rows
    """)
    bad = sorted(set(got["modules"]) & set(FORBIDDEN))
    assert not bad, f"{query}: imported {bad}"
    if expected is not None:
        assert got["result"] == expected


def test_cli_query_imports_no_heavy_module(logs_db):
    got = _run(f"""
        import contextlib, io
        from skipidx.apps.cli import main
        buf = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        with contextlib.redirect_stdout(buf):
            rc = main(["sql", {logs_db!r}, "SELECT count() FROM logs WHERE hasToken(msg, 'kraken')",
                       "--format", "TSV"])
        buf.flush()
        RESULT = [rc, buf.buffer.getvalue().decode().strip()]
    """)
    assert got["result"] == [0, "1"]
    bad = sorted(set(got["modules"]) & set(FORBIDDEN))
    assert not bad, bad


def test_generated_parser_tables_are_current():
    """Regenerating the LALR tables from grammar.lark gives the committed file."""
    out = subprocess.run([sys.executable, "-m", "skipidx.sql._generate", "--check"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


_DESCRIBE_DATACLASSES = """
import dataclasses, importlib, json, re, sys
{block}
import skipidx.core.dataclass_codes as D
D._RECORD = {record}
for m in D.MODULES:
    importlib.import_module(m)

def shape(code):
    return (code.co_name, code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_argcount, code.co_kwonlyargcount, code.co_flags,
            tuple(shape(c) if hasattr(c, "co_code") else c for c in code.co_consts))

attrs = ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare", "kw_only", "metadata")
out, files = {{}}, set()
for mname, mod in sorted(sys.modules.items()):
    if not mname.startswith("skipidx") or mod is None:
        continue
    for name, c in sorted(vars(mod).items()):
        if not (isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == mname):
            continue
        d = [repr([[getattr(f, a) for a in attrs] for f in dataclasses.fields(c)]), repr(c.__dataclass_params__),
             repr(getattr(c, "__match_args__", None)), sorted(vars(c))]
        for meth in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
            f = vars(c).get(meth)
            f = getattr(f, "__wrapped__", f)
            if isinstance(f, type(shape)):
                files.add(f.__code__.co_filename)
                d.append(repr((meth, shape(f.__code__), f.__qualname__, f.__defaults__, f.__kwdefaults__,
                               f.__annotations__)))
        out[mname + "." + name] = [re.sub(" at 0x[0-9a-f]+", "", x) if isinstance(x, str) else x for x in d]
print(json.dumps({{"classes": out, "compiled": D._RECORD, "files": sorted(files)}}))
"""


def _dataclasses_described(block: str, record: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _DESCRIBE_DATACLASSES.format(block=block, record=record)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_dataclasses_equal_those_compiled_at_import():
    """The dataclasses a query imports (skipidx.core.dataclass_codes.MODULES), built with the
    precompiled method codes (_dataclass_codes.py), are what ``dataclasses.dataclass`` builds
    compiling every method (a process that finds no codes): same fields, parameters and
    methods (code, qualname, defaults, annotations); with the codes no method was compiled."""
    from skipidx.core import _dataclass_codes

    assert _dataclass_codes.PYTHON == tuple(sys.version_info[:2]), "regenerate: python -m skipidx.core.dataclass_codes"
    ours = _dataclasses_described("", "[]")   # sources compiled (not found in the codes) are recorded
    plain = _dataclasses_described("sys.modules['skipidx.core._dataclass_codes'] = None", "None")
    assert len(ours["classes"]) >= 80 and ours["classes"] == plain["classes"]
    assert ours["compiled"] == [] and plain["compiled"] is None
    assert _dataclass_codes.__file__ in ours["files"] and _dataclass_codes.__file__ not in plain["files"]
    # and a source missing from the codes is compiled as dataclasses compiles it
    missing = _dataclasses_described("import skipidx.core._dataclass_codes as C; C.CODES.clear()", "[]")
    assert missing["classes"] == plain["classes"] and len(missing["compiled"]) > 300


def test_dataclass_codes_are_current():
    out = subprocess.run([sys.executable, "-m", "skipidx.core.dataclass_codes", "--check"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_precompiled_dataclass_behaves():
    import dataclasses

    from skipidx.sql import ast as A

    assert "exec" not in vars(dataclasses)   # the decorator's stand-in is gone again
    x, y = A.Literal(5, "int", pos=A.Pos(1, 2)), A.Literal(5, "int")
    assert x == y and hash(x) == hash(y) and repr(x) == "Literal(value=5, kind='int')"
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.value = 6
    assert dataclasses.replace(x, value=7) == A.Literal(7, "int")


def test_generated_parser_parses_as_the_grammar_built_one():
    from skipidx.core.errors import ParseError
    from skipidx.sql import parser as P

    built = P._build_from_grammar()
    loaded = P._load_tables()
    assert loaded is not None, "the tables module is missing or stale"
    texts = ["SELECT count() FROM logs WHERE hasToken(msg, 'x') AND (a IN (1, 2) OR b LIKE '%y%')",
             "CREATE TABLE t (a UInt8, s String, INDEX i s TYPE ngrambf_v1(3, 256, 2, 0) GRANULARITY 1) "
             "ENGINE = MergeTree ORDER BY a",
             "SELECT a, count() AS c FROM t GROUP BY a HAVING c > 1 ORDER BY c DESC LIMIT 3",
             "INSERT INTO t VALUES (1, 'a'), (2, 'b')"]
    for text in texts:
        P._local.ctx = P._Ctx()
        a = built.parse(text, start="start")
        P._local.ctx = P._Ctx()
        b = loaded.parse(text, start="start")
        assert a == b
    P._local.ctx = None
    for bad in ("SELECT FROM WHERE", "SELECT a FROM t WHERE", "CREATE TABLE (", "SELECT a b c FROM t",
                "SELECT (1", "INSERT INTO t VALUES (1,"):
        msgs = []
        for parser in (built, loaded):
            P._parser_obj = parser
            try:
                P._run(bad, "start")
            except ParseError as e:
                msgs.append((str(e), e.line, e.column, e.expected))
        P._parser_obj = None
        assert len(msgs) == 2 and msgs[0] == msgs[1], bad


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=H.SMALL_HASH_VALUES + 3), st.integers(0, 2**64 - 1),
       st.integers(0, 2))
def test_small_hashing_equals_the_kernel(values, seed, lead):
    arr = pa.array([b"pad"] * lead + values, pa.binary()).slice(lead)
    phys = H._physical(arr)
    want = KX.xxh64_offsets(phys[1], phys[2], np.uint64(seed)) if values else np.zeros(0, np.uint64)
    assert np.array_equal(H.xxh64_array(arr, seed), want)
    ints = pa.array(np.frombuffer(b"".join(v[:8].ljust(8, b"\0") for v in values), np.uint64)
                    if values else np.zeros(0, np.uint64))
    assert np.array_equal(H.xxh64_array(ints, seed),
                          KX.xxh64_u64_array(np.ascontiguousarray(H._physical(ints)[1]), np.uint64(seed)))


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1), st.integers(0, 9), st.integers(0, 3), st.booleans())
def test_small_bank_check_equals_the_kernel(nf, seed, nh, ncuts, sparse):
    rng = np.random.default_rng(seed)
    nb = rng.integers(1, 5, nf).astype(np.int64)
    bo = np.concatenate([[0], np.cumsum(nb)[:-1]]).astype(np.int64)
    words = rng.integers(0, 2**32, int(nb.sum()) * 8, dtype=np.uint64).astype(np.uint32)
    if sparse:   # mostly clear bits: most hashes absent
        for _ in range(3):
            words &= rng.integers(0, 2**32, words.size, dtype=np.uint64).astype(np.uint32)
    hashes = rng.integers(0, 2**64 - 1, nh, dtype=np.uint64)
    # plant some hashes so that both answers occur
    for h in hashes[: nh // 2]:
        f = int(rng.integers(0, nf))
        b = int(bo[f] + (((int(h) >> 32) * int(nb[f])) >> 32))
        for i in range(8):
            words[b * 8 + i] |= np.uint32(1 << ((((int(h) & 0xFFFFFFFF) * int(SALT[i])) & 0xFFFFFFFF) >> 27))
    cuts = np.sort(rng.integers(0, nh + 1, ncuts))
    goffs = np.concatenate([[0], cuts, [nh]]).astype(np.int64)
    want = KS.bank_check_any_of(words, bo, nb, hashes, goffs, SALT)
    assert np.array_equal(bank_check_any_of_numpy(words, bo, nb, hashes, goffs), want)
    assert np.array_equal(bank_check_any_of(words, bo, nb, hashes, goffs), want)
    zones = rng.permutation(nf)[: max(1, nf // 2)]
    want = KS.bank_check_any_of(words, bo[zones], nb[zones], hashes, goffs, SALT)
    assert np.array_equal(bank_check_any_of_numpy(words, bo[zones], nb[zones], hashes, goffs), want)
    fids = rng.integers(0, nf, nh).astype(np.int64)
    want = KS.bank_check_pairs(words, bo, nb, fids, hashes, SALT)
    assert np.array_equal(bank_check_pairs_numpy(words, bo, nb, fids, hashes), want)


def test_arrays_helpers_match_pyarrow():
    for t, vals in ((pa.uint64(), [0, 5, 2**64 - 1]), (pa.int8(), [-128, 0, 127]), (pa.float64(), [1.5, -0.0]),
                    (pa.bool_(), [True, False, True]), (pa.string(), ["a", "", "ü"]),
                    (pa.large_binary(), [b"x", b""]), (pa.uint8(), [1, None])):
        assert array_of(vals, t).equals(pa.array(vals, t))
        for v in vals:
            assert scalar(v, t).equals(pa.scalar(v, t))
    with pytest.raises(pa.ArrowInvalid):
        scalar(300, pa.uint8())
    a = from_numpy(np.array([True, False, True, True, False, False, True, False, True]))
    for off in range(4):
        assert to_numpy(a.slice(off)).tolist() == a.slice(off).to_pylist()
    c = pa.chunked_array([pa.array([1, 2], pa.int32()), pa.array([3], pa.int32())])
    assert to_numpy(c).tolist() == [1, 2, 3]
    assert to_numpy(pa.array([1, None], pa.int64())).tolist()[0] == 1


def test_warm_compiles_what_a_query_loads(logs_db, tmp_path):
    """`skipidx warm` (what make runs) fills an empty numba cache with every kernel the
    hasToken query needs once numba is loaded (a large scan, or after an insert): that
    process then compiles nothing. (A small query of a new process loads no numba at all.)"""
    cache = str(tmp_path / "numba")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "NUMBA_CACHE_DIR": cache}
    out = subprocess.run([sys.executable, "-m", "skipidx.apps.warm", "--rows", "3000"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    code = textwrap.dedent(f"""
        import json
        from numba.core.caching import Cache
        misses = []
        load = Cache.load_overload
        def counted(self, sig, target_context):
            r = load(self, sig, target_context)
            if r is None:
                misses.append(self._name)
            return r
        Cache.load_overload = counted
        import numba  # noqa: F401  (loaded, so the query takes the kernel paths a large scan takes)
        import skipidx
        n = skipidx.connect({logs_db!r}).sql("SELECT count() FROM logs WHERE hasToken(msg, 'kraken')").fetchall()
        print(json.dumps({{"n": n, "misses": misses}}))
    """)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["n"] == [[1]]
    assert got["misses"] == [], got["misses"]


# -- a new process answering one indexed query loads no numba ---------------------------------

NUMBA_FREE_QUERIES = [
    ("SELECT count() FROM logs WHERE hasToken(msg, 'kraken')", [[1]]),
    ("SELECT count() FROM logs WHERE msg LIKE '%kraken%'", [[1]]),
    ("SELECT count() FROM logs WHERE msg LIKE '%rak%'", [[1]]),
    ("SELECT count() FROM logs WHERE trace_id = 'nope'", [[0]]),
    ("SELECT count() FROM logs WHERE hasTokenCaseInsensitive(msg, 'KRAKEN') OR user_id IN (1, 2)", None),
    ("SELECT ts, msg, status FROM logs WHERE hasToken(msg, 'kraken') AND level = 'WARN'", None),
]


@pytest.mark.parametrize("query,expected", NUMBA_FREE_QUERIES)
def test_one_indexed_query_imports_no_numba(logs_db, query, expected):
    """Pruning (query constants' tokens and hashes, filter sizes, bank checks) and the exact
    scan of a few granules run without numba: importing it and loading its first cached
    kernel is most of a new process's start-up. The answer equals the in-process one."""
    got = _run(f"""
        import skipidx
        rows = skipidx.connect({logs_db!r}).sql({query!r}).fetchall()
        RESULT = [[str(v) for v in r] for r in rows]
    """)
    assert "numba" not in got["modules"] and "llvmlite" not in got["modules"], query
    with skipidx.connect(logs_db) as db:   # this process has numba loaded: the kernel paths
        want = [[str(v) for v in r] for r in db.sql(query).fetchall()]
    assert got["result"] == want
    if expected is not None:
        assert got["result"] == [[str(v) for v in r] for r in expected]


def test_cli_query_imports_no_numba(logs_db):
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "skipidx", "sql", logs_db,
                          "SELECT count() FROM logs WHERE hasToken(msg, 'kraken')", "--format", "TSV"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
    imported = {ln.split("|")[-1].strip().split(".")[0] for ln in out.stderr.splitlines() if ln.startswith("import")}
    assert "numba" not in imported and "skipidx" in imported


#: Imported on first use by the library (skipidx.core.lazy): a small indexed count() reads
#: parts through pyarrow._parquet and calls no pyarrow.compute function; the SQL is parsed
#: by skipidx.sql._lalr over the generated tables (Lark only generates them).
LAZY_PYARROW = ("pyarrow.compute", "pyarrow.parquet", "pyarrow.fs", "pyarrow.dataset", "lark")
#: Standard modules a query does not use (imported where a temporary directory is made or removed)
UNUSED_STDLIB = ("tempfile", "shutil", "random", "argparse")


@pytest.mark.parametrize("query", [q for q, _ in NUMBA_FREE_QUERIES[:4]])
def test_small_count_imports_no_pyarrow_compute_parquet_or_lark(logs_db, query):
    got = _run(f"""
        import sys
        import skipidx
        RESULT = [[str(v) for v in r] for r in skipidx.connect({logs_db!r}).sql({query!r}).fetchall()]
        RESULT = [RESULT, sorted(m for m in sys.modules if m.startswith(("pyarrow", "lark")) or m in UNUSED_STDLIB)]
    """.replace("UNUSED_STDLIB", repr(UNUSED_STDLIB)))
    assert not set(got["result"][1]) & set(LAZY_PYARROW), (query, got["result"][1])
    assert not set(got["result"][1]) & set(UNUSED_STDLIB), (query, got["result"][1])
    with skipidx.connect(logs_db) as db:
        assert got["result"][0] == [[str(v) for v in r] for r in db.sql(query).fetchall()]


def test_cli_count_imports_no_pyarrow_compute_parquet_or_lark(logs_db):
    code = ("import sys, runpy; sys.argv = ['skipidx', 'sql', %r, %r, '--format', 'TSV']\n"
            "try:\n    runpy.run_module('skipidx', run_name='__main__')\n"
            "finally:\n    print(sorted(m for m in sys.modules if m.startswith(('pyarrow', 'lark', 'argparse'))),"
            " file=sys.stderr)"
            % (logs_db, "SELECT count() FROM logs WHERE hasToken(msg, 'kraken')"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
    loaded = eval(out.stderr.strip().splitlines()[-1])
    assert "pyarrow.lib" in loaded and not set(loaded) & set(LAZY_PYARROW), loaded
    # the count is printed without pyarrow's compute kernels, its arguments read without argparse
    assert "pyarrow._compute" not in loaded and "argparse" not in loaded, loaded


_INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_INT_TYPES), st.data())
def test_small_integer_texts_equal_arrows_cast(typ, data):
    from skipidx.core.arrays import cast
    from skipidx.engine.formats import SMALL_INTEGER_TEXTS, integer_texts

    bits = typ.bit_width
    lo, hi = (0, 2 ** bits - 1) if pa.types.is_unsigned_integer(typ) else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
    vals = data.draw(st.lists(st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0]), st.none()),
                              max_size=SMALL_INTEGER_TEXTS + 3))
    arr = pa.array(vals, typ)
    got = integer_texts(arr)
    assert got.type == pa.string() and got.equals(cast(arr, pa.string())), vals


def test_lazy_pyarrow_modules_stand_in_for_the_real_ones():
    """The stand-ins load the real module on first use and go straight to it (a patch on the
    real module is seen through them); the part reader selects columns as ParquetFile does."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        from skipidx.core.lazy import compute, parquet
        assert "pyarrow.compute" not in sys.modules and "pyarrow.parquet" not in sys.modules
        import pyarrow as pa
        assert compute.sum(pa.array([1, 2, 3])).as_py() == 6
        import pyarrow.compute as real
        assert compute.sum is real.sum and "pyarrow.parquet" not in sys.modules
        assert parquet.ParquetFile is sys.modules["pyarrow.parquet"].ParquetFile
        print("ok")
    """)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_part_reader_reads_as_parquet_file(tmp_path):
    import pyarrow.parquet as pq

    from skipidx.store.reader_pool import DataReader, read_footer

    path = str(tmp_path / "f.parquet")
    t = pa.table({"a": pa.array(range(100), pa.int64()),
                  "s": pa.array([{"x": i, "y": {"z": str(i)}} for i in range(100)]),
                  "l": pa.array([[i, i + 1] for i in range(100)]),
                  "d": pa.array([str(i % 3) for i in range(100)])})
    pq.write_table(t, path, row_group_size=30)
    md = read_footer(path)
    assert md.equals(pq.read_metadata(path))
    buf = pa.memory_map(path, "r").read_buffer()
    mine = DataReader(pa.BufferReader(buf), metadata=md, pre_buffer=False, read_dictionary=["d"])
    theirs = pq.ParquetFile(pa.BufferReader(buf), metadata=md, pre_buffer=False, read_dictionary=["d"])
    assert mine.metadata.equals(theirs.metadata) and mine.schema_arrow.equals(theirs.schema_arrow)
    assert mine.num_row_groups == theirs.num_row_groups == 4
    for cols in (None, ["a"], ["s"], ["s.y"], ["s.y.z", "a"], ["l", "d"], ["nope", "a"], []):
        for rgs in ([0], [1, 3], [3, 0, 2]):
            assert mine.read_row_groups(rgs, columns=cols, use_threads=False).equals(
                theirs.read_row_groups(rgs, columns=cols, use_threads=False)), (cols, rgs)
        assert mine.read_row_group(2, columns=cols).equals(theirs.read_row_group(2, columns=cols))
    mine.close()
    assert not mine.closed   # a buffer it does not own stays open, as with ParquetFile
    mine.close(force=True)
    assert mine.closed


# -- the numpy paths equal the kernels they stand in for --------------------------------------

_ALPHABET = b"ab AB.,-_0\x80\xc3\xa9\xff"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=12).map(lambda b: bytes(_ALPHABET[x % len(_ALPHABET)] for x in b)),
                min_size=1, max_size=30),
       st.binary(min_size=1, max_size=4).map(lambda b: bytes(_ALPHABET[x % len(_ALPHABET)] for x in b)),
       st.booleans(), st.booleans(), st.integers(0, 3), st.sampled_from([1, 3, 8, 1 << 17]))
def test_search_numpy_path_equals_the_kernel(rows, needle, case_insensitive, token, lead, block):
    """`_search_np` (a new process's scan) == `_scan_kernel` on random rows: substrings,
    hasToken boundaries, ASCII folding, needles across rows, sliced offsets."""
    from skipidx.expr.kernels import _search as S

    arr = pa.array([b"pad"] * lead + rows, pa.binary()).slice(lead)
    o = np.frombuffer(arr.buffers()[1], dtype=np.int32)[lead:lead + len(rows) + 1].astype(np.int64)
    d = np.frombuffer(arr.buffers()[2], dtype=np.uint8)
    if token and not S.TOKEN_BYTE[np.frombuffer(needle, np.uint8)].all():
        return
    fold = S.ASCII_LOWER if case_insensitive else S._IDENTITY
    nd = fold[np.frombuffer(needle, dtype=np.uint8)]
    got = np.zeros(len(rows), dtype=np.bool_)
    if int(o[-1]) - int(o[0]) >= len(needle):
        S._search_np(o, d, nd, fold, token, got, block)
    want = (S.token_rows if token else S.contains_rows)(o, d, needle, case_insensitive)
    assert np.array_equal(got, want)
    low = (lambda b: b.lower()) if case_insensitive else (lambda b: b)
    if not token:   # and both equal Python's own `in` (ASCII folding only)
        assert got.tolist() == [low(needle) in bytes(ASCII_LOW[x] for x in r) if case_insensitive else needle in r
                                for r in rows]


ASCII_LOW = bytes(range(65)) + bytes(range(97, 123)) + bytes(range(91, 256))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=24), st.integers(1, 6), st.booleans(), st.booleans())
def test_small_gram_bounds_equal_the_kernel(value, n, at_start, at_end):
    """ngram's query side without the kernel == `K.gram_bounds` (valid and invalid UTF-8)."""
    from skipidx_tokenizers import _kernels as K
    from skipidx_tokenizers import ngram

    assert ngram._SEQ_LEN == bytes(K.SEQ_LEN.astype(np.uint8))
    starts, ends = K.gram_bounds(np.frombuffer(value, dtype=np.uint8), n, at_start, at_end)
    assert ngram._gram_bounds_small(value, n, at_start, at_end) == list(zip(starts.tolist(), ends.tolist()))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5000), st.integers(0, 200_000)), min_size=1, max_size=20))
def test_numpy_fpp_estimate_is_within_its_bound(pairs):
    from skipidx.core import sizing
    from skipidx.core._kernels import sbbf as KS

    blocks = np.array([float(b) for b, _ in pairs])
    ndv = np.array([float(v) for _, v in pairs])
    got = sizing._fpp_poisson_np(blocks, ndv)
    lam = ndv / blocks
    if got is None:   # sums too long for it: the kernel's
        assert (lam + 12 * np.sqrt(lam) + 40 >= sizing._NP_K).any()
        return
    est, tol = got
    want = KS.fpp_poisson(blocks, ndv)
    assert np.all(np.abs(est - want) <= tol), (est - want, tol)
    # the bound is tight where sizing searches (loads up to a few hundred per block): the kernel is rarely asked
    assert np.all((tol <= 1e-9 * want) | (lam > 1000))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 300_000), min_size=1, max_size=30),
       st.sampled_from([0.1, 0.025, 0.01, 0.001, 0.0001, 0.3]))
def test_exact_sizes_without_numba_equal_the_kernels(monkeypatch_module, ndv, fpp):
    """The ``exact`` (and ``lance``) rule solved with the numpy estimate (a new process
    checking an sbbf index's sizes) gives the kernel's block counts."""
    from skipidx.core import sizing

    nd = np.array(ndv, dtype=np.int64)
    want = sizing.exact_num_bytes(nd, fpp)
    with monkeypatch_module.context() as m:
        m.setattr(sizing, "numba_loaded", lambda: False)
        got = sizing.exact_num_bytes(nd, fpp)
    assert np.array_equal(got, want)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=200), st.lists(st.integers(0, 40), min_size=1, max_size=8),
       st.sampled_from([pa.uint8(), pa.int16(), pa.int32(), pa.uint64(), pa.int64()]), st.booleans(),
       st.integers(0, 9))
def test_in_numpy_path_equals_the_kernel(monkeypatch_module, vals, wanted, typ, nulls, lead):
    compare = importlib.import_module("skipidx.expr.kernels.compare")   # the package exports a function `compare`

    raw = [None if nulls and i % 5 == 0 else v for i, v in enumerate([0] * lead + vals)]
    arr = pa.array(raw, typ).slice(lead)
    want = compare.is_in(arr, wanted)
    with monkeypatch_module.context() as m:
        m.setattr(compare, "use_numpy_path", lambda nbytes: True)
        got = compare.is_in(arr, wanted)
    assert got.equals(want)
    assert got.to_pylist() == [None if v is None else v in wanted for v in raw[lead:]]


def test_builtin_tokenizer_table_is_the_entry_points():
    """get_tokenizer's no-scan table names exactly the built-ins' entry points."""
    from importlib.metadata import entry_points

    from skipidx.core import tokenizer_api as T

    ours = {ep.name: ep.value for ep in entry_points(group=T.ENTRY_POINT_GROUP)
            if ep.value.startswith("skipidx_tokenizers.")}
    assert T.BUILTIN_ENTRY_POINTS == ours
    saved, T._REGISTRY = T._REGISTRY, None
    try:
        fast = {name: type(T.get_tokenizer(name)) for name in ours}
        assert T._REGISTRY is None   # no scan
    finally:
        T._REGISTRY = saved
    assert fast == {name: T._load_registry()[name] for name in ours}


@pytest.fixture(scope="module")
def parquet_footer(tmp_path_factory) -> bytes:
    import pyarrow.parquet as pq

    p = str(tmp_path_factory.mktemp("footer") / "f.parquet")
    n = 300
    pq.write_table(pa.table({"i": pa.array(range(n), pa.int64()), "s": pa.array([f"v{i % 7}" for i in range(n)]),
                             "f": pa.array([i / 3 for i in range(n)]), "b": pa.array([i % 2 == 0 for i in range(n)]),
                             "l": pa.array([[i, None] for i in range(n)], pa.list_(pa.int32())),
                             "n": pa.array([None if i % 3 else i for i in range(n)], pa.int16())}),
                   p, row_group_size=64, write_statistics=True, store_schema=True)
    raw = open(p, "rb").read()
    flen = int.from_bytes(raw[-8:-4], "little")
    return raw[-8 - flen:-8]


def _reader_or_error(buf: bytes):
    from skipidx.core.parquet_bloom import _Reader

    try:
        return _Reader(buf, 0, "x", "FileMetaData").struct()
    except Exception as e:   # noqa: BLE001 - the kind of failure is what is compared
        return type(e)


def _damaged(footer: bytes, data, kinds: list[str]) -> tuple[str, bytes]:
    """A footer as drawn: real, bytes flipped, cut, bytes inserted, or random bytes."""
    buf = bytearray(footer)
    kind = data.draw(st.sampled_from(kinds))
    if kind == "flip":
        for _ in range(data.draw(st.integers(1, 4))):
            buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    elif kind == "cut":
        buf = buf[:data.draw(st.integers(0, len(buf)))]
    elif kind == "insert":
        i = data.draw(st.integers(0, len(buf)))
        buf[i:i] = data.draw(st.binary(min_size=1, max_size=6))
    elif kind == "random":
        buf = bytearray(data.draw(st.binary(max_size=200)))
    return kind, bytes(buf)


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_fast_footer_decoder_equals_the_reader(parquet_footer, data):
    """`fast_struct` (check_footer's fast path) returns exactly the reader's dict where the
    reader succeeds, and None wherever the reader raises: on real footers, damaged ones
    (flipped, inserted, cut bytes) and random bytes."""
    from skipidx.core.parquet_thrift import fast_struct

    kind, buf = _damaged(parquet_footer, data, ["real", "flip", "cut", "insert", "random"])
    want = _reader_or_error(buf)
    got = fast_struct(buf)
    if isinstance(want, type):
        assert got is None, want
    else:
        assert got == want
        if kind == "real":
            assert got is not None


def _project(value, spec):
    """The fields of `spec` (store/parquet_check._FOOTER_SPEC) of a decoded footer value."""
    if spec is None or not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        if k in spec:
            sub = spec[k]
            out[k] = [_project(e, sub) for e in v] if isinstance(v, list) and sub is not None else _project(v, sub)
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_footer_fields_are_the_fast_decoders_fields(parquet_footer, data):
    """`footer_fields` (what check_footer decodes) gives exactly fast_struct's values of the
    fields the checks read, and None exactly where fast_struct is None (then the reader runs
    for the error): on real footers, damaged ones and random bytes."""
    from skipidx.core.parquet_thrift import fast_struct
    from skipidx.store.parquet_check import _FOOTER_SPEC, footer_fields

    kind, buf = _damaged(parquet_footer, data, ["real", "flip", "flip", "cut", "insert", "random"])
    full = fast_struct(buf)
    got = footer_fields(buf)
    if full is None:
        assert got is None
    else:
        assert got == _project(full, _FOOTER_SPEC)
        if kind == "real":
            assert got[4] and got[4][0][1][0][3][1] is not None


def test_numpy_paths_have_an_allowance():
    """The numpy stand-ins serve a process's first ~64 MiB (no numba for a few small queries);
    then, and whenever numba is loaded, the kernels answer."""
    got = _run("""
        from skipidx.core import lazy
        half = lazy.NUMPY_PATH_BYTES // 2
        a = [lazy.use_numpy_path(half) for _ in range(3)]
        import numba
        RESULT = a + [lazy.use_numpy_path(1)]
    """)
    assert got["result"] == [True, True, False, False]


def test_lazy_kernels_pickle_and_call():
    """The lazy stand-ins pickle by name (Spark ships closures that may hold them) and
    call through to the compiled kernel."""
    import pickle

    from skipidx.core import lazy
    from skipidx.core._kernels import sbbf as KS

    mod = lazy._LazyModule("skipidx.core._kernels.xxh64")
    back = pickle.loads(pickle.dumps(mod))
    assert back.xxh64_span is sys.modules["skipidx.core._kernels.xxh64"].xxh64_span
    mod.xxh64_span   # loaded: still picklable
    assert pickle.loads(pickle.dumps(mod)).xxh64_span is back.xxh64_span

    def twice(x):
        return 2 * x

    twice.__module__ = __name__
    k = lazy.njit(cache=False)(twice)
    assert k(21) == 42 and k.py_func is twice
    globals()["_lazy_twice_for_pickle"] = k
    k.__name__ = "_lazy_twice_for_pickle"
    assert pickle.loads(pickle.dumps(k)) is k
    # a lazily compiled kernel answers as its Python function does
    blocks, ndv = np.array([10.0, 3.0]), np.array([100.0, 0.0])
    assert np.allclose(KS.fpp_poisson(blocks, ndv), KS.fpp_poisson.py_func(blocks, ndv), rtol=1e-12)


def test_import_parks_openblas_idle_threads_unless_told():
    """`import skipidx` before numpy sets OPENBLAS_THREAD_TIMEOUT=4 (idle OpenBLAS threads sleep
    instead of spinning after numpy's import); a value the caller set is kept, and nothing is
    set when numpy was imported first (OpenBLAS has read its settings then)."""
    code = "import os, sys\n%s\nimport skipidx\nprint(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))"
    for pre, env_value, want in [("", None, "4"), ("", "20", "20"), ("import numpy", None, "None")]:
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
        if env_value:
            env["OPENBLAS_THREAD_TIMEOUT"] = env_value
        out = subprocess.run([sys.executable, "-c", code % pre], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == want, (pre, env_value, out.stdout, out.stderr)
