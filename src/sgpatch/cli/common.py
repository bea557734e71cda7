"""What every set command does first: find the tree, roll back an interrupted run, load sets."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops import report
from sgpatch.state.folder import interrupted
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
    from sgpatch.state.lock import LockBusy, lock_timeout
    from sgpatch.state.recovery import stop_if_rolled_back

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
