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
from collections.abc import Iterator
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
