"""The transaction module: journal, rollback on write errors, recovery, the lock, the kill hook.

Also home of `make_env`, a small synthetic site-packages tree plus a four-patch set (three
modified files in three folders, one new file in a new folder) reused by test_safety and
test_bad_inputs.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import (
    NOBODY,
    OTHER,
    SET,
    A,
    D,
    failing_replace,
    fd_path,
    full_snapshot,
    make_diff,
    make_env,
    manifest,
    one_line_error,
    patched,
    reachable_dir,
    root_only,
    sgpatch_as,
    tree_snapshot,
    waited_then_error,
)
from helpers import run_cli as cli
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.fs import atomic, steps
from sgpatch.fs import lock as fs_lock
from sgpatch.state import folder as state_folder
from sgpatch.state import journal as journal_mod
from sgpatch.state import ledger as ledger_mod
from sgpatch.state import lock as state_lock
from sgpatch.state import put as put_mod
from sgpatch.state import txn
from sgpatch.state.lock import locked
from sgpatch.state.recovery import recover
from sgpatch.state.txn import FileChange, commit, write_journal


@pytest.fixture
def env(tmp_path):
    return make_env(tmp_path)


# ------------------------------------------------------------------------------ commit basics


def test_commit_writes_keeps_modes_and_removes_the_journal(tmp_path):
    root = tmp_path
    (root / "x.py").write_bytes(b"old\n")
    os.chmod(root / "x.py", 0o750)
    state = root / ".sgpatch"
    commit(
        root,
        state,
        [
            FileChange("x.py", b"old\n", b"new\n"),
            FileChange("deep/er/y.py", None, b"y\n", 0o644),
        ],
    )
    assert (root / "x.py").read_bytes() == b"new\n"
    assert (root / "x.py").stat().st_mode & 0o777 == 0o750
    assert (root / "deep/er/y.py").read_bytes() == b"y\n"
    assert not (state / state_folder.JOURNAL).exists()
    assert not list(root.rglob(f"*{atomic.TMP_SUFFIX}"))


def test_commit_refuses_a_file_that_changed_since_planning(tmp_path):
    (tmp_path / "x.py").write_bytes(b"edited\n")
    with pytest.raises(SgpatchError) as exc:
        commit(tmp_path, tmp_path / ".sgpatch", [FileChange("x.py", b"old\n", b"new\n")])
    assert exc.value.code == ExitCode.UNSAFE and "changed while" in exc.value.message
    assert (tmp_path / "x.py").read_bytes() == b"edited\n"


def _three_files(root: Path) -> list[FileChange]:
    for n in "abc":
        (root / n).mkdir()
        (root / n / "f.py").write_bytes(f"{n} old\n".encode())
    return [
        FileChange(f"{n}/f.py", f"{n} old\n".encode(), f"{n} new\n".encode()) for n in "abc"
    ] + [FileChange("new/dir/g.py", None, b"g\n")]


def disk_full_at(monkeypatch, n: int) -> None:
    """The n-th os.replace of the journal or a tree file fails with ENOSPC (disk full); the
    journal's own originals (stored before the journal, in journal-originals/) and the lock's
    holder record (`lock.owner`) are not counted."""
    calls = {"n": 0}

    def nth(dst: str) -> bool:
        counted = state_folder.JOURNAL_ORIGINALS not in dst
        counted = counted and not dst.endswith(state_folder.LOCK_OWNER)
        calls["n"] += counted
        return counted and calls["n"] == n

    full = OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "replace", failing_replace(nth, full))


@pytest.mark.parametrize("nth", [1, 2, 3, 4])
def test_disk_full_on_the_nth_replace_rolls_back(tmp_path, monkeypatch, nth):
    """Input: os.replace raises ENOSPC on its n-th call (journal is call 1). Outcome: a clean
    error naming the file, every file as before, no journal, no temp file, no new folder."""
    changes = _three_files(tmp_path)
    before = tree_snapshot(tmp_path)
    disk_full_at(monkeypatch, nth)
    with pytest.raises(SgpatchError) as exc:
        commit(tmp_path, tmp_path / ".sgpatch", changes)
    assert "no space left" in exc.value.message and "\n" not in exc.value.message
    assert exc.value.code == ExitCode.BAD_INPUT
    assert tree_snapshot(tmp_path) == before
    assert not (tmp_path / ".sgpatch" / state_folder.JOURNAL).exists()
    assert not list(tmp_path.rglob(f"*{atomic.TMP_SUFFIX}"))


def test_unwritable_folder_of_the_third_file_rolls_back(tmp_path, monkeypatch):
    """Input: the folder of the third file refuses new files (EACCES creating the temp file;
    as root a chmod would not stop us). Outcome: exit 2 naming c/f.py, a and b restored."""
    changes = _three_files(tmp_path)
    before = tree_snapshot(tmp_path)
    real = atomic.new_temp

    def new_temp(at, name, mode=0o600):
        if Path(fd_path("", at)).name == "c":
            raise PermissionError(errno.EACCES, "Permission denied", name)
        return real(at, name, mode)

    monkeypatch.setattr(atomic, "new_temp", new_temp)
    with pytest.raises(SgpatchError) as exc:
        commit(tmp_path, tmp_path / ".sgpatch", changes)
    assert "c/f.py" in exc.value.message and "rolled back" in exc.value.message
    assert tree_snapshot(tmp_path) == before


def test_failed_rollback_keeps_the_journal_for_the_next_run(tmp_path, monkeypatch):
    """Input: the disk fills up after the first file and stays full. Outcome: exit 4 saying the
    rollback failed and the journal is kept; once space is back, recover restores everything."""
    changes = _three_files(tmp_path)
    before = tree_snapshot(tmp_path)
    real = os.replace
    calls = {"n": 0}

    def second(dst: str) -> bool:
        calls["n"] += ".sgpatch" not in dst  # the tree's files, not the journal's
        return calls["n"] >= 2

    full = OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "replace", failing_replace(second, full))
    with pytest.raises(SgpatchError) as exc:
        commit(tmp_path, tmp_path / ".sgpatch", changes)
    assert exc.value.code == ExitCode.UNSAFE and "journal" in exc.value.message
    assert (tmp_path / ".sgpatch" / state_folder.JOURNAL).exists()
    monkeypatch.setattr(os, "replace", real)
    assert recover(tmp_path, tmp_path / ".sgpatch") == ["a/f.py"]
    assert tree_snapshot(tmp_path) == before


def test_keyboard_interrupt_mid_commit_rolls_back_and_propagates(tmp_path, monkeypatch):
    changes = _three_files(tmp_path)
    before = tree_snapshot(tmp_path)
    calls = {"n": 0}

    def third(_dst: str) -> bool:
        calls["n"] += 1
        return calls["n"] == 3

    monkeypatch.setattr(os, "replace", failing_replace(third, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        commit(tmp_path, tmp_path / ".sgpatch", changes)
    assert tree_snapshot(tmp_path) == before


def _with_stored_before(root: Path) -> tuple[list[FileChange], str]:
    """x.py changing, and the ledger's store keeping its 'before' (a new 0444 state file),
    as apply commits them."""
    (root / "x.py").write_bytes(b"old\n")
    digest = ledger_mod.sha256(b"old\n")
    store = FileChange(ledger_mod.original_rel(digest), None, b"old\n", 0o444)
    return [FileChange("x.py", b"old\n", b"new\n"), store], ledger_mod.original_rel(digest)


def test_a_stored_before_is_linked_from_the_journal_store_not_written_again(tmp_path, monkeypatch):
    """Input: a commit whose store file holds the bytes the journal already stored for x.py.
    Outcome: it is made by one hard link (no second write of those bytes), holds them read-only
    with one name once the journal's store is dropped, and x.py is written."""
    changes, rel = _with_stored_before(tmp_path)
    links, writes = [], []
    real_link, real_write = os.link, put_mod.write_file
    monkeypatch.setattr(txn.os, "link", lambda *a, **k: links.append(a) or real_link(*a, **k))
    monkeypatch.setattr(
        put_mod, "write_file", lambda p, *a, **k: writes.append(p) or real_write(p, *a, **k)
    )
    commit(tmp_path, tmp_path / ".sgpatch", changes)
    assert len(links) == 1 and tmp_path / rel not in writes
    st = os.stat(tmp_path / rel)
    assert (tmp_path / rel).read_bytes() == b"old\n" and st.st_nlink == 1
    assert st.st_mode & 0o777 == 0o444
    assert (tmp_path / "x.py").read_bytes() == b"new\n"
    assert not (tmp_path / ".sgpatch" / state_folder.JOURNAL_ORIGINALS).exists()


