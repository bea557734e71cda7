"""sgpatch.fs.steps: the test-only kill hook every write step counts in."""

from __future__ import annotations

import os
import signal

from sgpatch.fs import steps


def test_the_hook_sends_its_signal_right_before_the_named_step():
    """Input: a forked child with SGPATCH_TEST_KILL_AT=3 taking steps. Outcome: it dies by
    SIGKILL having counted exactly 3 steps (the third is where it died)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        try:
            os.environ[steps.KILL_ENV] = "3"
            steps.reset()
            for _ in range(5):
                os.write(w, b".")
                steps.step()
        finally:
            os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as f:
        written = f.read()
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert written == b"..."


def test_without_the_variable_steps_are_only_counted(monkeypatch):
    """Input: no SGPATCH_TEST_KILL_AT, two steps. Outcome: the count is 2, nothing else."""
    monkeypatch.delenv(steps.KILL_ENV, raising=False)
    steps.reset()
    steps.step()
    steps.step()
    assert steps.taken == 2
    steps.reset()
