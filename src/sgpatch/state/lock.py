"""One writer per tree: `.sgpatch/lock` held for a whole plan-and-write (docs/safety.md).

The lock itself is the file-system layer's (`sgpatch.fs.lock`: a kernel flock on a regular
file, pinned, its holder recorded in `lock.owner`). What is the state folder's here: it is
made when a writer needs it and taken away when it holds nothing but the lock, so a run
that waited while it was removed locks the new one; and how long a run waits
($SGPATCH_LOCK_TIMEOUT).
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from sgpatch.errors import ExitCode, SgpatchError, unsafe
from sgpatch.fs import dirs
from sgpatch.fs import lock as fslock
from sgpatch.fs.atomic import Owner, is_temp
from sgpatch.fs.regular import OddFile, lstat
from sgpatch.state import store
from sgpatch.state.folder import (
    JOURNAL_ORIGINALS,
    LOCK,
    LOCK_OWNER,
    ORIGINALS,
    journal_path,
)

LOCK_TIMEOUT_ENV = "SGPATCH_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 30.0


SAFE_ENV = "SGPATCH_SAFE_DIRECTORY"


def tree_owner(root: Path) -> Owner | None:
    """The owner (uid, gid) of what sgpatch creates in the tree: root writing a tree another
    user owns (a Docker build patching an sdist tar unpacked with uid 1001) proceeds, and
    everything it creates there (files, `.sgpatch/` and its lock) is that user's, so the result
    is what they could have written themselves. None: the process's own (docs/safety.md)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    try:
        st = os.stat(root)
    except OSError:
        return None  # no tree: whatever writes there says so
    return None if st.st_uid == 0 else (st.st_uid, st.st_gid)


def check_replay_trusted(root: Path, journal: Path) -> None:
    """Root never replays a journal it found in a tree another user owns (that user could have
    planted it, to make root write where they cannot), unless $SGPATCH_SAFE_DIRECTORY names
    the tree (its package root, several separated by ':', or `*`), as git's safe.directory.
    Exit 4 in one line: the owner rolls it back, or the person says the tree is trusted."""
    owner = tree_owner(root)
    if owner is None or _named_safe(root):
        return
    import shlex

    from sgpatch.shown import command

    top = Path(root).absolute()
    raise unsafe(
        f"refusing to roll back the journal {journal} as root: the tree belongs to uid "
        f"{owner[0]}, who could have planted it; run {command('recover', '--sglang-dir', top)} "
        f"as uid {owner[0]}, or, if you trust that tree, `export "
        f"{SAFE_ENV}={shlex.quote(str(top))}` and run the command again"
    )


def _named_safe(root: Path) -> bool:
    real = os.path.realpath(root)
    for entry in os.environ.get(SAFE_ENV, "").split(os.pathsep):
        entry = entry.strip()
        if entry == "*" or (entry and os.path.realpath(os.path.expanduser(entry)) == real):
            return True
    return False


def check_state_dir(state_dir: Path) -> None:
    """sgpatch's own folder (`.sgpatch`) must be a real folder (never a symlink followed),
    writable by its owner only, and its owner the process's or the tree's: a folder others
    may write, or another user made, may hold a journal they planted, which a writer would
    replay. The same holds for its store folders."""
    if state_dir.is_symlink() or (state_dir.exists() and not state_dir.is_dir()):
        raise unsafe(f"refusing state folder {state_dir}: it is a symlink or not a folder")
    try:
        tree = os.stat(state_dir.parent).st_uid
    except OSError:
        return
    me = os.geteuid() if hasattr(os, "geteuid") else tree
    for folder in (state_dir, state_dir / ORIGINALS, state_dir / JOURNAL_ORIGINALS):
        st = lstat(folder)
        if st is None or not stat.S_ISDIR(st.st_mode):
            continue
        if stat.S_IMODE(st.st_mode) & 0o022:
            import shlex

            raise unsafe(
                f"refusing state folder {folder}: others may write it (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), so a journal there may be planted; inspect "
                f"it, then `chmod -R go-w {shlex.quote(str(state_dir))}`"
            )
        if st.st_uid not in (me, tree):
            raise unsafe(
                f"refusing state folder {folder}: it belongs to uid {st.st_uid}, neither the "
                f"tree's owner (uid {tree}) nor this run's (uid {me}); inspect and remove it"
            )


