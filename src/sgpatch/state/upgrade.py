"""SGLang reinstalled or upgraded under an applied set: which ledger records no longer hold.

`pip install sglang==0.5.10` over a patched 0.5.9 (or `--force-reinstall`, or a Docker layer
rebuilt under a kept volume) replaces the package's files and leaves `.sgpatch/` alone: the
ledger then describes bytes that are gone. Judged against that ledger every patch would look
`modified`, RECORD drift would be reported against hashes of another release, and neither
`apply` nor `revert` could proceed. So before anything reads the ledger:

- a set recorded for another release than the tree's is stale: the tree was reinstalled;
- a set recorded for this release whose every file RECORD lists now hashes to RECORD (the
  wheel's bytes) and not to what sgpatch wrote is stale too (a reinstall of the same release);
- a set whose every file holds exactly the ledger's "before" again was reverted outside
  sgpatch (`git checkout -- python/sglang`, `git stash`, `git reset --hard`, a reinstall);
  stacked sets are judged together (a top set's file back at the lowest set's "before" counts
  when every set below it on that file is reverted too);

stale sets are dropped from the ledger the run works with, their files are judged afresh
(pristine files plan as `pending`), and the next run that writes stores the ledger without
them. Each gets one line: `notes` for a run that only reads (it suggests `sgpatch apply`),
`dropped` for the run that writes the ledger without them (said once, by that run). Nothing
here writes. docs/safety.md, "SGLang upgraded under an applied set".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import SgpatchError
from sgpatch.state.drift import record_hashes
from sgpatch.state.ledger import FileRecord, Ledger, SetRecord, sha256
from sgpatch.tree.files import read_bytes
from sgpatch.tree.target import Target


@dataclass(frozen=True)
class Reconciled:
    """The stored ledger, and the ledger as it applies to the tree (stale sets dropped)."""

    stored: Ledger
    ledger: Ledger
    stale: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # for a run that only reads: what happened, what to do
    dropped: tuple[str, ...] = ()  # for the run that writes the ledger without the stale sets


def _same_release(recorded: str, version: str) -> bool:
    """The same release, as far as reinstalls go: local labels (`+cu130`) do not count, and a
    development build of a checkout (`0.5.9.post1.dev3+gabc`, what `git describe` gives a few
    commits after the tag) is its tag's release: committing in a checkout is no reinstall."""
    from packaging.version import Version

    try:
        a, b = Version(recorded), Version(version)
    except ValueError:  # InvalidVersion, or digits past int()'s limit
        return recorded == version
    if a.dev is not None or b.dev is not None:
        return (a.epoch, a.release, a.pre) == (b.epoch, b.release, b.pre)
    return Version(a.public) == Version(b.public)


def _reinstalled_in_place(root: Path, record: SetRecord, wheel: dict[str, str] | None) -> bool:
    """Every file of the set that the wheel lists holds the wheel's bytes, none what sgpatch
    wrote, and there is at least one: the same release was installed again over the set."""
    if not wheel:
        return False
    listed = [p for p in record.files if p in wheel]
    if not listed:
        return False
    for path in listed:
        try:
            now = sha256(read_bytes(root, path))
        except SgpatchError:
            return False
        if now != wheel[path] or now == record.files[path].after:
            return False
    return True


def reconcile(root: Path, version: str, dist_info: Path | None, stored: Ledger) -> Reconciled:
    """Drop the sets the tree no longer carries (another release, reinstalled in place, or
    every file back to its bytes from before the set)."""
    if not stored.sets:
        return Reconciled(stored, stored)
    wheel = record_hashes(dist_info, root.name) if dist_info is not None else None
    why: dict[str, str] = {}
    for name, record in sorted(stored.sets.items()):
        if not _same_release(record.sglang_version, version):
            why[name] = f"ledger is for {record.sglang_version}, tree is now {version}: reinstalled"
        elif _reinstalled_in_place(root, record, wheel):
            why[name] = (
                f"ledger is for {record.sglang_version}, tree holds a fresh {version} install "
                "(its files match the wheel's RECORD): reinstalled"
            )
    ledger = stored
    for name in why:
        ledger = ledger.without_set(name)
    for name in reverted_outside(root, ledger):
        why[name] = REVERTED
        ledger = ledger.without_set(name)
    stale = tuple(n for n in stored.sets if n in why)  # in the ledger's order
    notes = tuple(_note(n, why[n], dropped=False, root=root) for n in stale)
    dropped = tuple(_note(n, why[n], dropped=True, root=root) for n in stale)
    return Reconciled(stored, ledger, stale, notes, dropped)


REVERTED = "reverted outside sgpatch"


