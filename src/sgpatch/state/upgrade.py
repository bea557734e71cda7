"""SGLang reinstalled or upgraded under an applied set: which ledger records no longer hold.

`pip install sglang==0.5.10` over a patched 0.5.9 (or `--force-reinstall`, or a Docker layer
rebuilt under a kept volume) replaces the package's files and leaves `.sgpatch/` alone: the
ledger then describes bytes that are gone. Judged against that ledger every patch would look
`modified`, RECORD drift would be reported against hashes of another release, and neither
`apply` nor `revert` could proceed. So before anything reads the ledger:

- a set recorded for another release than the tree's is stale: the tree was reinstalled;
- a set recorded for this release whose every file RECORD lists now hashes to RECORD (the
  wheel's bytes) and not to what sgpatch wrote is stale too (a reinstall of the same release);

stale sets are dropped from the ledger the run works with (one line says so: "ledger is for
0.5.9, tree is now 0.5.10: reinstalled"), their files are judged afresh (pristine files plan
as `pending`), and the next run that writes stores the ledger without them. Nothing here
writes. docs/safety.md, "SGLang upgraded under an applied set".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import SgpatchError
from sgpatch.state.drift import record_hashes
from sgpatch.state.ledger import Ledger, SetRecord, sha256
from sgpatch.tree.files import read_bytes


@dataclass(frozen=True)
class Reconciled:
    """The stored ledger, and the ledger as it applies to the tree (stale sets dropped)."""

    stored: Ledger
    ledger: Ledger
    stale: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _same_release(recorded: str, version: str) -> bool:
    """The same release, as far as reinstalls go: local labels (`+cu130`) do not count, and a
    development build of a checkout (`0.5.9.post1.dev3+gabc`, what `git describe` gives a few
    commits after the tag) is its tag's release: committing in a checkout is no reinstall."""
    from packaging.version import InvalidVersion, Version

    try:
        a, b = Version(recorded), Version(version)
    except InvalidVersion:
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
    """Drop the sets the tree no longer carries (another release, or reinstalled in place)."""
    if not stored.sets:
        return Reconciled(stored, stored)
    wheel = record_hashes(dist_info, root.name) if dist_info is not None else None
    stale: list[str] = []
    notes: list[str] = []
    for name, record in sorted(stored.sets.items()):
        if not _same_release(record.sglang_version, version):
            stale.append(name)
            notes.append(
                f"ledger is for {record.sglang_version}, tree is now {version}: reinstalled; "
                f"set {name} is no longer applied (its records are dropped)"
            )
        elif _reinstalled_in_place(root, record, wheel):
            stale.append(name)
            notes.append(
                f"ledger is for {record.sglang_version}, tree holds a fresh {version} install "
                f"(its files match the wheel's RECORD): reinstalled; set {name} is no longer "
                "applied (its records are dropped)"
            )
    ledger = stored
    for name in stale:
        ledger = ledger.without_set(name)
    return Reconciled(stored, ledger, tuple(stale), tuple(notes))
