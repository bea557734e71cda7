"""Atomic writes: a file is made whole under a temp name nobody can guess or plant (O_EXCL,
O_NOFOLLOW, from os.urandom), then renamed over the name in one step, relative to the
descriptor of its folder. A link, FIFO or file planted at the name is replaced, never written
through; a crash leaves the old file or the new one, and at worst a temp file (`TMP_SUFFIX`)
the next writer removes. `durable` fsyncs the file before the rename; the folder's fsync makes
the rename itself durable (`sync_dir`, once per folder where a caller writes many files)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from sgpatch.fs import steps

TMP_SUFFIX = ".sgpatch-tmp"
NAME_MAX = 255  # bytes in one file name (Linux, macOS): a temp name must fit too
SETID = stat.S_ISUID | stat.S_ISGID
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_TMP = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC

Owner = tuple[int, int]  # (uid, gid)


_TAIL = len(".123456789abc") + len(TMP_SUFFIX)  # what temp_name adds after the prefix


def temp_prefix(name: str) -> str:
    """`.NAME`, the start of every temp name of `name`: NAME cut short so a whole temp name
    stays within NAME_MAX bytes (a 250-byte name gets a temp name too)."""
    room = NAME_MAX - 1 - _TAIL
    while len(os.fsencode(name)) > room:
        name = name[: max(0, len(name) - max(1, len(os.fsencode(name)) - room))]
    return f".{name}"


def temp_name(name: str) -> str:
    """`.NAME.<12 hex>.sgpatch-tmp`, the hex from os.urandom (`temp_prefix`: NAME bounded)."""
    return f"{temp_prefix(name)}.{os.urandom(6).hex()}{TMP_SUFFIX}"


def is_temp(entry: str, name: str | None = None) -> bool:
    """`entry` is a temp name sgpatch made (for `name`, or for any name)."""
    if not entry.endswith(TMP_SUFFIX) or not entry.startswith("."):
        return False
    return name is None or entry.startswith(temp_prefix(name) + ".")


def new_temp(at: int, name: str, mode: int = 0o600) -> tuple[int, str]:
    """A new, empty file in the folder `at` to become `name` by a rename: (descriptor, its
    temp name). Mode 0600 until the caller sets one. What tempfile.mkstemp does, without
    importing tempfile and random on every run that writes."""
    for _ in range(100):
        tmp = temp_name(name)
        try:
            return os.open(tmp, _TMP, mode, dir_fd=at), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


def fsync(fd: int) -> None:
    """os.fsync; one name so in-process fault-injection tests can skip the disk flush (a
    SIGKILL loses nothing the kernel has; only power loss needs it)."""
    os.fsync(fd)


def sync_dir(at: int) -> None:
    """Make the renames and unlinks in the folder `at` durable (errors ignored: some file
    systems cannot fsync a folder, and the data itself was synced)."""
    with contextlib.suppress(OSError):
        fsync(at)


def _fill(fd: int, data: bytes | Iterable[bytes]) -> None:
    view = [data] if isinstance(data, bytes) else data
    for chunk in view:
        mv = memoryview(chunk)
        while mv:
            mv = mv[os.write(fd, mv) :]


def _chown(fd: int, owner: Owner | None) -> bool:
    """Give the open temp file `owner`; False when there is none, or the system refuses (not
    root, another user's file, a file system without owners)."""
    if owner is None:
        return False
    st = os.fstat(fd)
    if (st.st_uid, st.st_gid) == owner:
        return True
    try:
        os.fchown(fd, *owner)
    except OSError:
        return False
    return True


def write(
    at: int,
    name: str,
    data: bytes | Iterable[bytes],
    mode: int,
    *,
    owner: Owner | None = None,
    setid: int = 0,
    durable: bool = True,
    sync: bool = True,
    kill_points: bool = False,
) -> bool:
    """Replace `name` in the folder `at` with `data` (bytes, or chunks streamed), mode
    `mode`. `owner` (uid, gid) is given to the new file where the system lets it; the set-id
    bits in `setid` are kept only then (a file that could not keep its owner never keeps
    them; chown clears them, so the mode is set after it). Returns whether `owner` was kept
    (False when none was given). `sync=False` leaves the folder's fsync to the caller;
    `kill_points`: the temp write and the rename are each a step of the test hook."""
    if kill_points:
        steps.step()
    fd, tmp = new_temp(at, name)
    try:
        try:
            _fill(fd, data)
            kept = _chown(fd, owner)
            os.fchmod(fd, (mode & ~SETID) | (mode & setid if kept else 0))
            if durable:
                fsync(fd)
        finally:
            os.close(fd)
        if kill_points:
            steps.step()
        os.replace(tmp, name, src_dir_fd=at, dst_dir_fd=at)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=at)
        raise
    if sync:
        sync_dir(at)
    return kept