def test_without_hard_links_the_stored_before_is_written(tmp_path, monkeypatch):
    """Input: the same commit on a filesystem that makes no hard links (os.link: EPERM).
    Outcome: the store file is written instead: same bytes, mode 0444; x.py written."""
    changes, rel = _with_stored_before(tmp_path)

    def no_links(*_a, **_k):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(txn.os, "link", no_links)
    commit(tmp_path, tmp_path / ".sgpatch", changes)
    assert (tmp_path / rel).read_bytes() == b"old\n"
    assert os.stat(tmp_path / rel).st_mode & 0o777 == 0o444
    assert (tmp_path / "x.py").read_bytes() == b"new\n"


def test_a_store_file_that_appears_mid_commit_rolls_back(tmp_path, monkeypatch):
    """Input: the store file's name taken by someone else between the plan and the link
    (os.link: EEXIST). Outcome: exit 2 in one line, x.py as before, no journal left."""
    changes, _rel = _with_stored_before(tmp_path)
    before = tree_snapshot(tmp_path)

    def taken(*_a, **_k):
        raise OSError(errno.EEXIST, "File exists")

    monkeypatch.setattr(txn.os, "link", taken)
    with pytest.raises(SgpatchError) as exc:
        commit(tmp_path, tmp_path / ".sgpatch", changes)
    assert exc.value.code == ExitCode.BAD_INPUT and "\n" not in exc.value.message
    assert tree_snapshot(tmp_path) == before
    assert not (tmp_path / ".sgpatch" / state_folder.JOURNAL).exists()


# ------------------------------------------------------------------------------ recovery


def test_recover_restores_bytes_modes_and_removes_temps_and_new_folders(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a/f.py").write_bytes(b"orig\n")
    os.chmod(tmp_path / "a/f.py", 0o640)
    state = tmp_path / ".sgpatch"
    write_journal(
        state,
        [FileChange("a/f.py", b"orig\n", b"x"), FileChange("n1/n2/g.py", None, b"g")],
        {"a/f.py": 0o640},
        ["n1/n2", "n1"],
    )
    before = tree_snapshot(tmp_path)
    # what a killed run leaves: one file replaced (mode too), a new file, temp files
    (tmp_path / "a/f.py").write_bytes(b"patched\n")
    os.chmod(tmp_path / "a/f.py", 0o755)
    (tmp_path / "n1/n2").mkdir(parents=True)
    (tmp_path / "n1/n2/g.py").write_bytes(b"g")
    (tmp_path / "a/.f.py.abc123.sgpatch-tmp").write_bytes(b"half")
    (state / ".journal.json.zz.sgpatch-tmp").write_bytes(b"{")
    assert sorted(recover(tmp_path, state)) == ["a/f.py", "n1/n2/g.py"]
    assert tree_snapshot(tmp_path) == before
    assert not (tmp_path / "n1").exists()
    assert not list(tmp_path.rglob(f"*{atomic.TMP_SUFFIX}"))
    assert recover(tmp_path, state) is None  # journal gone: nothing to do


def test_recover_only_fixes_mode_when_bytes_are_right(tmp_path):
    (tmp_path / "f.py").write_bytes(b"same\n")
    write_journal(tmp_path / ".s", [FileChange("f.py", b"same\n", b"x")], {"f.py": 0o600})
    os.chmod(tmp_path / "f.py", 0o755)
    assert recover(tmp_path, tmp_path / ".s") == ["f.py"]
    assert (tmp_path / "f.py").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "journal",
    [
        "{not json",
        '{"schema": 1}',
        '{"files": [{"path": "x"}]}',
        '{"files": [{"path": "x", "before": "!!notbase64"}]}',
        "[]",
    ],
)
def test_unreadable_journal_is_exit_4_and_left_alone(tmp_path, journal):
    state = tmp_path / ".sgpatch"
    state.mkdir()
    (state / state_folder.JOURNAL).write_text(journal)
    with pytest.raises(SgpatchError) as exc:
        recover(tmp_path, state)
    assert exc.value.code == ExitCode.UNSAFE and "journal" in exc.value.message
    assert (state / state_folder.JOURNAL).read_text() == journal


