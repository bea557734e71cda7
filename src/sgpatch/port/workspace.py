"""The port workspace W: a full tree of the target release (`W/sglang/...`) and the sequencer's
state as small named files in `W/.sgpatch-port/` that a person can `cat` (as git keeps a rebase
in `.git/rebase-merge/`):

    marker        this is a workspace sgpatch made (nothing else is ever cleared or removed)
    running       present while a step writes (a crash leaves it: --continue refuses)
    format        the state files' format (--continue refuses another)
    set           the patchset.yaml being ported; set-sha256: its digest when the port began
    onto          the target release; offline: whether releases come from the cache only
    known         the releases port knew when it began (--continue decides on the same)
    todo          patches still to carry (or with files still waiting), in order
    partial       what the patches on todo with some files carried have so far
    done          carried patches: id, outcome, where from
    needs-a-hand  patches stopped on a conflict; problems/<id>: their files, hunks, why
    fix           the short list of what to fix (file: lines, patch, hunks, why)
    tree          sha256 and path of every file sgpatch wrote into W
    files/<id>    the files a patch touches; carried/<id>: those carried (or fixed) so far;
                  fixing/<id>: a stopped patch's files that need a hand
    before/<id>/, after/<id>/
                  each carried file as W held it before and after the patch (absent ones
                  listed in before/<id>.absent, after/<id>.absent): its new file is their diff
    patches/      the new patch file of each finished patch
    merge/<id>/   the merge inputs of a patch's merged files (<file>.base, <file>.theirs)
    finished      present once the set was written

Every file is read and written relative to a directory descriptor opened without following
symlinks, so a symlink planted in W is refused (exit 4), never followed.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath

from sgpatch.errors import ExitCode, SgpatchError, bad_input, unsafe
from sgpatch.state.folder import TMP_SUFFIX

STATE = ".sgpatch-port"
MARKER = "sgpatch port workspace\n"
PKG = "sglang"
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _parts(rel: str) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
    if not parts or ".." in parts or rel.startswith("/"):
        raise unsafe(f"refusing workspace path {rel!r}")
    return parts


@contextmanager
def _dir(top: Path, parts: list[str], create: bool) -> Iterator[int]:
    """A descriptor of top/parts..., each component opened without following symlinks."""
    fd = os.open(top, _DIR)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):  # made meanwhile: fine, opened next
                    os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            where = f"{top}/{'/'.join(parts)}"
            raise unsafe(f"{where}: a symlink or file in the way; not following it") from None
        raise
    finally:
        os.close(fd)


def read(top: Path, rel: str) -> bytes | None:
    """Bytes of top/rel (None: absent); a symlink anywhere on the way is refused."""
    *dirs, name = _parts(rel)
    try:
        with _dir(top, dirs, create=False) as d:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=d)
            with os.fdopen(fd, "rb") as f:
                return f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise unsafe(f"{top}/{rel} is a symlink; not following it") from None
        raise SgpatchError(f"{top}/{rel}: cannot read: {exc.strerror}") from None


def write(top: Path, rel: str, data: bytes | None) -> None:
    """Replace top/rel with `data` (None: remove it) through an unpredictable temp name."""
    *dirs, name = _parts(rel)
    if data is None:
        with suppress(FileNotFoundError), _dir(top, dirs, create=False) as d:
            os.unlink(name, dir_fd=d)  # absent, or its folder is: nothing to remove
        return
    with _dir(top, dirs, create=True) as d:
        tmp = f".{name}.{secrets.token_hex(6)}{TMP_SUFFIX}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=d)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=d, dst_dir_fd=d)
        except BaseException:
            os.unlink(tmp, dir_fd=d)
            raise


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Workspace:
    """W: the release tree and the sequencer state (every state file is plain text)."""

    def __init__(self, top: Path) -> None:
        self.top = Path(os.path.abspath(top))
        self._tree: dict[str, str] | None = None

    @property
    def root(self) -> Path:
        """The package root (`--sglang-dir W` finds it too)."""
        return self.top / PKG

    # state files -------------------------------------------------------------------------
    def get(self, name: str) -> str | None:
        data = read(self.top, f"{STATE}/{name}")
        try:
            return None if data is None else data.decode("utf-8")
        except UnicodeDecodeError:
            raise self.damaged(name, "not UTF-8 text") from None

    def damaged(self, name: str, why: str) -> SgpatchError:
        """A state file that is not as sgpatch wrote it: refused, never guessed at."""
        return unsafe(
            f"{self.top}/{STATE}/{name}: damaged ({why}); "
            f"`sgpatch port --abort --workspace {self.top}` and port again"
        )

    def put(self, name: str, text: str | None) -> None:
        write(self.top, f"{STATE}/{name}", None if text is None else text.encode("utf-8"))

    def lines(self, name: str) -> list[str]:
        return [ln for ln in (self.get(name) or "").splitlines() if ln.strip()]

    def put_lines(self, name: str, lines: Iterable[str]) -> None:
        self.put(name, "".join(f"{ln}\n" for ln in lines))

    def get_bytes(self, name: str) -> bytes | None:
        return read(self.top, f"{STATE}/{name}")

    def put_bytes(self, name: str, data: bytes | None) -> None:
        write(self.top, f"{STATE}/{name}", data)

    # the tree ----------------------------------------------------------------------------
    def read_pkg(self, rel: str) -> bytes | None:
        return read(self.top, f"{PKG}/{rel}")

    def write_pkg(self, rel: str, data: bytes | None) -> None:
        """Write a file of the tree (remembered in `tree` at the next save_tree)."""
        write(self.top, f"{PKG}/{rel}", data)
        tree = self.tree()
        if data is None:
            tree.pop(f"{PKG}/{rel}", None)
        else:
            tree[f"{PKG}/{rel}"] = digest(data)

    def tree(self) -> dict[str, str]:
        """W-relative path -> sha256 of every file sgpatch wrote into W."""
        if self._tree is None:
            self._tree = {}
            for line in self.lines("tree"):
                sha, _, path = line.partition("  ")
                self._tree[path] = sha
        return self._tree

    def save_tree(self, tree: dict[str, str] | None = None) -> None:
        if tree is not None:
            self._tree = dict(tree)
        items = sorted(self.tree().items())
        self.put_lines("tree", (f"{sha}  {path}" for path, sha in items))

    def is_ours(self) -> bool:
        return self.get("marker") == MARKER

    def is_live(self) -> bool:
        return self.is_ours() and self.get("finished") is None


RUNNING = "running"  # present while a step writes: a crash leaves it, --continue refuses


def running(ws: Workspace, step: str | None) -> None:
    """Say that `step` is writing the workspace (None: it finished, the state is whole)."""
    ws.put(RUNNING, None if step is None else f"{step}\n")


def claim(top: Path) -> Workspace:
    """W for a new port: a new folder, an empty one, or a finished workspace sgpatch made
    (cleared first). A live workspace (a port in progress) or anything else is refused."""
    ws = Workspace(top)
    if os.path.islink(ws.top):
        raise unsafe(f"--workspace {top}: is a symlink; not following it")
    if ws.top.exists() and not ws.top.is_dir():
        raise bad_input(f"--workspace {top}: exists and is not a folder")
    if ws.top.is_dir() and any(ws.top.iterdir()):
        if not ws.is_ours():
            raise bad_input(
                f"--workspace {top}: exists and is not a port workspace; give a new folder"
            )
        if ws.is_live():
            raise SgpatchError(
                f"--workspace {top}: a port is in progress there ({ws.get('onto') or '?'}); "
                "finish it with --continue or drop it with --abort",
                ExitCode.UNSAFE,
            )
        remove(ws)
    ws.top.mkdir(parents=True, exist_ok=True)
    write(ws.top, f"{STATE}/{RUNNING}", b"port\n")  # before the marker: never live and whole
    write(ws.top, f"{STATE}/marker", MARKER.encode())
    return ws


def existing(top: Path) -> Workspace:
    """A live workspace for --continue / --abort (exit 2 if there is none)."""
    ws = Workspace(top)
    if os.path.islink(ws.top):
        raise unsafe(f"--workspace {top}: is a symlink; not following it")
    if not ws.top.is_dir() or not ws.is_ours():
        raise bad_input(f"--workspace {top}: no port workspace there")
    return ws


def remove(ws: Workspace) -> list[str]:
    """Remove what sgpatch wrote (the tree files it lists, its state) and the folders that
    leaves empty; files someone else put there stay. Symlinks are unlinked, never followed."""
    left: list[str] = []
    for path in set(ws.tree()):
        try:
            write(ws.top, path, None)
        except SgpatchError:
            continue  # a damaged line (a path out of W, through a link): never followed
    _prune(ws.top / PKG)
    for dist in ws.top.glob(f"{PKG}-*.dist-info"):
        _prune(dist)
    _remove_state(ws.top / STATE)
    try:
        ws.top.rmdir()
    except OSError:
        left = sorted(p.name for p in ws.top.iterdir()) if ws.top.is_dir() else []
    return left


def _prune(top: Path) -> None:
    """Remove the empty folders under `top` (and `top` itself if it ends up empty)."""
    if top.is_symlink() or not top.is_dir():
        return
    for dirpath, _dirs, _files in os.walk(top, topdown=False, followlinks=False):
        with suppress(OSError):
            os.rmdir(dirpath)


def _remove_state(state: Path) -> None:
    if state.is_symlink():
        state.unlink()
        return
    if not state.is_dir():
        return
    for dirpath, dirs, files in os.walk(state, topdown=False, followlinks=False):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            os.unlink(os.path.join(dirpath, name))
        os.rmdir(dirpath)
