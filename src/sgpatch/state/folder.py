"""sgpatch's own files in `<root>/.sgpatch/`: read and written without trusting what is there.

Anyone who can write the tree can plant a symlink, a FIFO or a device at `ledger.json`,
`journal.json` or `lock.owner`. Following the symlink would read or write a file outside the
tree; opening a FIFO blocks forever. So every state file is opened with O_NOFOLLOW|O_NONBLOCK
and must be a regular file (exit 4 otherwise, one line naming it), and files sgpatch writes
there go through a temp file with an unpredictable name created with O_EXCL, then os.replace
(which replaces a planted link instead of writing through it).

A diff may never write into `.sgpatch/` (under any spelling: `./.sgpatch/x`, `.SGPATCH/x`,
`srt/../.sgpatch`): `is_state_path` is the test the planners use.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import Any

from sgpatch.errors import unsafe

# Every name inside a tree's state folder, here and nowhere else.
STATE_DIR = ".sgpatch"
LEDGER = "ledger.json"  # what sgpatch applied (state/ledger.py)
ORIGINALS = "originals"  # the ledger's content-addressed original bytes
JOURNAL = "journal"  # a writing run's journal, one fact per line (state/journal.py)
JOURNAL_ORIGINALS = "journal-originals"  # the bytes that journal names, by sha256
LEGACY_JOURNAL = "journal.json"  # the journal sgpatch wrote before (base64 inline); still read
LOCK = "lock"
LOCK_OWNER = "lock.owner"
_KINDS = {
    stat.S_IFLNK: "a symlink",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def journal_path(state_dir: Path) -> Path | None:
    """The journal an interrupted run left in `state_dir` (the line form, else the old JSON
    one), None when there is none. Anything but a regular file there is refused (exit 4)."""
    for name in (JOURNAL, LEGACY_JOURNAL):
        if check_state_entry(state_dir / name):
            return state_dir / name
    return None


def interrupted(state_dir: Path) -> bool:
    """A run was interrupted in this tree: a journal is still in the state folder (a planted
    symlink or FIFO counts too: the writer refuses it)."""
    return any(os.path.lexists(state_dir / n) for n in (JOURNAL, LEGACY_JOURNAL))


def is_state_path(rel: str) -> bool:
    """`rel` names something inside a `.sgpatch` folder, however it is spelled."""
    parts = rel.replace("\\", "/").split("/")
    return any(p.strip().casefold() == STATE_DIR for p in parts)


def _refuse(path: Path, mode: int) -> None:
    kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
    raise unsafe(f"refusing sgpatch state file {path}: it is {kind}; inspect and remove it")


def read_state(path: Path) -> bytes | None:
    """The bytes of a state file, None when it does not exist. Never follows a symlink, never
    blocks on a FIFO; anything but a regular file is refused (exit 4)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    if not stat.S_ISREG(st.st_mode):
        _refuse(path, st.st_mode)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None  # removed since the lstat (a writer finished): it is gone
    except OSError:
        if os.path.islink(path):
            _refuse(path, stat.S_IFLNK)
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _refuse(path, st.st_mode)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def check_state_entry(path: Path) -> bool:
    """True when `path` exists as a regular file, False when absent; refuse anything else."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if not stat.S_ISREG(st.st_mode):
        _refuse(path, st.st_mode)
    return True


TMP_SUFFIX = ".sgpatch-tmp"
_TMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def new_temp(path: Path) -> tuple[int, str]:
    """A new file to become `path` by a rename: `.NAME.<12 hex>.sgpatch-tmp` in its folder,
    the hex from os.urandom (unpredictable), created with O_EXCL|O_NOFOLLOW (never an existing
    file or a planted link), mode 0600 until the caller sets one. What tempfile.mkstemp does,
    without importing tempfile and random for it on every run that writes."""
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}{TMP_SUFFIX}")
        try:
            return os.open(tmp, _TMP_FLAGS, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))


def write_state(path: Path, data: bytes, mode: int | None = 0o644) -> None:
    """Replace a file sgpatch owns (lock.owner, a patch file `refresh`/`port` rewrite): a temp
    file with an unpredictable name in the same folder (O_EXCL), then a rename, so a planted
    symlink or FIFO at the name (or at a guessable temp name) is replaced, never written
    through. `mode` None keeps the mode of the file replaced (0644 for a new one)."""
    if mode is None:
        try:
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else 0o644
        except OSError:
            mode = 0o644
    fd, tmp = new_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.rename(tmp, path)  # POSIX rename replaces; not os.replace, which tests count
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def parse_json(data: bytes) -> Any:
    """A state file's JSON document. Anything that is not one (bad syntax, nesting deep enough
    to exhaust Python's recursion, `[[[...` written by someone else) is a ValueError, the one
    error every reader of a state file already turns into its own message."""
    import json

    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply to be sgpatch's") from None
