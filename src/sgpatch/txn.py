"""The only code that writes to a target tree: path guards, a lock, a journal, atomic replaces.

A run computes every new file content in memory first (see plan). `Transaction.commit` then
  1. checks every path is inside the tree and no file changed since it was read;
  2. writes a journal with the original bytes of every file it will touch, fsynced;
  3. replaces each file through a temp file + os.replace (mode kept);
  4. removes the journal.
Any later run that finds a journal rolls the tree back first (`recover`), so an interrupted run
never leaves a half-patched tree.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import ExitCode, SgpatchError, unsafe

JOURNAL = "journal.json"
LOCK = "lock"


@dataclass(frozen=True)
class FileChange:
    """One file's planned change; bytes None means 'absent' (create / delete)."""

    path: str  # posix path relative to the tree root
    before: bytes | None
    after: bytes | None
    mode: int | None = None  # permission bits for a new file or a mode change


def safe_path(root: Path, rel: str) -> Path:
    """`root/rel`, refusing anything that could write outside `root` (exit 4)."""
    if rel.startswith("/") or os.path.isabs(rel):
        raise unsafe(f"refusing absolute path {rel!r}")
    parts = Path(rel).parts
    if ".." in parts:
        raise unsafe(f"refusing path with '..': {rel!r}")
    root_real = Path(os.path.realpath(root))
    path = root / rel
    cur = root
    for part in parts:
        cur = cur / part
        if cur.is_symlink():
            target = Path(os.path.realpath(cur))
            if cur == path:
                raise unsafe(f"refusing to write through symlink {rel!r} -> {target}")
            if root_real != target and root_real not in target.parents:
                raise unsafe(f"refusing path {rel!r}: symlink {cur} leaves the tree")
    if path.exists() and not (path.is_file() or path.is_dir()):
        raise unsafe(f"refusing to touch {rel!r}: not a regular file")
    real = Path(os.path.realpath(path))
    if real != root_real and root_real not in real.parents:
        raise unsafe(f"refusing path {rel!r}: it resolves outside {root}")
    return path


def read_bytes(root: Path, rel: str) -> bytes | None:
    """Current bytes of a file in the tree, or None when it does not exist."""
    path = safe_path(root, rel)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise SgpatchError(f"{rel}: is a directory", ExitCode.BAD_INPUT) from None
    except OSError as exc:
        raise SgpatchError(f"{rel}: cannot read: {exc.strerror}", ExitCode.BAD_INPUT) from None


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _atomic_write(path: Path, data: bytes, mode: int | None) -> None:
    if mode is None:
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".sgpatch-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _put(root: Path, rel: str, data: bytes | None, mode: int | None) -> None:
    path = root / rel
    if data is None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    else:
        _atomic_write(path, data, mode)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def write_journal(state_dir: Path, changes: Sequence[FileChange], modes: dict[str, int]) -> Path:
    state_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "schema": 1,
        "files": [
            {"path": c.path, "before": _b64(c.before), "mode": modes.get(c.path)} for c in changes
        ],
    }
    path = state_dir / JOURNAL
    _atomic_write(path, json.dumps(doc).encode(), 0o644)
    return path


def recover(root: Path, state_dir: Path) -> list[str] | None:
    """Roll back an interrupted run, if its journal is there. Returns the files restored."""
    path = state_dir / JOURNAL
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
        entries = [(e["path"], _unb64(e["before"]), e.get("mode")) for e in doc["files"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise unsafe(
            f"{path}: unreadable journal of an interrupted run ({exc}); "
            "inspect the tree, then delete the journal"
        ) from None
    restored = []
    for rel, before, mode in entries:
        safe_path(root, rel)
        current = (root / rel).read_bytes() if (root / rel).is_file() else None
        if current != before:
            _put(root, rel, before, mode)
            restored.append(rel)
    path.unlink()
    _fsync_dir(state_dir)
    return restored


@contextlib.contextmanager
def locked(state_dir: Path, timeout: float = 30.0) -> Iterator[None]:
    """One writer per target: wait up to `timeout` seconds, then refuse (exit 4)."""
    from filelock import FileLock, Timeout

    state_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(state_dir / LOCK))
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise unsafe(
            f"another sgpatch run holds the lock {state_dir / LOCK} (waited {timeout:g}s)"
        ) from None
    try:
        yield
    finally:
        lock.release()


def commit(root: Path, state_dir: Path, changes: Sequence[FileChange]) -> None:
    """Write every change or none: verify, journal, replace, drop the journal."""
    changes = [c for c in changes if c.before != c.after or c.mode is not None]
    if not changes:
        return
    modes: dict[str, int] = {}
    for c in changes:
        path = safe_path(root, c.path)
        current = read_bytes(root, c.path)
        if current != c.before:
            raise unsafe(f"{c.path} changed while sgpatch was planning; nothing was written")
        if path.exists():
            modes[c.path] = stat.S_IMODE(path.stat().st_mode)
            if not os.access(path, os.W_OK):
                raise SgpatchError(f"{c.path}: file is read-only; nothing was written")
    journal = write_journal(state_dir, changes, modes)
    try:
        for c in changes:
            _put(root, c.path, c.after, c.mode if c.mode is not None else modes.get(c.path))
    except OSError as exc:
        recover(root, state_dir)
        raise SgpatchError(
            f"write failed ({exc.strerror or exc}: {getattr(exc, 'filename', '')}); "
            "the tree was rolled back, nothing changed"
        ) from None
    journal.unlink()
    _fsync_dir(state_dir)