_given: list[float] = []  # `--lock-timeout` of the command running (innermost last)


@contextlib.contextmanager
def timeout_given(seconds: float | None) -> Iterator[None]:
    """Inside, `lock_timeout` is `seconds` (a command's `--lock-timeout`; None: not given)."""
    if seconds is None:
        yield
        return
    if seconds != seconds:  # nan passes the option's `min=0`
        raise SgpatchError("--lock-timeout nan: expected seconds >= 0")
    _given.append(seconds)
    try:
        yield
    finally:
        _given.pop()


def lock_timeout(default: float = DEFAULT_LOCK_TIMEOUT) -> float:
    """The command's `--lock-timeout`, else $SGPATCH_LOCK_TIMEOUT (seconds) if set to a number
    >= 0, else `default`."""
    if _given:
        return _given[-1]
    raw = os.environ.get(LOCK_TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SgpatchError(f"${LOCK_TIMEOUT_ENV}={raw!r}: expected seconds") from None
    if value < 0 or value != value:
        raise SgpatchError(f"${LOCK_TIMEOUT_ENV}={raw!r}: expected seconds >= 0")
    return value


class StateGone(Exception):
    """`locked(create=False)`: the state folder is gone (its last writer finished)."""


class LockBusy(SgpatchError):
    """Another run held the lock for longer than we waited (exit 4); `holder` says who."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message, ExitCode.UNSAFE)
        self.holder = holder


@contextlib.contextmanager
def locked(state_dir: Path, timeout: float | None = None, create: bool = True) -> Iterator[None]:
    """One writer per target: wait up to `timeout` seconds (default $SGPATCH_LOCK_TIMEOUT or
    30), then refuse (exit 4) naming the lock file and the run that holds it.

    `create=False` (recovery of a journal found in the folder): never make the folder; when it
    is gone, raise `StateGone` (its writer finished and took it away: nothing to recover)."""
    if timeout is None:
        timeout = lock_timeout()
    owner = tree_owner(state_dir.parent)
    lock = _acquire(state_dir, timeout, create, owner)
    try:
        fslock.write_holder(state_dir / LOCK_OWNER, owner)
        yield
    finally:
        with contextlib.suppress(OSError):
            (state_dir / LOCK_OWNER).unlink()
        remove_state_dir(state_dir)  # when nothing but the lock is left: no trace of the run
        with contextlib.suppress(OSError):
            lock.release()


def _ready_state_dir(state_dir: Path, create: bool, owner: Owner | None) -> bool:
    """Make the state folder, 0755 whatever the umask and owned by the tree's owner (or,
    without `create`, raise `StateGone` when it is gone). False: it was removed and made
    again meanwhile; try again."""
    check_state_dir(state_dir)
    if create:
        try:
            top = dirs.open_top(state_dir.parent)
            try:
                os.close(dirs.open_dir(top, [state_dir.name], True, 0o755, owner))
            finally:
                os.close(top)
        except (FileExistsError, FileNotFoundError, OddFile):  # removed and made meanwhile
            return False
        except OSError as exc:
            raise SgpatchError(
                f"cannot create the state folder {state_dir}: {exc.strerror or exc}"
            ) from None
    elif not state_dir.is_dir():
        raise StateGone
    return True


def _acquire(
    state_dir: Path, timeout: float, create: bool, owner: Owner | None = None
) -> fslock.Flock | fslock.PortableLock:
    """The waiting loop of `locked`: the lock held on the file the name leads to now."""
    deadline = time.monotonic() + timeout
    lock_path = state_dir / LOCK
    told: list[bool] = []

    def waiting() -> None:
        if not told:  # once per run, however often the name moves on
            told.append(True)
            say_waiting(f"the lock {lock_path}", fslock.holder(state_dir / LOCK_OWNER), timeout)

    while True:
        if not _ready_state_dir(state_dir, create, owner):
            if time.monotonic() >= deadline + 5:
                raise SgpatchError(f"cannot create the state folder {state_dir}: it keeps changing")
            time.sleep(0.01)  # a writer is removing the folder: let it finish, never spin
            continue
        try:
            lock = fslock.acquire(lock_path, deadline, waiting, owner=owner)
        except FileNotFoundError:  # removed between mkdir and open, or while we waited
            if not create:
                raise StateGone from None
            if time.monotonic() < deadline:
                time.sleep(0.01)
                continue
            raise SgpatchError(
                f"cannot take the lock {lock_path}: its folder keeps vanishing"
            ) from None
        except OddFile as odd:
            raise unsafe(f"refusing lock file {lock_path}: it is {odd.kind}") from None
        except fslock.Busy:
            raise _busy(state_dir, timeout) from None
        except (OSError, NotImplementedError) as exc:  # NotImplementedError: no flock here
            why = getattr(exc, "strerror", None) or str(exc) or "the filesystem has no file locks"
            raise SgpatchError(f"cannot take the lock {lock_path}: {why}") from None
        if lock is not None:
            return lock
        if time.monotonic() >= deadline:
            raise _busy(state_dir, timeout)
        time.sleep(fslock.POLL)


def say_waiting(what: str, holder: str, timeout: float) -> None:
    """The one line a run prints the moment it finds itself waiting (issue 45.4: never 30 s
    of silence), as git and pip say what they wait for: on what, who holds it, how long."""
    import sys

    from sgpatch.shown import name

    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(
            f"sgpatch: waiting for {name(what)} ({name(holder)}); giving up after "
            f"{timeout:g}s (--lock-timeout SECONDS or ${LOCK_TIMEOUT_ENV} to change)\n"
        )
        sys.stderr.flush()


def _busy(state_dir: Path, timeout: float) -> SgpatchError:
    holder = fslock.holder(state_dir / LOCK_OWNER)
    return LockBusy(
        f"another sgpatch run holds the lock {state_dir / LOCK} ({holder}); "
        f"waited {timeout:g}s (--lock-timeout SECONDS, or ${LOCK_TIMEOUT_ENV}, to wait longer)",
        holder,
    )


def remove_stale_temps(folder: Path, name: str | None = None) -> None:
    """Temp files a killed run left in `folder` (for one file name, or all of them)."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        tmp = folder / entry
        with contextlib.suppress(OSError):
            if is_temp(entry, name) and tmp.is_file() and not tmp.is_symlink():
                tmp.unlink()


def remove_state_dir(state_dir: Path) -> None:
    """Take away `.sgpatch/` once it holds nothing but the lock (the last set was reverted, a
    one-off `sgpatch patch` is done, a run was rolled back), so the tree is left as it was
    found. `locked` calls it last, with the lock still held; the lock file goes last, and
    `locked` sends any run that waited on it to a new one. Anything else in the folder (a
    journal, a ledger, originals) keeps it."""
    if journal_path(state_dir) is None:
        remove_stale_temps(state_dir)  # a journal write cut short; with the lock held, garbage
        with contextlib.suppress(SgpatchError):  # a link planted at the store: left, never followed
            store.drop(state_dir)
    with contextlib.suppress(OSError):
        for entry in os.scandir(state_dir):
            if entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)  # only when empty
    try:
        left = set(os.listdir(state_dir)) - {LOCK, LOCK_OWNER}
    except OSError:
        return
    if left:
        return
    for name in (LOCK_OWNER, LOCK):
        with contextlib.suppress(FileNotFoundError):
            (state_dir / name).unlink()
    with contextlib.suppress(OSError):
        state_dir.rmdir()
