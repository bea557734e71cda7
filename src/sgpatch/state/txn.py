"""The only code that writes to a target tree: a lock, a journal, atomic replaces (every path
through the guards in treefs).

A run computes every new file content in memory first (see plan). `Transaction.commit` then
  1. checks every path is inside the tree and no file changed since it was read;
  2. stores the original bytes of every file it will touch in `.sgpatch/journal-originals/`
     (content-addressed), then writes the line-oriented journal `.sgpatch/journal`
     (`state/journal.py`: mode, digest, path per line), both fsynced;
  3. replaces each file through a temp file + os.replace (mode kept), fsyncing file and folder
     (a store file holding bytes step 2 stored is hard-linked from there, `_link_stored`);
  4. removes the journal (the commit point), then the journal's originals.
Any later run that finds a journal rolls the tree back first (`recover`), so an interrupted run
never leaves a half-patched tree. Recovery is itself idempotent: killed half-way, the journal is
still there and the next run finishes it. See docs/safety.md for the guarantees and their limits.

Test-only hooks (environment variables, never set them in production):
  SGPATCH_TEST_KILL_AT=N   SIGKILL this process right before its N-th write step (1-based; a step
                           is one temp-file write, os.replace, unlink, or journal removal, in
                           commit and in recover alike; port's workspace writes count too, via
                           `kill_point`). Used by the fault-injection tests.
  SGPATCH_TEST_SIGNAL=S    send signal S (INT, TERM, ...) there instead of KILL.
Supported knob:
  SGPATCH_LOCK_TIMEOUT=S   seconds to wait for another run's lock before exit 4 (default 30).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import stat
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from sgpatch import interrupts
from sgpatch.errors import ExitCode, SgpatchError, internal, unsafe
from sgpatch.state import journal as journal_mod
from sgpatch.state.digest import sha256
from sgpatch.state.folder import (
    JOURNAL,
    JOURNAL_ORIGINALS,
    LOCK,
    LOCK_OWNER,
    TMP_SUFFIX,
    journal_path,
    new_temp,
    parse_json,
    read_state,
    write_state,
)
from sgpatch.tree.files import FileChange, read_bytes, safe_path  # also txn's names

KILL_ENV = "SGPATCH_TEST_KILL_AT"
SIGNAL_ENV = "SGPATCH_TEST_SIGNAL"
LOCK_TIMEOUT_ENV = "SGPATCH_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 30.0

_steps = 0  # write steps taken by this process (for SGPATCH_TEST_KILL_AT)


def _step() -> None:
    """Count one write step. Test-only: $SGPATCH_TEST_KILL_AT=N (or N,M,...) sends SIGKILL (no
    cleanup), or the signal $SGPATCH_TEST_SIGNAL names (e.g. INT for Ctrl-C), at those steps."""
    global _steps
    _steps += 1
    kill_at = os.environ.get(KILL_ENV)
    if kill_at and str(_steps) in (s.strip() for s in kill_at.split(",")):
        name = os.environ.get(SIGNAL_ENV, "KILL")
        os.kill(os.getpid(), getattr(signal, f"SIG{name}"))


def kill_point() -> None:
    """One write step of another writer (port's workspace): the same test-only hook."""
    _step()


def _check_state_dir(state_dir: Path) -> None:
    """sgpatch's own folder (`.sgpatch`) must be a real folder: never follow a symlink there."""
    if state_dir.is_symlink() or (state_dir.exists() and not state_dir.is_dir()):
        raise unsafe(f"refusing state folder {state_dir}: it is a symlink or not a folder")


def _fsync(fd: int) -> None:
    """os.fsync; one name so the in-process fault-injection tests can skip the disk flush (a
    SIGKILL loses nothing the kernel already has; only power loss needs the flush)."""
    os.fsync(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            _fsync(fd)
        finally:
            os.close(fd)


SETID = stat.S_ISUID | stat.S_ISGID

Owner = tuple[int, int]  # (uid, gid)


def _atomic_write(
    path: Path,
    data: bytes,
    mode: int | None,
    synced: set[Path] | None = None,
    owner: Owner | None = None,
) -> Owner | None:
    """Temp file + fsync + os.replace; returns the owner the file had and could not keep.
    With `synced`, the folder fsync is left to the caller (commit flushes each folder once,
    before it drops the journal that can undo the rename).

    The new file keeps the mode and the owner and group of the file it replaces (`owner`:
    the journal's record in a rollback, else the file there now), as far as the system lets
    it. It never gains a setuid or setgid bit: it keeps one only if the file it replaces had
    it and its owner and group are kept; a new file, or one whose owner cannot be kept
    (sgpatch is not root), has none. A rewrite by root must not make a file that runs as
    root, nor a rewrite by anyone one that runs as them (docs/safety.md, "Owners")."""
    there = _regular(path)
    if mode is None:
        mode = stat.S_IMODE(there.st_mode) if there is not None else 0o644
    if owner is None and there is not None:
        owner = (there.st_uid, there.st_gid)
    had = there.st_mode & SETID if there is not None and owner == _owner_of(there) else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    _step()
    fd, tmp = new_temp(path)
    kept: list[bool] = []

    def fill() -> None:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            kept.append(_keep_owner(fh.fileno(), owner))
            keep = had if kept[0] else 0
            os.fchmod(fh.fileno(), (mode & ~SETID) | (mode & keep))  # after chown: it clears them
            _fsync(fh.fileno())

    _install(tmp, path, synced, fill)
    return None if kept[0] or there is None else owner


def _owner_of(st: os.stat_result) -> Owner:
    return (st.st_uid, st.st_gid)


def _regular(path: Path) -> os.stat_result | None:
    """The stat of the regular file at `path` (never followed through a link), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _keep_owner(fd: int, owner: Owner | None) -> bool:
    """Give the open temp file `owner` (uid, gid); False when there is none to keep or the
    system refuses (not root, another user's file, a filesystem without owners)."""
    if owner is None:
        return False
    if _owner_of(os.fstat(fd)) == owner:
        return True
    try:
        os.fchown(fd, *owner)
    except OSError:
        return False
    return True


def _atomic_link(path: Path, target: str, synced: set[Path] | None = None) -> None:
    """A symlink made under an unpredictable temp name, then os.replace'd into place."""
    import secrets

    path.parent.mkdir(parents=True, exist_ok=True)
    _step()
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}{TMP_SUFFIX}")
    os.symlink(target, tmp)
    _install(tmp, path, synced)


def _install(
    tmp: str | Path,
    path: Path,
    synced: set[Path] | None,
    prepare: Callable[[], None] = lambda: None,
) -> None:
    """Finish an atomic write: `prepare` the temp entry, os.replace it onto `path` (the temp
    goes away on any failure), then fsync the folder, or leave that to the caller's `synced`."""
    try:
        prepare()
        _step()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if synced is None:
        _fsync_dir(path.parent)
    else:
        synced.add(path.parent)


def _put(
    root: Path,
    rel: str,
    data: bytes | None,
    mode: int | None,
    synced: set[Path] | None = None,
    link: str | None = None,
    owner: Owner | None = None,
) -> Owner | None:
    """Put `data` (None: remove), or a link, at `rel`; the owner it could not keep, if any."""
    path = root / rel
    if link is not None:
        _atomic_link(path, link, synced)
    elif data is None:
        if path.exists() or path.is_symlink():
            _step()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            if synced is None:
                _fsync_dir(path.parent)
            else:
                synced.add(path.parent)
    else:
        return _atomic_write(path, data, mode, synced, owner)
    return None


def _missing_dirs(root: Path, changes: Sequence[FileChange]) -> list[str]:
    """Folders a commit will create (so a rollback can remove them again), deepest first."""
    out: set[str] = set()
    for c in changes:
        if c.after is None:
            continue
        parent = Path(c.path).parent
        while parent != Path(".") and not (root / parent).exists():
            out.add(parent.as_posix())
            parent = parent.parent
    return sorted(out, key=lambda p: (-p.count("/"), p))


def write_journal(
    state_dir: Path,
    changes: Sequence[FileChange],
    modes: dict[str, int],
    dirs: Sequence[str] = (),
    owners: Mapping[str, Owner] | None = None,
) -> Path:
    """Store the original bytes (and link targets) of every file about to change, then write
    and fsync the journal that names them, with each file's mode and owner: a recovery is a
    copy from the store."""
    owners = owners or {}
    state_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for c in changes:
        if c.before_link is not None:
            target = _store(state_dir, c.before_link.encode("utf-8", "surrogateescape"))
            entries.append(journal_mod.Entry(c.path, target, None, link=True))
        else:
            digest = None if c.before is None else _store(state_dir, c.before)
            owner = owners.get(c.path) if digest is not None else None
            entries.append(journal_mod.Entry(c.path, digest, modes.get(c.path), owner=owner))
    if any(e.digest for e in entries):
        _fsync_dir(state_dir / JOURNAL_ORIGINALS)
    doc = journal_mod.Journal(os.getpid(), tuple(entries), tuple(dirs))
    path = state_dir / JOURNAL
    _atomic_write(path, journal_mod.render(doc), 0o644)
    return path


def _store(state_dir: Path, data: bytes) -> str:
    """Put `data` in the journal's content-addressed store (read-only) unless a regular file
    with those bytes is already there; return its sha256. Not a kill point of the test hook
    (`_step`): until the journal names them these files are scratch, which a crash leaves
    to the next writer to remove (`_drop_originals`); the tree is not touched yet."""
    digest = sha256(data)
    path = state_dir / JOURNAL_ORIGINALS / digest
    if read_state(path) == data:
        return digest
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            _fsync(fh.fileno())
        os.chmod(tmp, 0o444)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return digest


def _blob(state_dir: Path, digest: str, doc: journal_mod.Journal) -> bytes:
    """An original the journal names, from the old form's inline bytes or from the store,
    checked against its digest."""
    inline = dict(doc.inline)
    store = state_dir / JOURNAL_ORIGINALS
    data = inline[digest] if digest in inline else read_state(store / digest)
    if data is None or sha256(data) != digest:
        raise unsafe(
            f"the journal names original {digest[:12]}, which {store} lacks or holds damaged; "
            "inspect the tree, then delete the journal"
        )
    return data


def _drop_originals(state_dir: Path) -> None:
    """Empty and remove the journal's store once no journal needs it."""
    store = state_dir / JOURNAL_ORIGINALS
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(store):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
    with contextlib.suppress(OSError):
        store.rmdir()


def _remove_stale_temps(folder: Path, name: str | None = None) -> None:
    """Temp files a killed run left in `folder` (for one file name, or all of them)."""
    if not folder.is_dir():
        return
    pattern = f".{name}.*{TMP_SUFFIX}" if name is not None else f".*{TMP_SUFFIX}"
    for tmp in folder.glob(pattern):
        with contextlib.suppress(OSError):
            if tmp.is_file() and not tmp.is_symlink():
                tmp.unlink()


def roll_back_interrupted(
    root: Path, state_dir: Path, wait: float | None = None, tidy: bool = False
) -> list[str] | None:
    """If a killed run left a journal, roll it back under the lock (never under a run that is
    still writing: a journal whose writer holds the lock is that run's, not a crash's). None
    when there was nothing to roll back. `wait`: seconds to wait for a running writer (readers
    pass a short one and then say a run is in progress). `tidy` (`sgpatch recover`): also take
    the lock when there is no journal, so a killed run's other residue (temp files, a stale
    lock.owner, a folder holding only the lock) is removed on the way out."""
    try:
        if journal_path(state_dir) is None:
            if tidy and state_dir.is_dir() and not state_dir.is_symlink():
                with locked(state_dir, wait, create=False):
                    pass  # locked() tidies when it lets go
            return None
        with locked(state_dir, wait, create=False), interrupts.deferred():
            return recover(root, state_dir)
    except _StateGone:
        return None  # the writer finished and took .sgpatch/ away: nothing was interrupted


def stop_if_rolled_back(root: Path, state_dir: Path, wait: float | None = None) -> None:
    """What every command does first: roll back an interrupted run, then stop (exit 4) so the
    user sees it happened and runs the command again on a known tree."""
    restored = roll_back_interrupted(root, state_dir, wait)
    if restored is not None:
        raise SgpatchError(
            f"an interrupted sgpatch run was rolled back in {root} "
            f"({len(restored)} file(s) restored: {', '.join(restored) or 'none changed'}); "
            "run the command again",
            ExitCode.UNSAFE,
        )


def recover(root: Path, state_dir: Path) -> list[str] | None:
    """Roll back an interrupted run, if its journal is there. Returns the files restored.

    Call it with the lock held. Restores bytes and mode of every journalled file from the
    store, deletes files the run created, temp files it left and folders it made, then removes
    the journal, then the originals it named.
    """
    path = journal_path(state_dir)
    _check_state_dir(state_dir)
    _remove_stale_temps(state_dir)
    data = read_state(path) if path is not None else None
    if path is None or data is None:
        return None
    doc = journal_mod.parse(path, data)
    restored = []
    try:
        for e in doc.entries:
            target = safe_path(root, e.path, link_ok=True)  # the killed run may have made a link
            if _restore(root, state_dir, doc, e, target):
                restored.append(e.path)
        for rel in doc.dirs:
            with contextlib.suppress(OSError):
                safe_path(root, rel).rmdir()  # only if empty
        _step()
        path.unlink()
        _drop_originals(state_dir)
    except OSError as exc:
        raise unsafe(
            f"rolling back an interrupted run failed ({exc.strerror or exc}: "
            f"{getattr(exc, 'filename', '') or ''}); the journal {path} is kept, fix the cause "
            "and run sgpatch again"
        ) from None
    _fsync_dir(state_dir)
    return restored


def _restore(
    root: Path, state_dir: Path, doc: journal_mod.Journal, e: journal_mod.Entry, target: Path
) -> bool:
    """Put one journalled path back as it was (bytes, mode, owner, or link); True when that
    changed anything."""
    _remove_stale_temps(target.parent, target.name)
    now_link = os.readlink(target) if target.is_symlink() else None
    if e.link:
        link = _blob(state_dir, e.digest or "", doc).decode("utf-8", "surrogateescape")
        if now_link == link:
            return False
        _put(root, e.path, None, None, link=link)
        return True
    before = None if e.digest is None else _blob(state_dir, e.digest, doc)
    st = _regular(target) if now_link is None else None
    current = target.read_bytes() if st is not None else None
    same = now_link is None and current == before
    if same and st is not None and before is not None:
        same = (e.mode is None or stat.S_IMODE(st.st_mode) == e.mode) and (
            e.owner is None or _owner_of(st) == e.owner
        )
    if same:
        return False
    if now_link is not None and before is None:
        target.unlink()  # a link the run created where nothing was
    else:
        _put(root, e.path, before, e.mode, owner=e.owner)
    return True


def lock_timeout(default: float = DEFAULT_LOCK_TIMEOUT) -> float:
    """$SGPATCH_LOCK_TIMEOUT (seconds) if set to a number >= 0, else `default`."""
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


def _holder(state_dir: Path) -> str:
    try:
        doc = parse_json(read_state(state_dir / LOCK_OWNER) or b"")
        since = time.strftime("%H:%M:%S", time.localtime(float(doc["since"])))
        return f"held by pid {doc['pid']} on {doc['host']} since {since}: {doc['cmd']}"
    except (OSError, ValueError, OverflowError, KeyError, TypeError, SgpatchError):
        return "holder unknown"  # OverflowError: a `since` of 1e400


def _host() -> str:
    """This machine's name: uname's node name where there is one (what gethostname returns
    there), so a writer does not import socket (~15 modules) just to name itself."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def _write_owner(state_dir: Path) -> None:
    doc = {
        "pid": os.getpid(),
        "host": _host(),
        "since": time.time(),
        "cmd": " ".join(["sgpatch", *sys.argv[1:]])[:200],
    }
    with contextlib.suppress(OSError):  # a planted symlink/FIFO is replaced, never followed
        write_state(state_dir / LOCK_OWNER, (json.dumps(doc) + "\n").encode())


class _StateGone(Exception):
    """`locked(create=False)`: the state folder is gone (its last writer finished)."""


@contextlib.contextmanager
def locked(state_dir: Path, timeout: float | None = None, create: bool = True) -> Iterator[None]:
    """One writer per target: wait up to `timeout` seconds (default $SGPATCH_LOCK_TIMEOUT or
    30), then refuse (exit 4) naming the lock file and the run that holds it.

    The lock file may be removed by the run holding it (`remove_state_dir`, after the last set
    is reverted). A run that was waiting on the removed file must not count it as held, or it
    and a newcomer locking the new file would both write. So before locking, this run opens the
    file itself, which pins its inode; after locking, the name must still lead to that inode
    (an inode held open cannot be removed and reused meanwhile), else it locks again.

    `create=False` (recovery of a journal found in the folder): never make the folder; when it
    is gone, raise `_StateGone` (its writer finished and took it away: nothing to recover)."""
    if timeout is None:
        timeout = lock_timeout()
    lock = _acquire(state_dir, timeout, create)
    try:
        _write_owner(state_dir)
        yield
    finally:
        with contextlib.suppress(OSError):
            (state_dir / LOCK_OWNER).unlink()
        remove_state_dir(state_dir)  # when nothing but the lock is left: no trace of the run
        with contextlib.suppress(OSError):
            lock.release()


class LockBusy(SgpatchError):
    """Another run held the lock for longer than we waited (exit 4); `holder` says who."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message, ExitCode.UNSAFE)
        self.holder = holder


def _ready_state_dir(state_dir: Path, create: bool) -> bool:
    """Make the state folder (or, without `create`, raise `_StateGone` when it is gone).
    False: it was removed and made again meanwhile; try again."""
    _check_state_dir(state_dir)
    if create:
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # removed and made again between mkdir and its check
            return False
        except OSError as exc:
            raise SgpatchError(
                f"cannot create the state folder {state_dir}: {exc.strerror or exc}"
            ) from None
    elif not state_dir.is_dir():
        raise _StateGone
    return True


def _acquire(state_dir: Path, timeout: float, create: bool) -> _Flock | _PortableLock:
    """The waiting loop of `locked`: the lock held on the file the name leads to now."""
    deadline = time.monotonic() + timeout
    lock_path = state_dir / LOCK
    while True:
        if not _ready_state_dir(state_dir, create):
            time.sleep(0.01)  # a writer is removing the folder: let it finish, never spin
            continue
        try:
            pin = _pin(lock_path)
        except FileNotFoundError:
            if not create:
                raise _StateGone from None
            if time.monotonic() < deadline:
                time.sleep(0.01)  # removed between mkdir and open: again, without spinning
                continue
            raise SgpatchError(
                f"cannot take the lock {lock_path}: its folder keeps vanishing"
            ) from None
        except OSError as exc:
            raise SgpatchError(f"cannot take the lock {lock_path}: {exc.strerror or exc}") from None
        try:
            lock = _file_lock(lock_path)
            lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
            if _names(pin, lock_path):
                return lock
            lock.release()  # removed while we waited: lock the file that is there now
        except FileNotFoundError:  # the holder removed the folder while we waited: again
            pass
        except _LockTimeout:
            raise _busy(state_dir, timeout) from None
        except (OSError, NotImplementedError) as exc:  # NotImplementedError: no flock here
            why = getattr(exc, "strerror", None) or str(exc) or "the filesystem has no file locks"
            raise SgpatchError(f"cannot take the lock {lock_path}: {why}") from None
        finally:
            os.close(pin)  # the flock belongs to the lock's own descriptor: this does not unlock
        if time.monotonic() >= deadline:
            raise _busy(state_dir, timeout)
        time.sleep(0.05)


def _busy(state_dir: Path, timeout: float) -> SgpatchError:
    holder = _holder(state_dir)
    return LockBusy(
        f"another sgpatch run holds the lock {state_dir / LOCK} ({holder}); "
        f"waited {timeout:g}s (set ${LOCK_TIMEOUT_ENV} to wait longer)",
        holder,
    )


def _pin(lock_path: Path) -> int:
    """Open (create) the lock file to pin its inode: never through a symlink, never blocking
    on a FIFO, and only a regular file (like every path sgpatch touches)."""
    flags = os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(lock_path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise unsafe(f"refusing lock file {lock_path}: it is a symlink") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise unsafe(f"refusing lock file {lock_path}: not a regular file")
    return fd


class _LockTimeout(Exception):
    """Another run kept the lock until the deadline."""


class _Flock:
    """An exclusive kernel flock on the lock file, polled until the deadline: what filelock's
    Unix lock does, taken with fcntl directly because importing filelock (4.x: ~25 modules)
    costs apply and patch a fifth of the stack's whole start-up. The flock belongs to this
    object's own descriptor; closing it releases the lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self, timeout: float) -> None:
        import fcntl

        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(self.path, flags, 0o644)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    self.fd, fd = fd, -1
                    return
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise _LockTimeout(str(self.path)) from None
                    time.sleep(0.05)
        finally:
            if fd >= 0:
                os.close(fd)

    def release(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)


class _PortableLock:
    """Where there is no fcntl (Windows): filelock, kept a kernel lock. filelock 4 would fall
    back to a lock file made with O_EXCL where locks are missing, which the pinned file makes
    impossible (and which a crashed run leaves stale); there we fail with one line instead."""

    def __init__(self, path: Path) -> None:
        from filelock import FileLock

        if "fallback_to_soft" in FileLock.__init__.__code__.co_varnames:
            self.lock = FileLock(str(path), fallback_to_soft=False)
        else:
            self.lock = FileLock(str(path))  # filelock 3: no such option, and no fallback

    def acquire(self, timeout: float) -> None:
        from filelock import Timeout

        try:
            self.lock.acquire(timeout=timeout)
        except Timeout:
            raise _LockTimeout(self.lock.lock_file) from None

    def release(self) -> None:
        self.lock.release()


def _file_lock(lock_path: Path) -> _Flock | _PortableLock:
    return _Flock(lock_path) if os.name == "posix" else _PortableLock(lock_path)


def _names(fd: int, path: Path) -> bool:
    """`path` still names the file open as `fd`."""
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def remove_state_dir(state_dir: Path) -> None:
    """Take away `.sgpatch/` once it holds nothing but the lock (the last set was reverted, a
    one-off `sgpatch patch` is done, a run was rolled back), so the tree is left as it was
    found. `locked` calls it last, with the lock still held; the lock file goes last, and
    `locked` sends any run that waited on it to a new one. Anything else in the folder (a
    journal, a ledger, originals) keeps it."""
    if journal_path(state_dir) is None:
        _remove_stale_temps(state_dir)  # a journal write cut short; with the lock held, garbage
        _drop_originals(state_dir)
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


def _write_error(exc: OSError, rel: str) -> str:
    if exc.errno == errno.ENOSPC:
        return f"no space left on the device writing {rel}"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"cannot write {rel}: {exc.strerror}"
    return f"writing {rel} failed: {exc.strerror or exc}"


def _verify_before(root: Path, c: FileChange) -> Path:
    """The change's path, once its current state is what the plan read: the bytes `before`,
    or (before_link) a symlink to that target. Anything else changed meanwhile: exit 4."""
    if c.before_link is not None:
        path = safe_path(root, c.path, link_ok=True)
        same = path.is_symlink() and os.readlink(path) == c.before_link
    else:
        path = safe_path(root, c.path)
        same = read_bytes(root, c.path) == c.before
    if not same:
        raise unsafe(f"{c.path} changed while sgpatch was planning; nothing was written")
    return path


def commit(root: Path, state_dir: Path, changes: Sequence[FileChange]) -> list[str]:
    """Write every change or none: verify, journal, replace, drop the journal. Returns one
    warning per file whose owner could not be kept (`owner_note`; the caller says them).

    Call it with the lock held. On an OSError (disk full, read-only folder, ...) or an interrupt
    the tree is rolled back before the error propagates; if even that fails the journal stays
    and the next sgpatch run rolls back.
    """
    changes = [
        c for c in changes if c.before != c.after or c.mode is not None or c.link != c.before_link
    ]
    if not changes:
        return []
    modes, owners = _preflight(root, changes)
    _check_state_dir(state_dir)
    _remove_stale_temps(state_dir)
    _drop_originals(state_dir)  # scratch a run killed before its journal was down left
    dirs = _missing_dirs(root, changes)
    try:
        journal = write_journal(state_dir, changes, modes, dirs, owners)
    except OSError as exc:
        with contextlib.suppress(OSError):
            (state_dir / JOURNAL).unlink()
        _drop_originals(state_dir)
        raise SgpatchError(
            f"{_write_error(exc, str(state_dir / JOURNAL))}; nothing was written"
        ) from None
    current_rel = ""
    folders: set[Path] = set()
    notes: list[str] = []
    journalled = {sha256(c.before) for c in changes if c.before is not None}
    try:
        for c in changes:
            current_rel = c.path
            if _link_stored(root, state_dir, c, journalled, folders):
                continue
            mode = c.mode if c.mode is not None else modes.get(c.path)
            lost = _put(root, c.path, c.after, mode, folders, link=c.link)
            if lost is not None:
                notes.append(owner_note(c.path, lost, modes.get(c.path, 0)))
        for folder in sorted(folders):  # renames durable before the journal goes
            _fsync_dir(folder)
    except BaseException as exc:
        try:
            with interrupts.deferred():  # a second Ctrl-C must not cut the rollback short
                recover(root, state_dir)
        except SgpatchError as rollback:
            raise SgpatchError(
                f"{_describe(exc, current_rel)}; rolling back failed too: {rollback.message}",
                ExitCode.UNSAFE,
            ) from None
        if isinstance(exc, OSError):
            raise SgpatchError(
                f"{_write_error(exc, current_rel)}; the tree was rolled back, nothing changed"
            ) from None
        raise
    _step()
    journal.unlink()
    _fsync_dir(state_dir)
    _drop_originals(state_dir)
    _remove_emptied_folders(root, [c.path for c in changes if c.after is None])
    return notes


def _link_stored(
    root: Path, state_dir: Path, c: FileChange, journalled: set[str], folders: set[Path]
) -> bool:
    """A new read-only state file whose bytes the journal's store already holds, fsynced (the
    ledger's store keeping a file's 'before'), is hard-linked from there instead of written
    and fsynced a second time. False for any other change, or where the filesystem makes no
    hard links: the caller writes it. Both names are sgpatch's own 0444 files, never written
    in place; dropping the journal's store leaves the ledger's name."""
    if c.before is not None or c.after is None or c.link is not None or c.mode != 0o444:
        return False
    path = root / c.path
    digest = sha256(c.after)
    if digest not in journalled or state_dir not in path.parents:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    _step()
    try:
        os.link(state_dir / JOURNAL_ORIGINALS / digest, path, follow_symlinks=False)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise
        return False
    folders.add(path.parent)
    return True


def owner_note(rel: str, lost: Owner, mode: int) -> str:
    """The warning for a file that could not keep its owner (sgpatch is not root)."""
    me = os.geteuid() if hasattr(os, "geteuid") else -1
    bits = ", and without its setuid/setgid bit" if mode & SETID else ""
    return (
        f"{rel} was owned by uid {lost[0]} gid {lost[1]}; sgpatch runs as uid {me} and cannot "
        f"keep that: the new file is owned by uid {me}{bits}"
    )


def _preflight(
    root: Path, changes: Sequence[FileChange]
) -> tuple[dict[str, int], dict[str, Owner]]:
    """Before anything is written: each path changed once, its bytes still what was planned,
    it and its folder writable. Returns the modes and owners of the files that exist (to keep
    them, and to restore them on a rollback)."""
    modes: dict[str, int] = {}
    owners: dict[str, Owner] = {}
    seen: set[str] = set()
    for c in changes:
        if c.path in seen:
            raise internal(f"{c.path} changed twice in one commit")
        seen.add(c.path)
        path = _verify_before(root, c)
        st = _regular(path) if c.before_link is None else None
        if st is not None:
            modes[c.path] = stat.S_IMODE(st.st_mode)
            owners[c.path] = _owner_of(st)
            if not os.access(path, os.W_OK):
                raise SgpatchError(f"{c.path}: file is read-only; nothing was written")
        folder = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
        if folder is not None and folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise SgpatchError(f"{c.path}: folder {folder} is not writable; nothing was written")
    return modes, owners


def _remove_emptied_folders(root: Path, deleted: Sequence[str]) -> None:
    """Folders a deletion left empty go too, up to (not including) the root, as git does: a
    reversed patch that created `new/dir/f.py` leaves no `new/dir/` behind. A tidy-up after
    the commit: a rollback would make them again with the files."""
    for rel in deleted:
        folder = (root / rel).parent
        while folder != root and root in folder.parents:
            try:
                folder.rmdir()  # only when empty
            except OSError:
                break
            folder = folder.parent


def _describe(exc: BaseException, rel: str) -> str:
    if isinstance(exc, OSError):
        return _write_error(exc, rel)
    return f"interrupted ({type(exc).__name__}) while writing {rel}"
