"""Rolling back a run that was interrupted: its journal replayed backwards, under the lock.

A crash, kill -9 or OOM kill mid-write leaves `.sgpatch/journal` and its store. `recover`
restores every journalled file (bytes, mode, owner, or link) from the store, deletes what the
run created, its temp files and the folders it made, then removes the journal (the last
step) and the store. Killed half-way, the journal is still there and the next run finishes
it: recovery is idempotent. See docs/safety.md for the format and the guarantees.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from sgpatch import interrupts
from sgpatch.errors import ExitCode, SgpatchError, unsafe
from sgpatch.fs import steps
from sgpatch.state import journal as journal_mod
from sgpatch.state import store
from sgpatch.state.folder import journal_path, read_state
from sgpatch.state.lock import StateGone, check_state_dir, locked, remove_stale_temps
from sgpatch.state.put import owner_of, put, regular, sync_dirs
from sgpatch.tree.files import safe_path


def roll_back_interrupted(
    root: Path, state_dir: Path, wait: float | None = None, tidy: bool = False
) -> list[str] | None:
    """If a killed run left a journal, roll it back under the lock (never under a run that is
    still writing: a journal whose writer holds the lock is that run's, not a crash's). None
    when there was nothing to roll back. `wait`: seconds to wait for a running writer (readers
    pass a short one and then say a run is in progress). `tidy` (`sgpatch recover`): also take
    the lock when there is no journal, so a killed run's other residue (temp files, a stale
    lock.owner, a folder holding only the lock) is removed on the way out."""
    try:
        if journal_path(state_dir) is None:
            if tidy and state_dir.is_dir() and not state_dir.is_symlink():
                with locked(state_dir, wait, create=False):
                    pass  # locked() tidies when it lets go
            return None
        with locked(state_dir, wait, create=False), interrupts.deferred():
            return recover(root, state_dir)
    except StateGone:
        return None  # the writer finished and took .sgpatch/ away: nothing was interrupted


def stop_if_rolled_back(root: Path, state_dir: Path, wait: float | None = None) -> None:
    """What every command does first: roll back an interrupted run, then stop (exit 4) so the
    user sees it happened and runs the command again on a known tree."""
    restored = roll_back_interrupted(root, state_dir, wait)
    if restored is not None:
        raise SgpatchError(
            f"an interrupted sgpatch run was rolled back in {root} "
            f"({len(restored)} file(s) restored: {', '.join(restored) or 'none changed'}); "
            "run the command again",
            ExitCode.UNSAFE,
        )


def recover(root: Path, state_dir: Path) -> list[str] | None:
    """Roll back an interrupted run, if its journal is there. Returns the files restored.

    Call it with the lock held. Restores bytes and mode of every journalled file from the
    store, deletes files the run created, temp files it left and folders it made, then removes
    the journal, then the originals it named.
    """
    path = journal_path(state_dir)
    check_state_dir(state_dir)
    remove_stale_temps(state_dir)
    data = read_state(path) if path is not None else None
    if path is None or data is None:
        return None
    doc = journal_mod.parse(path, data)
    restored = []
    try:
        for e in doc.entries:
            target = safe_path(root, e.path, link_ok=True)  # the killed run may have made a link
            if _restore(root, state_dir, doc, e, target):
                restored.append(e.path)
        for rel in doc.dirs:
            with contextlib.suppress(OSError):
                safe_path(root, rel).rmdir()  # only if empty
        steps.step()
        path.unlink()
        store.drop(state_dir)
    except OSError as exc:
        raise unsafe(
            f"rolling back an interrupted run failed ({exc.strerror or exc}: "
            f"{getattr(exc, 'filename', '') or ''}); the journal {path} is kept, fix the cause "
            "and run sgpatch again"
        ) from None
    sync_dirs({state_dir})
    return restored


def _restore(
    root: Path, state_dir: Path, doc: journal_mod.Journal, e: journal_mod.Entry, target: Path
) -> bool:
    """Put one journalled path back as it was (bytes, mode, owner, or link); True when that
    changed anything."""
    remove_stale_temps(target.parent, target.name)
    now_link = os.readlink(target) if target.is_symlink() else None
    if e.link:
        link = store.blob(state_dir, e.digest or "", doc).decode("utf-8", "surrogateescape")
        if now_link == link:
            return False
        put(root, e.path, None, None, link=link)
        return True
    before = None if e.digest is None else store.blob(state_dir, e.digest, doc)
    st = regular(target) if now_link is None else None
    current = target.read_bytes() if st is not None else None
    same = now_link is None and current == before
    if same and st is not None and before is not None:
        same = (e.mode is None or stat.S_IMODE(st.st_mode) == e.mode) and (
            e.owner is None or owner_of(st) == e.owner
        )
    if same:
        return False
    if now_link is not None and before is None:
        target.unlink()  # a link the run created where nothing was
    else:
        put(root, e.path, before, e.mode, owner=e.owner)
    return True
