"""The journal's store in a tree: `.sgpatch/journal-originals/<sha256>`, the bytes a writing
run's journal names (each file as it was before the run), read-only and content-addressed, so
the rollback of one file is a `cp` from here (the store itself is `sgpatch.fs.journal.Store`).
Kept only while a journal needs it; a symlink planted at its name is refused (exit 4), never
followed into a folder whose files would then be deleted."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from sgpatch.errors import unsafe
from sgpatch.fs import dirs
from sgpatch.fs.journal import Damaged, Store
from sgpatch.state.folder import JOURNAL_ORIGINALS


@contextlib.contextmanager
def opened(
    state_dir: Path, create: bool = False, owner: tuple[int, int] | None = None
) -> Iterator[Store | None]:
    """The store of the state folder (None: there is none, and not `create`d); what it
    makes gets `owner` where one is named."""
    where = state_dir / JOURNAL_ORIGINALS
    try:
        at = os.open(state_dir, dirs.FLAGS)
    except FileNotFoundError:
        if create:
            raise
        yield None
        return
    except OSError as exc:
        raise unsafe(f"refusing state folder {state_dir}: {exc.strerror or exc}") from None
    try:
        try:
            store = Store.open(at, JOURNAL_ORIGINALS, str(where), create, owner)
        except Damaged as exc:
            raise unsafe(f"refusing {where}: {exc}; inspect and remove it") from None
        if store is None:
            yield None
            return
        try:
            yield store
        finally:
            store.close()
    finally:
        os.close(at)


def drop(state_dir: Path) -> None:
    """Empty and remove the store once no journal needs it (nothing when it is absent; a
    symlink at its name is refused, exit 4: never followed)."""
    with opened(state_dir) as store:
        if store is None:
            return
        store.drop()
    with contextlib.suppress(OSError):
        os.rmdir(state_dir / JOURNAL_ORIGINALS)


__all__ = ["drop", "opened"]
