"""SHA-256 of the bytes sgpatch keeps and checks: the ledger's records, the store, the journal.

One hasher for every writer, so a short run never imports hashlib: its OpenSSL (libcrypto)
costs ~3 ms to load, more than hashing the few hundred KB a set's files hold with the
interpreter's own SHA-256, the module hashlib itself falls back to without OpenSSL. The
digest is the same either way; past a MiB in one run, hashlib's faster code takes over.
"""

from __future__ import annotations

import functools
import importlib
from typing import overload


@overload
def sha256(data: bytes) -> str: ...
@overload
def sha256(data: None) -> None: ...
@overload
def sha256(data: bytes | None) -> str | None: ...
def sha256(data: bytes | None) -> str | None:
    """The hex SHA-256 of `data` (None for None)."""
    return None if data is None else _digest(data)


@functools.lru_cache(maxsize=64)
def _digest(data: bytes) -> str:
    """Keyed by the bytes themselves: apply hashes each file's bytes before and after for the
    ledger and again for the store, and a repeated blob is looked up, not hashed again."""
    return _hasher(len(data))(data).hexdigest()


_BUILTIN_BUDGET = 1 << 20  # bytes hashed with the interpreter's own SHA-256 before hashlib's
_hashed = 0


def _hasher(size: int):
    """SHA-256 from the interpreter's own module (what hashlib itself falls back to without
    OpenSSL) while a run has hashed under a MiB; hashlib's (OpenSSL's) after that. Importing
    hashlib loads libcrypto, ~3 ms of every run, and status or apply of a set hash a few
    hundred KB: less than that at either speed. The digest is the same either way."""
    global _hashed
    _hashed += size
    builtin = _builtin_sha256() if _hashed <= _BUILTIN_BUDGET else None
    if builtin is not None:
        return builtin
    import hashlib

    return hashlib.sha256


@functools.cache
def _builtin_sha256():
    """`_sha2.sha256` (3.12+) or `_sha256.sha256` (3.10, 3.11); None where neither is built."""
    for name in ("_sha2", "_sha256"):
        try:
            return importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            continue
    return None
