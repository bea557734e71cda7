"""One file of a tree put forward or back: its bytes (None: removed), a symlink, its mode and
its owner, through the one atomic writer (`sgpatch.fs.atomic`). What commit writes and what
recovery restores, with the owner rules of docs/safety.md ("Owners")."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sgpatch.fs import atomic, steps
from sgpatch.fs.atomic import SETID, Owner


def owner_of(st: os.stat_result) -> Owner:
    return (st.st_uid, st.st_gid)


def regular(path: Path) -> os.stat_result | None:
    """The stat of the regular file at `path` (never followed through a link), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def digest_of_path(path: Path) -> str | None:
    """sha256 of the regular file at `path`, streamed (None: absent)."""
    from sgpatch.fs.journal import digest_of

    at = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        return digest_of(at, path.name)
    finally:
        os.close(at)


def sync_dirs(folders: set[Path]) -> None:
    """fsync each folder once (the renames in it durable before the journal goes)."""
    for folder in sorted(folders):
        with contextlib.suppress(OSError):
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                atomic.sync_dir(fd)
            finally:
                os.close(fd)


def _folder(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))


def write_file(
    path: Path,
    data: bytes | Iterable[bytes],
    mode: int | None,
    synced: set[Path] | None = None,
    owner: Owner | None = None,
) -> Owner | None:
    """Write `path` atomically; returns the owner the file had and could not keep. With
    `synced`, the folder fsync is left to the caller (commit flushes each folder once,
    before it drops the journal that can undo the rename).

    The new file keeps the mode and the owner and group of the file it replaces (`owner`:
    the journal's record in a rollback, else the file there now), as far as the system lets
    it. It never gains a setuid or setgid bit: it keeps one only if the file it replaces had
    it and its owner and group are kept; a new file, or one whose owner cannot be kept
    (sgpatch is not root), has none. A rewrite by root must not make a file that runs as
    root, nor a rewrite by anyone one that runs as them (docs/safety.md, "Owners")."""
    there = regular(path)
    if mode is None:
        mode = stat.S_IMODE(there.st_mode) if there is not None else 0o644
    if owner is None and there is not None:
        owner = owner_of(there)
    had = there.st_mode & SETID if there is not None and owner == owner_of(there) else 0
    at = _folder(path)
    try:
        kept = atomic.write(
            at, path.name, data, mode, owner=owner, setid=had, sync=synced is None,
            kill_points=True,
        )  # fmt: skip
    finally:
        os.close(at)
    if synced is not None:
        synced.add(path.parent)
    return None if kept or there is None else owner


def write_link(path: Path, target: str, synced: set[Path] | None = None) -> None:
    """A symlink made under an unpredictable temp name, then renamed into place."""
    at = _folder(path)
    try:
        atomic.symlink(at, path.name, target, sync=synced is None, kill_points=True)
    finally:
        os.close(at)
    if synced is not None:
        synced.add(path.parent)


def put(
    root: Path,
    rel: str,
    data: bytes | Iterable[bytes] | None,
    mode: int | None,
    synced: set[Path] | None = None,
    link: str | None = None,
    owner: Owner | None = None,
) -> Owner | None:
    """Put `data` (None: remove), or a link, at `rel`; the owner it could not keep, if any."""
    path = root / rel
    if link is not None:
        write_link(path, link, synced)
    elif data is None:
        if path.exists() or path.is_symlink():
            steps.step()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            if synced is None:
                sync_dirs({path.parent})
            else:
                synced.add(path.parent)
    else:
        return write_file(path, data, mode, synced, owner)
    return None