def symlink(
    at: int, name: str, target: str, *, sync: bool = True, kill_points: bool = False
) -> None:
    """Replace `name` in `at` with a symlink to `target`: made under a temp name, renamed."""
    if kill_points:
        steps.step()
    tmp = temp_name(name)
    os.symlink(target, tmp, dir_fd=at)
    try:
        if kill_points:
            steps.step()
        os.replace(tmp, name, src_dir_fd=at, dst_dir_fd=at)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=at)
        raise
    if sync:
        sync_dir(at)


def rename(src_at: int, src: str, dst_at: int, dst: str) -> None:
    """Move `src` (in `src_at`) to `dst` (in `dst_at`) in one step: a file, or a whole
    folder (a folder lands only where nothing but an empty folder is)."""
    os.replace(src, dst, src_dir_fd=src_at, dst_dir_fd=dst_at)


def hard_link(src_at: int, src: str, dst_at: int, dst: str) -> None:
    """A second name `dst` (in `dst_at`) for the file `src` (in `src_at`), neither followed
    if it is a link; FileExistsError when `dst` exists (never replaced)."""
    os.link(src, dst, src_dir_fd=src_at, dst_dir_fd=dst_at, follow_symlinks=False)


def create(at: int, name: str, data: bytes, mode: int = 0o644, exclusive: bool = True) -> None:
    """A new file `name` in `at` (never through a link; `exclusive`: never an existing file,
    else one there is emptied first). The umask applies to `mode`, as for any new file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | _CLOEXEC
    fd = os.open(name, flags | (os.O_EXCL if exclusive else os.O_TRUNC), mode, dir_fd=at)
    try:
        _fill(fd, data)
    finally:
        os.close(fd)


def append(at: int, name: str, data: bytes, durable: bool = False) -> None:
    """Add `data` to the end of `name` in `at` (made when absent, never through a link) in one
    write: a crash leaves at most its last line cut short."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | _CLOEXEC
    fd = os.open(name, flags, 0o644, dir_fd=at)
    try:
        _fill(fd, data)
        if durable:
            fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# the same by path, for files outside a tree (the release cache, a set folder): the folder is
# opened as named (a cache kept on another disk through a link is fine), the name never followed


def _parent(path: str | os.PathLike[str]) -> tuple[int, str]:
    folder, name = os.path.split(os.path.abspath(path))
    return os.open(folder or "/", os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC), name


def write_path(
    path: str | os.PathLike[str],
    data: bytes,
    mode: int | None = 0o644,
    durable: bool = False,
    owner: Owner | None = None,
) -> None:
    """`write` by path; `mode` None keeps the mode of the file replaced (0644 for a new one);
    `owner` given where the system lets it."""
    at, name = _parent(path)
    try:
        if mode is None:
            from sgpatch.fs.regular import lstat

            st = lstat(name, at)
            mode = stat.S_IMODE(st.st_mode) if st and stat.S_ISREG(st.st_mode) else 0o644
        write(at, name, data, mode, owner=owner, durable=durable, sync=durable)
    finally:
        os.close(at)


@contextlib.contextmanager
def writing(path: str | os.PathLike[str], mode: int = 0o644) -> Iterator[BinaryIO]:
    """A file object to write `path` through: a temp file renamed over the name when the
    block ends, removed when it raises (a zip archive built member by member, never held
    whole in memory)."""
    at, name = _parent(path)
    try:
        fd, tmp = new_temp(at, name)
        try:
            with os.fdopen(fd, "wb") as fh:
                yield fh
                fh.flush()
                os.fchmod(fh.fileno(), mode)
            os.replace(tmp, name, src_dir_fd=at, dst_dir_fd=at)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=at)
            raise
    finally:
        os.close(at)


def rename_path(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """`rename` by path (each folder opened as named, neither name followed)."""
    src_at, src_name = _parent(src)
    try:
        dst_at, dst_name = _parent(dst)
        try:
            rename(src_at, src_name, dst_at, dst_name)
        finally:
            os.close(dst_at)
    finally:
        os.close(src_at)


def create_path(
    path: str | os.PathLike[str], data: bytes, mode: int = 0o600, exclusive: bool = True
) -> None:
    """`create` by path."""
    at, name = _parent(path)
    try:
        create(at, name, data, mode, exclusive)
    finally:
        os.close(at)
