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
from collections.abc import Iterator
from pathlib import Path

from sgpatch import interrupts
from sgpatch.errors import ExitCode, SgpatchError, unsafe
from sgpatch.fs.atomic import is_temp
from sgpatch.fs.journal import Damaged, Entry, Journal, Store, digest_of
from sgpatch.fs.regular import TooBig, lstat
from sgpatch.state import journal as journal_mod
from sgpatch.state import store
from sgpatch.state.folder import (
    LEDGER,
    ORIGINALS,
    STATE_DIR,
    is_state_path,
    journal_path,
    read_state,
)
from sgpatch.state.lock import (
    StateGone,
    check_replay_trusted,
    check_state_dir,
    locked,
    remove_stale_temps,
)
from sgpatch.state.put import Tree, owner_of, put, remove
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
        found = journal_path(state_dir)
        if found is None:
            if tidy and state_dir.is_dir() and not state_dir.is_symlink():
                with locked(state_dir, wait, create=False):
                    store.drop(state_dir)  # scratch originals (a link planted there: exit 4)
            return None
        check_replay_trusted(root, found)  # root: another user's journal is theirs to replay
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


MAX_JOURNAL = 64 << 20  # a journal's own text: a line per file, a few KB for a whole set


def recover(root: Path, state_dir: Path) -> list[str] | None:
    """Roll back an interrupted run, if its journal is there. Returns the files restored.

    Call it with the lock held. Every line and every original is checked before anything is
    touched (a damaged journal or original: exit 4, the tree and the journal as they were).
    Then restores bytes, mode and owner of every journalled file from the store, deletes
    files the run created, temp files it left and folders it made, then removes the journal,
    then the originals it named.
    """
    path = journal_path(state_dir)
    check_state_dir(state_dir)
    try:
        data = read_state(path, MAX_JOURNAL) if path is not None else None
    except TooBig:
        raise journal_mod.unreadable(path or state_dir, "larger than 64 MiB") from None
    if path is None or data is None:
        return None
    doc = journal_mod.parse(path, data)
    with store.opened(state_dir) as originals, Tree(root) as tree:
        _check(root, path, doc, originals)
        remove_stale_temps(state_dir)
        restored = _replay(tree, path, doc, originals)
    store.drop(state_dir)
    return restored


def _check(root: Path, path: Path, doc: Journal, originals: Store | None) -> None:
    """Before anything is touched: every path a plain one inside the tree (in `.sgpatch/`
    only the ledger and its store, which a commit writes with the tree), every original there
    with the journal's size and digest."""
    inline = dict(doc.inline)
    for rel in [*(e.path for e in doc.entries), *doc.dirs]:
        if is_state_path(rel) and not _ledger_part(rel):
            raise journal_mod.unreadable(path, f"a path into {STATE_DIR}/: {rel[:60]!r}")
        safe_path(root, rel, link_ok=True)
    for e in doc.entries:
        if e.digest is None or e.digest in inline:
            continue
        try:
            if originals is None:
                raise Damaged(f"original {e.digest[:12]} is missing: there is no store")
            originals.check(e.digest, e.size)
        except Damaged as exc:
            raise unsafe(
                f"the journal names original {e.digest[:12]}, which the store lacks or holds "
                f"damaged ({exc}); inspect the tree, then delete the journal {path}"
            ) from None


def _ledger_part(rel: str) -> bool:
    """`rel` is the ledger, its store folder or one file of it, as a commit journals them."""
    parts = rel.split("/")
    if parts[0] != STATE_DIR:
        return False
    if parts[1:] in ([], [LEDGER], [ORIGINALS]):
        return True
    return (
        len(parts) == 3
        and parts[1] == ORIGINALS
        and len(parts[2]) == 64
        and all(c in "0123456789abcdef" for c in parts[2])
    )


def _replay(tree: Tree, path: Path, doc: Journal, originals: Store | None) -> list[str]:
    """Every journalled path put back, the folders the run made removed, then (the last
    step) the journal itself; each through descriptors opened without following links."""
    restored = []
    try:
        for e in doc.entries:
            if _restore(tree, doc, e, originals):
                restored.append(e.path)
        for rel in doc.dirs:
            parent, _, name = rel.rpartition("/")
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=tree.folder(parent))  # only if empty
        tree.sync()  # what was put back is on disk before the journal goes
        remove(tree, path.relative_to(tree.root).as_posix())
        tree.sync()
    except OSError as exc:
        raise unsafe(
            f"rolling back an interrupted run failed ({exc.strerror or exc}: "
            f"{getattr(exc, 'filename', '') or ''}); the journal {path} is kept, fix the cause "
            "and run sgpatch again"
        ) from None
    return restored


def _before(doc: Journal, e: Entry, originals: Store | None) -> bytes | Iterator[bytes] | None:
    """What the journal says the path held: None (absent), the old form's inline bytes, or
    the original streamed from the store (checked by `_check` already)."""
    if e.digest is None:
        return None
    inline = dict(doc.inline)
    if e.digest in inline:
        return inline[e.digest]
    assert originals is not None
    return originals.chunks(e.digest, e.size)


def _restore(tree: Tree, doc: Journal, e: Entry, originals: Store | None) -> bool:
    """Put one journalled path back as it was (bytes, mode, owner, or link); True when that
    changed anything."""
    try:
        at, name = tree.locate(e.path)
    except FileNotFoundError:  # its folder is gone: so is the file
        if e.digest is None:
            return False
        at, name = tree.locate(e.path, create=True)
    _remove_temps(at, name)
    st = lstat(name, at)
    now_link = os.readlink(name, dir_fd=at) if st and stat.S_ISLNK(st.st_mode) else None
    if e.link:
        before = _before(doc, e, originals)
        link = (before if isinstance(before, bytes) else b"".join(before or ())).decode(
            "utf-8", "surrogateescape"
        )
        if now_link == link:
            return False
        put(tree, e.path, None, None, link=link)
        return True
    if _same(at, name, st, now_link, e):
        return False
    put(tree, e.path, _before(doc, e, originals), e.mode, owner=e.owner)
    return True


def _same(at: int, name: str, st: os.stat_result | None, link: str | None, e: Entry) -> bool:
    """The path holds what the journal says it held: its bytes, mode and owner (a regular
    file), or nothing."""
    if link is not None:
        return False
    if st is None or not stat.S_ISREG(st.st_mode):
        return st is None and e.digest is None
    if e.digest is None or digest_of(at, name) != e.digest:
        return False
    return (e.mode is None or stat.S_IMODE(st.st_mode) == e.mode) and (
        e.owner is None or owner_of(st) == e.owner
    )


def _remove_temps(at: int, name: str) -> None:
    """Temp files a killed run left for `name` in its folder."""
    with contextlib.suppress(OSError):
        for entry in os.listdir(at):
            if is_temp(entry, name) and stat.S_ISREG(
                os.stat(entry, dir_fd=at, follow_symlinks=False).st_mode
            ):
                os.unlink(entry, dir_fd=at)
