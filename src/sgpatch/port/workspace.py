"""The port workspace W: a full tree of the target release (`W/sglang/...`) and the sequencer's
state as small named files in `W/.sgpatch-port/` that a person can `cat` (as git keeps a rebase
in `.git/rebase-merge/`). Each state file is declared once, with what it holds and what it
means after a crash, in port.statefiles; this module reads and writes them.

`W/.sgpatch-port.lock` is the workspace's lock: one writer at a time (`locked`).

Every file is read and written relative to a directory descriptor opened without following
symlinks, so a symlink planted in W is refused (exit 4), never followed.
"""

from __future__ import annotations

import os
import secrets
import shlex
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal, get_args

from sgpatch.diff.canonical import REGULAR
from sgpatch.errors import SgpatchError, bad_input, unsafe
from sgpatch.fs import atomic
from sgpatch.fs.atomic import TMP_SUFFIX
from sgpatch.port import undo
from sgpatch.port.statefiles import (
    COMMAND,
    FINISHED,
    KEPT_ASIDE,
    LOCK,
    MADE,
    MARKER,
    NEW_STATE,
    OLD_STATE,
    ONTO,
    OURS_IN_STATE,
    PHASE,
    PKG,
    REUSED,
    STAGE,
    STATE,
    TREE,
)
from sgpatch.port.wsfiles import (
    digest,
    digests,
    entry_digest,
    kept_dirs,
    kill_point,
    mode_of,
    read,
    read_entry,
    rmtree,
    write,
)

__all__ = [
    "PKG",
    "STATE",
    "Workspace",
    "digest",
    "entry_digest",
    "kill_point",
    "read",
    "rmtree",
    "write",
]

MARKER_TEXT = "sgpatch port workspace\n"
# what the next --continue does first (docs/porting.md)
Phase = Literal["start", "carry", "stopped", "planned", "finishing", "finished"]
PHASES: tuple[Phase, ...] = get_args(Phase)


