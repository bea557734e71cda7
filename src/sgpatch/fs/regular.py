"""A regular file opened without trusting what is at its name: never through a symlink
(O_NOFOLLOW), never waiting on a FIFO (O_NONBLOCK), only when fstat says it is a regular file,
and read within a bound, so /dev/zero or a 3 GB sparse file is refused in a moment instead of
filling memory. Anything else at the name is `OddFile`, which each caller words its own way
(a state file: exit 4; the release cache: exit 2; a workspace file: exit 4)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

KINDS = {
    stat.S_IFLNK: "a symlink",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
    stat.S_IFREG: "a regular file",
}
FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
CHUNK = 1 << 20


class OddFile(Exception):
    """Something that is not a regular file where one belongs (or not a folder where a folder
    does): `kind` says what, e.g. "a symlink". It was not followed, opened or waited on."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path} is {kind}")
        self.path = path
        self.kind = kind


class TooBig(Exception):
    """A regular file larger than the bound its reader set; `size` is what fstat says."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size} bytes, more than {limit}")
        self.path, self.size, self.limit = path, size, limit


def kind(mode: int) -> str:
    """What a stat mode is, for a message: "a symlink", "a FIFO", ..."""
    return KINDS.get(stat.S_IFMT(mode), "not a regular file")


def lstat(name: str | os.PathLike[str], dir_fd: int | None = None) -> os.stat_result | None:
    """The stat of the name itself (a link is not followed); None when it is absent."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def regular(name: str | os.PathLike[str], dir_fd: int | None = None) -> os.stat_result | None:
    """The stat of the regular file at the name (None: absent); `OddFile` for anything else."""
    st = lstat(name, dir_fd)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OddFile(os.fspath(name), kind(st.st_mode))
    return st


def open_regular(
    name: str | os.PathLike[str], dir_fd: int | None = None, follow: bool = False
) -> int | None:
    """A read-only descriptor of the regular file at the name, None when it is absent.
    Looked at before it is opened (a device is never opened: opening one can act), opened
    without blocking, and checked again once open (the name may have changed in between).
    `follow`: a symlink at the name is followed (a file a person pointed sgpatch at)."""
    if not follow:
        regular(name, dir_fd)
    flags = FLAGS & ~os.O_NOFOLLOW if follow else FLAGS
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OddFile(os.fspath(name), "a symlink") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OddFile(os.fspath(name), kind(st.st_mode))
    return fd


def read_fd(fd: int, limit: int | None = None, name: str = "") -> bytes:
    """Everything in the open regular file, refused (`TooBig`) when fstat or the bytes read say
    it holds more than `limit`: never more than limit + 1 bytes are read."""
    size = os.fstat(fd).st_size
    if limit is not None and size > limit:
        raise TooBig(name, size, limit)
    out, got = [], 0
    while chunk := os.read(fd, CHUNK if limit is None else min(CHUNK, limit + 1 - got)):
        out.append(chunk)
        got += len(chunk)
        if limit is not None and got > limit:
            raise TooBig(name, got, limit)
    return b"".join(out)


def read(
    name: str | os.PathLike[str],
    dir_fd: int | None = None,
    limit: int | None = None,
    follow: bool = False,
) -> bytes | None:
    """The bytes of the regular file at the name (None: absent), within `limit`."""
    fd = open_regular(name, dir_fd, follow)
    if fd is None:
        return None
    try:
        return read_fd(fd, limit, os.fspath(name))
    finally:
        os.close(fd)


def chunks(fd: int, size: int) -> Iterator[bytes]:
    """The first `size` bytes of an open file, a chunk at a time (a file is streamed, never
    held whole); fewer when it ends sooner."""
    left = size
    while left > 0 and (chunk := os.read(fd, min(CHUNK, left))):
        left -= len(chunk)
        yield chunk
