"""The only code that writes to a target tree: a commit through a journal (every path
through the guards in tree.files).

A run computes every new file content in memory first (see plan). `commit` then
  1. checks every path is inside the tree and no file changed since it was read;
  2. stores the original bytes of every file it will touch in `.sgpatch/journal-originals/`
     (content-addressed, `store`), then writes the line-oriented journal `.sgpatch/journal`
     (`journal`: mode, digest, path per line), both fsynced;
  3. replaces each file through a temp file + rename (`put`, over `sgpatch.fs.atomic`; mode
     and owner kept), fsyncing file and folder (a store file holding bytes step 2 stored is
     hard-linked from there, `_link_stored`);
  4. removes the journal (the commit point), then the journal's originals.
Any later writer that finds a journal rolls the tree back first (`recovery`), so an
interrupted run never leaves a half-patched tree. The lock that makes a writer the only one
is `lock`; the test-only kill hook every write step counts in is `sgpatch.fs.steps`. See
docs/safety.md for the guarantees and their limits.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from sgpatch import interrupts
from sgpatch.errors import ExitCode, SgpatchError, internal, unsafe
from sgpatch.fs import atomic, steps
from sgpatch.fs.atomic import SETID, Owner
from sgpatch.state import journal as journal_mod
from sgpatch.state import store
from sgpatch.state.digest import sha256
from sgpatch.state.folder import JOURNAL, JOURNAL_ORIGINALS
from sgpatch.state.lock import check_state_dir, remove_stale_temps
from sgpatch.state.put import Tree, owner_of, put, regular, remove, write_file
from sgpatch.state.recovery import recover
from sgpatch.tree.files import FileChange, read_bytes, safe_path


def _missing_dirs(root: Path, changes: Sequence[FileChange]) -> list[str]:
    """Folders a commit will create (so a rollback can remove them again), deepest first."""
    out: set[str] = set()
    for c in changes:
        if c.after is None:
            continue
        parent = Path(c.path).parent
        while parent != Path(".") and not (root / parent).exists():
            out.add(parent.as_posix())
            parent = parent.parent
    return sorted(out, key=lambda p: (-p.count("/"), p))


def write_journal(
    state_dir: Path,
    changes: Sequence[FileChange],
    modes: dict[str, int],
    dirs: Sequence[str] = (),
    owners: Mapping[str, Owner] | None = None,
    tree: Tree | None = None,
) -> str:
    """Store the original bytes (and link targets) of every file about to change, then write
    and fsync the journal that names them, with each file's size, mode and owner: a recovery
    is a copy from the store. Returns the journal's root-relative path. `tree`: the commit's
    (else the tree the state folder is in)."""
    if tree is None:
        with Tree(state_dir.parent) as mine:
            return write_journal(state_dir, changes, modes, dirs, owners, mine)
    owners = owners or {}
    entries = []
    tree.folder(state_dir.relative_to(tree.root).as_posix(), create=True)
    with store.opened(state_dir, create=True, owner=tree.new_owner) as originals:
        assert originals is not None
        for c in changes:
            if c.before_link is not None:
                text = c.before_link.encode("utf-8", "surrogateescape")
                digest, size = originals.put(text)
                entries.append(journal_mod.Entry(c.path, digest, size, link=True))
            elif c.before is None:
                entries.append(journal_mod.Entry(c.path, None))
            else:
                digest, size = originals.put(c.before)
                owner = owners.get(c.path)
                mode = modes.get(c.path)
                entries.append(journal_mod.Entry(c.path, digest, size, mode, owner=owner))
        originals.sync()
    doc = journal_mod.Journal(os.getpid(), tuple(entries), tuple(dirs))
    rel = _state_rel(tree, state_dir, JOURNAL)
    write_file(tree, rel, journal_mod.render(doc), 0o644)
    tree.sync()  # the journal is on disk before the first file it covers is written
    return rel


def _state_rel(tree: Tree, state_dir: Path, name: str) -> str:
    """The root-relative path of a file in the state folder (which is inside the tree)."""
    return (state_dir / name).relative_to(tree.root).as_posix()


def _write_error(exc: OSError, rel: str) -> str:
    if exc.errno == errno.ENOSPC:
        return f"no space left on the device writing {rel}"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"cannot write {rel}: {exc.strerror}"
    return f"writing {rel} failed: {exc.strerror or exc}"


def _verify_before(root: Path, c: FileChange) -> Path:
    """The change's path, once its current state is what the plan read: the bytes `before`,
    or (before_link) a symlink to that target. Anything else changed meanwhile: exit 4."""
    if c.before_link is not None:
        path = safe_path(root, c.path, link_ok=True)
        same = path.is_symlink() and os.readlink(path) == c.before_link
    else:
        path = safe_path(root, c.path)
        same = read_bytes(root, c.path) == c.before
    if not same:
        raise unsafe(f"{c.path} changed while sgpatch was planning; nothing was written")
    return path


def commit(root: Path, state_dir: Path, changes: Sequence[FileChange]) -> list[str]:
    """Write every change or none: verify, journal, replace, drop the journal. Returns one
    warning per file whose owner could not be kept (`owner_note`; the caller says them).

    Call it with the lock held. On an OSError (disk full, read-only folder, ...) or an interrupt
    the tree is rolled back before the error propagates; if even that fails the journal stays
    and the next sgpatch run rolls back.
    """
    changes = [
        c for c in changes if c.before != c.after or c.mode is not None or c.link != c.before_link
    ]
    if not changes:
        return []
    modes, owners = _preflight(root, changes)
    check_state_dir(state_dir)
    remove_stale_temps(state_dir)
    store.drop(state_dir)  # scratch a run killed before its journal was down left
    dirs = _missing_dirs(root, changes)
    with Tree(root) as tree:
        try:
            journal = write_journal(state_dir, changes, modes, dirs, owners, tree)
        except OSError as exc:
            with contextlib.suppress(OSError):
                (state_dir / JOURNAL).unlink()
            store.drop(state_dir)
            raise SgpatchError(
                f"{_write_error(exc, str(state_dir / JOURNAL))}; nothing was written"
            ) from None
        notes = _write_all(tree, state_dir, changes, modes)
        remove(tree, journal)  # the commit point (a step of the kill hook)
        tree.sync()
        store.drop(state_dir)
        _remove_emptied_folders(tree, [c.path for c in changes if c.after is None])
    return notes


def _write_all(
    tree: Tree, state_dir: Path, changes: Sequence[FileChange], modes: dict[str, int]
) -> list[str]:
    """Step 3 of the commit: every change written, each folder fsynced once; on any failure
    (or Ctrl-C) the tree is rolled back from the journal before the error goes on."""
    current_rel = ""
    notes: list[str] = []
    journalled = {sha256(c.before) for c in changes if c.before is not None}
    try:
        for c in changes:
            current_rel = c.path
            if _link_stored(tree, state_dir, c, journalled):
                continue
            mode = c.mode if c.mode is not None else modes.get(c.path)
            lost = put(tree, c.path, c.after, mode, link=c.link)
            if lost is not None:
                notes.append(owner_note(c.path, lost, modes.get(c.path, 0)))
        tree.sync()  # renames durable before the journal goes
    except BaseException as exc:
        try:
            with interrupts.deferred():  # a second Ctrl-C must not cut the rollback short
                recover(tree.root, state_dir)
        except SgpatchError as rollback:
            raise SgpatchError(
                f"{_describe(exc, current_rel)}; rolling back failed too: {rollback.message}",
                ExitCode.UNSAFE,
            ) from None
        if isinstance(exc, OSError):
            raise SgpatchError(
                f"{_write_error(exc, current_rel)}; the tree was rolled back, nothing changed"
            ) from None
        raise
    return notes


def _link_stored(tree: Tree, state_dir: Path, c: FileChange, journalled: set[str]) -> bool:
    """A new read-only state file whose bytes the journal's store already holds, fsynced (the
    ledger's store keeping a file's 'before'), is hard-linked from there instead of written
    and fsynced a second time. False for any other change, or where the filesystem makes no
    hard links: the caller writes it. Both names are sgpatch's own 0444 files, never written
    in place; dropping the journal's store leaves the ledger's name."""
    if c.before is not None or c.after is None or c.link is not None or c.mode != 0o444:
        return False
    digest = sha256(c.after)
    if digest not in journalled or state_dir not in (tree.root / c.path).parents:
        return False
    at, name = tree.locate(c.path, create=True)
    src = tree.folder(_state_rel(tree, state_dir, JOURNAL_ORIGINALS))
    steps.step()
    try:
        atomic.hard_link(src, digest, at, name)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise
        return False
    tree.touched(at)
    return True


def owner_note(rel: str, lost: Owner, mode: int) -> str:
    """The warning for a file that could not keep its owner (sgpatch is not root)."""
    me = os.geteuid() if hasattr(os, "geteuid") else -1
    bits = ", and without its setuid/setgid bit" if mode & SETID else ""
    return (
        f"{rel} was owned by uid {lost[0]} gid {lost[1]}; sgpatch runs as uid {me} and cannot "
        f"keep that: the new file is owned by uid {me}{bits}"
    )


def _preflight(
    root: Path, changes: Sequence[FileChange]
) -> tuple[dict[str, int], dict[str, Owner]]:
    """Before anything is written: each path changed once, its bytes still what was planned,
    it and its folder writable. Returns the modes and owners of the files that exist (to keep
    them, and to restore them on a rollback)."""
    modes: dict[str, int] = {}
    owners: dict[str, Owner] = {}
    seen: set[str] = set()
    for c in changes:
        if c.path in seen:
            raise internal(f"{c.path} changed twice in one commit")
        seen.add(c.path)
        path = _verify_before(root, c)
        st = regular(path) if c.before_link is None else None
        if st is not None:
            modes[c.path] = st.st_mode & 0o7777
            owners[c.path] = owner_of(st)
            if not os.access(path, os.W_OK):
                raise SgpatchError(f"{c.path}: file is read-only; nothing was written")
        folder = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
        if folder is not None and folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise SgpatchError(f"{c.path}: folder {folder} is not writable; nothing was written")
    return modes, owners


def _remove_emptied_folders(tree: Tree, deleted: Sequence[str]) -> None:
    """Folders a deletion left empty go too, up to (not including) the root, as git does: a
    reversed patch that created `new/dir/f.py` leaves no `new/dir/` behind. A tidy-up after
    the commit: a rollback would make them again with the files. Each removal is relative to
    the folder above it, opened without following links."""
    for rel in deleted:
        folder = rel.rpartition("/")[0]
        while folder:
            parent, _, name = folder.rpartition("/")
            try:
                os.rmdir(name, dir_fd=tree.folder(parent))  # only when empty
            except (OSError, SgpatchError):
                break
            folder = parent


def _describe(exc: BaseException, rel: str) -> str:
    if isinstance(exc, OSError):
        return _write_error(exc, rel)
    return f"interrupted ({type(exc).__name__}) while writing {rel}"
