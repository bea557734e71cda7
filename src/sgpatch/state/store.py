"""The journal's store: `.sgpatch/journal-originals/<sha256>`, the bytes a writing run's
journal names (each file as it was before the run), read-only and content-addressed, so the
rollback of one file is a `cp` from here. Kept only while a journal needs it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from sgpatch.errors import unsafe
from sgpatch.fs import atomic
from sgpatch.state import journal as journal_mod
from sgpatch.state.digest import sha256
from sgpatch.state.folder import JOURNAL_ORIGINALS, read_state


def store(state_dir: Path, data: bytes) -> str:
    """Put `data` in the store (read-only) unless a regular file with those bytes is already
    there; return its sha256. Not a kill point of the test hook: until the journal names them
    these files are scratch, which a crash leaves to the next writer to remove (`drop`); the
    tree is not touched yet."""
    digest = sha256(data)
    path = state_dir / JOURNAL_ORIGINALS / digest
    if read_state(path) == data:
        return digest
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        atomic.write(fd, digest, data, 0o444, sync=False)
    finally:
        os.close(fd)
    return digest


def blob(state_dir: Path, digest: str, doc: journal_mod.Journal) -> bytes:
    """An original the journal names, from the old form's inline bytes or from the store,
    checked against its digest."""
    inline = dict(doc.inline)
    folder = state_dir / JOURNAL_ORIGINALS
    data = inline[digest] if digest in inline else read_state(folder / digest)
    if data is None or sha256(data) != digest:
        raise unsafe(
            f"the journal names original {digest[:12]}, which {folder} lacks or holds damaged; "
            "inspect the tree, then delete the journal"
        )
    return data


def drop(state_dir: Path) -> None:
    """Empty and remove the store once no journal needs it."""
    folder = state_dir / JOURNAL_ORIGINALS
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
    with contextlib.suppress(OSError):
        folder.rmdir()
