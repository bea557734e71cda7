"""The files of a port workspace, read and written without trusting what is there: every
path is opened relative to a directory descriptor, component by component, never through a
symlink (a symlink planted in W is refused, exit 4); every write goes through a temp file with
an unpredictable name and a rename. Each write is one step of the fault-injection hook.

The release tree in W holds what a set's patches make of it, every kind git records: a file
(mode 100644), an executable one (100755) and a symlink (120000), whose "bytes" are its target
(`read_entry`, `write(..., mode=)`). A symlink there is read with readlink, never followed;
one on the way to a file is refused as anywhere else.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath

from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK
from sgpatch.errors import SgpatchError, unsafe
from sgpatch.fs import atomic, steps
from sgpatch.port.statefiles import STATE

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def kill_point() -> None:
    """One write step, for the fault-injection tests' hook (sgpatch.fs.steps)."""
    steps.step()


def _parts(rel: str) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
    if not parts or ".." in parts or rel.startswith("/"):
        raise unsafe(f"refusing workspace path {rel!r}")
    return parts


@contextmanager
def _dir(top: Path, parts: list[str], create: bool) -> Iterator[int]:
    """A descriptor of top/parts..., each component opened without following symlinks (a
    folder of the state kept open by `kept_dirs` is reused, not opened again)."""
    kept = _kept.get(str(top)) if parts and parts[0] == STATE else None
    fd = -1
    try:
        fd = _open_dir(top, tuple(parts), create, kept)
        yield fd
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            where = f"{top}/{'/'.join(parts)}"
            raise unsafe(f"{where}: a symlink or file in the way; not following it") from None
        raise
    finally:
        if kept is None and fd >= 0:
            os.close(fd)


@contextmanager
def opened_dir(top: Path, rel: str) -> Iterator[int | None]:
    """A descriptor of the folder top/rel opened as `read` opens folders (no symlink followed
    on the way; exit 4 for one); None when it is absent."""
    import contextlib

    with contextlib.ExitStack() as stack:
        try:
            fd: int | None = stack.enter_context(_dir(top, _parts(rel), create=False))
        except FileNotFoundError:
            fd = None
        yield fd


def _open_dir(top: Path, parts: tuple[str, ...], create: bool, kept: dict | None) -> int:
    """Open top/parts component by component, from the deepest folder `kept` holds; each
    folder opened is added to `kept` (None: nothing kept, the caller closes the result)."""
    start = len(parts)
    while kept is not None and start >= 0 and parts[:start] not in kept:
        start -= 1
    if kept is not None and start >= 0:
        fd = kept[parts[:start]]
    else:
        start, fd = 0, os.open(top, _DIR)
        if kept is not None:
            kept[()] = fd
    for n in range(start, len(parts)):
        try:
            nxt = _open_part(fd, parts[n], create)
        except BaseException:
            if kept is None:
                os.close(fd)
            raise
        if kept is None:
            os.close(fd)
        else:
            kept[parts[: n + 1]] = nxt
        fd = nxt
    return fd


def _open_part(fd: int, part: str, create: bool) -> int:
    try:
        return os.open(part, _DIR, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
        with suppress(FileExistsError):  # made meanwhile: fine, opened next
            os.mkdir(part, 0o755, dir_fd=fd)
        return os.open(part, _DIR, dir_fd=fd)


# top -> (parts -> descriptor) of the folders `kept_dirs` keeps open for a step's writes
_kept: dict[str, dict[tuple[str, ...], int]] = {}


@contextmanager
def kept_dirs(top: Path) -> Iterator[None]:
    """Keep the folders of W's state (`top/.sgpatch-port/...`) that reads and writes open
    while inside: one step of the port makes some 900 reads and writes there, in a few dozen
    folders, and each folder is opened once (component by component, as `_dir` opens them)
    and reused for every file in it. Removing a folder (`rmtree`) drops them all, as does
    leaving. The tree (`W/sglang/...`), the person's to edit, is opened afresh for every file,
    so a symlink planted there meanwhile is refused at once. Nested: the outer one keeps."""
    key = str(top)
    if key in _kept:
        yield
        return
    _kept[key] = {}
    try:
        yield
    finally:
        _forget(_kept.pop(key))


def _forget(fds: dict[tuple[str, ...], int]) -> None:
    for fd in fds.values():
        os.close(fd)
    fds.clear()


def _forget_all() -> None:
    """A folder is removed or moved: no kept descriptor may outlive its path."""
    for fds in _kept.values():
        _forget(fds)


def read(top: Path, rel: str) -> bytes | None:
    """Bytes of top/rel (None: absent); a symlink anywhere on the way is refused, and so is
    anything but a regular file (opened without blocking: a FIFO planted there is refused, not
    waited on)."""
    *dirs, name = _parts(rel)
    try:
        with _dir(top, dirs, create=False) as d:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=d)
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    raise unsafe(f"{top}/{rel} is not a regular file; not reading it")
                return f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise unsafe(f"{top}/{rel} is a symlink; not following it") from None
        raise SgpatchError(f"{top}/{rel}: cannot read: {exc.strerror}") from None


