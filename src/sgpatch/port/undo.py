"""The undo journal of a port step: what makes a step all or nothing, as a rebase's state is.

A step (carrying one patch, taking the fixes, reopening a patch lint refused) writes many
files of W: tree files and state files. It is journaled with the one journal type of the
file-system layer (`sgpatch.fs.journal`, the format `apply` writes too), in
`W/.sgpatch-port/journal/`: before the first write of each file in the step, what the file
held goes into `originals/<sha256>` and a `file` line into `index`; every write of it adds a
`wrote` line with the sha256 of what it writes. The step ends by removing `index` (the
commit), then the rest. Interrupted (an error, Ctrl-C: at once; a kill: at the next
`--continue` or `--abort`), `recover` checks every line and every original, then puts every
file back, last first, and the step is redone from the state before it. A tree file that
holds neither what it held nor what the step wrote was edited by the person since the kill: it
stays as they left it (their edits are inputs, never scratch) and is named.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK
from sgpatch.errors import SgpatchError, unsafe
from sgpatch.fs.journal import Damaged, Entry, Store, entry_lines, head, parse, wrote_line
from sgpatch.port.statefiles import (
    JOURNAL,
    JOURNAL_INDEX,
    JOURNAL_ORIGINALS,
    JOURNAL_STEP,
    PKG,
    STATE,
)
from sgpatch.port.wsfiles import (
    append,
    digest,
    entry_digest,
    opened_dir,
    read,
    read_entry,
    rmtree,
    sync,
    write,
)

DIR = f"{STATE}/{JOURNAL}"
INDEX = f"{STATE}/{JOURNAL_INDEX}"
ORIGINALS = f"{STATE}/{JOURNAL_ORIGINALS}"


@dataclass
class Journal:
    """The journal of the step under way (Workspace.step makes it, notes each write)."""

    top: Path
    name: str
    seen: set[str] = field(default_factory=set)
    stored: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        recover(self.top)  # a kill's leftovers first, never mixed with this step's
        write(self.top, f"{STATE}/{JOURNAL_STEP}", f"{self.name}\n".encode())
        write(self.top, INDEX, head(os.getpid()).encode())

    def note(self, rel: str, data: bytes | None, mode: int = REGULAR) -> None:
        """Before `rel` is written with `data` (of git `mode`): keep what it holds (the first
        time: a tree file's mode, a symlink's target), then say what is written, in one line
        each time (a kill cuts at most the last line short)."""
        new = None if data is None else entry_digest(data, mode)
        if rel in self.seen:
            append(self.top, INDEX, wrote_line(rel, new))
            return
        old, was = _held(self.top, rel)
        entry = Entry(rel, None)
        if old is not None:
            entry = Entry(rel, digest(old), len(old), _perm(was), link=was == SYMLINK)
            if entry.digest not in self.stored:
                write(self.top, f"{ORIGINALS}/{entry.digest}", old, durable=True)
                self.stored.add(entry.digest or "")
        append(self.top, INDEX, entry_lines(entry) + wrote_line(rel, new))
        self.seen.add(rel)

    def commit(self) -> None:
        sync(self.top, self.seen)  # what the step wrote, on disk before its journal goes
        write(self.top, INDEX, None)  # from here the step has happened
        _drop(self.top)


def _held(top: Path, rel: str) -> tuple[bytes | None, int]:
    """What W holds at `rel`: a tree file with its git mode (a symlink: its target), a state
    file as `read` reads it (a symlink there is refused)."""
    if rel.startswith(f"{PKG}/"):
        return read_entry(top, rel)
    return read(top, rel), REGULAR


def _perm(mode: int) -> int | None:
    """The permission bits a journal line keeps for a file (None for a symlink)."""
    return None if mode == SYMLINK else 0o755 if mode == EXECUTABLE else 0o644


def _git_mode(e: Entry) -> int:
    if e.link:
        return SYMLINK
    return EXECUTABLE if (e.mode or 0) & 0o111 else REGULAR


def recover(top: Path, strict: bool = True) -> list[str]:
    """Put back what an interrupted step wrote (nothing when no step was under way); return
    the tree files left as the person edited them since. Every line and every original is
    checked before anything is put back: a damaged journal is exit 4 with W untouched, or,
    not `strict` (--abort, which removes W whatever the journal says), left unreplayed."""
    index = read(top, INDEX)
    if index is None:
        _drop(top)
        return []
    try:
        entries = _checked(top, index)
    except SgpatchError:
        if strict:
            raise
        _drop(top)
        return []
    kept = []
    with opened_dir(top, ORIGINALS) as at:
        store = Store(at, f"{top}/{ORIGINALS}") if at is not None else None
        for e in reversed(entries):
            old = None if e.digest is None or store is None else store.read(e.digest, e.size)
            if e.path.startswith(f"{PKG}/") and _edited_since(top, e, old):
                kept.append(e.path)
                continue
            write(top, e.path, old, mode=_git_mode(e))
    write(top, INDEX, None)
    _drop(top)
    return kept


def _checked(top: Path, index: bytes) -> list[Entry]:
    """The index's entries, each line and each original checked (a last line cut short by a
    kill is left out: its write never began, the line comes first)."""
    try:
        entries = list(parse(index, appended=True).entries)
        with opened_dir(top, ORIGINALS) as at:
            for e in entries:
                if e.digest is None:
                    continue
                if at is None:
                    raise Damaged(f"the copy of {e.path} is missing")
                Store(at, f"{top}/{ORIGINALS}").check(e.digest, e.size)
    except Damaged as exc:
        raise _damaged(top, str(exc)) from None
    return entries


def _damaged(top: Path, why: str) -> SgpatchError:
    return unsafe(
        f"{top}/{INDEX}: damaged ({why}); `sgpatch port --abort --workspace "
        f"{shlex.quote(str(top))}` and port again"
    )


def _edited_since(top: Path, e: Entry, old: bytes | None) -> bool:
    now, mode = read_entry(top, e.path)
    if now == old and (now is None or (mode == SYMLINK) == e.link):
        return False
    return ("-" if now is None else entry_digest(now, mode)) not in e.wrote


def _drop(top: Path) -> None:
    """Remove the journal's folder (after the commit, or once recovered)."""
    rmtree(top / DIR)
