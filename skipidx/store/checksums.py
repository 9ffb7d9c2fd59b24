"""Checksums of part files, and their verification on read.

Hash: XXH3-128 (the `xxhash` package, already a dependency). The checksums
guard against bit rot, torn writes and truncation, not against an attacker,
so a cryptographic hash buys nothing, and XXH3-128 is the fastest of the
candidates (``bench/bench_store.py``): verifying the bytes read costs a few
percent of reading them. ClickHouse uses CityHash128 for the same reason.

Every file is hashed in blocks of :data:`BLOCK_SIZE` bytes. A reader that
needs bytes ``[a, b)`` of a file verifies only the blocks overlapping that
range, once per process (a cache keyed by the file's identity), so reading k
granules of a part verifies O(k) bytes, not the whole part.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Callable
from skipidx.core.dataclass_codes import dataclass

import xxhash

from skipidx.core.errors import CorruptionError

__all__ = ["BLOCK_SIZE", "FileSum", "file_sum", "Verifier", "VERIFIER"]

#: Checksum block. 1 MiB: a 8192-row granule of a typical table is 0.1–2 MiB
#: of compressed Parquet, so a granule read verifies at most ~2 blocks, and a
#: 1 GiB part needs 1024 hashes in its manifest.
BLOCK_SIZE = 1 << 20


#: Bounds of a valid file entry in a manifest.
MAX_BLOCK_SIZE = 1 << 30
MAX_FILE_SIZE = 1 << 50


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@dataclass(frozen=True)
class FileSum:
    """Size and per-block XXH3-128 digests (hex) of one file."""

    size: int
    blocks: tuple[str, ...]
    block_size: int = BLOCK_SIZE

    def to_json(self) -> dict:
        return {"size": self.size, "block_size": self.block_size, "xxh3_128": list(self.blocks)}

    @staticmethod
    def from_json(obj, where: str) -> "FileSum":
        if not isinstance(obj, dict):
            raise CorruptionError("bad file entry in manifest", path=where)
        size, bs, blocks = obj.get("size"), obj.get("block_size"), obj.get("xxh3_128")
        # ranges too: a checksummed manifest may still hold values no writer
        # made (an edit, another tool), and e.g. a 2**70 block size overflows pread
        if (not _int(size) or not 0 <= size < MAX_FILE_SIZE or not _int(bs) or not 0 < bs <= MAX_BLOCK_SIZE
                or not isinstance(blocks, list) or len(blocks) != max(1, -(-size // bs))
                or not all(isinstance(b, str) and len(b) == 32 for b in blocks)):
            raise CorruptionError("bad file entry in manifest", path=where)
        return FileSum(size, tuple(blocks), bs)


def file_sum(path: str, block_size: int | None = None) -> FileSum:
    """Hash `path` block by block (default :data:`BLOCK_SIZE`)."""
    block_size = block_size or BLOCK_SIZE
    blocks = []
    size = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(block_size)
            if not b:
                break
            size += len(b)
            blocks.append(xxhash.xxh3_128_hexdigest(b))
    if not blocks:
        blocks.append(xxhash.xxh3_128_hexdigest(b""))
    return FileSum(size, tuple(blocks), block_size)


#: File identities whose verified blocks a :class:`Verifier` remembers. Parts
#: are immutable and merged away over time: without a bound, a long-running
#: process would keep an entry for every file it ever read. Forgetting the
#: least recently read file only costs re-hashing its blocks on its next read.
VERIFIED_FILES_MAX = 4096


class Verifier:
    """Verifies byte ranges of part files against their FileSum, caching what
    was verified per file identity (device, inode, size, mtime) so each block
    is hashed at most once per process while the file stays the same (and
    among the :data:`VERIFIED_FILES_MAX` most recently read files)."""

    def __init__(self, max_files: int = VERIFIED_FILES_MAX) -> None:
        self._lock = threading.Lock()
        self._max_files = max(1, int(max_files))
        self._done: OrderedDict[tuple, set[int]] = OrderedDict()

    def _blocks(self, key: tuple) -> set[int]:
        """The verified blocks of file `key`, marked most recently used (call with the lock held)."""
        done = self._done.get(key)
        if done is None:
            done = self._done[key] = set()
            while len(self._done) > self._max_files:
                self._done.popitem(last=False)
        else:
            self._done.move_to_end(key)
        return done

    def _identity(self, path: str, expected: FileSum) -> tuple:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise CorruptionError("file of part is missing", path=path) from None
        except OSError as e:
            raise CorruptionError(f"cannot stat file: {e.strerror}", path=path) from None
        if st.st_size != expected.size:
            raise CorruptionError(
                f"file size {st.st_size} differs from the manifest's {expected.size} (truncated or damaged)",
                path=path,
            )
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def verify(self, path: str, expected: FileSum, start: int = 0, end: int | None = None) -> None:
        """Verify bytes [start, end) of `path` (default: all). Raises CorruptionError naming the file."""
        key = self._identity(path, expected)
        end = expected.size if end is None else min(end, expected.size)
        if not 0 <= start <= expected.size:
            raise CorruptionError(f"byte range from {start} lies beyond the file's {expected.size} bytes", path=path)
        bs = expected.block_size
        first, last = start // bs, max(start, end - 1) // bs
        with self._lock:
            done = self._blocks(key)
            todo = [i for i in range(first, last + 1) if i not in done]
        if not todo:
            return
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            raise CorruptionError(f"cannot open file: {e.strerror}", path=path) from None
        try:
            for i in todo:
                b = os.pread(fd, bs, i * bs)
                if xxhash.xxh3_128_hexdigest(b) != expected.blocks[i]:
                    raise CorruptionError(f"checksum mismatch in bytes [{i * bs}, {i * bs + len(b)})", path=path)
        finally:
            os.close(fd)
        with self._lock:
            self._blocks(key).update(todo)

    def read_verified(self, path: str, expected: FileSum, read: Callable[[str], Any]) -> Any:
        """``read(path)`` (the whole file as a buffer: bytes, a pyarrow Buffer), its blocks
        verified as :meth:`verify` would verify them, from the bytes read (the file is read
        once, and what is verified is what the caller gets). Raises CorruptionError naming
        the file; an OSError of `read` passes through."""
        key = self._identity(path, expected)
        data = read(path)
        view = memoryview(data)
        if view.nbytes != expected.size:
            raise CorruptionError(
                f"file size {view.nbytes} differs from the manifest's {expected.size} (truncated or damaged)",
                path=path,
            )
        bs = expected.block_size
        with self._lock:
            done = self._blocks(key)
            todo = [i for i in range(len(expected.blocks)) if i not in done]
        for i in todo:
            if xxhash.xxh3_128_hexdigest(view[i * bs:(i + 1) * bs]) != expected.blocks[i]:
                raise CorruptionError(
                    f"checksum mismatch in bytes [{i * bs}, {min((i + 1) * bs, expected.size)})", path=path)
        if todo:
            with self._lock:
                self._blocks(key).update(todo)
        return data

    def verify_spans(self, path: str, expected: FileSum, spans: list[tuple[int, int]]) -> None:
        """:meth:`verify` of each byte range [start, end) of `spans`, with one look at the
        file's identity and one at the verified blocks when all are verified already."""
        if len(spans) == 1:
            self.verify(path, expected, spans[0][0], spans[0][1])
            return
        key = self._identity(path, expected)
        bs = expected.block_size
        with self._lock:
            done = self._blocks(key)
            todo = any(i not in done for start, end in spans
                       for i in range(start // bs, max(start, min(end, expected.size) - 1) // bs + 1))
        if todo:
            for start, end in spans:
                self.verify(path, expected, start, end)

    def forget(self) -> None:
        """Drop the cache (tests use it to force re-verification)."""
        with self._lock:
            self._done.clear()


#: The process-wide verifier.
VERIFIER = Verifier()
