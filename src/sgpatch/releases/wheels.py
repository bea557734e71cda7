"""A cached wheel: checked whole once, then each file checked again when a run first reads it.

`verify_wheel` hashes every member against RECORD (on download, and again whenever the wheel's
size or mtime changes; a stamp in `wheels/.verified/` spares other processes the work). After
that the wheel is read in place, never unpacked into the cache: `Wheel.read` hashes a member
against its RECORD row the first time this process reads it, so a wheel changed behind the
stamp's back is caught on exactly the files a run uses. Members that are links or special files
(a zip can say so in its mode bits) or that would land outside the tree are refused.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.fs import atomic
from sgpatch.releases import folder
from sgpatch.releases import record as rec

__all__ = ["Wheel", "checked_stamp", "discard", "verify_wheel", "write_stamp"]

_WEAK_HASHES = frozenset({"md5", "sha1"})
_SIGNATURES = ("RECORD", "RECORD.jws", "RECORD.p7s")


@dataclass(frozen=True)
class _Key:
    """Identity of a wheel file on disk, so memoised readers go stale when the file changes."""

    path: Path
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> _Key:
        st = folder.regular_file(path)
        if st is None:
            raise SgpatchError(f"release cache: {path} is gone (removed while sgpatch ran?)")
        return cls(path, st.st_size, st.st_mtime_ns)


def _open_zip(path: Path) -> zipfile.ZipFile:
    if folder.regular_file(path) is None:
        raise SgpatchError(f"release cache: {path} is gone (removed while sgpatch ran?)")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise SgpatchError(f"{path.name} is not a readable wheel: {e}") from None


def _record_name(zf: zipfile.ZipFile, path: Path) -> str:
    names = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/RECORD", n) is not None]
    if len(names) != 1:
        raise SgpatchError(f"{path.name}: expected one *.dist-info/RECORD, found {len(names)}")
    return names[0]


def _read_record(zf: zipfile.ZipFile, path: Path) -> tuple[str, dict[str, rec.Row]]:
    name = _record_name(zf, path)
    try:
        return name, rec.parse(zf.read(name).decode("utf-8"), path.name)
    except (UnicodeDecodeError, zipfile.BadZipFile, OSError, EOFError) as e:
        raise SgpatchError(f"{path.name}: unreadable RECORD: {e}") from None


def _check_member(info: zipfile.ZipInfo, path: Path) -> None:
    """A member must be a plain file inside the tree: no absolute or `..` path, no link, FIFO
    or device (a zip records the type in the high bits of external_attr)."""
    name = info.filename
    p = PurePosixPath(name)
    if p.is_absolute() or ".." in p.parts or "\\" in name:
        raise SgpatchError(f"{path.name}: unsafe member path {name!r}", ExitCode.UNSAFE)
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind not in (0, stat.S_IFREG):
        raise SgpatchError(
            f"{path.name}: {name} is not a regular file (mode {oct(info.external_attr >> 16)}): "
            "links and special files are refused",
            ExitCode.UNSAFE,
        )


def _hash_ok(alg_hash: str, data: bytes) -> bool:
    alg, _, want = alg_hash.partition("=")
    return rec.digest(alg, data) == want


def _strong(alg_hash: str, name: str, path: Path) -> None:
    alg = alg_hash.partition("=")[0]
    if alg in _WEAK_HASHES or alg not in hashlib.algorithms_available:
        raise SgpatchError(f"{path.name}: {name} uses unsupported RECORD hash {alg!r}")


def _read(zf: zipfile.ZipFile, info: zipfile.ZipInfo | str, path: Path) -> bytes:
    try:
        return zf.read(info)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        name = info if isinstance(info, str) else info.filename
        raise SgpatchError(f"{path.name}: {name} is corrupt: {e}") from None


def verify_wheel(path: Path) -> dict[str, str]:
    """Check that `path` is a zip whose every file matches its RECORD hash and size; return
    wheel-relative path -> "sha256=<urlsafe b64>" (RECORD itself, which has no hash, left out).
    Any mismatch, missing or unlisted member, link or special file is an error."""
    with _open_zip(path) as zf:
        rec_name, rows = _read_record(zf, path)
        unsigned = {f"{rec_name.rsplit('/', 1)[0]}/{s}" for s in _SIGNATURES}
        hashes: dict[str, str] = {}
        for info in zf.infolist():
            name = info.filename
            if info.is_dir() or name in unsigned:
                continue
            _check_member(info, path)
            row = rows.get(name)
            if row is None or not row.hash:
                raise SgpatchError(f"{path.name}: {name} is not listed with a hash in RECORD")
            _strong(row.hash, name, path)
            data = _read(zf, info, path)
            if not _hash_ok(row.hash, data):
                raise SgpatchError(f"{path.name}: {name} does not match its RECORD hash")
            if row.size and row.size != str(len(data)):
                raise SgpatchError(
                    f"{path.name}: {name} is {len(data)} bytes, RECORD says {row.size}"
                )
            hashes[name] = row.hash
        missing = sorted(n for n in rows if n not in hashes and n not in unsigned)
        if missing:
            raise SgpatchError(f"{path.name}: RECORD lists {missing[0]} but the wheel lacks it")
    return hashes


# ---------------------------------------------------------------------------------------------
# stamps: verified once per (size, mtime)


def _stamp(path: Path) -> Path:
    return path.parent / ".verified" / f"{path.name}.ok"


def _stamp_text(key: _Key) -> str:
    return f"{key.size} {key.mtime_ns}\n"


def checked_stamp(path: Path) -> bool:
    """Whether the wheel's stamp says it was verified as it is now (size and mtime)."""
    stamp = _stamp(path)
    if not folder.folder(stamp.parent, make=False) or folder.regular_file(stamp) is None:
        return False
    try:
        return stamp.read_text() == _stamp_text(_Key.of(path))
    except (OSError, UnicodeDecodeError):
        return False


