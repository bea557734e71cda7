"""The test-only fault-injection hook: every write step of every writer counts here.

A step is one temp-file write, one rename, one unlink, or one journal removal; commit,
recovery and port's workspace writes alike. With $SGPATCH_TEST_KILL_AT=N (or N,M,...) the
process sends itself SIGKILL (no cleanup: a real crash), or the signal $SGPATCH_TEST_SIGNAL
names (INT for Ctrl-C), right before those steps. Never set them outside the tests.
"""

from __future__ import annotations

import os
import signal

KILL_ENV = "SGPATCH_TEST_KILL_AT"
SIGNAL_ENV = "SGPATCH_TEST_SIGNAL"

taken = 0  # write steps this process took (a forked test child sets it back with `reset`)


def step() -> None:
    """Count one write step, and send the test's signal when it is one it names."""
    global taken
    taken += 1
    kill_at = os.environ.get(KILL_ENV)
    if kill_at and str(taken) in (s.strip() for s in kill_at.split(",")):
        name = os.environ.get(SIGNAL_ENV, "KILL")
        os.kill(os.getpid(), getattr(signal, f"SIG{name}"))


def reset() -> None:
    """Count from zero again (a forked child runs a whole command of its own)."""
    global taken
    taken = 0
