"""One writer at a time: an exclusive kernel flock on a regular lock file, and who holds it.

The lock file is opened (made) without following a symlink and without blocking, and must be
a regular file: a symlink, FIFO or device planted at its name is `OddFile`, never followed or
waited on. The flock dies with its process, so a crash never leaves a stale lock. A holder may
remove the lock file (the last set reverted takes `.sgpatch/` away): a run that waited on the
removed file must not count it as held, so each attempt pins the file's inode first and, once
locked, checks the name still leads to it (`acquire` returns None: try again).

The holder writes a small record beside the lock (`write_holder`): pid, host, start time and
command, which a waiting run reads to say at once who holds it (`holder`), as git names the
lock file and pip the process it waits for.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from sgpatch.fs.regular import OddFile, kind

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_PIN = os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
_LOCK = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
POLL = 0.05  # seconds between two tries of a held lock


class Busy(Exception):
    """Another process kept the lock until the deadline."""


def pin(path: Path, create: bool = True, owner: tuple[int, int] | None = None) -> int:
    """Open (with `create`, make) the lock file to pin its inode: never through a symlink,
    never blocking on a FIFO, and only a regular file. FileNotFoundError when it (or, with
    `create`, its folder) is missing. A lock file this process owns is made 0644 (whatever
    the umask) and given `owner` when one is named (root in another user's tree)."""
    flags = _PIN if create else _PIN & ~os.O_CREAT
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OddFile(str(path), "a symlink") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OddFile(str(path), kind(st.st_mode))
    mine = hasattr(os, "geteuid") and st.st_uid == os.geteuid()
    with contextlib.suppress(OSError):
        if mine and stat.S_IMODE(st.st_mode) != 0o644:
            os.fchmod(fd, 0o644)
        if owner is not None and (st.st_uid, st.st_gid) != owner:
            os.fchown(fd, *owner)
    return fd


def is_held(path: Path) -> bool:
    """Another process holds the lock on `path` now. Asked without writing anything: the
    file is never made, only opened read-only for a moment (a shared flock tried without
    waiting, let go at once); absent or not a regular file: not held."""
    try:
        fd = pin(path, create=False)
    except (OSError, OddFile):
        return False
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except (OSError, ImportError):
        return False
    finally:
        os.close(fd)  # closing lets go of the shared flock
    return False


def names(fd: int, path: Path) -> bool:
    """`path` still names the file open as `fd`."""
    try:
        a, b = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


class Flock:
    """An exclusive flock on the lock file, polled until the deadline: what filelock's Unix
    lock does, taken with fcntl directly because importing filelock (4.x: ~25 modules) costs
    apply and patch a fifth of the stack's start-up. The flock belongs to this object's own
    descriptor; closing it releases the lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self, timeout: float, on_wait: Callable[[], None] | None = None) -> None:
        import fcntl

        fd = os.open(self.path, _LOCK, 0o644)
        deadline = time.monotonic() + timeout
        told = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    self.fd, fd = fd, -1
                    return
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise Busy(str(self.path)) from None
                    if on_wait is not None and not told:
                        told = True
                        on_wait()
                    time.sleep(POLL)
        finally:
            if fd >= 0:
                os.close(fd)

    def release(self) -> None:
        """Unlock, then close: a process forked while the lock was held (port's check
        workers) shares the descriptor, and closing ours alone would leave it locked until
        they end (a second port in the same process found W busy)."""
        import fcntl

        if self.fd is not None:
            fd, self.fd = self.fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


class PortableLock:
    """Where there is no fcntl (Windows): filelock, kept a kernel lock. filelock 4 would fall
    back to a lock file made with O_EXCL where locks are missing, which the pinned file makes
    impossible (and which a crashed run leaves stale); there we fail with one line instead."""

    def __init__(self, path: Path) -> None:
        from filelock import FileLock

        if "fallback_to_soft" in FileLock.__init__.__code__.co_varnames:
            self.lock = FileLock(str(path), fallback_to_soft=False)
        else:
            self.lock = FileLock(str(path))  # filelock 3: no such option, and no fallback

    def acquire(self, timeout: float, on_wait: Callable[[], None] | None = None) -> None:
        from filelock import Timeout

        try:
            self.lock.acquire(timeout=0)
            return
        except Timeout:
            if timeout <= 0:
                raise Busy(self.lock.lock_file) from None
        if on_wait is not None:
            on_wait()
        try:
            self.lock.acquire(timeout=timeout)
        except Timeout:
            raise Busy(self.lock.lock_file) from None

    def release(self) -> None:
        self.lock.release()


def file_lock(path: Path) -> Flock | PortableLock:
    return Flock(path) if os.name == "posix" else PortableLock(path)


def acquire(
    path: Path,
    deadline: float,
    on_wait: Callable[[], None] | None = None,
    create: bool = True,
    owner: tuple[int, int] | None = None,
) -> Flock | PortableLock | None:
    """One attempt at the lock on `path`, waiting until `deadline` (time.monotonic): the lock
    held on the file the name leads to, or None when the name moved on while this run waited
    (lock again). `Busy` past the deadline; `OddFile` for a link or FIFO at the name;
    FileNotFoundError when it is gone; NotImplementedError (or OSError) where the file system
    has no locks. `on_wait` is called once, when the lock is found held and this run waits."""
    fd = pin(path, create, owner)
    try:
        lock = file_lock(path)
        lock.acquire(max(0.0, deadline - time.monotonic()), on_wait)
        if names(fd, path):
            return lock
        lock.release()  # removed while we waited: the caller locks the file there now
        return None
    finally:
        os.close(fd)  # the flock belongs to the lock's own descriptor: this does not unlock


@contextlib.contextmanager
def held(path: Path, timeout: float, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """The lock on `path` for the block, waiting up to `timeout` seconds (`Busy` after)."""
    deadline = time.monotonic() + timeout
    while (lock := acquire(path, deadline, on_wait)) is None:
        if time.monotonic() >= deadline:
            raise Busy(str(path))
        time.sleep(POLL)
    try:
        yield
    finally:
        lock.release()


# ---------------------------------------------------------------------------------------------
# who holds it


def _host() -> str:
    """This machine's name: uname's node name where there is one (what gethostname returns
    there), so a writer does not import socket (~15 modules) just to name itself."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def write_holder(path: Path, owner: tuple[int, int] | None = None) -> None:
    """Say who holds the lock: pid, host, start time and command, replaced atomically (a
    planted symlink or FIFO at the name is replaced, never followed); best effort."""
    import json

    from sgpatch.fs.atomic import write_path

    doc = {
        "pid": os.getpid(),
        "host": _host(),
        "since": time.time(),
        "cmd": " ".join(["sgpatch", *sys.argv[1:]])[:200],
    }
    with contextlib.suppress(OSError):
        write_path(path, (json.dumps(doc) + "\n").encode(), owner=owner)


def holder(path: Path) -> str:
    """'held by pid P on HOST since HH:MM:SS: COMMAND' from the holder's record, or 'holder
    unknown' (none yet, damaged, planted: never trusted beyond a message)."""
    import json

    from sgpatch.fs.regular import TooBig, read

    try:
        doc = json.loads(read(path, limit=4096) or b"")
        since = time.strftime("%H:%M:%S", time.localtime(float(doc["since"])))
        return f"held by pid {int(doc['pid'])} on {doc['host']} since {since}: {doc['cmd']}"
    except (OSError, ValueError, OverflowError, KeyError, TypeError, RecursionError, OddFile,
            TooBig):  # fmt: skip
        return "holder unknown"  # OverflowError: a `since` of 1e400
