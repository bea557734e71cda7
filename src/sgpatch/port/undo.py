"""The undo journal of a port step: what makes a step all or nothing, as a rebase's state is.

A step (carrying one patch, taking the fixes, reopening a patch lint refused) writes many
files of W: tree files and state files. Before the first write of each file in a step, what
the file held is kept in `W/.sgpatch-port/journal/` (`N`: its bytes; a line in `index`:
`N` or `-` for absent, the sha256 of what is written or `-`, the W-relative path); every later
write of it in the step adds a line (`=`) with what it writes. The step ends by removing
`index` (the commit), then the rest. Interrupted (an error, Ctrl-C: at once; a kill: at the
next `--continue` or `--abort`), `recover` puts every file back, last first, and the step is
redone from the state before it. A tree file that holds neither what it held nor what the
step wrote was edited by the person since the kill: it stays as they left it (their edits
are inputs, never scratch) and is named.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.port.wsfiles import PKG, STATE, append, digest, read, rmtree, write

DIR = f"{STATE}/journal"
INDEX = f"{DIR}/index"


@dataclass
class Journal:
    """The journal of the step under way (Workspace.step makes it, notes each write)."""

    top: Path
    name: str
    seen: set[str] = field(default_factory=set)
    count: int = 0

    def __post_init__(self) -> None:
        recover(self.top)  # a kill's leftovers first, never mixed with this step's
        write(self.top, f"{DIR}/step", f"{self.name}\n".encode())
        write(self.top, INDEX, b"")

    def note(self, rel: str, data: bytes | None) -> None:
        """Before `rel` is written with `data`: keep what it holds (the first time)."""
        new = "-" if data is None else digest(data)
        if rel in self.seen:
            append(self.top, INDEX, f"=\t{new}\t{rel}\n")
            return
        old = read(self.top, rel)
        tag = "-"
        if old is not None:
            self.count += 1
            tag = str(self.count)
            write(self.top, f"{DIR}/{tag}", old)
        append(self.top, INDEX, f"{tag}\t{new}\t{rel}\n")
        self.seen.add(rel)

    def commit(self) -> None:
        write(self.top, INDEX, None)  # from here the step has happened
        _drop(self.top)


@dataclass
class _Entry:
    tag: str  # the copy of what the file held, or "-": absent
    written: set[str] = field(default_factory=set)  # sha256 of what the step wrote ("-": none)


def recover(top: Path) -> list[str]:
    """Put back what an interrupted step wrote (nothing when no step was under way); return
    the tree files left as the person edited them since."""
    index = read(top, INDEX)
    if index is None:
        _drop(top)
        return []
    entries = _parse(top, index.decode("utf-8", "replace"))
    kept = []
    for rel, e in reversed(entries.items()):
        old = None if e.tag == "-" else read(top, f"{DIR}/{e.tag}")
        if e.tag != "-" and old is None:
            raise _damaged(top, f"the copy of {rel} is missing")
        if rel.startswith(f"{PKG}/") and _edited_since(top, rel, old, e):
            kept.append(rel)
            continue
        write(top, rel, old)
    write(top, INDEX, None)
    _drop(top)
    return kept


class Damaged(SgpatchError):
    """The journal is not as sgpatch writes it: never replayed (exit 4). `--abort` goes on
    without it, which is what this error advises."""


def _damaged(top: Path, why: str) -> SgpatchError:
    return Damaged(
        f"{top}/{INDEX}: damaged ({why}); `sgpatch port --abort --workspace "
        f"{shlex.quote(str(top))}` and port again",
        ExitCode.UNSAFE,
    )


def _parse(top: Path, text: str) -> dict[str, _Entry]:
    """The index's lines (a last line cut short by a kill is left out: its write never
    began, the line comes first)."""
    entries: dict[str, _Entry] = {}
    for line in text.split("\n")[:-1]:
        parts = line.split("\t")
        ok = len(parts) == 3 and (parts[0] in ("-", "=") or parts[0].isdigit())
        if not ok or (parts[0] == "=") != (parts[2] in entries):
            raise _damaged(top, f"line {line[:60]!r}")
        tag, new, rel = parts
        if tag != "=":
            entries[rel] = _Entry(tag)
        entries[rel].written.add(new)
    return entries


def _edited_since(top: Path, rel: str, old: bytes | None, e: _Entry) -> bool:
    now = read(top, rel)
    if now == old:
        return False
    return ("-" if now is None else digest(now)) not in e.written


def _drop(top: Path) -> None:
    """Remove the journal's folder (after the commit, or once recovered)."""
    rmtree(top / DIR)
