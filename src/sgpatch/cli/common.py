"""What every set command does first: find the tree, roll back an interrupted run, load sets."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops import report
from sgpatch.state import ledger as ledger_mod
from sgpatch.state.folder import interrupted
from sgpatch.state.ledger import LEDGER, state_dir
from sgpatch.tree.target import Target, discover, find_target

if TYPE_CHECKING:
    from sgpatch.state.ledger import Ledger, SetRecord
    from sgpatch.state.upgrade import Reconciled

T = TypeVar("T")
READER_WAIT = 10.0  # seconds a reader waits for a running writer before saying so


def locate_tree(sglang_dir: Path | None) -> Path:
    """The tree's package root. One stderr line when it was found from the current directory
    (as git finds its repository), and a warning when it is not the `sglang` this Python would
    import: the server may run other files than the ones patched."""
    found = discover(sglang_dir)
    if found.how == "current directory":
        report.err(
            f"sgpatch: using the SGLang tree around the current directory: {found.root} "
            "(--sglang-dir to choose another)"
        )
        if found.imported is None:
            report.err(
                f"sgpatch: warning: {sys.executable} imports no sglang; this tree may not be "
                "the one that runs"
            )
        elif found.imported != found.root:
            report.err(
                f"sgpatch: warning: {sys.executable} imports sglang from {found.imported}, "
                "not from this tree"
            )
    return found.root


def open_target(
    sglang_dir: Path | None, sglang_version: str | None, reader: bool = False
) -> Target:
    """Find the tree; if an interrupted run left a journal, roll it back and stop (exit 4),
    before the version is read (nothing about an interrupted run depends on it).

    A journal whose writer still runs is that run's, not a crash's: recovery takes the lock,
    so it waits for the writer. A reader (`status`, `probe`) waits briefly
    (`READER_WAIT` s, or less if $SGPATCH_LOCK_TIMEOUT says so), then says a run is in
    progress (exit 4); it never rolls back under a running writer."""
    root = locate_tree(sglang_dir)
    if not interrupted(state_dir(root)):  # the writer (txn) is imported only when there is work
        return find_target(sglang_dir, sglang_version, root=root)
    from sgpatch.state.txn import LockBusy, lock_timeout, stop_if_rolled_back

    wait = min(READER_WAIT, lock_timeout()) if reader else None
    try:
        stop_if_rolled_back(root, state_dir(root), wait)
    except LockBusy as exc:
        if not reader:
            raise
        raise SgpatchError(
            f"an sgpatch run is in progress in {root} ({exc.holder}); run the command again "
            "when it is done",
            ExitCode.UNSAFE,
        ) from None
    return find_target(sglang_dir, sglang_version, root=root)


def load_ledger(target: Target) -> Reconciled:
    """The ledger as it applies to this tree: sets recorded for another release, or whose
    files a reinstall put back, are dropped (sgpatch.state.upgrade); `say_notes` prints why."""
    from sgpatch.state.upgrade import reconcile

    stored = ledger_mod.load(target.root)
    return reconcile(target.root, str(target.version), target.dist_info, stored)


def say_notes(reconciled: Reconciled, dropped: bool = False) -> None:
    """One line per stale set: what to run (a run that only reads), or, from the run that
    wrote the ledger without them (`dropped`), that their records are gone: said once."""
    for note in reconciled.dropped if dropped else reconciled.notes:
        report.err(f"sgpatch: {note}")


def ledger_changes(root: Path, old: Ledger, new: Ledger, data: list[bytes | None]) -> list:
    """The ledger update and the store (bytes before and after of every file), written in the
    same transaction as the files. Bytes the new ledger does not name are not stored, and
    bytes the old one needed and the new one does not are removed (a second apply with --with
    moves a file's 'after' on; a stale set's records go), so nothing is left behind in
    `originals/`."""
    from sgpatch.state.ledger import has_bytes, original_rel, referenced, sha256, unreferenced
    from sgpatch.state.txn import FileChange, read_bytes

    rel = ledger_mod.ledger_rel()
    out = [FileChange(rel, read_bytes(root, rel), ledger_mod.dump(new) if new.sets else None)]
    keep = referenced(new)
    digests = {sha256(b): b for b in data if b is not None}
    known = {d: b for d, b in digests.items() if d in keep}
    for digest, content in sorted(known.items()):
        if not has_bytes(root, digest):
            out.append(FileChange(original_rel(digest), None, content, 0o444))
    for digest in unreferenced(old, new):
        path = original_rel(digest)
        current = read_bytes(root, path)
        if current is not None:
            out.append(FileChange(path, current, None))
    return out


def applied_untested(record: SetRecord | None) -> None:
    """One stderr line when the ledger says the set was applied to an untested version."""
    if record is not None and record.variants_of:
        report.err(
            f"sgpatch: {record.name} was applied to untested sglang {record.sglang_version} "
            f"with the {record.variants_of} variants (apply --untested)"
        )


def site_packages(target: Target) -> Path | None:
    return target.root.parent if target.layout == "site-packages" else None


def stable_read(root: Path, compute: Callable[[], T], tries: int = 100) -> T:
    """`compute()` (which reads the ledger and the files) over a tree no writer touched in the
    meantime: no journal before or after, and the same ledger bytes. A reader takes no lock,
    so a run that writes meanwhile makes it read again (briefly), never mix two states."""
    import time

    for _ in range(tries):
        token = _state_token(root)
        if token is not None:
            result = compute()
            if _state_token(root) == token:
                return result
        time.sleep(0.05)
    raise SgpatchError(
        f"another sgpatch run kept writing {root} while this one read it; run it again",
        ExitCode.UNSAFE,
    )


def _state_token(root: Path) -> tuple[bytes | None] | None:
    """None while a write is in progress (a journal is there), else the ledger's bytes."""
    from sgpatch.state.folder import journal_path, read_state

    if journal_path(state_dir(root)) is not None:
        return None
    return (read_state(state_dir(root) / LEDGER),)
