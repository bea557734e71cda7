"""A port's state, read once: what --continue and the report need from `W/.sgpatch-port/`.

git's sequencer reads its todo list and options from `.git/rebase-merge/` into memory when a
command begins, works on them there and writes them back at a step's end. `PortState` is that
record for a port: the options the port began with (`Options`), its phase, the queue (todo,
done, needs-a-hand, partial: `sequencer.Queue`), the `fix` list, and the listing of each
patch's files (`snapshots.Listing`: touched, carried so far, to fix). `PortState.load` reads
each of those files once; the steps of --continue take a PortState and return the changed one,
and `save` writes it back inside the step (`Workspace.step` journals it), so a kill leaves the
files as the last whole step left them. The carry (`sequencer.run_todo`) works on the same
queue and listing and writes them at each patch's step end. The files stay small named ones
a person can `cat` (port.statefiles declares them); the before/after bytes of each file are read
when needed (snapshots.get), never all at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import bad_input
from sgpatch.port.sequencer import Carried, Queue
from sgpatch.port.snapshots import Listing
from sgpatch.port.statefiles import (
    CURRENT_FORMAT,
    FIX,
    FORMAT,
    KNOWN,
    OFFLINE,
    ONTO,
    SET,
    SET_DIR,
    SET_NAME,
    SET_SHA256,
)
from sgpatch.port.stopreport import Problem
from sgpatch.port.workspace import Phase, Workspace


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
        got = {n: (ws.get(n) or "").strip() for n in (SET, SET_DIR, SET_NAME, SET_SHA256)}
        try:
            onto = Version((ws.get(ONTO) or "").strip())
        except ValueError:  # InvalidVersion, or digits past int()'s limit
            raise ws.damaged(ONTO, "not a version") from None
        try:
            known = tuple(sorted(Version(v) for v in ws.lines(KNOWN)))
        except ValueError:  # InvalidVersion, or digits past int()'s limit
            raise ws.damaged(KNOWN, "not a list of versions") from None
        return cls(Path(got[SET]), got[SET_DIR], got[SET_NAME], got[SET_SHA256], onto,
                   (ws.get(OFFLINE) or "").strip() == "yes", known)  # fmt: skip


def check_format(ws: Workspace) -> None:
    """State files of another sgpatch's format are never continued (exit 2)."""
    if (ws.get(FORMAT) or "").strip() != CURRENT_FORMAT:
        raise bad_input(
            f"--workspace {ws.top}: made by an older sgpatch (its state cannot be continued); "
            f"{ws.abort_hint()}"
        )


@dataclass(frozen=True)
class PortState:
    """The port as --continue works on it: options, phase, queue, fix list, listing. The
    queue's lists are worked on in memory during a step; `save` writes the record back."""

    options: Options
    phase: Phase
    queue: Queue
    listing: Listing
    fix: tuple[str, ...] = field(default=())

    @classmethod
    def load(
        cls, ws: Workspace, ids: Sequence[str], options: Options | None = None,
        phase: Phase | None = None,
    ) -> PortState:  # fmt: skip
        """Every file read once (`ids`: the set's patches, in manifest order; `options`,
        `phase`: when the caller has read them already)."""
        listing = Listing.load(ws, ids)
        return cls(options or Options.load(ws), phase or ws.phase, Queue.load(ws, listing),
                   listing, tuple(ws.lines(FIX)))  # fmt: skip

    def save(self, ws: Workspace, phase: Phase | None = None) -> PortState:
        """Write the lists, the listing's changed files and (given) the new phase, inside the
        caller's step; the record as written (its `fix` list recomputed)."""
        listing = self.listing.save(ws)
        fix = tuple(self.queue.save(ws))
        if phase is not None:
            ws.set_phase(phase)
        return replace(self, listing=listing, phase=phase or self.phase, fix=fix)

    def carried(self, done: Carried) -> PortState:
        """The state after `sequencer.run_todo` carried this record's queue: the queue, the
        listing and the fix list it wrote (`done`)."""
        return replace(self, queue=done.queue, listing=done.listing, fix=done.fix)

    def reopened(self, problems: Mapping[str, list[Problem]], order: Sequence[str]) -> PortState:
        """Patches that lint, or their probe, finds wrong back on needs-a-hand with those
        problems (`Queue.reopened`, in memory: the caller saves it with the phase `stopped`)."""
        return replace(self, queue=self.queue.reopened(problems, order))


__all__ = ["Options", "PortState", "check_format"]
