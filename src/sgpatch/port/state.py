"""A port's state, read once: what --continue and the report need from `W/.sgpatch-port/`.

git's sequencer reads its todo list and options from `.git/rebase-merge/` into memory when a
command begins, works on them there and writes them back at a step's end. `PortState` is that
record for a port: the options the port began with (`Options`), its phase, the queue (todo,
done, needs-a-hand, partial: `sequencer.Queue`), the `fix` list, and the listing of each
patch's files (`Listing`: touched, carried so far, to fix). `PortState.load` reads each of
those files once; the steps of --continue take a PortState and return the changed one, and
`save` writes it back inside the step (`Workspace.step` journals it), so a kill leaves the
files as the last whole step left them. The files stay small named ones a person can `cat`
(workspace.py lists them); the carry itself (`sequencer.run_todo`) reads and writes its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.version import InvalidVersion, Version

from sgpatch.errors import bad_input
from sgpatch.port.sequencer import FORMAT, Queue
from sgpatch.port.workspace import Workspace

Paths = Mapping[str, frozenset[str]]
LISTS = ("files", "carried", "fixing")  # Listing's fields: the state files `NAME/ID`


@dataclass(frozen=True)
class Options:
    """What the port began with (the files workspace.claim wrote whole): the set it writes
    (real paths, name, digest), the release, where releases come from, the releases it knew."""

    set: Path
    set_dir: str
    set_name: str
    set_sha256: str
    onto: Version
    offline: bool
    known: tuple[Version, ...]

    @classmethod
    def load(cls, ws: Workspace) -> Options:
        """Each file read once; a release or a list of them that is not one is damaged."""
        got = {n: (ws.get(n) or "").strip() for n in ("set", "set-dir", "set-name", "set-sha256")}
        try:
            onto = Version((ws.get("onto") or "").strip())
        except InvalidVersion:
            raise ws.damaged("onto", "not a version") from None
        try:
            known = tuple(sorted(Version(v) for v in ws.lines("known")))
        except InvalidVersion:
            raise ws.damaged("known", "not a list of versions") from None
        return cls(Path(got["set"]), got["set-dir"], got["set-name"], got["set-sha256"], onto,
                   (ws.get("offline") or "").strip() == "yes", known)  # fmt: skip


def check_format(ws: Workspace) -> None:
    """State files of another sgpatch's format are never continued (exit 2)."""
    if (ws.get("format") or "").strip() != FORMAT:
        raise bad_input(
            f"--workspace {ws.top}: made by an older sgpatch (its state cannot be continued); "
            f"{ws.abort_hint()}"
        )


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
        got = {n: {p: frozenset(ws.lines(f"{n}/{p}")) for p in ids} for n in LISTS}
        return cls(got["files"], got["carried"], got["fixing"])

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
        return Listing(**lists, changed=self.changed | {f"{name}/{pid}"})

    def save(self, ws: Workspace) -> Listing:
        """Write the changed files (inside the caller's step); the listing as saved."""
        for entry in sorted(self.changed):
            name, pid = entry.split("/", 1)
            ws.put_lines(entry, sorted(getattr(self, name)[pid]))
        return replace(self, changed=frozenset())


@dataclass(frozen=True)
class PortState:
    """The port as --continue works on it: options, phase, queue, fix list, listing. The
    queue's lists are worked on in memory during a step; `save` writes the record back."""

    options: Options
    phase: str
    queue: Queue
    listing: Listing
    fix: tuple[str, ...] = field(default=())

    @classmethod
    def load(
        cls, ws: Workspace, ids: Sequence[str], options: Options | None = None,
        phase: str | None = None,
    ) -> PortState:  # fmt: skip
        """Every file read once (`ids`: the set's patches, in manifest order; `options`,
        `phase`: when the caller has read them already)."""
        return cls(options or Options.load(ws), phase or ws.phase, Queue.load(ws),
                   Listing.load(ws, ids), tuple(ws.lines("fix")))  # fmt: skip

    def save(self, ws: Workspace, phase: str | None = None) -> PortState:
        """Write the lists, the listing's changed files and (given) the new phase, inside the
        caller's step; the record as written (its `fix` list recomputed)."""
        listing = self.listing.save(ws)
        fix = tuple(self.queue.save(ws))
        if phase is not None:
            ws.set_phase(phase)
        return replace(self, listing=listing, phase=phase or self.phase, fix=fix)

    def carried(self, ws: Workspace) -> PortState:
        """The state after `sequencer.run_todo` worked on this record's queue: the listing
        and the fix list it wrote, read back once. A new stop's problems are held as
        `problems/ID` holds them (no marker lines: the fix list reads those off W)."""
        for o in self.queue.stopped:
            o.problems = [{**p, "markers": []} for p in o.problems]
        ids = list(self.listing.files)
        return replace(self, listing=Listing.load(ws, ids), fix=tuple(ws.lines("fix")))

    def reopened(self, problems: Mapping[str, list[dict]], order: Sequence[str]) -> PortState:
        """Patches that lint, or their probe, finds wrong back on needs-a-hand with those
        problems (`Queue.reopen`, in memory: the caller saves it with the phase `stopped`)."""
        self.queue.reopen(dict(problems), order)
        return self


__all__ = ["LISTS", "Listing", "Options", "PortState", "check_format"]