class Workspace:
    """W: the release tree and the sequencer state (every state file is plain text). Inside
    `step(...)` every write is journaled first, so a step is all or nothing (undo.py)."""

    def __init__(self, top: Path) -> None:
        self.top = Path(os.path.abspath(top))
        self._tree: dict[str, str] | None = None
        self._journal: undo.Journal | None = None  # of the step under way
        # `before/ID.absent`, `after/ID.absent` as read or last written (snapshots): each read
        # once per run, dropped with a step's rollback
        self.absent: dict[str, frozenset[str]] = {}

    @property
    def root(self) -> Path:
        """The package root (`--sglang-dir W` finds it too)."""
        return self.top / PKG

    # writes ------------------------------------------------------------------------------
    def write(self, rel: str, data: bytes | None, mode: int = REGULAR) -> None:
        """Every write of W (tree and state) goes here: noted in the step's journal first.
        `mode`: a tree file's git mode (wsfiles.write)."""
        if self._journal is not None:
            self._journal.note(rel, data, mode)
        write(self.top, rel, data, mode=mode)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """One step of the port: its writes land whole or not at all. On an error or Ctrl-C
        inside, W is put back as the step found it; killed, the next run puts it back
        (undo.recover). Nested steps are part of the outer one."""
        if self._journal is not None:
            yield
            return
        from sgpatch import interrupts

        with kept_dirs(self.top):  # the step's folders opened once for its many writes
            self._journal = current = undo.Journal(self.top, name)
            try:
                yield
            except BaseException:
                self._journal = None
                with interrupts.deferred():  # a second Ctrl-C must not cut the rollback short
                    self.recover()
                raise
            self._journal = None
            current.commit()

    def recover(self, strict: bool = True) -> list[str]:
        """Put back what an interrupted step wrote (undo.recover); the tree files left as
        the person edited them since. Not `strict` (--abort): a damaged journal is dropped
        unreplayed instead of refused, so the command its refusal advises works."""
        kept = undo.recover(self.top, strict)
        self._tree = None
        self.absent = {}
        return kept

    # state files -------------------------------------------------------------------------
    def get(self, name: str) -> str | None:
        data = read(self.top, f"{STATE}/{name}")
        try:
            return None if data is None else data.decode("utf-8")
        except UnicodeDecodeError:
            raise self.damaged(name, "not UTF-8 text") from None

    def damaged(self, name: str, why: str) -> SgpatchError:
        """A state file that is not as sgpatch wrote it: refused, never guessed at."""
        return unsafe(f"{self.top}/{STATE}/{name}: damaged ({why}); {self.abort_hint()}")

    def abort_hint(self) -> str:
        """What to type to drop this workspace and begin again."""
        again = self.get_raw(COMMAND)
        then = f", then `{again.strip()}`" if again else " and port again"
        return f"`sgpatch port --abort --workspace {shlex.quote(str(self.top))}`{then}"

    def continue_hint(self) -> str:
        return f"`sgpatch port --continue --workspace {shlex.quote(str(self.top))}`"

    def get_raw(self, name: str) -> str | None:
        """A state file for a message: never refused (None when absent or unreadable)."""
        try:
            data = read(self.top, f"{STATE}/{name}")
        except SgpatchError:
            return None
        return None if data is None else data.decode("utf-8", "replace")

    def put(self, name: str, text: str | None) -> None:
        self.write(f"{STATE}/{name}", None if text is None else text.encode("utf-8"))

    def lines(self, name: str) -> list[str]:
        return [ln for ln in (self.get(name) or "").splitlines() if ln.strip()]

    def put_lines(self, name: str, lines: Iterable[str]) -> None:
        self.put(name, "".join(f"{ln}\n" for ln in lines))

    def get_bytes(self, name: str) -> bytes | None:
        return read(self.top, f"{STATE}/{name}")

    def put_bytes(self, name: str, data: bytes | None) -> None:
        self.write(f"{STATE}/{name}", data)

    def put_editable(self, name: str, data: bytes) -> None:
        """A state file a person may edit during a stop (listed in `tree`, so --abort keeps
        their edit of it as it keeps an edited tree file). The list is written in the same
        step: sgpatch rewriting the file (a probe it replaces by itself at --continue) is
        never taken for a person's edit later."""
        self.put_bytes(name, data)
        self.tree()[f"{STATE}/{name}"] = digest(data)
        self.save_tree()

    @property
    def phase(self) -> Phase:
        word = (self.get(PHASE) or "").strip()
        for phase in PHASES:
            if word == phase:
                return phase
        raise self.damaged(PHASE, f"not one of {', '.join(PHASES)}")

    def set_phase(self, phase: Phase) -> None:
        self.put(PHASE, f"{phase}\n")

    # the tree ----------------------------------------------------------------------------
    def read_pkg(self, rel: str) -> bytes | None:
        """A tree file's bytes (a symlink's: its target, never followed)."""
        return read_entry(self.top, f"{PKG}/{rel}")[0]

    def mode_pkg(self, rel: str) -> int:
        """A tree file's git mode: 100644, 100755, or 120000 for a symlink."""
        return mode_of(self.top, f"{PKG}/{rel}")

    def write_pkg(self, rel: str, data: bytes | None, mode: int = REGULAR) -> None:
        """Write a file of the tree, of git mode `mode` (remembered in `tree` at the next
        save_tree)."""
        self.write(f"{PKG}/{rel}", data, mode)
        tree = self.tree()
        if data is None:
            tree.pop(f"{PKG}/{rel}", None)
        else:
            tree[f"{PKG}/{rel}"] = entry_digest(data, mode)

    def tree(self, lenient: bool = False) -> dict[str, str]:
        """W-relative path -> sha256 of every file sgpatch wrote into W, read once. A damaged
        line is refused, but `lenient` (--abort, which must drop W whatever the list says)
        leaves it out: what it names is never followed."""
        if self._tree is None:
            self._tree = self.digest_list(TREE, lenient) or {}
        return self._tree

    def digest_list(self, name: str, lenient: bool = False) -> dict[str, str] | None:
        """A `sha256  path` list as save_tree writes it (`tree`, `reused`): path -> sha256
        (None: absent). A line without a whole digest and a path is damaged (`lenient`: left
        out)."""
        text = self.get(name)
        if text is None:
            return None
        out = {}
        for line in text.splitlines():
            sha, _, path = line.partition("  ")
            if len(sha) == 64 and path:
                out[path] = sha
            elif not lenient and line.strip():
                raise self.damaged(name, f"line {line[:60]!r}")
        return out

    def save_tree(self, tree: dict[str, str] | None = None) -> None:
        if tree is not None:
            self._tree = dict(tree)
        self.put(TREE, digest_text(self.tree()))

    def is_ours(self) -> bool:
        return self.get(MARKER) == MARKER_TEXT

    def is_live(self) -> bool:
        return self.is_ours() and self.get(FINISHED) is None


def digest_text(files: dict[str, str]) -> str:
    """A `sha256  path` list (path -> sha256), by path: what Workspace.digest_list reads."""
    return "".join(f"{sha}  {path}\n" for path, sha in sorted(files.items()))


# ---------------------------------------------------------------------------------------------
# one writer at a time


