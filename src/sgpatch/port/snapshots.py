"""What each patch found and left in each file of the workspace, file by file.

Port carries a patch file by file: a file an earlier patch still has to have fixed waits, the
patch's other files go on. So a patch's diff can no longer be read off W at the end (a later
patch may have written the same file since): each carried file's bytes before and after the
patch are kept in the state folder (`before/ID/FILE`, `after/ID/FILE`, absent files listed in
`before/ID.absent`, `after/ID.absent`; a symlink's target as its bytes, and every file that is
no plain 100644 one in `before/ID.modes`, `after/ID.modes` as `MODE PATH` lines: 100755, or
120000 for a symlink), and `carried/ID` lists the files of ID that are done.
The order patches write a file in is manifest order, so the last writer of a file is the last
patch in that order that carried (or is fixing) it: only that patch may take a hand edit of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK
from sgpatch.port.statefiles import (
    AFTER,
    BEFORE,
    CARRIED,
    FILES,
    FIXING,
    absent_list,
    listed,
    modes_list,
    snapshot_of,
)
from sgpatch.port.workspace import Workspace

Files = Mapping[str, "bytes | None"]
Paths = Mapping[str, frozenset[str]]
LISTS = (FILES, CARRIED, FIXING)  # Listing's fields, named as their state files `NAME/ID`


@dataclass(frozen=True)
class Listing:
    """Per patch: the files it touches (`files/ID`), those carried or fixed so far
    (`carried/ID`) and those a stopped patch has to have fixed (`fixing/ID`). `changed`:
    the files (`NAME/ID`) that differ from what the state folder holds."""

    files: Paths
    carried: Paths
    fixing: Paths
    changed: frozenset[str] = frozenset()

    @classmethod
    def load(cls, ws: Workspace, ids: Iterable[str]) -> Listing:
        ids = list(ids)
        got = {n: {p: frozenset(ws.lines(listed(n, p))) for p in ids} for n in LISTS}
        return cls(got[FILES], got[CARRIED], got[FIXING])

    def unfinished(self, pid: str) -> frozenset[str]:
        """Files of `pid` not carried yet: waiting, or to be fixed."""
        return self.files.get(pid, frozenset()) - self.carried.get(pid, frozenset())

    def writers_of(self, order: Sequence[str], rel: str) -> list[str]:
        """The patches that carried `rel`, in manifest `order` (the order they wrote it in)."""
        return [pid for pid in order if rel in self.carried.get(pid, ())]

    def last_writers(self, order: Sequence[str], stopped: Iterable[str]) -> dict[str, str]:
        """File -> the last patch (in `order`) that wrote it: carried it, or (a `stopped` one)
        has it to fix."""
        fixing = {pid: self.fixing.get(pid, frozenset()) for pid in stopped}
        out: dict[str, str] = {}
        for pid in order:
            for rel in self.carried.get(pid, frozenset()) | fixing.get(pid, frozenset()):
                out[rel] = pid
        return out

    def with_list(self, name: str, pid: str, rels: Iterable[str]) -> Listing:
        """The listing with `name/pid` (files | carried | fixing) holding `rels`."""
        new = frozenset(rels)
        lists: dict[str, Paths] = {n: getattr(self, n) for n in LISTS}
        if lists[name].get(pid, frozenset()) == new:
            return self
        lists[name] = {**lists[name], pid: new}
        return Listing(**lists, changed=self.changed | {listed(name, pid)})

    def save(self, ws: Workspace) -> Listing:
        """Write the changed files (inside the caller's step); the listing as saved."""
        for entry in sorted(self.changed):
            name, pid = entry.split("/", 1)
            ws.put_lines(entry, sorted(getattr(self, name)[pid]))
        return replace(self, changed=frozenset())


def put(
    ws: Workspace, side: str, pid: str, files: Files, modes: Mapping[str, int] | None = None
) -> None:
    """Record `files` as patch `pid`'s `side` (before | after), next to what is recorded,
    each of git mode `modes[rel]` (100644 when not named); `modes` None: the modes recorded
    for them stay (a file recorded absent has none)."""
    name = absent_list(side, pid)
    absent = set(absent_of(ws, side, pid))
    kinds = dict(modes_of(ws, side, pid))
    for rel, data in files.items():
        if data is None:
            absent.add(rel)
            ws.put_bytes(snapshot_of(side, pid, rel), None)
        else:
            absent.discard(rel)
            ws.put_bytes(snapshot_of(side, pid, rel), data)
        if data is None or (modes is not None and modes.get(rel, REGULAR) == REGULAR):
            kinds.pop(rel, None)
        elif modes is not None:
            kinds[rel] = modes[rel]
    ws.put_lines(name, sorted(absent))
    ws.absent[name] = frozenset(absent)
    _put_modes(ws, side, pid, kinds)


def take(ws: Workspace, side: str, pid: str, rels: Iterable[str]) -> dict[str, bytes | None]:
    """Record W's files `rels` as they are now, bytes and git modes, as patch `pid`'s
    `side`; returns their bytes. A symlink is taken only when its target stays in the
    package, as a set's links must (exit 4 otherwise: a link a person made to elsewhere)."""
    files = {r: ws.read_pkg(r) for r in sorted(rels)}
    put(ws, side, pid, files, {r: mode_in(ws, r) for r, data in files.items() if data is not None})
    return files


def mode_in(ws: Workspace, rel: str) -> int:
    """The git mode of W's file `rel`, as a patch may take it: a symlink only when its
    target stays in the package, as a set's links must (exit 4 otherwise, one line: a link a
    person pointed elsewhere)."""
    from sgpatch.ops.fileplan import check_link

    mode = ws.mode_pkg(rel)
    if mode == SYMLINK:
        check_link(ws.root, rel, os.fsdecode(ws.read_pkg(rel) or b""))
    return mode


def modes_of(ws: Workspace, side: str, pid: str) -> dict[str, int]:
    """The git modes recorded for patch `pid`'s `side` that are not 100644 (`SIDE/ID.modes`,
    read once per run, as the absent lists are)."""
    name = modes_list(side, pid)
    if name not in ws.absent:
        ws.absent[name] = frozenset(ws.lines(name))
    out = {}
    for line in ws.absent[name]:
        mode, _, rel = line.partition(" ")
        if mode not in _MODES or not rel:
            raise ws.damaged(name, f"line {line[:60]!r}")
        out[rel] = _MODES[mode]
    return out


_MODES = {f"{EXECUTABLE:o}": EXECUTABLE, f"{SYMLINK:o}": SYMLINK}


def _put_modes(ws: Workspace, side: str, pid: str, kinds: Mapping[str, int]) -> None:
    """Write `SIDE/ID.modes` when it changes (most patches never have one)."""
    name = modes_list(side, pid)
    lines = frozenset(f"{m:o} {rel}" for rel, m in kinds.items())
    if lines != ws.absent.get(name, frozenset()):
        if lines:
            ws.put_lines(name, sorted(lines))
        else:
            ws.put(name, None)
        ws.absent[name] = lines


def get(ws: Workspace, side: str, pid: str, rels: Iterable[str]) -> dict[str, bytes | None]:
    """Patch `pid`'s recorded `side` of each file (None: absent on that side)."""
    absent = absent_of(ws, side, pid)
    return {r: None if r in absent else ws.get_bytes(snapshot_of(side, pid, r)) for r in rels}


def absent_of(ws: Workspace, side: str, pid: str) -> frozenset[str]:
    """The files absent on patch `pid`'s `side` (`SIDE/ID.absent`), read once per run: a step
    reads each list when it checks the patch, records its files and takes its diff."""
    name = absent_list(side, pid)
    if name not in ws.absent:
        ws.absent[name] = frozenset(ws.lines(name))
    return ws.absent[name]


def mode(ws: Workspace, side: str, pid: str, rel: str) -> int:
    """The git mode recorded for one file of patch `pid`'s `side` (100644 unless named)."""
    return modes_of(ws, side, pid).get(rel, REGULAR)


def one(ws: Workspace, side: str, pid: str, rel: str) -> bytes | None:
    """Patch `pid`'s recorded `side` of one file."""
    return get(ws, side, pid, [rel])[rel]


def check(ws: Workspace, pid: str, listing: Listing) -> None:
    """`pid`'s path lists as sgpatch wrote them (`listing`, as read from W, and its absent
    lists): package paths, and every file it carried, is fixing or has recorded as absent
    among its files. Else the workspace is damaged."""
    mine = listing.files.get(pid, frozenset())
    lists = {listed(n, pid): getattr(listing, n).get(pid, frozenset()) for n in LISTS}
    for side in (BEFORE, AFTER):
        lists[absent_list(side, pid)] = absent_of(ws, side, pid)
        lists[modes_list(side, pid)] = frozenset(modes_of(ws, side, pid))
    for name, rels in lists.items():
        for rel in sorted(rels):
            parts = rel.split("/")
            if rel.startswith("/") or "" in parts or ".." in parts or "\t" in rel:
                raise ws.damaged(name, f"line {rel[:60]!r}")
            if not name.startswith(f"{FILES}/") and rel not in mine:
                raise ws.damaged(name, f"{rel[:60]!r} is not one of {pid}'s files")


__all__ = [
    "LISTS",
    "Listing",
    "absent_of",
    "check",
    "get",
    "mode",
    "mode_in",
    "modes_of",
    "one",
    "put",
    "take",
]
