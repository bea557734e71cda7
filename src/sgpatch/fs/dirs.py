"""Folders opened without following links: every write and delete sgpatch makes in a tree or
a workspace goes through a descriptor of the folder it lands in, opened component by
component from the top with O_NOFOLLOW, so a folder swapped for a symlink mid-run stops the
run (`OddFile`) instead of sending the write elsewhere (openat/unlinkat/renameat, as git's
and rsync's careful writers do). The top itself is the folder a person named, opened once."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence

from sgpatch.fs.regular import OddFile, kind, lstat

FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class BadPath(ValueError):
    """A relative path that could leave its top: empty, absolute, `..`, a NUL byte."""


def parts(rel: str) -> list[str]:
    """The components of a top-relative path ('.' and empty ones dropped); `BadPath` for one
    that is absolute, climbs with '..', holds a NUL byte or names nothing."""
    if not rel or rel.startswith("/") or "\x00" in rel:
        raise BadPath(rel)
    out = [p for p in rel.split("/") if p not in ("", ".")]
    if not out or ".." in out:
        raise BadPath(rel)
    return out


def open_top(path: str | os.PathLike[str]) -> int:
    """A descriptor of the top folder a person named (links in its own path followed: it is
    theirs to name); everything below it is opened from here."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))


def open_dir(
    at: int,
    names: Sequence[str],
    create: bool = False,
    mode: int = 0o755,
    owner: tuple[int, int] | None = None,
) -> int:
    """A new descriptor of at/names..., each component opened with O_NOFOLLOW; with `create`,
    missing folders are made with exactly `mode` (whatever the umask), and given `owner`
    (uid, gid) when one is named. `OddFile` when a symlink or a file stands in the way;
    FileNotFoundError when one is missing."""
    fd = os.dup(at)
    try:
        for n, name in enumerate(names):
            nxt = _open_part(fd, name, create, mode, names[: n + 1], owner)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_part(
    fd: int,
    name: str,
    create: bool,
    mode: int,
    where: Sequence[str],
    owner: tuple[int, int] | None = None,
) -> int:
    try:
        return os.open(name, FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
        made = mkdir(fd, name, mode)
        sub = _open_part(fd, name, False, mode, where)
        if made:
            if owner is not None:
                with contextlib.suppress(OSError):
                    os.fchown(sub, *owner)
            os.fchmod(sub, mode)  # the umask narrowed mkdir's mode: set it exactly
        return sub
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            st = lstat(name, fd)
            what = kind(st.st_mode) if st is not None else "not a folder"
            raise OddFile("/".join(where), what) from None
        raise


def mkdir(at: int, name: str, mode: int = 0o755) -> bool:
    """Make the folder `name` in `at`; False when something is there already."""
    try:
        os.mkdir(name, mode, dir_fd=at)
    except FileExistsError:
        return False
    return True


@contextlib.contextmanager
def opened(at: int, names: Sequence[str], create: bool = False, mode: int = 0o755) -> Iterator[int]:
    """`open_dir` as a context: the descriptor is closed on the way out."""
    fd = open_dir(at, names, create, mode)
    try:
        yield fd
    finally:
        os.close(fd)


def is_dir(at: int, name: str) -> bool:
    """`name` in `at` is a folder itself (a link to one is not)."""
    st = lstat(name, at)
    return st is not None and stat.S_ISDIR(st.st_mode)


def remove_tree(at: int, name: str) -> None:
    """Remove `name` in `at` and all it holds, without following any link (a link is removed
    as a link); read-only folders sgpatch made are opened up first. Absent: nothing to do."""
    st = lstat(name, at)
    if st is None:
        return
    if not stat.S_ISDIR(st.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=at)
        return
    fd = os.open(name, FLAGS, dir_fd=at)
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) | 0o700)
        for entry in list(os.scandir(fd)):
            remove_tree(fd, entry.name)
    finally:
        os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(name, dir_fd=at)


def remove_path(path: str | os.PathLike[str]) -> None:
    """`remove_tree` of a path: its folder opened as named, the last name never followed."""
    parent, name = os.path.split(os.path.abspath(path))
    try:
        fd = open_top(parent or "/")
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        remove_tree(fd, name)
    finally:
        os.close(fd)