def test_journal_with_an_escaping_path_is_refused(tmp_path):
    """A tampered journal must not make recovery write outside the tree."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    root = tmp_path / "root"
    state = root / ".sgpatch"
    state.mkdir(parents=True)
    doc = {"schema": 1, "files": [{"path": "../outside.txt", "before": None, "mode": None}]}
    (state / state_folder.JOURNAL).write_text(json.dumps(doc))
    with pytest.raises(SgpatchError) as exc:
        recover(root, state)
    assert exc.value.code == ExitCode.UNSAFE
    assert outside.read_text() == "keep\n"


# ------------------------------------------------------------------------------ kill hook


def test_kill_hook_kills_at_the_requested_step(tmp_path):
    """SGPATCH_TEST_KILL_AT=N: the process dies by SIGKILL before write step N (test-only)."""
    (tmp_path / "f.py").write_bytes(b"a\n")
    pid = os.fork()
    if pid == 0:
        try:
            # 1: journal temp, 2: journal replace, 3: file temp (the originals stored before
            # the journal are no kill point: see store.store)
            os.environ[steps.KILL_ENV] = "3"
            steps.reset()
            commit(tmp_path, tmp_path / ".s", [FileChange("f.py", b"a\n", b"b\n")])
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert (tmp_path / ".s" / state_folder.JOURNAL).exists()
    assert (tmp_path / "f.py").read_bytes() == b"a\n"
    assert recover(tmp_path, tmp_path / ".s") == []


# ------------------------------------------------------------------------------ the lock


def test_lock_timeout_env(monkeypatch):
    monkeypatch.delenv(state_lock.LOCK_TIMEOUT_ENV, raising=False)
    assert state_lock.lock_timeout() == 30.0
    monkeypatch.setenv(state_lock.LOCK_TIMEOUT_ENV, "1.5")
    assert state_lock.lock_timeout() == 1.5
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv(state_lock.LOCK_TIMEOUT_ENV, bad)
        with pytest.raises(SgpatchError) as exc:
            state_lock.lock_timeout()
        assert exc.value.code == ExitCode.BAD_INPUT


def test_held_lock_makes_apply_exit_4_naming_lock_and_holder(env, monkeypatch):
    """Input: another run holds the target's lock; SGPATCH_LOCK_TIMEOUT=1. Outcome: apply
    waits about a second, exits 4 naming the lock file and the holder's pid; nothing written."""
    pkg, _, args = env
    before = tree_snapshot(pkg)
    monkeypatch.setenv(state_lock.LOCK_TIMEOUT_ENV, "1")
    with locked(pkg / ".sgpatch"):
        t0 = time.monotonic()
        code, _, err = cli("apply", *args)
        waited = time.monotonic() - t0
    assert code == 4
    waiting = err.partition("\n")[0]
    assert f"held by pid {os.getpid()}" in waiting  # said at once, before the wait (45.4)
    line = waited_then_error(err)
    assert str(pkg / ".sgpatch" / "lock") in line and f"held by pid {os.getpid()}" in line
    assert 0.9 <= waited < 5
    assert tree_snapshot(pkg) == before
    assert not (pkg / ".sgpatch" / state_folder.LOCK_OWNER).exists()
    assert cli("apply", *args)[0] == 0  # lock released: works


@pytest.mark.parametrize("kind", ["fcntl", "filelock"])
def test_the_lock_excludes_filelock_and_itself_across_implementations(tmp_path, monkeypatch, kind):
    """Input: a run takes the lock (with fcntl as on POSIX, or with filelock as where there is
    no fcntl) while a filelock FileLock, another process's kind of lock, holds the file.
    Outcome: the run waits and refuses with exit 4; once the holder lets go it gets the lock,
    and a filelock lock cannot be taken while the run holds it."""
    from filelock import FileLock, Timeout

    if kind == "filelock":
        monkeypatch.setattr(fs_lock, "file_lock", fs_lock.PortableLock)
    state = tmp_path / ".sgpatch"
    state.mkdir()
    other = FileLock(str(state / state_folder.LOCK))
    other.acquire(timeout=1)
    with pytest.raises(SgpatchError) as info, locked(state, timeout=0.2):
        pass
    assert info.value.code == ExitCode.UNSAFE
    other.release()
    with locked(state, timeout=1), pytest.raises(Timeout):
        FileLock(str(state / state_folder.LOCK)).acquire(timeout=0.2)


def test_lock_waits_for_a_holder_that_finishes_in_time(env, monkeypatch):
    pkg, _, args = env
    monkeypatch.setenv(state_lock.LOCK_TIMEOUT_ENV, "10")
    ready = threading.Event()

    def hold():
        with locked(pkg / ".sgpatch", timeout=5):
            ready.set()
            time.sleep(0.5)

    t = threading.Thread(target=hold)
    t.start()
    ready.wait()
    code, _, err = cli("apply", *args)
    t.join()
    assert code == 0, err
    assert patched(pkg)


def test_a_run_waiting_while_the_holder_removes_the_folder_starts_over(tmp_path):
    """Input: run B waits for the lock while the holder removes `.sgpatch/` (as the last
    revert does) and releases. Outcome: B makes the folder again and holds the lock file that
    is now at the path (a newcomer cannot take it), instead of failing on the vanished one."""
    from filelock import FileLock, Timeout

    state = tmp_path / ".sgpatch"
    inside, leave = threading.Event(), threading.Event()

    def waiter():
        with locked(state, timeout=10):
            inside.set()
            leave.wait(10)

    with locked(state):
        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.5)  # B has pinned and is blocked on the file about to be removed
        state_lock.remove_state_dir(state)
        assert not state.exists()
    try:
        assert inside.wait(10)
        assert (state / state_folder.LOCK).exists()
        with pytest.raises(Timeout):
            FileLock(str(state / state_folder.LOCK)).acquire(timeout=0.2)
    finally:
        leave.set()
        t.join()


def test_a_lock_won_on_a_file_removed_meanwhile_is_taken_again(tmp_path, monkeypatch):
    """Input: just as this run's flock succeeds, its lock file is removed (a holder's cleanup)
    and a newcomer creates and locks a new one at the same name. Outcome: the run sees that the
    name leads to another file, and waits for the newcomer instead of writing alongside it."""
    state = tmp_path / ".sgpatch"
    real = fs_lock.file_lock
    newcomer = real(state / state_folder.LOCK)
    inside, leave, raced = threading.Event(), threading.Event(), threading.Event()

    class RacyLock:
        def __init__(self, path):
            self.inner = real(path)

        def acquire(self, timeout, on_wait=None):
            self.inner.acquire(timeout)
            if not raced.is_set():  # once
                raced.set()
                (state / state_folder.LOCK).unlink()
                newcomer.acquire(1)  # a new file at the old name, locked

        def release(self):
            self.inner.release()

    monkeypatch.setattr(fs_lock, "file_lock", RacyLock)

    def run():
        with locked(state, timeout=10):
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=run)
    t.start()
    try:
        assert not inside.wait(0.7), "took the lock while the newcomer held the real one"
        newcomer.release()
        assert inside.wait(10)
    finally:
        leave.set()
        t.join()


