"""A test KMS: master keys in memory, keys wrapped as base64(nonce | AES-GCM(master, key, AAD = key id)).

tests/fixtures/java/skipidxtest/TestKms.java wraps the same way, so files
that parquet-java (Spark) writes through it unwrap with this client and the
other way round. It is a pyarrow KmsClient, so pyarrow uses it too.
"""
from __future__ import annotations

import base64
import os

import pyarrow.parquet.encryption as pe
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


class MemoryKms(pe.KmsClient):
    def __init__(self, keys: dict[str, bytes]) -> None:
        super().__init__()
        self.keys = dict(keys)
        self.calls: list[tuple[str, str]] = []

    def wrap_key(self, key_bytes, master_key_identifier):
        self.calls.append(("wrap", master_key_identifier))
        if master_key_identifier not in self.keys:
            raise KeyError(f"no master key {master_key_identifier}")
        n = os.urandom(12)
        ct = AESGCM(self.keys[master_key_identifier]).encrypt(n, bytes(key_bytes), master_key_identifier.encode())
        return base64.b64encode(n + ct)

    def unwrap_key(self, wrapped_key, master_key_identifier):
        self.calls.append(("unwrap", master_key_identifier))
        if master_key_identifier not in self.keys:
            raise KeyError(f"no master key {master_key_identifier}")
        raw = base64.b64decode(wrapped_key)
        return AESGCM(self.keys[master_key_identifier]).decrypt(raw[:12], raw[12:], master_key_identifier.encode())


def master_keys(seed: int = 0, ids=("kf", "k1", "k2", "k3")) -> dict[str, bytes]:
    """Deterministic 128-bit master keys per id (tests only)."""
    return {k: bytes((seed * 31 + i * 7 + j) % 256 for j in range(16)) for i, k in enumerate(ids)}


def java_key_list(keys: dict[str, bytes]) -> str:
    """The Hadoop property value TestKms.java reads (skipidx.test.master.keys)."""
    return ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in keys.items())
