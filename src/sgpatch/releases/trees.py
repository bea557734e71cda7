"""Release trees written straight from a verified wheel, in one pass, wherever the caller wants.

The cache keeps no unpacked trees: a tree is laid out from the wheel's members, each hashed
against RECORD as it is written (a wheel changed after it was checked is refused, nothing is
kept of the half tree). Files are created without following links, with the wheel's executable
bit; the tree is the caller's to edit and to delete.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from packaging.version import Version

from sgpatch.errors import SgpatchError
from sgpatch.fs import atomic
from sgpatch.releases import record as rec
from sgpatch.releases.download import PACKAGE, wheel_path
from sgpatch.releases.wheels import Wheel

__all__ = ["LAYOUTS", "Laid", "Layout", "copy_tree", "extract", "lay", "relay"]

Layout = Literal["site-packages", "checkout"]
LAYOUTS: tuple[Layout, ...] = ("site-packages", "checkout")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Laid:
    """A tree `lay` wrote: its package root, and every file it wrote (path relative to the
    folder it was laid in, as `sglang/srt/x.py`) with its hex sha256, straight from RECORD."""

    root: Path
    files: dict[str, str]


def _wanted(name: str, layout: Layout, members: Callable[[str], bool] | None) -> bool:
    in_pkg = name.startswith(f"{PACKAGE}/")
    if not in_pkg and (layout == "checkout" or ".dist-info/" not in name):
        return False
    return members is None or members(name)


def lay(
    version: str | Version,
    dest: Path,
    layout: Layout,
    members: Callable[[str], bool] | None = None,
) -> Laid:
    """Write the release under `dest` in `layout` (only the members `members` keeps, given
    wheel-relative paths such as `sglang/srt/layers/communicator.py`). On any failure what
    this call made is removed again."""
    if layout not in LAYOUTS:
        raise SgpatchError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    wheel = Wheel.of(wheel_path(version))
    dest = Path(dest)
    base = dest / "python" if layout == "checkout" else dest
    made = _new_tops(dest, base, wheel)
    try:
        (base / PACKAGE).mkdir(parents=True, exist_ok=True)
        files = _write_members(wheel, base, layout, members)
    except BaseException as e:
        for p in made:
            shutil.rmtree(p, ignore_errors=True)
        if isinstance(e, OSError):  # a file or link on the way, a full or read-only disk
            raise SgpatchError(
                f"cannot write the release tree under {dest}: {e.strerror or e}"
            ) from None
        raise
    prefix = "python/" if layout == "checkout" else ""
    return Laid(base / PACKAGE, {prefix + n: h for n, h in files.items()})


def _new_tops(dest: Path, base: Path, wheel: Wheel) -> list[Path]:
    """The folders this call will create at the top (removed again if it fails)."""
    if not os.path.lexists(dest):
        return [dest]
    if base != dest:  # checkout: everything goes under dest/python
        inner = [base] if not os.path.lexists(base) else [base / PACKAGE]
        return [p for p in inner if not os.path.lexists(p)]
    dist = {n.split("/", 1)[0] for n in wheel.infos if ".dist-info/" in n}
    tops = [base / PACKAGE, *(base / d for d in sorted(dist))]
    return [p for p in tops if not os.path.lexists(p)]


def _write_members(
    wheel: Wheel,
    base: Path,
    layout: Layout,
    members: Callable[[str], bool] | None,
) -> dict[str, str]:
    """Each kept member written under `base`, checked against RECORD first; name -> hex. The
    members are read (inflated and hashed) here while a `_Writer` thread creates the files:
    both halves are mostly outside the GIL (zlib, hashlib; the kernel making 3,000 inodes),
    so on two cores a release tree takes about the longer of the two, not their sum."""
    out: dict[str, str] = {}
    writer = _Writer(base)
    try:
        with wheel.loaded() if members is None else nullcontext():
            _queue_members(wheel, layout, members, writer, out)
    except BaseException as e:
        writer.stop(e)  # the files queued are dropped: the caller removes the half tree
        raise
    writer.close()  # every file written (or the writer's error raised) before it returns
    return out


def _queue_members(
    wheel: Wheel,
    layout: Layout,
    members: Callable[[str], bool] | None,
    writer: _Writer,
    out: dict[str, str],
) -> None:
    """Read each kept member (hashed against RECORD) and hand it to the writer; name -> hex
    into `out`."""
    for name, info in wheel.infos.items():
        if not _wanted(name, layout, members):
            continue
        data = wheel.read(name)  # hashed against RECORD on the first read
        mode = 0o755 if (info.external_attr >> 16) & 0o111 else 0o644
        writer.put(name, data, mode)
        out[name] = rec.hex_sha256(wheel.record.get(name, "")) or _sha(data)


class _Writer:
    """A thread that writes files under `base`, each folder opened once (relative to its
    parent's descriptor, without following a symlink) and kept open for the files in it, each
    file created without following one. The first error is raised by `put` or `close`; the
    files queued after it are dropped."""

    def __init__(self, base: Path) -> None:
        import queue
        import threading

        self.base = base
        self.jobs: queue.Queue[tuple[str, bytes, int] | None] = queue.Queue(maxsize=64)
        self.error: BaseException | None = None
        self.dirs: dict[str, int] = {}
        self.thread = threading.Thread(target=self._run, name="sgpatch-lay", daemon=True)
        self.thread.start()

    def put(self, name: str, data: bytes, mode: int) -> None:
        self._raise()
        self.jobs.put((name, data, mode))

    def close(self) -> None:
        """Wait for every queued file; raise the writer's error, if any."""
        try:
            self.jobs.put(None)
            self.thread.join()
        except BaseException as e:  # Ctrl-C while waiting
            self.stop(e)
            raise
        self._close_dirs()
        self._raise()

    def stop(self, why: BaseException) -> None:
        """Drop what is queued and wait for the file being written (the thread is gone when
        this returns, so the caller may remove the tree)."""
        import queue

        self.error = self.error or why
        while True:
            try:
                self.jobs.get_nowait()
            except queue.Empty:
                break
        self.jobs.put(None)
        while self.thread.is_alive():
            with suppress(KeyboardInterrupt):  # a second Ctrl-C: still not before it ends
                self.thread.join()
        self._close_dirs()

    def _close_dirs(self) -> None:
        for fd in self.dirs.values():
            os.close(fd)
        self.dirs.clear()

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        while (job := self.jobs.get()) is not None:
            if self.error is None:
                try:
                    self._write(*job)
                except BaseException as e:  # raised in the caller's thread
                    self.error = e

    def _write(self, name: str, data: bytes, mode: int) -> None:
        folder, _, leaf = name.rpartition("/")
        d = self._dir(folder)
        try:
            atomic.create(d, leaf, data, mode, exclusive=False)
        except OSError as e:
            raise SgpatchError(f"cannot write {self.base / name}: {e.strerror}") from None

    def _dir(self, folder: str) -> int:
        """The descriptor of base/folder, made if absent (its parents first)."""
        fd = self.dirs.get(folder)
        if fd is not None:
            return fd
        if not folder:
            fd = os.open(self.base, os.O_RDONLY | os.O_DIRECTORY)
        else:
            parent, _, leaf = folder.rpartition("/")
            up = self._dir(parent)
            with suppress(FileExistsError):
                os.mkdir(leaf, 0o777, dir_fd=up)
            fd = os.open(leaf, _DIR, dir_fd=up)
        self.dirs[folder] = fd
        return fd


def relay(version: str | Version, dest: Path, have: dict[str, str]) -> Laid:
    """Turn a tree laid under `dest` before (site-packages layout; `have`: each file it holds,
    dest-relative, with its hex sha256, checked by the caller) into the release's, writing
    only what differs: a file whose sha256 is the one RECORD gives it is kept (when it has
    the wheel's executable bit), a file the release lacks is removed (and the folders that
    leaves empty), every other file is written anew from the wheel, hashed against RECORD
    as `lay` writes it. Between releases a few hundred files of 3,000 change."""
    wheel = Wheel.of(wheel_path(version))
    want = {n: i for n, i in wheel.infos.items() if _wanted(n, "site-packages", None)}
    _remove(Path(dest), [rel for rel in have if rel not in want])
    out: dict[str, str] = {}
    made: set[str] = set()
    try:
        for name, info in want.items():
            sha = rec.hex_sha256(wheel.record.get(name, ""))
            target = os.path.join(dest, *PurePosixPath(name).parts)
            mode = 0o755 if (info.external_attr >> 16) & 0o111 else 0o644
            if sha is not None and have.get(name) == sha and _kept(target, mode):
                out[name] = sha
                continue
            data = wheel.read(name)  # hashed against RECORD on the first read
            parent = os.path.dirname(target)
            if parent not in made:
                os.makedirs(parent, exist_ok=True)
                made.add(parent)
            with suppress(FileNotFoundError):
                os.unlink(target)  # a new file, never a write through a link to another
            atomic.create_path(target, data, mode)
            out[name] = sha or _sha(data)
    except OSError as e:
        why = e.strerror or e
        raise SgpatchError(f"cannot write the release tree under {dest}: {why}") from None
    return Laid(Path(dest) / PACKAGE, out)


def _kept(target: str, mode: int) -> bool:
    """The file there is a plain file with the executable bit the wheel gives it."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111) == bool(mode & 0o111)


def _remove(dest: Path, rels: list[str]) -> None:
    """Remove the files `rels` under `dest`, then the folders that leaves empty."""
    parents: set[str] = set()
    for rel in rels:
        if rel.startswith("/") or ".." in PurePosixPath(rel).parts:
            continue  # never a path out of `dest`
        target = os.path.join(dest, *PurePosixPath(rel).parts)
        with suppress(FileNotFoundError):
            os.unlink(target)
        parents.add(os.path.dirname(target))
    for folder in sorted(parents, key=len, reverse=True):
        while folder != str(dest) and folder.startswith(str(dest)):
            try:
                os.rmdir(folder)
            except OSError:
                break
            folder = os.path.dirname(folder)


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def extract(
    version: str | Version,
    dest: Path,
    layout: Layout,
    members: Callable[[str], bool] | None = None,
) -> Path:
    """Write the release under `dest` in `layout`; return the package root.

    site-packages: `dest/sglang/` plus `dest/sglang-V.dist-info/`; checkout: `dest/python/sglang/`
    (no dist-info, as in a git clone). `members` gets each wheel-relative path
    (`sglang/srt/layers/communicator.py`) and returns whether to write it; writing only what a
    test needs is much faster than a full tree.
    """
    return lay(version, dest, layout, members).root


def copy_tree(
    version: str | Version,
    dest: Path,
    layout: Layout = "site-packages",
    members: Callable[[str], bool] | None = None,
) -> Path:
    """A fresh writable tree of the release under `dest`; returns its package root (the same
    as `extract`, with site-packages the default layout: 0.5.23's ~3,500 files in about half a
    second)."""
    return lay(version, dest, layout, members).root
