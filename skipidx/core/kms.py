"""Keys of sensitive columns: the application's KMS client, data keys, key material.

The KMS client is anything with pyarrow's ``pyarrow.parquet.encryption.KmsClient``
methods -- ``wrap_key(key_bytes, master_key_identifier)`` and
``unwrap_key(wrapped_key, master_key_identifier)`` -- so one client serves
pyarrow, skipidx and (through the same wrapping) parquet-java. Master keys
never leave the KMS; skipidx only ever stores data keys wrapped by it.

* `KeyRing` is one connection's view of the KMS: fresh data keys (returned
  with their wrapped form, which is what goes to disk) and unwrapping with a
  cache, so a key is asked of the KMS once per connection. A key the KMS
  refuses is a `KeyUnavailableError` naming the key id.
* `parquet_encryption` / `parquet_decryption` give pyarrow's file encryption
  and decryption properties (Arrow's key tools: double wrapping, key
  material inside the file, the format parquet-java reads and writes).
* `unwrap_key_metadata` recovers a data key from a Parquet file's key
  metadata (parquet-java / Arrow key material JSON) with the same client:
  pyarrow exposes no data key to Python.
"""
from __future__ import annotations

import base64
import json
import os
import threading
from typing import Any

from skipidx.core.crypto import DecryptionError, unwrap_key_locally
from skipidx.core.errors import SkipidxError

__all__ = ["KeyUnavailableError", "KeyRing", "check_kms_client", "parquet_encryption",
           "parquet_decryption", "unwrap_key_metadata", "DATA_KEY_BYTES"]

#: AES-128, as Arrow's and parquet-java's key tools generate data keys by default.
DATA_KEY_BYTES = 16


class KeyUnavailableError(SkipidxError):
    """The KMS client is missing, or refuses a master key."""

    def __init__(self, key_id: str, reason: str, *, path: str | None = None) -> None:
        self.key_id = key_id
        self.reason = reason
        super().__init__(f"encryption key {key_id!r} is not available: {reason}", path=path)


def check_kms_client(kms: Any) -> Any:
    if kms is None:
        return None
    for m in ("wrap_key", "unwrap_key"):
        if not callable(getattr(kms, m, None)):
            raise SkipidxError(f"kms must have wrap_key and unwrap_key methods (pyarrow's KmsClient); "
                               f"{type(kms).__name__} lacks {m}")
    return kms


def _as_text(wrapped: Any, key_id: str) -> str:
    """A wrapped key as it is stored (JSON text): str as is, bytes as ASCII, else base64."""
    if isinstance(wrapped, str):
        return wrapped
    if isinstance(wrapped, (bytes, bytearray)):
        try:
            return bytes(wrapped).decode("ascii")
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(bytes(wrapped)).decode()
    raise SkipidxError(f"the KMS client's wrap_key({key_id!r}) returned {type(wrapped).__name__}, not str/bytes")


def _from_text(stored: str) -> str | bytes:
    return base64.b64decode(stored[7:]) if stored.startswith("base64:") else stored


class KeyRing:
    """Data keys through one KMS client (None: every sensitive key is unavailable)."""

    def __init__(self, kms: Any = None) -> None:
        self.kms = check_kms_client(kms)
        self._cache: dict[tuple[str, str], bytes] = {}
        self._lock = threading.Lock()
        self._decryption = None

    def parquet_decryption(self):
        """pyarrow FileDecryptionProperties through this ring's KMS, made once:
        its key tools cache the unwrapped KEKs, so each master key is asked of
        the KMS once, not once per file (see `parquet_decryption`)."""
        if self._decryption is None and self.kms is not None:
            self._decryption = parquet_decryption(self.kms)
        return self._decryption

    def new_key(self, key_id: str) -> tuple[bytes, str]:
        """A fresh random data key and its wrapped form (to store) under master key `key_id`."""
        if self.kms is None:
            raise KeyUnavailableError(key_id, "no KMS client (skipidx.connect(path, kms=client))")
        dek = os.urandom(DATA_KEY_BYTES)
        try:
            wrapped = _as_text(self.kms.wrap_key(dek, key_id), key_id)
        except SkipidxError:
            raise
        except Exception as e:
            raise KeyUnavailableError(key_id, f"the KMS refused to wrap a key ({type(e).__name__}: {e})") from None
        with self._lock:
            self._cache[(key_id, wrapped)] = dek
        return dek, wrapped

    def unwrap(self, key_id: str, wrapped: str, path: str | None = None) -> bytes:
        """The data key stored wrapped as `wrapped` under master key `key_id`."""
        ck = (key_id, wrapped)
        dek = self._cache.get(ck)
        if dek is not None:
            return dek
        if self.kms is None:
            raise KeyUnavailableError(key_id, "no KMS client (skipidx.connect(path, kms=client))", path=path)
        try:
            dek = self.kms.unwrap_key(_from_text(wrapped), key_id)
        except Exception as e:
            raise KeyUnavailableError(key_id, f"the KMS refused it ({type(e).__name__}: {e})", path=path) from None
        if isinstance(dek, bytearray):
            dek = bytes(dek)
        if not isinstance(dek, bytes) or len(dek) not in (16, 24, 32):
            raise KeyUnavailableError(key_id, "the KMS returned no AES key", path=path)
        with self._lock:
            self._cache[ck] = dek
        return dek


