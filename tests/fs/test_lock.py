"""sgpatch.fs.lock: one flock on a regular file, pinned, and who holds it."""

from __future__ import annotations

import json
import os
import time

import pytest

from sgpatch.fs import lock
from sgpatch.fs.regular import OddFile


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_lock_file_that_is_not_regular_is_odd_at_once(tmp_path, kind):
    """Input: a FIFO, or a symlink to a file not made yet, at the lock's name. Outcome:
    `OddFile` at once; nothing made through the link, nothing waited on."""
    path = tmp_path / "lock"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(tmp_path / "made")
    with pytest.raises(OddFile):
        lock.acquire(path, time.monotonic() + 5)
    assert not (tmp_path / "made").exists()


def test_a_held_lock_is_busy_and_says_so_once_before_it_waits(tmp_path):
    """Input: the lock held by this process, a second attempt waiting 0.3 s. Outcome: `Busy`,
    and `on_wait` was called exactly once; released, the second attempt gets it."""
    path = tmp_path / "lock"
    first = lock.acquire(path, time.monotonic())
    assert first is not None
    told = []
    with pytest.raises(lock.Busy):
        lock.acquire(path, time.monotonic() + 0.3, lambda: told.append(1))
    assert told == [1]
    first.release()
    second = lock.acquire(path, time.monotonic())
    assert second is not None
    second.release()


def test_a_released_lock_is_free_while_a_child_forked_under_it_lives(tmp_path):
    """Input: the lock held, a child forked meanwhile (port's check workers are forked while
    a port holds W's lock) that sleeps on, the lock released. Outcome: the lock can be taken
    again at once, with the child still alive."""
    path = tmp_path / "lock"
    first = lock.acquire(path, time.monotonic())
    assert first is not None
    child = os.fork()
    if child == 0:  # the child: keeps the inherited descriptor open, then leaves
        time.sleep(2)
        os._exit(0)
    try:
        first.release()
        second = lock.acquire(path, time.monotonic())
        assert second is not None
        second.release()
    finally:
        os.waitpid(child, 0)


def test_a_lock_file_removed_while_waiting_is_not_counted_as_held(tmp_path, monkeypatch):
    """Input: the name no longer leads to the file just locked (forced). Outcome: None: the
    caller locks again, never a lock on a file nobody else can find."""
    monkeypatch.setattr(lock, "names", lambda fd, path: False)
    assert lock.acquire(tmp_path / "lock", time.monotonic()) is None


def test_the_holder_record_names_pid_host_and_command(tmp_path):
    """Input: this process writes the holder record. Outcome: the line names its pid and
    'sgpatch'; a record that is not one reads as 'holder unknown'."""
    path = tmp_path / "lock.owner"
    lock.write_holder(path)
    said = lock.holder(path)
    assert said.startswith(f"held by pid {os.getpid()} on ") and ": sgpatch" in said
    path.write_text(json.dumps({"pid": 1, "since": 1e400, "host": "h", "cmd": "c"}))
    assert lock.holder(path) == "holder unknown"
    path.unlink()
    os.mkfifo(path)
    assert lock.holder(path) == "holder unknown"