def _note(name: str, why: str, dropped: bool, root: Path | None = None) -> str:
    """One line per stale set: to a reader, what to run (a command naming the tree and the
    run's sets, as typed); from the writer that drops it, that its records are gone."""
    from sgpatch.shown import command, context

    again = command("apply", "--set", name, *context(root))
    if why == REVERTED:
        head = (
            f"set {name} was reverted outside sgpatch (every file it patched holds its bytes "
            "from before it again: git checkout, stash or reset, or a reinstall)"
        )
        if dropped:
            return f"{head}; its records are dropped"
        return f"{head}; its patches read pending: {again} applies it again"
    if dropped:
        return f"{why}; set {name} is no longer applied: its records are dropped"
    return f"{why}; set {name} is no longer applied: {again} applies it to this tree"


_UNREADABLE = object()  # never equal to a recorded state


def reverted_outside(root: Path, ledger: Ledger) -> list[str]:
    """Sets whose every file is back to the bytes (or link) the ledger has from before them:
    reverted by something other than sgpatch. A file also patched by a set below counts when
    it holds the "before" of a set below whose sets, up to this one, are all reverted (a
    `git checkout` takes every stacked set off at once). Largest such group: sets are removed
    from it until each one's files hold."""
    names = list(ledger.sets)
    now: dict[str, object] = {}

    def current(path: str) -> object:
        if path not in now:
            now[path] = _state_now(root, path)
        return now[path]

    group = {n for n in names if any(_judged(r) for r in ledger.sets[n].files.values())}
    changed = True
    while changed:
        changed = False
        for name in [n for n in names if n in group]:
            if not _back(ledger, names, name, group, current):
                group.discard(name)
                changed = True
    return [n for n in names if n in group]


def _back(ledger: Ledger, names: list[str], name: str, group: set[str], current) -> bool:
    """Every file of set `name` holds its own "before", or the "before" of a set below it on
    that file with every set between (and that one) in `group`; or is a file the set created
    that still holds what sgpatch wrote (untracked: git checkout, stash and reset leave it).
    At least one file must be back: leftovers alone are not a revert."""
    below = names[: names.index(name)]
    back = False
    for path, rec in ledger.sets[name].files.items():
        now = current(path)
        if _matches(now, rec) or _below_matches(ledger, below, path, group, now):
            back = True
        elif not _leftover(now, rec):
            return False
    return back


def _below_matches(ledger: Ledger, below: list[str], path: str, group: set[str], now) -> bool:
    """`now` is the "before" of a set below on `path`, every set from it up being in `group`."""
    for lower in reversed([n for n in below if path in ledger.sets[n].files]):
        if lower not in group:
            return False
        if _matches(now, ledger.sets[lower].files[path]):
            return True
    return False


def _leftover(state: object, rec: FileRecord) -> bool:
    """A file the set created (nothing was there) that still holds exactly what it wrote."""
    if rec.before is not None or rec.link_before is not None or rec.link_after is not None:
        return False
    return isinstance(state, tuple) and state[0] == "file" and state[1] == rec.after


def _judged(rec: FileRecord) -> bool:
    """A record whose "before" differs from its "after" in bytes, link or mode: one a file can
    be seen back at (a record with neither cannot tell a revert from the set)."""
    return (
        rec.before != rec.after
        or rec.link_before != rec.link_after
        or (rec.mode_before is not None and rec.mode_before != rec.mode_after)
    )


def _matches(state: object, rec: FileRecord) -> bool:
    """The file's state now is the record's "before" (bytes or link; and mode where the set
    changed only the mode)."""
    if rec.link_before is not None:
        return state == ("link", rec.link_before)
    if not isinstance(state, tuple) or state[0] != "file":
        return False
    digest, mode = state[1], state[2]
    if digest != rec.before:
        return False
    if rec.before == rec.after and rec.mode_before is not None:
        return mode == rec.mode_before
    return True


def _state_now(root: Path, path: str) -> object:
    """("file", sha256 or None, mode) or ("link", target); unreadable paths match nothing."""
    import os
    import stat

    full = root / path
    try:
        if full.is_symlink():
            return ("link", os.readlink(full))
        data = read_bytes(root, path)
        mode = stat.S_IMODE(full.stat().st_mode) if data is not None else None
    except (OSError, SgpatchError):
        return _UNREADABLE
    return ("file", sha256(data), mode)


def for_target(target: Target) -> Reconciled:
    """The ledger as it applies to this tree: sets recorded for another release, or whose
    files a reinstall put back, are dropped; `ops.report.notes` says why."""
    from sgpatch.state import ledger as ledger_mod

    stored = ledger_mod.load(target.root)
    return reconcile(target.root, str(target.version), target.dist_info, stored)