def test_a_lock_that_keeps_moving_gives_up_at_the_timeout(tmp_path, monkeypatch):
    """Input: the name never leads to the file just locked (forced). Outcome: exit 4 once the
    timeout has passed, instead of relocking forever."""
    monkeypatch.setattr(fs_lock, "names", lambda fd, path: False)
    with pytest.raises(SgpatchError) as info, locked(tmp_path / ".sgpatch", timeout=0.3):
        pass
    assert info.value.code == ExitCode.UNSAFE and "holds the lock" in info.value.message


@pytest.mark.parametrize("kind", ["dangling-symlink", "fifo"])
def test_a_lock_file_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    """Input: `.sgpatch/lock` is a symlink to a file that does not exist yet, or a FIFO.
    Outcome: exit 4 naming it, at once; nothing is created through the link, nothing blocks."""
    state = tmp_path / ".sgpatch"
    state.mkdir()
    outside = tmp_path / "outside"
    if kind == "fifo":
        os.mkfifo(state / state_folder.LOCK)
    else:
        (state / state_folder.LOCK).symlink_to(outside)
    with pytest.raises(SgpatchError) as info, locked(state, timeout=0):
        pass
    assert (
        info.value.code == ExitCode.UNSAFE and str(state / state_folder.LOCK) in info.value.message
    )
    assert not outside.exists()


@pytest.mark.parametrize("error", [NotImplementedError(), OSError(errno.ENOSYS, "no flock")])
def test_a_filesystem_without_file_locks_is_one_line(tmp_path, monkeypatch, error):
    """Input: the lock cannot be taken because the filesystem has no flock (filelock 3 raises
    NotImplementedError, 4 an OSError). Outcome: exit 2 naming the lock file, no traceback."""

    class NoFlock:
        def acquire(self, timeout, on_wait=None):
            raise error

    monkeypatch.setattr(fs_lock, "file_lock", lambda path: NoFlock())
    with pytest.raises(SgpatchError) as info, locked(tmp_path / ".sgpatch", timeout=1):
        pass
    assert info.value.code == ExitCode.BAD_INPUT
    assert info.value.message.startswith(f"cannot take the lock {tmp_path / '.sgpatch' / 'lock'}")


def test_a_locked_run_that_left_nothing_leaves_no_folder(tmp_path):
    """Input: a run takes the lock and writes nothing (or was rolled back). Outcome: no
    `.sgpatch/` afterwards; one holding a ledger stays."""
    state = tmp_path / ".sgpatch"
    with locked(state):
        assert (state / state_folder.LOCK).exists()
    assert not state.exists()
    with locked(state):
        (state / "ledger.json").write_text("{}")
    assert sorted(p.name for p in state.iterdir()) == ["ledger.json", state_folder.LOCK]


def test_remove_state_dir_keeps_a_folder_with_anything_else_in_it(tmp_path):
    """Input: `.sgpatch/` holding a journal besides the lock. Outcome: nothing is removed."""
    state = tmp_path / ".sgpatch"
    with locked(state):
        (state / state_folder.JOURNAL).write_text("{}")
        state_lock.remove_state_dir(state)
    assert sorted(p.name for p in state.iterdir()) == [state_folder.JOURNAL, state_folder.LOCK]


def _ledger_consistent(pkg: Path) -> None:
    record = ledger_mod.load(pkg).sets[SET]
    assert [p.id for p in record.patches] == ["pa", "pb", "pc", "pd"]  # each exactly once
    for rel, rec in record.files.items():
        assert ledger_mod.sha256((pkg / rel).read_bytes()) == rec.after


def test_concurrent_applies_patch_exactly_once(env):
    """Input: 6 forked applies released at the same instant plus 2 real `python -m sgpatch`
    processes, with a short lock timeout. Outcome: each exits 0 or 4 (4 names the lock), the
    tree is patched exactly once, the ledger lists each patch once and matches the bytes."""
    pkg, _, args = env
    r, w = os.pipe()
    pids = []
    for _ in range(6):
        pid = os.fork()
        if pid == 0:
            code = 99
            try:
                os.close(w)
                os.read(r, 1)  # wait for the start signal
                os.environ[state_lock.LOCK_TIMEOUT_ENV] = "0.05"
                code, _, err = cli("apply", *args)
                if code == 4 and "lock" not in err:
                    code = 98
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(r)
    envv = {**os.environ, state_lock.LOCK_TIMEOUT_ENV: "20"}
    envv["PYTHONPATH"] = str(Path(txn.__file__).parents[2])
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "sgpatch", "apply", *args],
            env=envv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    os.write(w, b"x" * 6)
    os.close(w)
    codes = []
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        codes.append(os.WEXITSTATUS(status))
    for p in procs:
        _, err = p.communicate(timeout=60)
        codes.append(p.returncode)
        assert p.returncode == 0, err
    assert set(codes) <= {0, 4}, codes
    assert codes.count(0) >= 1
    assert (pkg / "srt/models/c.py").read_text().count("GAMMA7") == 1
    assert (pkg / "srt/a.py").read_text() == A.replace("alpha5\n", "ALPHA5\n")
    assert (pkg / "srt/extra/d.py").read_text() == D
    _ledger_consistent(pkg)
    assert not (pkg / ".sgpatch" / state_folder.JOURNAL).exists()


# ------------------------------------------------------------------------------ via the CLI


def test_cli_disk_full_mid_apply_is_one_line_and_tree_unchanged(env, monkeypatch):
    pkg, _, args = env
    before = tree_snapshot(pkg)
    real = os.replace
    disk_full_at(monkeypatch, 4)
    code, _, err = cli("apply", *args)
    assert code == 2
    assert "no space left on the device writing srt/models/c.py" in one_line_error(err)
    monkeypatch.setattr(txn.os, "replace", real)
    assert tree_snapshot(pkg) == before
    assert ledger_mod.load(pkg).sets == {}
    assert cli("apply", *args)[0] == 0 and patched(pkg)


def test_cli_disk_full_mid_revert_keeps_the_patched_tree(env, monkeypatch):
    pkg, _, args = env
    assert cli("apply", *args)[0] == 0
    before = tree_snapshot(pkg)
    ledger_before = (pkg / ".sgpatch/ledger.json").read_bytes()
    disk_full_at(monkeypatch, 3)
    code, _, err = cli("revert", *args)
    assert code == 2 and "rolled back" in one_line_error(err)
    assert tree_snapshot(pkg) == before
    assert (pkg / ".sgpatch/ledger.json").read_bytes() == ledger_before