@contextmanager
def locked(top: Path) -> Iterator[None]:
    """Hold W's lock (`W/.sgpatch-port.lock`) for a whole command: a second `port` into W,
    `--continue` or `--abort` while it is held exits 4 at once, in one line. The lock is the
    one of the file-system layer (sgpatch.fs.lock): a symlink or FIFO at the name is refused
    at once, never followed or waited on, and the name must still lead to the file locked
    (--abort removes it, holding the lock, as the last thing in W)."""
    import time

    from sgpatch.fs import lock as fslock
    from sgpatch.fs.regular import OddFile

    path = Path(os.path.abspath(top)) / LOCK
    try:
        lock = fslock.acquire(path, time.monotonic())
    except OddFile as odd:
        raise unsafe(f"{path} is {odd.kind}; not following or opening it") from None
    except fslock.Busy:
        raise _busy(top) from None
    except (OSError, NotImplementedError) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or "the filesystem has no file locks"
        raise SgpatchError(f"cannot take the lock {path}: {why}") from None
    if lock is None:
        raise _busy(top)
    try:
        yield
    finally:
        lock.release()


def _busy(top: Path) -> SgpatchError:
    return unsafe(
        f"--workspace {top}: another sgpatch port is writing there (it holds "
        f"{Path(os.path.abspath(top)) / LOCK}); wait for it to end, then run this again"
    )


# ---------------------------------------------------------------------------------------------
# making, finding and removing a workspace


def check_free(top: Path, edits: bool = True) -> None:
    """Refuse a W a new port may not use, before anything is written: a symlink, a file, a
    folder holding what sgpatch did not make, or a live workspace (a port in progress); and
    (`edits`) a finished one holding hand edits. Hashing the whole tree for that is done
    once, under the lock (claim), not also in the check before it."""
    ws = Workspace(top)
    if os.path.islink(ws.top):
        raise unsafe(f"--workspace {top}: is a symlink; not following it")
    if ws.top.exists() and not ws.top.is_dir():
        raise bad_input(f"--workspace {top}: exists and is not a folder")
    if not ws.top.is_dir() or not _others(ws.top):
        return
    if not ws.is_ours():
        raise bad_input(f"--workspace {top}: exists and is not a port workspace; give a new folder")
    if ws.is_live():
        onto = (ws.get_raw(ONTO) or "?").strip()
        raise unsafe(
            f"--workspace {top}: a port is in progress there ({onto}); "
            f"finish it with {ws.continue_hint()} or drop it with "
            f"`sgpatch port --abort --workspace {shlex.quote(str(ws.top))}`"
        )
    edited = hand_edits(ws) if edits else []
    if edited:  # a finished workspace is cleared for the new port: never over someone's edit
        w = shlex.quote(str(ws.top))
        raise unsafe(
            f"--workspace {top}: the finished port there holds your edits of {shown(edited)}; "
            f"keep them with `sgpatch port --abort --force --workspace {w}` (copied to "
            f"{ws.top}.aborted-N), then port again"
        )


def shown(rels: list[str], most: int = 5) -> str:
    """A list of files for a one-line message."""
    more = f" and {len(rels) - most} more" if len(rels) > most else ""
    return ", ".join(rels[:most]) + more


def _others(top: Path) -> list[str]:
    """Names in W besides sgpatch's lock and a state folder it was making or removing when
    it stopped."""
    return sorted(n for n in os.listdir(top) if n != LOCK and not n.startswith(_LEFTOVER))


_LEFTOVER = (NEW_STATE, OLD_STATE)


def make_top(top: Path) -> bool:
    """Make W if it does not exist; True when this call made it (--abort removes only a W
    that sgpatch made, never a folder the user made)."""
    try:
        os.mkdir(top, 0o755)
    except FileExistsError:
        return False
    except FileNotFoundError:
        Path(top).parent.mkdir(parents=True, exist_ok=True)
        return make_top(top)
    return True


