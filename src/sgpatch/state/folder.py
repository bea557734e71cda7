"""sgpatch's own files in `<root>/.sgpatch/`: read and written without trusting what is there.

Anyone who can write the tree can plant a symlink, a FIFO or a device at `ledger.json`,
`journal.json` or `lock.owner`. Following the symlink would read or write a file outside the
tree; opening a FIFO blocks forever. So every state file is opened with O_NOFOLLOW|O_NONBLOCK
and must be a regular file (exit 4 otherwise, one line naming it), and files sgpatch writes
there go through the one atomic writer (`sgpatch.fs.atomic`: a temp file with an unpredictable
name created with O_EXCL, then a rename that replaces a planted link instead of writing
through it).

A diff may never write into `.sgpatch/` (under any spelling: `./.sgpatch/x`, `.SGPATCH/x`,
`srt/../.sgpatch`): `is_state_path` is the test the planners use.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

from sgpatch.errors import unsafe
from sgpatch.fs import regular

# Every name inside a tree's state folder, here and nowhere else.
STATE_DIR = ".sgpatch"
LEDGER = "ledger.json"  # what sgpatch applied (state/ledger.py)
ORIGINALS = "originals"  # the ledger's content-addressed original bytes
JOURNAL = "journal"  # a writing run's journal, one fact per line (state/journal.py)
JOURNAL_ORIGINALS = "journal-originals"  # the bytes that journal names, by sha256
LEGACY_JOURNAL = "journal.json"  # the journal sgpatch wrote before (base64 inline); still read
LOCK = "lock"
LOCK_OWNER = "lock.owner"


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


def _refuse(path: Path, what: str) -> NoReturn:
    raise unsafe(f"refusing sgpatch state file {path}: it is {what}; inspect and remove it")


def _unreadable(path: Path, exc: OSError) -> NoReturn:
    """A state file this user may not read (root made `.sgpatch/` under umask 077): one line
    naming it, exit 4, never a traceback."""
    me = os.geteuid() if hasattr(os, "geteuid") else "?"
    raise unsafe(
        f"cannot read sgpatch's state {path}: {exc.strerror or exc} (sgpatch runs as uid "
        f"{me}); run it as a user who may read the tree's {STATE_DIR}/"
    )


def read_state(path: Path, limit: int | None = None) -> bytes | None:
    """The bytes of a state file, None when it does not exist. Never follows a symlink, never
    blocks on a FIFO; anything but a regular file is refused (exit 4); more than `limit`
    bytes is `regular.TooBig`."""
    try:
        return regular.read(path, limit=limit)
    except regular.OddFile as odd:
        _refuse(path, odd.kind)
    except PermissionError as exc:
        _unreadable(path, exc)


def check_state_entry(path: Path) -> bool:
    """True when `path` exists as a regular file, False when absent; refuse anything else."""
    try:
        return regular.regular(path) is not None
    except regular.OddFile as odd:
        _refuse(path, odd.kind)
    except PermissionError as exc:
        _unreadable(path, exc)


def write_state(path: Path, data: bytes, mode: int | None = 0o644) -> None:
    """Replace a file sgpatch owns (lock.owner, a patch file `refresh`/`port` rewrite) through
    the one atomic writer (fs.atomic): a planted symlink or FIFO at the name (or at a
    guessable temp name) is replaced, never written through. `mode` None keeps the mode of
    the file replaced (0644 for a new one). The writer is imported here only: readers never
    pay for it."""
    from sgpatch.fs import atomic

    atomic.write_path(path, data, mode)


def parse_json(data: bytes) -> Any:
    """A state file's JSON document. Anything that is not one (bad syntax, nesting deep enough
    to exhaust Python's recursion, `[[[...` written by someone else) is a ValueError, the one
    error every reader of a state file already turns into its own message."""
    import json

    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply to be sgpatch's") from None
