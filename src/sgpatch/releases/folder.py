"""The cache folder: where it is, what may be in it, and what an odd layout says.

`$SGPATCH_CACHE` (default `$XDG_CACHE_HOME/sgpatch`, else `~/.cache/sgpatch`) holds `wheels/`
(the downloaded wheels, a lock per download and `.verified/` stamps) and `snapshots/` (trees
`port --to-tree` kept, in wheel form), nothing else: files are read straight from the wheels,
so deleting the cache is a plain `rm -rf`. Anything sgpatch reads or writes in it must be what
it looks like: a folder (or a link to one) where a folder belongs, a regular file (never a link,
FIFO or device) where a file does. Anything else is one line naming the path, exit 2, before any
read or write.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
from pathlib import Path

from sgpatch.errors import ExitCode, SgpatchError

__all__ = ["CACHE_ENV", "cache_dir", "drop_old_trees", "folder", "regular_file", "wheels_dir"]

CACHE_ENV = "SGPATCH_CACHE"
_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFDIR: "a folder",
    stat.S_IFREG: "a file",
}


def cache_dir() -> Path:
    """`$SGPATCH_CACHE`, else `$XDG_CACHE_HOME/sgpatch` (the XDG base directory convention pip
    follows; a relative value is ignored, as the spec says), else `~/.cache/sgpatch`. Read on
    every call so tests can redirect it."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "sgpatch"


def wheels_dir() -> Path:
    return cache_dir() / "wheels"


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _odd(path: Path, what: str) -> SgpatchError:
    return SgpatchError(
        f"release cache: {path} is {what}; move it away (or set ${CACHE_ENV} to another folder)",
        ExitCode.BAD_INPUT,
    )


def folder(path: Path, *, make: bool) -> bool:
    """Whether the cache folder `path` exists as a folder (or a link to one). With `make`, it
    is made (parents too) when missing; a file, a dangling link or another thing in its place,
    or a folder that cannot be made, is one line."""
    top = cache_dir()
    if path != top and path.is_relative_to(top) and not folder(path.parent, make=make):
        return False  # its parent is missing (and not to be made): so is it
    try:
        st = os.stat(path)  # a folder may be a link to one (wheels/ kept on another disk)
    except FileNotFoundError:
        if os.path.lexists(path):
            raise _odd(path, "a dangling symbolic link, where the cache keeps a folder") from None
        st = None
    except OSError as e:
        raise _odd(path, f"unreadable ({e.strerror})") from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise _odd(path, f"{_kind(st.st_mode)}, where the cache keeps a folder")
    if st is not None or not make:
        return st is not None
    try:
        path.mkdir(parents=path == top, exist_ok=True)
    except OSError as e:
        raise SgpatchError(
            f"release cache: cannot make {path}: {e.strerror}; set ${CACHE_ENV} to a folder "
            "you can write",
            ExitCode.BAD_INPUT,
        ) from None
    return True


def regular_file(path: Path) -> os.stat_result | None:
    """lstat of a file the cache keeps (a wheel, a stamp, a lock): None when it is absent; a
    link, FIFO, folder or device in its place is one line (a FIFO would block a read, a link
    would send a write elsewhere)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _odd(path, f"unreadable ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise _odd(path, f"{_kind(st.st_mode)}, where the cache keeps a regular file")
    return st


@functools.lru_cache(maxsize=8)
def _dropped(top: Path) -> None:
    """Remove `trees/`, the read-only unpacked releases sgpatch kept before it read files
    straight from the wheels (hundreds of MB, and `rm -rf` alone could not delete them).
    Only a real folder of that name is touched; nothing else in the cache is."""
    old = top / "trees"
    try:
        if not stat.S_ISDIR(os.lstat(old).st_mode):
            return
    except OSError:
        return

    for dirpath, dirs, _files in os.walk(old):
        for d in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(dirpath, d), 0o755)  # walk never follows the links
    with contextlib.suppress(OSError):
        os.chmod(old, 0o755)
    shutil.rmtree(old, ignore_errors=True)


def drop_old_trees() -> None:
    """`_dropped` once per process and cache folder."""
    _dropped(cache_dir())