# ------------------------------------------------------------------------------ hardening


def test_status_never_rolls_back_a_journal_whose_writer_holds_the_lock(env, monkeypatch):
    """Input: a journal (a write in progress: one file already replaced) while another run
    holds the lock; SGPATCH_LOCK_TIMEOUT=1. Outcome: status exits 4 saying a run is in
    progress, the half-written file and the journal are left to the writer; once the lock is
    free (the writer died), status names `recover` and still touches nothing; `recover`
    rolls back."""
    pkg, _, args = env
    monkeypatch.setenv(state_lock.LOCK_TIMEOUT_ENV, "1")
    with locked(pkg / ".sgpatch"):
        write_journal(pkg / ".sgpatch", [FileChange("srt/a.py", A.encode(), b"x")], {})
        (pkg / "srt/a.py").write_text("being written\n")
        code, _, err = cli("status", *args)
        assert code == 4
        assert "an sgpatch run is in progress" in waited_then_error(err)
        assert (pkg / "srt/a.py").read_text() == "being written\n"
        assert (pkg / ".sgpatch" / state_folder.JOURNAL).exists()
    code, _, err = cli("status", *args)
    assert code == 4 and "sgpatch recover --sglang-dir" in one_line_error(err)
    assert (pkg / "srt/a.py").read_text() == "being written\n"
    assert cli("recover", "--sglang-dir", str(pkg))[0] == 0
    assert (pkg / "srt/a.py").read_text() == A


def test_status_waits_for_a_writer_that_finishes_and_reports_its_result(env, monkeypatch):
    """Input: status starts while a writer holds the lock with its journal down, and the
    writer finishes (journal removed, lock released) 0.3 s later. Outcome: status waits for it,
    rolls nothing back and exits 0."""
    pkg, _, args = env
    ready, done = threading.Event(), threading.Event()

    def writer():
        with locked(pkg / ".sgpatch"):
            write_journal(pkg / ".sgpatch", [FileChange("srt/a.py", A.encode(), A.encode())], {})
            ready.set()
            time.sleep(0.3)
            (pkg / ".sgpatch" / state_folder.JOURNAL).unlink()
        done.set()

    t = threading.Thread(target=writer)
    t.start()
    ready.wait()
    code, _, err = cli("status", *args)
    t.join()
    assert code == 0, err
    assert (pkg / "srt/a.py").read_text() == A


def test_revert_takes_the_lock_before_it_reads_the_ledger(env, monkeypatch):
    """Input: the set applied; another run holds the lock; SGPATCH_LOCK_TIMEOUT=1. Outcome:
    revert waits for the lock and gives up (exit 4): it never writes while another run holds
    it, and the tree stays patched."""
    pkg, _, args = env
    assert cli("apply", *args)[0] == 0
    before = tree_snapshot(pkg)
    monkeypatch.setenv(state_lock.LOCK_TIMEOUT_ENV, "1")
    with locked(pkg / ".sgpatch"):
        code, _, err = cli("revert", *args)
    assert code == 4 and "holds the lock" in waited_then_error(err)
    assert tree_snapshot(pkg) == before


def test_revert_of_a_set_applied_while_it_waited_reverts_it(env, monkeypatch):
    """Input: revert starts while another run holds the lock and applies the set (the
    ledger was empty when revert looked; the apply lands while it waits). Outcome: revert
    decides under the lock, sees the set and reverts it; the tree ends pristine."""
    pkg, _, args = env
    assert cli("apply", *args)[0] == 0
    assert cli("revert", *args)[0] == 0
    pristine = tree_snapshot(pkg)
    assert cli("apply", *args)[0] == 0
    ready = threading.Event()

    def holder():
        with locked(pkg / ".sgpatch"):
            ready.set()
            time.sleep(0.3)

    t = threading.Thread(target=holder)
    t.start()
    ready.wait()
    code, _, err = cli("revert", *args)
    t.join()
    assert code == 0, err
    assert tree_snapshot(pkg) == pristine
    assert not (pkg / ".sgpatch").exists()


def test_status_reads_again_when_a_writer_changed_the_ledger_meanwhile(env, monkeypatch):
    """Input: the first time status reads the tree, another run applies the set right after
    (ledger bytes change between the two checks). Outcome: status reads again and reports the
    state after the write (every patch applied), never a mix."""
    from sgpatch.ops import status as status_op

    _, _, args = env
    real = status_op.read
    calls = {"n": 0}

    def racing(*a, **k):
        result = real(*a, **k)
        calls["n"] += 1
        if calls["n"] == 1:
            assert cli("apply", *args)[0] == 0
        return result

    monkeypatch.setattr(status_op, "read", racing)
    code, out, err = cli("status", *args, "--json")
    assert code == 0, err
    assert calls["n"] == 2
    states = {p["id"]: p["state"] for p in json.loads(out)["sets"][0]["patches"]}
    assert set(states.values()) == {"applied"}


@pytest.mark.parametrize("residue", ["lock-and-owner", "journal-temp", "both"])
def test_recovery_removes_crash_residue(env, residue):
    """Input: what a SIGKILLed run leaves when it dies outside the journal's life (the lock
    file, a stale lock.owner naming a dead pid, a half-written journal temp file). Outcome:
    `sgpatch recover` (and any writing command) leaves no .sgpatch/ behind, the tree as it was."""
    pkg, _, _ = env
    before = tree_snapshot(pkg)
    state = pkg / ".sgpatch"
    state.mkdir()
    if residue in ("lock-and-owner", "both"):
        (state / state_folder.LOCK).write_text("")
        (state / state_folder.LOCK_OWNER).write_text('{"pid": 999999, "host": "x", "since": 0}\n')
    if residue in ("journal-temp", "both"):
        (state / f".journal.json.k3j2{atomic.TMP_SUFFIX}").write_text('{"schema": 1, "fi')
    assert cli("recover", "--sglang-dir", str(pkg))[0] == 0
    assert not state.exists()
    assert tree_snapshot(pkg) == before


