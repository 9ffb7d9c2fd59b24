"""Puffin files (Apache Iceberg's format for statistics blobs), written and read here.

Layout (the Puffin spec, https://iceberg.apache.org/puffin-spec/)::

    Magic Blob1 Blob2 ... BlobN Footer
    Footer = Magic FooterPayload FooterPayloadSize Flags Magic

Magic is ``PFA1``; FooterPayload is UTF-8 JSON ``{"blobs": [...], "properties": {...}}``,
each blob with ``type``, ``fields`` (Iceberg field ids), ``snapshot-id``,
``sequence-number``, ``offset``, ``length``, optional ``compression-codec``
(``zstd``: one zstd frame) and ``properties``; FooterPayloadSize is a 4-byte
little-endian int; Flags are 4 bytes, bit 0 of the first set when the payload is
LZ4-compressed (never written here; refused when read).

skipidx writes one blob of type :data:`SKIPIDX_BLOB` per (data file, index):
its payload is the sidecar file itself (an Arrow IPC file in the Lance zone
schema, :mod:`skipidx.store.sidecar`), zstd-compressed; the blob's properties
name the data file, the index and what it was built for (see
:mod:`skipidx.store.iceberg`).
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

import pyarrow as pa

from skipidx.core.errors import CorruptionError

__all__ = ["MAGIC", "SKIPIDX_BLOB", "Blob", "PuffinFooter", "write_puffin", "read_footer", "blob_payload"]

MAGIC = b"PFA1"
#: blob type of a skipidx sidecar: the Arrow IPC bytes of one index's zone table for one data file
SKIPIDX_BLOB = "skipidx-zone-index-v1"


@dataclass
class Blob:
    """One blob to write: its payload and footer metadata (offset and length are set on write)."""

    type: str
    fields: list[int]
    snapshot_id: int
    sequence_number: int
    payload: bytes
    properties: dict[str, str] = field(default_factory=dict)
    compression_codec: str | None = "zstd"
    #: `payload` is compressed already (a blob copied from another Puffin file)
    precompressed: bool = False


@dataclass
class PuffinFooter:
    blobs: list[dict]
    properties: dict[str, str]
    footer_size: int        # bytes of the whole footer (both magics included)
    file_size: int


def write_puffin(path: str, blobs: list[Blob], properties: dict[str, str] | None = None) -> PuffinFooter:
    """Write a Puffin file of `blobs` to `path` (fsynced); its footer as written."""
    from skipidx.store.commit import write_file_durably

    out = bytearray(MAGIC)
    metas = []
    for b in blobs:
        data = (b.payload if b.compression_codec is None or b.precompressed
                else pa.compress(b.payload, codec=b.compression_codec, asbytes=True))
        m = {"type": b.type, "fields": [int(x) for x in b.fields], "snapshot-id": int(b.snapshot_id),
             "sequence-number": int(b.sequence_number), "offset": len(out), "length": len(data)}
        if b.compression_codec is not None:
            m["compression-codec"] = b.compression_codec
        if b.properties:
            m["properties"] = {str(k): str(v) for k, v in b.properties.items()}
        out += data
        metas.append(m)
    props = dict(properties or {})
    payload = json.dumps({"blobs": metas, **({"properties": props} if props else {})}, separators=(",", ":")).encode()
    footer_start = len(out)
    out += MAGIC + payload + struct.pack("<i", len(payload)) + b"\0\0\0\0" + MAGIC
    write_file_durably(path, bytes(out))
    return PuffinFooter(metas, props, len(out) - footer_start, len(out))


def read_footer(data: bytes, where: str = "puffin file") -> PuffinFooter:
    """Parse the footer of the Puffin file `data` (its bytes); CorruptionError if it is no Puffin file."""
    if len(data) < 4 + 16 or data[:4] != MAGIC or data[-4:] != MAGIC:
        raise CorruptionError(f"{where}: not a Puffin file (magic PFA1 missing)")
    size = struct.unpack("<i", data[-12:-8])[0]
    flags = data[-8:-4]
    start = len(data) - 12 - size - 4
    if size < 0 or start < 4 or data[start:start + 4] != MAGIC:
        raise CorruptionError(f"{where}: bad Puffin footer size {size}")
    if flags[0] & 1:
        raise CorruptionError(f"{where}: LZ4-compressed Puffin footers are not read here")
    try:
        doc = json.loads(data[start + 4:start + 4 + size])
        blobs = list(doc["blobs"])
        for m in blobs:
            if not (isinstance(m, dict) and isinstance(m["type"], str) and isinstance(m["offset"], int)
                    and isinstance(m["length"], int) and 4 <= m["offset"] and m["offset"] + m["length"] <= start):
                raise ValueError(f"bad blob entry {m!r}")
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptionError(f"{where}: bad Puffin footer ({e})") from None
    return PuffinFooter(blobs, dict(doc.get("properties") or {}), len(data) - start, len(data))


def blob_payload(data: bytes, blob: dict, where: str = "puffin file") -> bytes:
    """The decompressed payload of `blob` (a footer entry) of the Puffin file `data`."""
    raw = data[blob["offset"]:blob["offset"] + blob["length"]]
    codec = blob.get("compression-codec")
    if codec is None:
        return raw
    if codec != "zstd":
        raise CorruptionError(f"{where}: blob compression {codec!r} is not read here")
    try:
        dec = pa.Codec("zstd")
        # the frame header holds the content size (zstd's one-shot compress writes it)
        n = _zstd_content_size(raw)
        return dec.decompress(raw, decompressed_size=n, asbytes=True)
    except (pa.ArrowException, ValueError) as e:
        raise CorruptionError(f"{where}: undecodable zstd blob ({e})") from None


def _zstd_content_size(frame: bytes) -> int:
    """Frame_Content_Size of a zstd frame header (RFC 8878 3.1.1.1)."""
    if len(frame) < 6 or frame[:4] != b"\x28\xb5\x2f\xfd":
        raise ValueError("not a zstd frame")
    fhd = frame[4]
    fcs_flag, single = fhd >> 6, (fhd >> 5) & 1
    did = {0: 0, 1: 1, 2: 2, 3: 4}[fhd & 3]
    pos = 5 + (0 if single else 1) + did
    size = {0: 1 if single else 0, 1: 2, 2: 4, 3: 8}[fcs_flag]
    if size == 0:
        raise ValueError("zstd frame without its content size")
    v = int.from_bytes(frame[pos:pos + size], "little")
    return v + 256 if size == 2 else v
