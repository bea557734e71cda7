"""What every set command does first: find the tree, roll back an interrupted run, load sets."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sgpatch import console
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.state.folder import interrupted, journal_path
from sgpatch.state.ledger import state_dir
from sgpatch.tree.target import Target, discover, find_target

if TYPE_CHECKING:
    pass

T = TypeVar("T")
READER_WAIT = 10.0  # seconds a reader waits for a running writer before saying so


def locate_tree(sglang_dir: Path | None) -> Path:
    """The tree's package root. One stderr line when it was found from the current directory
    (as git finds its repository), and a warning when it is not the `sglang` this Python would
    import: the server may run other files than the ones patched."""
    found = discover(sglang_dir)
    if found.how == "current directory":
        console.err(
            f"sgpatch: using the SGLang tree around the current directory: {found.root} "
            "(--sglang-dir to choose another)"
        )
        if found.imported is None:
            console.err(
                f"sgpatch: warning: {sys.executable} imports no sglang; this tree may not be "
                "the one that runs"
            )
        elif found.imported != found.root:
            console.err(
                f"sgpatch: warning: {sys.executable} imports sglang from {found.imported}, "
                "not from this tree"
            )
    return found.root


def open_target(
    sglang_dir: Path | None, sglang_version: str | None, reader: bool = False
) -> Target:
    """Find the tree; if an interrupted run left a journal, stop (exit 4) before the version
    is read (nothing about an interrupted run depends on it): a writer rolls it back first
    and says so; a reader (`status`, `probe`, a dry run) never writes, so it says which
    command rolls it back (`recover`) and touches nothing (issue 46: recovery belongs to
    writers, and a reader may run as anyone).

    A journal whose writer still runs is that run's, not a crash's: recovery takes the lock,
    so it waits for the writer. A reader waits briefly for it (`READER_WAIT` s, or less if
    $SGPATCH_LOCK_TIMEOUT says so), then says a run is in progress (exit 4)."""
    root = locate_tree(sglang_dir)
    if not interrupted(state_dir(root)):  # the writer (txn) is imported only when there is work
        return find_target(sglang_dir, sglang_version, root=root)
    if reader:
        _wait_or_report(root)
        return find_target(sglang_dir, sglang_version, root=root)
    from sgpatch.state.recovery import stop_if_rolled_back

    stop_if_rolled_back(root, state_dir(root))
    return find_target(sglang_dir, sglang_version, root=root)


def _wait_or_report(root: Path) -> None:
    """A reader that found a journal: wait while its writer runs (the journal goes when it
    ends); a journal no run holds the lock for is a crash's: exit 4, naming `recover`."""
    import time

    from sgpatch.fs import lock as fslock
    from sgpatch.shown import command
    from sgpatch.state.folder import LOCK, LOCK_OWNER
    from sgpatch.state.lock import lock_timeout, say_waiting

    folder = state_dir(root)
    wait = min(READER_WAIT, lock_timeout())
    deadline, told = time.monotonic() + wait, False
    while interrupted(folder):
        journal_path(folder)  # a FIFO or symlink planted there: refused as what it is
        if not fslock.is_held(folder / LOCK):
            raise SgpatchError(
                f"an interrupted sgpatch run left its journal in {root}: files it was writing "
                f"may be half written; {command('recover', '--sglang-dir', root)} rolls it "
                "back (a read-only command never does)",
                ExitCode.UNSAFE,
            )
        if time.monotonic() >= deadline:
            raise SgpatchError(
                f"an sgpatch run is in progress in {root} "
                f"({fslock.holder(folder / LOCK_OWNER)}); run the command again when it is done",
                ExitCode.UNSAFE,
            )
        if not told and wait > 0:
            told = True
            say_waiting(f"the sgpatch run writing {root}", fslock.holder(folder / LOCK_OWNER), wait)
        time.sleep(0.05)