def test_revert_after_apply_with_an_optional_patch_leaves_no_state_folder(tmp_path):
    """Input: apply, then apply --with an optional patch touching a file the set already
    patched, then revert (the cycle that leaked one stored original per run). Outcome: after
    the revert the tree is byte-identical to pristine and .sgpatch/ is gone; three cycles in a
    row leave nothing either."""
    pkg, sets, args = make_env(tmp_path)
    opt = make_diff(
        A.replace("alpha5\n", "ALPHA5\n"),
        A.replace("alpha5\n", "ALPHA5\n").replace("alpha9\n", "ALPHA9\n"),
        "python/sglang/srt/a.py",
    )
    (sets / SET / "patches" / "0005-pe.patch").write_text(opt)
    extra = (
        "  - id: pe\n    summary: pe\n    type: feature\n    upstream: {status: pending}\n"
        "    optional: true\n    requires: [pa]\n"
        '    variants:\n      - {sglang: ">=0.5.0", patch: patches/0005-pe.patch}\n'
    )
    (sets / SET / "patchset.yaml").write_text(manifest(extra))
    before = tree_snapshot(pkg)
    for _ in range(3):
        assert cli("apply", *args)[0] == 0
        assert cli("apply", *args, "--with", "pe")[0] == 0
        store = pkg / ".sgpatch" / "originals"
        assert sorted(p.name for p in store.iterdir()) == sorted(
            ledger_mod.referenced(ledger_mod.load(pkg))
        )
        assert cli("revert", *args)[0] == 0
        assert not (pkg / ".sgpatch").exists()
        assert tree_snapshot(pkg) == before


def test_revert_of_the_last_set_removes_orphans_left_by_an_older_sgpatch(env):
    """Input: an applied set plus an orphan in originals/ (what older sgpatch versions left
    after apply --with). Outcome: revert of the last set removes it and the folder."""
    pkg, _, args = env
    assert cli("apply", *args)[0] == 0
    orphan = pkg / ".sgpatch" / "originals" / ledger_mod.sha256(b"orphan")
    orphan.write_bytes(b"orphan")
    assert cli("revert", *args)[0] == 0
    assert not (pkg / ".sgpatch").exists()


@pytest.mark.parametrize("command", ["apply", "status", "revert"])
def test_exit_codes_do_not_depend_on_stderr_being_open(env, command):
    """Input: `sgpatch apply|status|revert ... 2>&-` through a shell (stderr closed), with
    and without a set applied. Outcome: the same exit code as with stderr open, and the same
    tree."""
    pkg, _, args = env
    if command == "revert":
        assert cli("apply", *args)[0] == 0
    envv = {**os.environ, "PYTHONPATH": str(Path(txn.__file__).parents[2])}
    cmd = " ".join([sys.executable, "-m", "sgpatch", command, *args])
    closed = subprocess.run(["sh", "-c", cmd + " 2>&-"], env=envv, capture_output=True)
    after_closed = tree_snapshot(pkg)
    if command != "status":
        again = "revert" if command == "apply" else "apply"
        assert cli(again, *args)[0] == 0  # back to the starting point
    opened = subprocess.run(["sh", "-c", cmd], env=envv, capture_output=True)
    assert closed.returncode == opened.returncode == 0, opened.stderr
    assert tree_snapshot(pkg) == after_closed
    assert b"Traceback" not in closed.stdout


def test_lock_owner_fifo_does_not_hang_the_busy_message(env, monkeypatch):
    """Input: a FIFO planted at lock.owner while another run holds the lock. Outcome: the
    waiting run gives up after SGPATCH_LOCK_TIMEOUT=1 with exit 4 and 'holder unknown' in one
    line, instead of blocking on the FIFO."""
    pkg, _, args = env
    monkeypatch.setenv(state_lock.LOCK_TIMEOUT_ENV, "1")
    with locked(pkg / ".sgpatch"):
        (pkg / ".sgpatch" / state_folder.LOCK_OWNER).unlink()
        os.mkfifo(pkg / ".sgpatch" / state_folder.LOCK_OWNER)
        t0 = time.monotonic()
        code, _, err = cli("apply", *args)
        assert time.monotonic() - t0 < 10
    assert code == 4 and "holder unknown" in waited_then_error(err)


@pytest.mark.parametrize(
    "owner",
    ['{"pid": 1, "host": "h", "since": 1e400, "cmd": "x"}', "[" * 100_000, '{"since": "now"}'],
    ids=["since-infinite", "nested-too-deep", "since-a-word"],
)
def test_a_forged_lock_owner_reads_as_holder_unknown(env, monkeypatch, owner):
    """Input: while another run holds the lock, lock.owner says it started at 1e400 seconds
    (time.localtime overflows), is nested 100,000 lists deep, or gives a word for the time.
    Outcome: the waiting apply gives up after SGPATCH_LOCK_TIMEOUT=1 with exit 4 and
    'holder unknown' in one line (was exit 70 for the first two); the tree untouched."""
    pkg, _, args = env
    monkeypatch.setenv(state_lock.LOCK_TIMEOUT_ENV, "1")
    before = tree_snapshot(pkg)
    with locked(pkg / ".sgpatch"):
        (pkg / ".sgpatch" / state_folder.LOCK_OWNER).write_text(owner)
        code, _, err = cli("apply", *args)
    assert code == 4 and "holder unknown" in waited_then_error(err)
    assert tree_snapshot(pkg) == before


def test_stress_mixed_apply_revert_status_stays_consistent(env):
    """Input: 6 forked processes (2 apply, 2 revert, 2 status) each running its command 8
    times in a loop on one tree, released together, plus one real `python -m sgpatch` process
    alternating apply/revert/status; SGPATCH_LOCK_TIMEOUT=90 (flock is not fair: on a loaded
    machine a writer can wait long); the whole run bounded by an alarm. Outcome: no
    traceback, every writer exits 0 (status 0, or 4 'a run is in progress'), and at the end
    the tree is either pristine with no .sgpatch/ or patched exactly as the ledger says (each
    patch once, every file hashing to its 'after')."""
    pkg, _, args = env
    pristine = tree_snapshot(pkg)
    r, w = os.pipe()
    pids = []
    for cmd in ("apply", "revert", "status", "apply", "revert", "status"):
        pid = os.fork()
        if pid == 0:
            code = 99
            try:
                os.close(w)
                signal.alarm(240)
                os.environ[state_lock.LOCK_TIMEOUT_ENV] = "90"  # flock is not fair: no starving
                os.read(r, 1)
                allowed = {0, 4} if cmd == "status" else {0}
                code = 0
                for _ in range(8):
                    got, _, err = cli(cmd, *args)
                    if got not in allowed or "Traceback" in err:
                        (pkg.parent / f"stress-{os.getpid()}.err").write_text(f"{cmd}: {err}")
                        code = 90 + got
                        break
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(r)
    envv = {**os.environ, "PYTHONPATH": str(Path(txn.__file__).parents[2])}
    envv[state_lock.LOCK_TIMEOUT_ENV] = "90"
    os.write(w, b"x" * 6)
    os.close(w)
    for cmd in ("apply", "status", "revert", "apply"):
        p = subprocess.run(
            [sys.executable, "-m", "sgpatch", cmd, *args],
            env=envv,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert p.returncode in ((0, 4) if cmd == "status" else (0,)), p.stderr
        assert "Traceback" not in p.stderr
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        why = [f.read_text() for f in pkg.parent.glob("stress-*.err")]
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, why)
    assert not (pkg / ".sgpatch" / state_folder.JOURNAL).exists()
    if (pkg / ".sgpatch").exists():
        _ledger_consistent(pkg)
        assert patched(pkg)
    else:
        assert tree_snapshot(pkg) == pristine


