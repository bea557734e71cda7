"""Reading a tree while another sgpatch run may be writing it, without taking its lock.

Readers (`status`, `probe`, a dry run) take no lock: a read-only tree must stay readable. So a
reader reads, then checks that no writer was at work meanwhile (no journal before or after, the
same ledger bytes), and reads again if one was: it never judges a mix of two states.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.state.folder import LEDGER, STATE_DIR, journal_path, read_state

T = TypeVar("T")


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

    if journal_path(root / STATE_DIR) is not None:
        return None
    return (read_state((root / STATE_DIR) / LEDGER),)
