"""A target tree's files as every command reads them: the path guards each read and write goes
through and the planned change to one file.

Split from txn (which writes) so read-only commands (status, probe) never import the writer:
its journal, lock and temp-file code stay off their start-up path.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import ExitCode, SgpatchError, unsafe


@dataclass(frozen=True)
class FileChange:
    """One file's planned change; bytes None means 'absent' (create / delete)."""

    path: str  # posix path relative to the tree root
    before: bytes | None
    after: bytes | None
    mode: int | None = None  # permission bits for a new file or a mode change
    link: str | None = None  # the path becomes a symlink to this target (`after` is None)
    before_link: str | None = None  # the path is a symlink to this target now (`before` None)


def safe_path(root: Path, rel: str, link_ok: bool = False) -> Path:
    """`root/rel`, refusing anything that could write outside `root` (exit 4).

    Refused: empty or absolute paths, `..`, NUL bytes, a symlink anywhere on the way that
    resolves outside the tree, a symlink as the file itself (writing through it), and anything
    that exists but is neither a regular file nor a folder (FIFO, socket, device).
    `link_ok`: the file itself may be a symlink, to be replaced or removed as a link (never
    written through); its folders are checked as always.
    """
    if not isinstance(rel, str) or rel in ("", ".") or "\x00" in rel:
        raise unsafe(f"refusing path {rel!r}: not a file path inside the tree")
    if rel.startswith("/") or os.path.isabs(rel):
        raise unsafe(f"refusing absolute path {rel!r}")
    parts = Path(rel).parts
    if ".." in parts:
        raise unsafe(f"refusing path with '..': {rel!r}")
    path = root / rel
    if _plain_path(root, parts, rel):
        return path
    try:
        root_real = os.path.realpath(root)
        cur = root
        for part in parts:
            cur = cur / part
            if cur.is_symlink():
                target = os.path.realpath(cur)
                if cur == path and link_ok:
                    break
                if cur == path:
                    raise unsafe(f"refusing to write through symlink {rel!r} -> {target}")
                if not within(target, root_real):
                    raise unsafe(f"refusing path {rel!r}: symlink {cur} leaves the tree")
        if link_ok and path.is_symlink():
            real = os.path.join(os.path.realpath(path.parent), path.name)  # the link itself
        elif path.exists() and not (path.is_file() or path.is_dir()):
            raise unsafe(f"refusing to touch {rel!r}: not a regular file")
        else:
            real = os.path.realpath(path)
    except OSError as exc:
        raise unsafe(f"refusing path {rel!r}: {exc.strerror or exc}") from None
    if not within(real, root_real):
        raise unsafe(f"refusing path {rel!r}: it resolves outside {root}")
    return path


def _plain_path(root: Path, parts: tuple[str, ...], rel: str) -> bool:
    """The common case of `safe_path`, with one lstat per component and no Path objects: no
    component is a symlink, so `root/rel` resolves under the root's own real path, and the
    file, if there, is a regular file or a folder. False sends every other case (a symlink on
    the way, a component that cannot be looked at) to the full checks."""
    cur = os.fspath(root)
    mode = None
    for part in parts:
        cur = os.path.join(cur, part)
        try:
            mode = os.lstat(cur).st_mode
        except (FileNotFoundError, NotADirectoryError):
            mode = None  # not there (nor what follows), so no symlink either
            continue
        except OSError:
            return False
        if stat.S_ISLNK(mode):
            return False
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise unsafe(f"refusing to touch {rel!r}: not a regular file")
    return True


def within(real: str, root_real: str) -> bool:
    """`real` is `root_real` or under it (both from os.path.realpath: absolute, normalised).
    A string prefix test; `Path.parents` would build a Path per level on every read."""
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def read_bytes(root: Path, rel: str) -> bytes | None:
    """Current bytes of a file in the tree, or None when it does not exist."""
    path = safe_path(root, rel)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise SgpatchError(f"{rel}: is a directory", ExitCode.BAD_INPUT) from None
    except NotADirectoryError:
        raise SgpatchError(f"{rel}: a parent is not a directory", ExitCode.BAD_INPUT) from None
    except OSError as exc:
        raise SgpatchError(f"{rel}: cannot read: {exc.strerror}", ExitCode.BAD_INPUT) from None


def read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of `path` when it is a regular file of at most `limit` bytes; None when it is
    missing, unreadable, too big, or not a regular file. For the files sgpatch reads beside
    a tree to learn about it (a version module, METADATA, RECORD): opened without blocking, so
    a FIFO planted there is never waited on, and /dev/zero is never read to its end."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


MAX_INPUT = 256 << 20  # a patch or a stack file; the largest real stack file is a few MB


def read_input(path: Path, limit: int = MAX_INPUT) -> bytes:
    """The bytes of a file the user named as input (a patch, a stack's mbox). A pipe is read
    as GNU patch reads one (`-i <(curl ...)`), but nothing is read past `limit`: a device such as
    /dev/zero is an OSError (EFBIG) in a moment, not memory filled for minutes."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"more than {limit >> 20} MiB, not a patch")
    return data