def claim(top: Path, made: bool, identity: dict[str, str]) -> Workspace:
    """W for a new port, under its lock: checked again (check_free), then the state folder
    written whole: made aside, renamed into place with every identity file in it, so W either
    is a workspace that knows its set and release, or holds nothing of a port (a kill in
    between leaves only a hidden folder the next port clears). A finished workspace sgpatch
    made is taken over (`hand_over`: its tree, unedited and whole, moves into the new state
    folder for `lay_out` to turn into the new release), else cleared first."""
    check_free(top)
    ws = Workspace(top)
    kept = keep_own_aside(ws)
    for name in os.listdir(ws.top):
        if name.startswith(_LEFTOVER):
            rmtree(ws.top / name)
    reused = reusable(ws) if _others(ws.top) else None
    if reused is not None:
        made = (ws.get_raw(MADE) or "").strip() == "yes" or made
    elif _others(ws.top):  # a finished workspace of ours, not whole as sgpatch left it
        made = remove(ws, keep_top=True) or made
    new = ws.top / f"{NEW_STATE}{secrets.token_hex(4)}"
    os.mkdir(new, 0o755)
    files = {**identity, MADE: "yes" if made else "no", PHASE: "start", MARKER: MARKER_TEXT}
    if reused is not None:
        files[REUSED] = digest_text(reused)
    if kept is not None:
        files[KEPT_ASIDE] = kept
    for name, text in files.items():
        write(new, name, text.encode("utf-8") if text.endswith("\n") else f"{text}\n".encode())
    if reused is not None:
        hand_over(ws, new, reused)
    kill_point()
    atomic.rename_path(new, ws.top / STATE)
    for name in os.listdir(ws.top):
        if name.startswith(OLD_STATE):
            rmtree(ws.top / name)
    return Workspace(top)  # nothing of the finished port's state remembered


def reusable(ws: Workspace) -> dict[str, str] | None:
    """The tree of a finished workspace (W-relative path -> sha256) when a new port may take
    it over as it is: its top folders hold exactly the files sgpatch wrote (check_free has
    hashed them: none edited), no symlink, nothing a person added. Else None (W is cleared
    and laid anew, the person's files left where they are)."""
    tree = {p: sha for p, sha in ws.tree().items() if not p.startswith(f"{STATE}/")}
    tops = {p.split("/", 1)[0] for p in tree}
    if not tree or any(not _plain_dir(ws.top / t) for t in tops):
        return None
    found: set[str] = set()
    for t in sorted(tops):
        for dirpath, dirs, files in os.walk(ws.top / t, followlinks=False):
            for name in [*files, *dirs]:
                if os.path.islink(os.path.join(dirpath, name)):
                    return None
            rel = Path(dirpath).relative_to(ws.top).as_posix()
            found.update(f"{rel}/{name}" for name in files)
    return tree if found == set(tree) else None


def _plain_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def hand_over(ws: Workspace, new: Path, reused: dict[str, str]) -> None:
    """Move the finished workspace's tree into the new state folder (`new`, still aside) as
    its stage, one rename per top folder, then the old state folder out of the way: a kill
    leaves W the finished workspace (its tree partly in a hidden folder the next port clears)
    or holding only hidden folders, never a tree without a state that says whose it is."""
    os.mkdir(new / STAGE, 0o755)
    for t in sorted({p.split("/", 1)[0] for p in reused}):
        kill_point()
        atomic.rename_path(ws.top / t, new / STAGE / t)
    kill_point()
    atomic.rename_path(ws.top / STATE, ws.top / f"{OLD_STATE}{secrets.token_hex(4)}")


def existing(top: Path) -> Workspace:
    """A workspace for --continue / --abort (exit 2 if there is none)."""
    ws = Workspace(top)
    if os.path.islink(ws.top):
        raise unsafe(f"--workspace {top}: is a symlink; not following it")
    if not ws.top.is_dir() or not ws.is_ours():
        raise bad_input(f"--workspace {top}: no port workspace there{_begun(ws.top)}")
    return ws


def _begun(top: Path) -> str:
    """A port killed while it made the state folder: say so, and what to run again."""
    with suppress(OSError):
        for name in sorted(os.listdir(top)):
            if name.startswith(OLD_STATE):
                return " (an --abort was interrupted there; run the port again, or remove W)"
            if name.startswith(NEW_STATE):
                command = read(top / name, COMMAND)
                again = f": `{command.decode('utf-8', 'replace').strip()}`" if command else ""
                return f" (a port was interrupted before it began there; run it again{again})"
    return ""


def hand_edits(ws: Workspace) -> list[str]:
    """W-relative files sgpatch wrote that hold other bytes now: a person's edits, which
    --abort must never delete silently."""
    tree = ws.tree()
    now = digests(ws.top, tree)  # a symlink: its target, never followed; unreadable: listed
    return sorted(rel for rel, sha in now.items() if sha is not None and sha != tree[rel])