def read_entry(top: Path, rel: str) -> tuple[bytes | None, int]:
    """Bytes and git mode of top/rel: a file's bytes (100644, or 100755 with an execute
    bit), or a symlink's target (120000), read with readlink and never followed; (None,
    100644) when absent. A symlink on the way to it is refused, as by `read`."""
    *dirs, name = _parts(rel)
    try:
        with _dir(top, dirs, create=False) as d:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=d)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                return os.fsencode(os.readlink(name, dir_fd=d)), SYMLINK
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode):
                    raise unsafe(f"{top}/{rel} is not a regular file; not reading it")
                return f.read(), EXECUTABLE if st.st_mode & 0o111 else REGULAR
    except FileNotFoundError:
        return None, REGULAR
    except OSError as exc:
        raise SgpatchError(f"{top}/{rel}: cannot read: {exc.strerror}") from None


def mode_of(top: Path, rel: str) -> int:
    """The git mode of top/rel from its status alone (lstat: a symlink is never followed):
    120000 for a symlink, 100755 for a file with an execute bit, else (absent too) 100644."""
    *dirs, name = _parts(rel)
    try:
        with _dir(top, dirs, create=False) as d:
            st = os.stat(name, dir_fd=d, follow_symlinks=False)
    except FileNotFoundError:
        return REGULAR
    if stat.S_ISLNK(st.st_mode):
        return SYMLINK
    return EXECUTABLE if stat.S_ISREG(st.st_mode) and st.st_mode & 0o111 else REGULAR


def entry_digest(data: bytes, mode: int = REGULAR) -> str:
    """What `tree` and a step's journal record for a path: the sha256 of a file's bytes, or,
    for a symlink, of its target after a marker no text file starts with (so a file holding
    a link's target text is never taken for the link)."""
    return digest(b"\0symlink\0" + data if mode == SYMLINK else data)


def write(
    top: Path, rel: str, data: bytes | None, durable: bool = False, mode: int = REGULAR
) -> None:
    """Replace top/rel with `data` (None: remove it) through an unpredictable temp name;
    `durable`: the bytes are on disk before the rename (the journal's own originals). `mode`:
    the git mode to give it (100755: executable; 120000: a symlink to `data`)."""
    *dirs, name = _parts(rel)
    kill_point()
    if data is None:
        with suppress(FileNotFoundError), _dir(top, dirs, create=False) as d:
            os.unlink(name, dir_fd=d)  # absent, or its folder is: nothing to remove
        return
    if mode == SYMLINK:
        _afresh(top, lambda: _link(top, dirs, name, os.fsdecode(data)))
        return
    perm = 0o755 if mode == EXECUTABLE else 0o644
    _afresh(top, lambda: _replace(top, dirs, name, data, durable, perm))


def _afresh(top: Path, act: Callable[[], None]) -> None:
    """Run a write; if a kept folder was removed meanwhile (a file cannot be made in it),
    drop the kept folders and run it again on the path opened afresh, as without them."""
    try:
        act()
    except FileNotFoundError:
        if not _kept.get(str(top)):
            raise
        _forget_all()
        act()


def _replace(
    top: Path, dirs: list[str], name: str, data: bytes, durable: bool, perm: int = 0o644
) -> None:
    with _dir(top, dirs, create=True) as d:
        atomic.write(d, name, data, perm, durable=durable, sync=durable)


def _link(top: Path, dirs: list[str], name: str, target: str) -> None:
    with _dir(top, dirs, create=True) as d:
        atomic.symlink(d, name, target, sync=False)


