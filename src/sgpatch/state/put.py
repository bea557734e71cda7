"""One file of a tree put forward or back: its bytes (None: removed), a symlink, its mode and
its owner, through the one atomic writer (`sgpatch.fs.atomic`), with the owner rules of
docs/safety.md ("Owners").

Every write and delete goes through the descriptor of the folder it lands in (`Tree`): the
tree's root is opened once, and each folder below it component by component with O_NOFOLLOW
(openat/renameat/unlinkat), so a folder swapped for a symlink while sgpatch runs stops the run
(exit 4) instead of sending a write, or a delete, out of the tree. A symlinked folder that
stays inside the tree (which the path guards allow) is resolved first, then opened the same
way.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sgpatch.errors import unsafe
from sgpatch.fs import atomic, dirs, steps
from sgpatch.fs.atomic import SETID, Owner
from sgpatch.fs.regular import OddFile, lstat
from sgpatch.tree.files import within


def owner_of(st: os.stat_result) -> Owner:
    return (st.st_uid, st.st_gid)


def regular(path: Path) -> os.stat_result | None:
    """The stat of the regular file at `path` (never followed through a link), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


class Tree:
    """A tree's root held open for one commit or rollback, and the folders below it opened as
    they are needed (each once). `new_owner`: the owner sgpatch gives what it creates (root
    on another user's tree: that user; else None, the process's own)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real = os.path.realpath(root)
        self.fd = dirs.open_top(root)
        st = os.fstat(self.fd)
        mine = not hasattr(os, "geteuid") or os.geteuid() != 0 or st.st_uid == 0
        self.new_owner: Owner | None = None if mine else owner_of(st)
        self._dirs: dict[str, int] = {}
        self._touched: set[int] = set()

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in {self.fd, *self._dirs.values()}:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._dirs.clear()

    def folder(self, rel: str, create: bool = False) -> int:
        """The descriptor of the folder `rel` (root-relative, '' for the root): its symlinks
        inside the tree resolved as they are now, then each component opened with
        O_NOFOLLOW. exit 4 for one that leads out, or a link swapped in meanwhile;
        FileNotFoundError when it is missing (and not `create`d)."""
        fd = self._dirs.get(rel)
        if fd is not None:
            return fd
        real = os.path.realpath(os.path.join(self.root, rel)) if rel else self.real
        if not within(real, self.real):
            raise unsafe(f"refusing to write under {rel!r}: it resolves outside {self.root}")
        inner = os.path.relpath(real, self.real)
        names = [] if inner == "." else inner.split(os.sep)
        try:
            fd = dirs.open_dir(self.fd, names, create, 0o755, self.new_owner)
        except OddFile as odd:
            raise unsafe(
                f"refusing to write under {rel!r}: {odd.path} is {odd.kind} (it changed while "
                "sgpatch ran); nothing is written through it"
            ) from None
        self._dirs[rel] = fd
        return fd

    def locate(self, rel: str, create: bool = False) -> tuple[int, str]:
        """(folder descriptor, file name) of the root-relative path `rel`."""
        parent, _, name = rel.rpartition("/")
        return self.folder(parent, create), name

    def touched(self, fd: int) -> None:
        """A folder whose entries changed: fsynced by `sync`."""
        self._touched.add(fd)

    def sync(self) -> None:
        """fsync each folder written in (the renames durable, e.g. before the journal goes)."""
        for fd in self._touched:
            atomic.sync_dir(fd)
        self._touched.clear()


def write_file(
    tree: Tree,
    rel: str,
    data: bytes | Iterable[bytes],
    mode: int | None,
    owner: Owner | None = None,
) -> Owner | None:
    """Write `rel` atomically; returns the owner the file had and could not keep. The folder's
    fsync is left to `tree.sync` (commit flushes each folder once, before it drops the
    journal that can undo the rename).

    The new file keeps the mode and the owner and group of the file it replaces (`owner`:
    the journal's record in a rollback, else the file there now), as far as the system lets
    it. It never gains a setuid or setgid bit: it keeps one only if the file it replaces had
    it and its owner and group are kept; a new file, or one whose owner cannot be kept
    (sgpatch is not root), has none. A rewrite by root must not make a file that runs as
    root, nor a rewrite by anyone one that runs as them (docs/safety.md, "Owners"). A file
    root creates in another user's tree is that user's."""
    at, name = tree.locate(rel, create=True)
    st = lstat(name, at)
    there = st if st is not None and stat.S_ISREG(st.st_mode) else None
    if mode is None:
        mode = stat.S_IMODE(there.st_mode) if there is not None else 0o644
    if owner is None:
        owner = owner_of(there) if there is not None else tree.new_owner
    had = there.st_mode & SETID if there is not None and owner == owner_of(there) else 0
    kept = atomic.write(at, name, data, mode, owner=owner, setid=had, sync=False, kill_points=True)
    tree.touched(at)
    return None if kept or there is None else owner


def write_link(tree: Tree, rel: str, target: str) -> None:
    """A symlink made under an unpredictable temp name, then renamed into place."""
    at, name = tree.locate(rel, create=True)
    atomic.symlink(at, name, target, sync=False, kill_points=True)
    tree.touched(at)


def remove(tree: Tree, rel: str) -> None:
    """Remove the file or link `rel` (nothing when it, or its folder, is absent)."""
    try:
        at, name = tree.locate(rel)
    except FileNotFoundError:
        return
    if lstat(name, at) is None:
        return
    steps.step()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=at)
    tree.touched(at)


def put(
    tree: Tree,
    rel: str,
    data: bytes | Iterable[bytes] | None,
    mode: int | None,
    link: str | None = None,
    owner: Owner | None = None,
) -> Owner | None:
    """Put `data` (None: remove), or a link, at `rel`; the owner it could not keep, if any."""
    if link is not None:
        write_link(tree, rel, link)
    elif data is None:
        remove(tree, rel)
    else:
        return write_file(tree, rel, data, mode, owner)
    return None