def keep_aside(ws: Workspace, rels: list[str]) -> Path:
    """Copy `rels` (W-relative) to a new folder next to W, `W.aborted-N` (the first N free):
    the one place --abort writes outside W. A copy that fails removes that folder again."""
    n = 1
    while True:
        dest = ws.top.with_name(f"{ws.top.name}.aborted-{n}")
        try:
            os.mkdir(dest, 0o755)
            break
        except FileExistsError:
            n += 1
    try:
        for rel in rels:
            data, mode = read_entry(ws.top, rel)  # a symlink is copied as one
            if data is not None:
                write(dest, rel, data, mode=mode)
    except BaseException:
        rmtree(dest)  # a failed copy leaves no W.aborted-N behind (the next try makes it anew)
        raise
    return dest


def keep_own_aside(ws: Workspace) -> str | None:
    """Before a new port clears or takes over a finished workspace: copy the person's own
    files in its state folder (na-<id> reasons, notes) to `W.aborted-N`, as --abort does, so
    clearing W never deletes them (a kill after the copy loses nothing). Returns the line
    that says so (None: there were none)."""
    own = own_files(ws) if ws.is_ours() else []
    if not own:
        return None
    return f"your files of the port finished here before ({shown(own)}) were copied to " + str(
        keep_aside(ws, own)
    )


def own_files(ws: Workspace) -> list[str]:
    """W-relative files a person put in the state folder (na-<id> reasons, notes): every name
    there that sgpatch does not write, folders walked (symlinks and sgpatch's temp files
    left out: never followed, never a person's)."""
    state, out = ws.top / STATE, []
    if state.is_symlink() or not state.is_dir():
        return []
    for name in sorted(os.listdir(state)):
        if name in OURS_IN_STATE or name.endswith(TMP_SUFFIX):
            continue
        if (state / name).is_file() and not (state / name).is_symlink():
            out.append(f"{STATE}/{name}")
        elif _plain_dir(state / name):
            for dirpath, dirs, files in os.walk(state / name, followlinks=False):
                dirs.sort()
                rel = Path(dirpath).relative_to(ws.top).as_posix()
                out += [f"{rel}/{f}" for f in sorted(files)
                        if not os.path.islink(os.path.join(dirpath, f))]  # fmt: skip
    return out


def remove(ws: Workspace, keep_top: bool = False) -> bool:
    """Remove what sgpatch wrote (the tree files it lists, its state) and the folders that
    leaves empty; files someone else put there stay. W itself goes only when sgpatch made it
    and nothing is left (never a folder the user made), and never with `keep_top`. Symlinks
    are unlinked, never followed. Returns whether sgpatch had made W."""
    made = (ws.get_raw(MADE) or "").strip() == "yes"
    for path in set(ws.tree()):
        try:
            write(ws.top, path, None)
        except SgpatchError:
            continue  # a damaged line (a path out of W, through a link): never followed
    _prune(ws.top / PKG)
    for dist in ws.top.glob(f"{PKG}-*.dist-info"):
        _prune(dist)
    old = ws.top / f"{OLD_STATE}{secrets.token_hex(4)}"
    if (ws.top / STATE).is_dir() and not (ws.top / STATE).is_symlink():
        kill_point()
        atomic.rename_path(ws.top / STATE, old)  # whole: W is a workspace, or holds only leftovers
    rmtree(ws.top / STATE)  # a symlink planted there: unlinked
    for name in os.listdir(ws.top):
        if name.startswith(_LEFTOVER):
            rmtree(ws.top / name)
    if keep_top:
        return made
    with suppress(OSError):
        os.unlink(ws.top / LOCK)  # held by this run: the last of W it removes
    if made and not _others(ws.top):
        with suppress(OSError):
            ws.top.rmdir()
    return made


def left_in(ws: Workspace) -> list[str]:
    """What is left in W after `remove` (what others put there)."""
    return _others(ws.top) if ws.top.is_dir() else []


def files_left(ws: Workspace) -> list[str]:
    """The W-relative files left in W after `remove` (symlinks listed, never followed), for
    the line that says why W stays."""
    out: list[str] = []
    for name in left_in(ws):
        path = ws.top / name
        if path.is_symlink() or not path.is_dir():
            out.append(name)
            continue
        for dirpath, dirs, files in os.walk(path, followlinks=False):
            dirs.sort()
            rel = Path(dirpath).relative_to(ws.top).as_posix()
            out += [f"{rel}/{f}" for f in sorted(files)]
            out += [f"{rel}/{d}" for d in dirs if os.path.islink(os.path.join(dirpath, d))]
    return out


def _prune(top: Path) -> None:
    """Remove the empty folders under `top` (and `top` itself if it ends up empty)."""
    if top.is_symlink() or not top.is_dir():
        return
    for dirpath, _dirs, _files in os.walk(top, topdown=False, followlinks=False):
        with suppress(OSError):
            os.rmdir(dirpath)