# ------------------------------------------------------------------------------ symlinks


def test_commit_makes_replaces_and_removes_symlinks_as_links(tmp_path):
    """Input: one commit that turns f.py into a symlink to g.py, retargets link l from a.py to
    b.py, and turns link m back into a regular file. Outcome: links with exactly those targets
    (never written through: g.py, a.py, b.py unchanged), m a regular 0644 file, no journal,
    no temp file."""
    root = tmp_path
    for name in ("f.py", "g.py", "a.py", "b.py"):
        (root / name).write_text(f"{name}\n")
    (root / "l").symlink_to("a.py")
    (root / "m").symlink_to("a.py")
    commit(
        root,
        root / ".sgpatch",
        [
            FileChange("f.py", b"f.py\n", None, link="g.py"),
            FileChange("l", None, None, link="b.py", before_link="a.py"),
            FileChange("m", None, b"m\n", 0o644, before_link="a.py"),
        ],
    )
    assert os.readlink(root / "f.py") == "g.py" and os.readlink(root / "l") == "b.py"
    assert not (root / "m").is_symlink() and (root / "m").read_bytes() == b"m\n"
    assert [(root / n).read_text() for n in ("g.py", "a.py", "b.py")] == [
        "g.py\n",
        "a.py\n",
        "b.py\n",
    ]
    assert not (root / ".sgpatch" / state_folder.JOURNAL).exists()
    assert not list(root.rglob(f"*{atomic.TMP_SUFFIX}"))


def test_a_symlink_that_moved_since_planning_is_refused(tmp_path):
    (tmp_path / "l").symlink_to("elsewhere")
    with pytest.raises(SgpatchError) as exc:
        commit(
            tmp_path,
            tmp_path / ".sgpatch",
            [FileChange("l", None, None, link="b", before_link="a")],
        )
    assert exc.value.code == ExitCode.UNSAFE and "changed while" in exc.value.message
    assert os.readlink(tmp_path / "l") == "elsewhere"


@pytest.mark.parametrize("nth", [1, 2, 3])
def test_a_failed_commit_puts_links_back(tmp_path, monkeypatch, nth):
    """Input: the same three link changes, os.replace failing (ENOSPC) at call n. Outcome: the
    rollback restores every name exactly: f.py a regular file with its bytes and mode, l a
    link to a.py, m a link to a.py."""
    root = tmp_path
    for name in ("f.py", "a.py", "b.py"):
        (root / name).write_text(f"{name}\n")
    os.chmod(root / "f.py", 0o640)
    (root / "l").symlink_to("a.py")
    (root / "m").symlink_to("a.py")
    before = tree_snapshot(root)
    disk_full_at(monkeypatch, nth + 1)  # call 1 is the journal
    with pytest.raises(SgpatchError):
        commit(
            root,
            root / ".sgpatch",
            [
                FileChange("f.py", b"f.py\n", None, link="b.py"),
                FileChange("l", None, None, link="b.py", before_link="a.py"),
                FileChange("m", None, b"m\n", 0o644, before_link="a.py"),
            ],
        )
    assert tree_snapshot(root) == before


def test_recover_restores_a_link_from_the_journal_and_removes_one_the_run_made(tmp_path):
    """Input: a journal saying l was a link to a.py and n did not exist; the killed run had
    made l a regular file and n a link. Outcome: recovery puts the link l back and removes n."""
    root = tmp_path
    (root / "a.py").write_text("a\n")
    write_journal(
        root / ".sgpatch",
        [
            FileChange("l", None, b"x\n", before_link="a.py"),
            FileChange("n", None, None, link="a.py"),
        ],
        {},
    )
    (root / "l").write_text("x\n")
    (root / "n").symlink_to("a.py")
    assert sorted(recover(root, root / ".sgpatch")) == ["l", "n"]
    assert os.readlink(root / "l") == "a.py"
    assert not (root / "n").exists() and not (root / "n").is_symlink()


def test_revert_restores_link_targets_and_files_a_set_made_links(env):
    """Input: a ledger (as the engine's file operations will write it) saying the set turned
    srt/a.py (a regular 0640 file) into a link to models/c.py and retargeted srt/lnk from
    layers/b.py to models/c.py; the tree in that state. Outcome: revert gives back the regular
    file with its bytes and mode and the link with its old target, and removes .sgpatch/."""
    from dataclasses import replace

    pkg, _, args = env
    assert cli("apply", *args)[0] == 0
    assert cli("revert", *args)[0] == 0
    os.chmod(pkg / "srt/a.py", 0o640)
    (pkg / "srt/lnk").symlink_to("layers/b.py")
    pristine = tree_snapshot(pkg)
    assert cli("apply", *args)[0] == 0
    ledger = ledger_mod.load(pkg)
    record = ledger.sets[SET]
    a_before = record.files["srt/a.py"].before
    (pkg / "srt/a.py").unlink()
    (pkg / "srt/a.py").symlink_to("models/c.py")
    (pkg / "srt/lnk").unlink()
    (pkg / "srt/lnk").symlink_to("models/c.py")
    files = dict(record.files)
    files["srt/a.py"] = ledger_mod.FileRecord(a_before, None, 0o640, None, None, "models/c.py")
    files["srt/lnk"] = ledger_mod.FileRecord(None, None, None, None, "layers/b.py", "models/c.py")
    ledger = ledger.with_set(replace(record, files=files))
    (pkg / ".sgpatch" / "ledger.json").write_bytes(ledger_mod.dump(ledger))
    code, _, err = cli("revert", *args)
    assert code == 0, err
    assert tree_snapshot(pkg) == pristine
    assert not (pkg / ".sgpatch").exists()


# ------------------------------------------------------------------------------ owners (item 2)

