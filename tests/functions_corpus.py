"""Seeded test corpus and chDB plumbing shared by the differential tests of execution functions.

The corpus mixes real-looking log lines, source lines of the running
interpreter's standard library, and hand-made edge cases (empty strings,
NULLs, separators at the edges, escapes, 2/3/4-byte UTF-8, invalid UTF-8, NUL
bytes). Strings travel to chDB as a Parquet BYTE_ARRAY column so invalid UTF-8
survives; every query orders by the row number so answers line up row by row.
"""
from __future__ import annotations

from skipidx.apps.research import chdb_session as chdb_oracle  # one chDB per process
import random
import re
import sysconfig
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

EDGE_CASES: list[bytes | None] = [
    b"", None, b"abc", b"abc def", b" abc", b"abc ", b"aabc abc", b"abcabc", b"xabc", b"abc_def",
    b"abc\xffabc", b"\xffabc", b"x \xff y", b"a\xffb", b"ab\xff", b"\xff", b"\xfe\xff", b"a\x00b",
    b"a\nb", b"a\r\nb\n", b"\tabc\t", b"%", b"_", b"a%b", b"a_b", b"a\\b", b"\\", b"\\\\", b"a\\%b",
    "caf\u00e9 au lait".encode(), "Gr\u00f6\u00dfe GR\u00d6SSE".encode(), "\u65e5\u672c\u8a9e \u30c6\u30b9\u30c8".encode(),
    "emoji \U0001F600 x".encode(), "\U0001F600".encode(), "\u00e9".encode(), "a\u00e9".encode(), "A\u00c9 \u00e9a".encode(),
    "\u00c0BC".encode(), "\u212a kelvin".encode(), b"ABC Def GHI", b"ERROR: Timeout!", b"timeout,retry;x",
    b"(a)[b]{c}^$.|*+?", b"a.b", b"axb", b"a*b", b"...", b"2024-01-01", b"user=42&q=abc",
]

_WORDS = ["error", "timeout", "connection", "refused", "GET", "POST", "user", "login", "failed", "ok",
          "request", "id", "abc", "Abc", "ABC", "retry", "cache", "miss", "hit", "disk", "full", "db",
          "caf\u00e9", "na\u00efve", "\u00fcber", "\u65e5\u672c", "\U0001F600", "x_y", "50%", "a_b", "c:\\tmp",
          "k8s", "v2", "node-7", "shard_03", "QUERY", "select", "from", "where"]


def _log_line(rnd: random.Random) -> bytes:
    level = rnd.choice(["INFO", "WARN", "ERROR", "DEBUG", "info"])
    words = " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(0, 9)))
    ip = ".".join(str(rnd.randint(0, 255)) for _ in range(4))
    path = "/" + "/".join(rnd.choice(_WORDS) for _ in range(rnd.randint(1, 3)))
    shapes = [
        f"{level} {words}",
        f"{level} [{ip}] {path}?id={rnd.randint(0, 10**6)} {words}",
        f"{words}: {rnd.choice(_WORDS)}={rnd.randint(0, 999)}",
        f"{rnd.choice(_WORDS)}{rnd.choice(['', ' ', '.', ',', '-', '_', '/'])}{rnd.choice(_WORDS)}",
    ]
    line = rnd.choice(shapes).encode()
    r = rnd.random()
    if r < 0.04:
        pos = rnd.randint(0, len(line))
        line = line[:pos] + bytes([rnd.choice([0x80, 0xC3, 0xFF, 0xE2, 0xF0])]) + line[pos:]
    elif r < 0.08:
        line = line.upper()
    return line


def _stdlib_lines(rnd: random.Random, count: int) -> list[bytes]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py"))
    rnd.shuffle(files)
    out: list[bytes] = []
    for p in files:
        try:
            lines = [ln for ln in p.read_bytes().splitlines() if ln.strip()]
        except OSError:
            continue
        out.extend(rnd.sample(lines, min(len(lines), 60)))
        if len(out) >= count:
            break
    return out[:count]


def corpus(n_log: int = 1500, n_src: int = 1500, seed: int = 20261121) -> list[bytes | None]:
    """EDGE_CASES + seeded log lines + stdlib source lines, with a sprinkle of NULLs."""
    rnd = random.Random(seed)
    rows: list[bytes | None] = list(EDGE_CASES)
    rows += [_log_line(rnd) for _ in range(n_log)]
    rows += _stdlib_lines(rnd, n_src)
    for i in range(len(EDGE_CASES), len(rows), 53):
        rows[i] = None
    return rows


def sql_str(b: bytes | str) -> str:
    """A ClickHouse string literal holding exactly these bytes (ASCII-only SQL text)."""
    if isinstance(b, str):
        b = b.encode()
    out = []
    for c in b:
        if c == 0x5C:
            out.append("\\\\")
        elif c == 0x27:
            out.append("\\'")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append(f"\\x{c:02x}")
    return "'" + "".join(out) + "'"


def write_parquet(table: pa.Table, path: Path) -> str:
    """Write `table` with a row number column `rn` first; return the path as text."""
    t = table.add_column(0, "rn", pa.array(range(table.num_rows), pa.int64()))
    pq.write_table(t, path)
    return str(path)


def chdb_columns(path: str, exprs: list[str], where: str = "") -> list[list]:
    """Evaluate `exprs` over the Parquet file in chDB, one list per expression, ordered by rn."""
    import chdb

    cols = ", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs))
    sql = f"SELECT {cols} FROM file('{path}', Parquet) {where} ORDER BY rn"
    t = chdb_oracle.query(sql, "ArrowTable")
    out = []
    for i in range(len(exprs)):
        c = t.column(i)
        if pa.types.is_string(c.type) or pa.types.is_large_string(c.type):
            # ClickHouse Strings are bytes; compare them as bytes.
            c = pa.chunked_array([ch.view(pa.binary() if pa.types.is_string(c.type) else pa.large_binary())
                                  for ch in c.chunks])
        out.append(c.to_pylist())
    return out


def chdb_error(sql: str) -> str | None:
    """The first line of chDB's error for `sql`, or None if it runs."""
    import chdb

    try:
        chdb_oracle.query(sql, "CSV")
    except Exception as e:  # chDB raises a plain RuntimeError-like exception
        return str(e).splitlines()[0]
    return None


def tokens_by_frequency(rows: list) -> list[bytes]:
    """The corpus's hasToken tokens ([0-9A-Za-z] and bytes >= 0x80), most frequent first
    (ties by bytes): where the needle pickers of the chDB tests draw from."""
    seen: dict[bytes, int] = {}
    for r in rows:
        if r:
            for t in re.findall(rb"[0-9A-Za-z\x80-\xff]+", r):
                seen[t] = seen.get(t, 0) + 1
    return sorted(seen, key=lambda t: (-seen[t], t))