def write_stamp(path: Path) -> None:
    """Say the wheel is verified; a cache this process cannot write keeps no stamp (the wheel
    is verified again next time, nothing fails)."""
    stamp = _stamp(path)
    folder.folder(stamp.parent, make=False) or _try_mkdir(stamp.parent)
    folder.regular_file(stamp)  # a link or FIFO there is refused, never written through
    with _quiet():
        atomic.write_path(stamp, _stamp_text(_Key.of(path)).encode(), 0o644)


def _try_mkdir(path: Path) -> bool:
    try:
        path.mkdir(exist_ok=True)
    except OSError:
        return False
    return True


def _quiet():
    import contextlib

    return contextlib.suppress(OSError)


def discard(path: Path) -> None:
    """Remove a damaged wheel and its stamp (a download makes it anew)."""
    for p in (_stamp(path), path):
        with _quiet():
            os.unlink(p)


# ---------------------------------------------------------------------------------------------
# reading a verified wheel


class Wheel:
    """An opened, verified wheel: its RECORD, its members, and reads checked against RECORD
    the first time this process reads each file. One per wheel file as it is on disk."""

    def __init__(self, key: _Key) -> None:
        self.key, self.path = key, key.path
        self.zip = _open_zip(key.path)
        _, rows = _read_record(self.zip, key.path)
        self.rows = rows
        self.record = {name: row.hash for name, row in rows.items() if row.hash}
        self.infos = {i.filename: i for i in self.zip.infolist() if not i.is_dir()}
        self._checked: set[str] = set()

    @staticmethod
    def of(path: Path) -> Wheel:
        return _wheel_for(_Key.of(path))

    def read(self, name: str) -> bytes:
        """The member's bytes; the first read of each hashes it against RECORD."""
        info = self.infos.get(name)
        if info is None:
            raise KeyError(name)
        data = _read(self.zip, info, self.path)
        if name not in self._checked:
            self.check(info, data)
        return data

    @contextlib.contextmanager
    def loaded(self) -> Iterator[None]:
        """Members read from a copy of the wheel in memory while inside. A pass over a whole
        release (3,000 members) seeks and reads the file some 10,000 times, each a syscall
        that hands the GIL to the thread writing the tree and waits to win it back: ~15% of
        laying a tree. Outside, nothing is kept (a matrix over 42 releases holds 8 wheels)."""
        import io

        disk = self.zip
        self.zip = zipfile.ZipFile(io.BytesIO(_bytes_of(self.key)))
        try:
            yield
        finally:
            self.zip.close()
            self.zip = disk

    def check(self, info: zipfile.ZipInfo, data: bytes) -> None:
        """`data` (member `info`) matches RECORD, or the wheel is damaged: its stamp is dropped
        (the next run verifies it whole) and the read is one line."""
        name = info.filename
        _check_member(info, self.path)
        want = self.record.get(name)
        if want is None and name in self.rows:  # RECORD itself and signatures: no hash
            self._checked.add(name)
            return
        if want is None or not _hash_ok(want, data):
            discard(self.path)
            raise SgpatchError(
                f"release cache: {self.path.name}: {name} does not match its RECORD hash (the "
                "wheel changed after it was checked); removed it, the next run downloads it "
                "again",
                ExitCode.UNSAFE,
            )
        self._checked.add(name)


def _bytes_of(key: _Key) -> bytes:
    """The wheel's bytes, from the file this Wheel was opened on (same size and mtime; else
    it changed while sgpatch ran, and nothing is read from it). Gone, or unreadable (no
    permission, an I/O error), is said as such: neither is "changed"."""
    try:
        with open(key.path, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and (st.st_size, st.st_mtime_ns) == (
                key.size,
                key.mtime_ns,
            ):
                return f.read()
    except FileNotFoundError:
        raise SgpatchError(
            f"release cache: {key.path} was removed while sgpatch ran; run it again"
        ) from None
    except OSError as e:
        raise SgpatchError(f"release cache: {key.path}: cannot read: {e.strerror or e}") from None
    raise SgpatchError(f"release cache: {key.path} changed while sgpatch ran; run it again")


@functools.lru_cache(maxsize=8)
def _wheel_for(key: _Key) -> Wheel:
    return Wheel(key)