SUID = 0o6755  # setuid + setgid


def _others_file(path: Path, text: str, mode: int = SUID, gid: int = OTHER) -> None:
    path.write_text(text)
    os.chown(path, OTHER, gid)
    os.chmod(path, mode)  # after chown: chown clears set-id bits


@root_only
def test_root_rewriting_another_users_setuid_file_keeps_its_owner(tmp_path):
    """Input: as root, `sgpatch patch` of a diff onto f.py owned by uid/gid 4242 with mode
    06755, then `patch -R`. Outcome: both exit 0 with no warning; f.py keeps owner 4242:4242
    and 06755 after each (never a root-owned setuid file); after -R the tree is identical in
    names, bytes, modes and owners, and nothing else under tmp changed."""
    tree = tmp_path / "t"
    tree.mkdir()
    _others_file(tree / "f.py", A)
    before = full_snapshot(tree)
    diff = tmp_path / "p.diff"
    diff.write_text(make_diff(A, A.replace("alpha5\n", "ALPHA5\n"), "f.py"))
    outside = sorted(tmp_path.iterdir())
    for extra in ((), ("-R",)):
        code, _, err = cli("patch", "-d", str(tree), "-i", str(diff), *extra)
        st = (tree / "f.py").stat()
        assert code == 0 and "warning" not in err
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (OTHER, OTHER, SUID)
    assert full_snapshot(tree, with_state=True) == before
    assert sorted(tmp_path.iterdir()) == outside


@root_only
def test_apply_and_revert_keep_owners_and_setuid_bits(env):
    """Input: as root, a set applied to a tree whose three patched files belong to uid 4242
    (one of them 06755), then reverted. Outcome: exit 0 both; after apply each file keeps its
    owner and mode; after revert the tree is identical (names, bytes, modes, owners) and has no
    `.sgpatch/`."""
    pkg, _, args = env
    for rel in ("srt/a.py", "srt/layers/b.py", "srt/models/c.py"):
        os.chown(pkg / rel, OTHER, OTHER)
    os.chmod(pkg / "srt/a.py", SUID)
    before = full_snapshot(pkg)
    assert cli("apply", *args)[0] == 0 and patched(pkg)
    st = (pkg / "srt/a.py").stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (OTHER, OTHER, SUID)
    assert (pkg / "srt/layers/b.py").stat().st_uid == OTHER
    assert cli("revert", *args)[0] == 0
    assert full_snapshot(pkg, with_state=True) == before


@root_only
def test_rollback_after_a_crash_keeps_owners_and_setuid_bits(env):
    """Input: as root, apply on a tree whose srt/a.py belongs to 4242 with 06755, SIGKILLed
    at write step 5 (the first file replaced, the second not), then `sgpatch recover`.
    Outcome: the journal records each file's owner; recover exits 0 and the tree is identical
    in names, bytes, modes and owners."""
    pkg, _, args = env
    for rel in ("srt/a.py", "srt/layers/b.py"):
        _others_file(pkg / rel, (pkg / rel).read_text())
    before = full_snapshot(pkg)
    pid = os.fork()
    if pid == 0:
        try:
            os.environ[steps.KILL_ENV] = "5"
            steps.reset()
            cli("apply", *args)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    path = pkg / ".sgpatch" / state_folder.JOURNAL
    journal = journal_mod.parse(path, path.read_bytes())
    assert {e.path: e.owner for e in journal.entries}["srt/a.py"] == (OTHER, OTHER)
    assert f"owner {OTHER} {OTHER} srt/a.py" in path.read_text().splitlines()
    assert cli("recover", "--sglang-dir", str(pkg))[0] == 0
    assert full_snapshot(pkg, with_state=True) == before


@root_only
def test_a_new_file_never_gets_setuid_bits_from_a_diff(tmp_path):
    """Input: as root, `sgpatch patch` of a git diff creating run.sh with `new file mode
    104755`. Outcome: exit 0; run.sh exists with mode 0755, owned by root: a patch cannot make
    a setuid-root file."""
    tree = tmp_path / "t"
    tree.mkdir()
    diff = tmp_path / "p.diff"
    diff.write_text(
        "diff --git a/run.sh b/run.sh\nnew file mode 104755\n--- /dev/null\n+++ b/run.sh\n"
        "@@ -0,0 +1 @@\n+echo hi\n"
    )
    code, _, err = cli("patch", "-d", str(tree), "-i", str(diff))
    assert code == 0, err
    st = (tree / "run.sh").stat()
    assert (st.st_mode & 0o7777, st.st_uid) == (0o755, 0)


@root_only
def test_a_user_who_cannot_keep_the_owner_drops_the_setuid_bits():
    """Input: in a folder nobody may write, f.py owned by uid 4242 and group nogroup with mode
    06775 (group-writable); `sgpatch patch` then `patch -R` run as nobody (privileges dropped
    in a subprocess). Outcome: both exit 0; the first says in one warning line that f.py was
    owned by uid 4242 and is now nobody's without its setuid/setgid bit; f.py is nobody's with
    mode 0775 after each (never a set-id file of the writer); bytes back after -R; nothing
    else in the folder changed."""
    with reachable_dir() as top:
        tree = top / "t"
        tree.mkdir()
        os.chown(tree, NOBODY, NOBODY)
        _others_file(tree / "f.py", A, 0o6775, NOBODY)
        (tree / "g.py").write_text(A)
        os.chown(tree / "g.py", NOBODY, NOBODY)
        diff = top / "p.diff"
        diff.write_text(make_diff(A, A.replace("alpha5\n", "ALPHA5\n"), "f.py"))
        before = full_snapshot(top)
        first = sgpatch_as(NOBODY, NOBODY, "patch", "-d", str(tree), "-i", str(diff))
        assert first.returncode == 0, first.stderr
        warning = [ln for ln in first.stderr.splitlines() if "warning" in ln]
        assert warning == [
            f"sgpatch: warning: f.py was owned by uid {OTHER} gid {NOBODY}; sgpatch runs as uid "
            f"{NOBODY} and cannot keep that: the new file is owned by uid {NOBODY}, and without "
            "its setuid/setgid bit"
        ]
        st = (tree / "f.py").stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (NOBODY, NOBODY, 0o775)
        again = sgpatch_as(NOBODY, NOBODY, "patch", "-R", "-d", str(tree), "-i", str(diff))
        assert again.returncode == 0, again.stderr
        after = full_snapshot(top)
        assert after.pop("t/f.py") == ("file", A.encode(), (0o775, NOBODY, NOBODY))
        before.pop("t/f.py")
        assert after == before