# ---------------------------------------------------------------- pyarrow

def _pyarrow_kms(kms: Any):
    import pyarrow.parquet.encryption as pe

    if isinstance(kms, pe.KmsClient):
        return kms

    class _Adapter(pe.KmsClient):
        def __init__(self) -> None:
            super().__init__()

        def wrap_key(self, key_bytes, master_key_identifier):
            return kms.wrap_key(key_bytes, master_key_identifier)

        def unwrap_key(self, wrapped_key, master_key_identifier):
            return kms.unwrap_key(wrapped_key, master_key_identifier)

    return _Adapter()


def _factory(kms: Any):
    import pyarrow.parquet.encryption as pe

    client = _pyarrow_kms(kms)
    return pe.CryptoFactory(lambda _cfg: client), pe.KmsConnectionConfig()


def parquet_encryption(kms: Any, footer_key: str, column_keys: dict[str, list[str]]):
    """pyarrow FileEncryptionProperties: footer encrypted with `footer_key`,
    each column with its key id ({key id: [columns]}); data keys random, double-wrapped."""
    import pyarrow.parquet.encryption as pe

    if kms is None:
        raise KeyUnavailableError(footer_key, "no KMS client (skipidx.connect(path, kms=client))")
    factory, conn = _factory(kms)
    cfg = pe.EncryptionConfiguration(footer_key=footer_key, column_keys=column_keys,
                                     encryption_algorithm="AES_GCM_V1", plaintext_footer=False,
                                     double_wrapping=True, internal_key_material=True)
    try:
        return factory.file_encryption_properties(conn, cfg)
    except Exception as e:
        raise KeyUnavailableError(footer_key, f"cannot set up Parquet encryption ({type(e).__name__}: {e})") from None


def parquet_decryption(kms: Any):
    """pyarrow FileDecryptionProperties resolving every key through `kms`.

    Never hand these to pyarrow for a column whose key the KMS refuses:
    pyarrow aborts the process then (check with `KeyRing.unwrap` first).
    """
    if kms is None:
        return None
    factory, conn = _factory(kms)
    return factory.file_decryption_properties(conn)


# ------------------------------------------------------- Parquet key material

def unwrap_key_metadata(key_metadata: bytes, kms: Any, where: str | None = None) -> tuple[bytes, str]:
    """(data key, master key id) from a Parquet file's key metadata.

    The key metadata of parquet-java's and Arrow's key tools with internal
    storage is the key material itself, a flat JSON object: ``masterKeyID``,
    ``wrappedDEK`` and, when ``doubleWrapping``, ``keyEncryptionKeyID`` and
    ``wrappedKEK``. Single wrapping: the KMS unwraps the data key. Double: the
    KMS unwraps the KEK, which unwraps the data key locally with AES-GCM and
    the decoded KEK id as AAD (FileKeyUnwrapper).
    """
    try:
        m = json.loads(bytes(key_metadata).decode("utf-8"))
        if not isinstance(m, dict):
            raise ValueError("not an object")
    except (ValueError, UnicodeDecodeError):
        raise SkipidxError("Parquet key metadata is not key material JSON (an explicit-key file: "
                           "its keys cannot come from a KMS)", path=where) from None
    if m.get("keyMaterialType") != "PKMT1":
        raise SkipidxError(f"unsupported key material type {m.get('keyMaterialType')!r}", path=where)
    if str(m.get("internalStorage", "")).lower() != "true":
        raise SkipidxError("key material stored outside the file (an external key material store) "
                           "is not supported", path=where)
    mid = m.get("masterKeyID")
    dek_w = m.get("wrappedDEK")
    if not isinstance(mid, str) or not isinstance(dek_w, str):
        raise SkipidxError("key material lacks masterKeyID / wrappedDEK", path=where)
    if kms is None:
        raise KeyUnavailableError(mid, "no KMS client given", path=where)
    double = str(m.get("doubleWrapping", "")).lower() == "true"
    try:
        if not double:
            dek = kms.unwrap_key(dek_w, mid)
        else:
            kek_id, kek_w = m.get("keyEncryptionKeyID"), m.get("wrappedKEK")
            if not isinstance(kek_id, str) or not isinstance(kek_w, str):
                raise SkipidxError("double-wrapped key material lacks its KEK", path=where)
            kek = kms.unwrap_key(kek_w, mid)
            dek = unwrap_key_locally(dek_w, bytes(kek), base64.b64decode(kek_id), f"data key of {mid!r}")
    except (SkipidxError, DecryptionError):
        raise
    except Exception as e:
        raise KeyUnavailableError(mid, f"the KMS refused it ({type(e).__name__}: {e})", path=where) from None
    if not isinstance(dek, (bytes, bytearray)) or len(dek) not in (16, 24, 32):
        raise KeyUnavailableError(mid, "the KMS returned no AES key", path=where)
    return bytes(dek), mid