def append(top: Path, rel: str, line: str) -> None:
    """Add one line to top/rel in one write, on disk before this returns (a journal's line
    comes before the write it covers; a kill leaves at most a last line cut short)."""
    *dirs, name = _parts(rel)
    kill_point()
    _afresh(top, lambda: _append(top, dirs, name, line))


def _append(top: Path, dirs: list[str], name: str, line: str) -> None:
    with _dir(top, dirs, create=True) as d:
        atomic.append(d, name, line.encode("utf-8", "surrogateescape"), durable=True)


def sync(top: Path, rels: Iterable[str]) -> None:
    """Put the files top/rel (those still there) and their folders on disk: what a step
    wrote, before its journal goes (the commit point). Folder by folder, never through a
    link; a file that cannot be opened is left to the next step's journal."""
    folders: dict[tuple[str, ...], list[str]] = {}
    for rel in rels:
        *dirs, name = _parts(rel)
        folders.setdefault(tuple(dirs), []).append(name)
    for folder, names in folders.items():
        with suppress(FileNotFoundError), _dir(top, list(folder), create=False) as d:
            for name in names:
                with suppress(OSError):
                    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=d)
                    try:
                        atomic.fsync(fd)
                    finally:
                        os.close(fd)
            atomic.sync_dir(d)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digests(top: Path, rels: Iterable[str]) -> dict[str, str | None]:
    """sha256 of each top/rel (None: absent; a symlink: its `entry_digest`, never followed),
    read as `read` reads them (no symlink followed anywhere on the way) but folder by folder,
    each opened once for all its files: a whole release tree (3,000+ files) is checked without
    20,000 opens of the folders above them. A path through a symlink or a file is left out; a
    file there that cannot be read (no permission, a FIFO, a folder), or below a folder that
    cannot be opened (no permission), is UNREADABLE, which matches no digest: it is not
    sgpatch's bytes, so --abort lists it rather than deleting it unseen."""
    out: dict[str, str | None] = {}
    named = {p: rel for rel in rels if (p := _safe_parts(rel)) is not None}
    chain = _Chain(top)
    try:
        for parts in sorted(named):
            rel, fd = named[parts], chain.at(parts[:-1])
            if fd == _ABSENT:
                out[rel] = None
            elif fd == _CLOSED:
                out[rel] = UNREADABLE
            elif fd >= 0:
                with suppress(SgpatchError):
                    out[rel] = _file_digest(fd, parts[-1])
    finally:
        chain.close()
    return out


_ABSENT, _UNSAFE, _CLOSED = -1, -2, -3  # _CLOSED: a folder there this user cannot open


def _safe_parts(rel: str) -> tuple[str, ...] | None:
    parts = tuple(rel.split("/"))
    if rel and not rel.startswith("/") and all(p not in ("", ".", "..") for p in parts):
        return parts  # what _parts makes of a plain path, without pathlib
    try:
        return tuple(_parts(rel))
    except SgpatchError:
        return None


UNREADABLE = "unreadable"  # digests' value for a file there that cannot be read


def _file_digest(dir_fd: int, name: str) -> str | None:
    """sha256 of the file `name` in the folder, or a symlink's `entry_digest` (None: absent;
    UNREADABLE: something there that cannot be read as a plain file); SgpatchError: a
    symlink whose target cannot be read."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink: its target, read, never followed
            try:
                return entry_digest(os.fsencode(os.readlink(name, dir_fd=dir_fd)), SYMLINK)
            except OSError:
                raise SgpatchError(name) from None
        return UNREADABLE
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return UNREADABLE  # a FIFO, device or folder: not a plain file
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return UNREADABLE


class _Chain:
    """The open folders from `top` down to the one last asked for (paths come sorted by
    their parts, so a folder once left is never needed again and is closed)."""

    def __init__(self, top: Path) -> None:
        self.fds: list[int] = [os.open(top, _DIR)]
        self.parts: tuple[str, ...] = ()

    def at(self, parts: tuple[str, ...]) -> int:
        """The descriptor of top/parts, or _ABSENT, or _UNSAFE (a symlink or a file in the
        way), or _CLOSED (a folder on the way that cannot be opened: no permission)."""
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
                except OSError as exc:
                    fd = _UNSAFE if exc.errno in (errno.ELOOP, errno.ENOTDIR) else _CLOSED
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
    _forget_all()
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
