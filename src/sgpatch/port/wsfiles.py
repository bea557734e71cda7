"""The files of a port workspace, read and written without trusting what is there: every
path is opened relative to a directory descriptor, component by component, never through a
symlink (a symlink planted in W is refused, exit 4); every write goes through a temp file with
an unpredictable name and a rename. Each write is one step of the fault-injection hook."""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath

from sgpatch.errors import SgpatchError, unsafe
from sgpatch.state.folder import TMP_SUFFIX

STATE = ".sgpatch-port"
PKG = "sglang"
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def kill_point() -> None:
    """One write step, for the fault-injection tests' hook (sgpatch.state.txn.kill_point)."""
    from sgpatch.state import txn

    txn.kill_point()


def _parts(rel: str) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
    if not parts or ".." in parts or rel.startswith("/"):
        raise unsafe(f"refusing workspace path {rel!r}")
    return parts


@contextmanager
def _dir(top: Path, parts: list[str], create: bool) -> Iterator[int]:
    """A descriptor of top/parts..., each component opened without following symlinks."""
    fd = os.open(top, _DIR)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):  # made meanwhile: fine, opened next
                    os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            where = f"{top}/{'/'.join(parts)}"
            raise unsafe(f"{where}: a symlink or file in the way; not following it") from None
        raise
    finally:
        os.close(fd)


def read(top: Path, rel: str) -> bytes | None:
    """Bytes of top/rel (None: absent); a symlink anywhere on the way is refused."""
    *dirs, name = _parts(rel)
    try:
        with _dir(top, dirs, create=False) as d:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=d)
            with os.fdopen(fd, "rb") as f:
                return f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise unsafe(f"{top}/{rel} is a symlink; not following it") from None
        raise SgpatchError(f"{top}/{rel}: cannot read: {exc.strerror}") from None


def write(top: Path, rel: str, data: bytes | None) -> None:
    """Replace top/rel with `data` (None: remove it) through an unpredictable temp name."""
    *dirs, name = _parts(rel)
    kill_point()
    if data is None:
        with suppress(FileNotFoundError), _dir(top, dirs, create=False) as d:
            os.unlink(name, dir_fd=d)  # absent, or its folder is: nothing to remove
        return
    with _dir(top, dirs, create=True) as d:
        tmp = f".{name}.{secrets.token_hex(6)}{TMP_SUFFIX}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=d)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=d, dst_dir_fd=d)
        except BaseException:
            os.unlink(tmp, dir_fd=d)
            raise


def append(top: Path, rel: str, line: str) -> None:
    """Add one line to top/rel in one write (a kill leaves at most a last line cut short)."""
    *dirs, name = _parts(rel)
    kill_point()
    with _dir(top, dirs, create=True) as d:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
        fd = os.open(name, flags, 0o644, dir_fd=d)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digests(top: Path, rels: Iterable[str]) -> dict[str, str | None]:
    """sha256 of each top/rel (None: absent), read as `read` reads them (no symlink followed
    anywhere on the way) but folder by folder, each opened once for all its files: a whole
    release tree (3,000+ files) is checked without 20,000 opens of the folders above them. A
    path through a symlink or a file, or a file that cannot be read, is left out."""
    out: dict[str, str | None] = {}
    named = {p: rel for rel in rels if (p := _safe_parts(rel)) is not None}
    chain = _Chain(top)
    try:
        for parts in sorted(named):
            rel, fd = named[parts], chain.at(parts[:-1])
            if fd == _ABSENT:
                out[rel] = None
            elif fd >= 0:
                with suppress(SgpatchError):
                    out[rel] = _file_digest(fd, parts[-1])
    finally:
        chain.close()
    return out


_ABSENT, _UNSAFE = -1, -2


def _safe_parts(rel: str) -> tuple[str, ...] | None:
    parts = tuple(rel.split("/"))
    if rel and not rel.startswith("/") and all(p not in ("", ".", "..") for p in parts):
        return parts  # what _parts makes of a plain path, without pathlib
    try:
        return tuple(_parts(rel))
    except SgpatchError:
        return None


def _file_digest(dir_fd: int, name: str) -> str | None:
    """sha256 of the file `name` in the folder (None: absent); SgpatchError: not a plain
    readable file (a symlink, a folder)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError:
        raise SgpatchError(name) from None
    try:
        with os.fdopen(fd, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        raise SgpatchError(name) from None


class _Chain:
    """The open folders from `top` down to the one last asked for (paths come sorted by
    their parts, so a folder once left is never needed again and is closed)."""

    def __init__(self, top: Path) -> None:
        self.fds: list[int] = [os.open(top, _DIR)]
        self.parts: tuple[str, ...] = ()

    def at(self, parts: tuple[str, ...]) -> int:
        """The descriptor of top/parts, or _ABSENT, or _UNSAFE (a symlink or a file in the way)."""
        common = 0
        while common < min(len(parts), len(self.parts)) and parts[common] == self.parts[common]:
            common += 1
        while len(self.fds) > common + 1:
            fd = self.fds.pop()
            if fd >= 0:
                os.close(fd)
        self.parts = parts[:common]
        for part in parts[common:]:
            fd = self.fds[-1]
            if fd >= 0:
                try:
                    fd = os.open(part, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    fd = _ABSENT
                except OSError:
                    fd = _UNSAFE
            self.fds.append(fd)
            self.parts += (part,)
        return self.fds[-1]

    def close(self) -> None:
        for fd in self.fds:
            if fd >= 0:
                os.close(fd)
        self.fds = []


def rmtree(path: Path) -> None:
    """Remove a folder sgpatch made (its state, a release copy it was laying out), read-only
    folders included; a symlink is unlinked, never followed."""
    if path.is_symlink():
        path.unlink()
        return
    if not path.is_dir():
        return
    for dirpath, dirs, _files in os.walk(path, followlinks=False):
        with suppress(OSError):
            os.chmod(dirpath, 0o755)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(dirpath, d))]
    shutil.rmtree(path)
