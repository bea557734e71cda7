"""A checkout's git, read as a reader, never as an executor.

Read-only commands (`status`, `probe`, `diff`, `matrix`, and every command's version detection)
may be pointed at a checkout someone else controls: a repository bind-mounted into a root
container, a fork's clone. Its `.git/config` can name programs that git runs on its own:
`core.fsmonitor` on any read of the index, clean/smudge filters and textconv on file content,
hooks when the index is written, pagers, credential helpers, gpg for signatures. So here git is
asked only to read objects, refs and the index (`rev-parse`, `cat-file --batch` without
`--filters`, `ls-tree`, `ls-files`, `rev-list`, `diff-tree --name-only`, `describe`), never
`status` (which refreshes the index and runs filters), and with the programs switched off on
the command line, which wins over the repository's own config (`OFF`); the index is never
written (`GIT_OPTIONAL_LOCKS=0`, and none of these commands writes it anyway). The work tree's
files are read directly, not through git.

A repository git refuses to read (another user's, without `safe.directory`: "dubious
ownership"), a git that is missing or fails: `GitUnreadable`, one line; callers then read the
tree as a plain tree (docs/safety.md, "Git").
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import ExitCode, SgpatchError

# Every program a repository's config can make a reading git run, switched off; `-c` on the
# command line beats .git/config. Hooks and pagers cannot run in the commands used here (no
# index write, stdout is a pipe): they are off all the same, in case a git version differs.
OFF = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.untrackedCache=false",
    "credential.helper=",
    "diff.external=",
    "log.showSignature=false",
    "protocol.allow=never",  # no transport at all: a partial clone's lazy fetch stays off
    "gc.auto=0",
    "maintenance.auto=false",
)
# Set in the caller's environment, these would point git at other files or programs.
_DROPPED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "GIT_EDITOR",
)
_READER_ENV = {
    "GIT_OPTIONAL_LOCKS": "0",  # never write the index, not even to refresh it
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_LITERAL_PATHSPECS": "1",  # a path with `*` or `:` is a path
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_PAGER": "cat",
    "LC_ALL": "C",  # git's messages in English, to tell "dubious ownership"
}
_DUBIOUS = re.compile(r"dubious ownership in repository at '?([^'\n]*)'?")


class GitUnreadable(SgpatchError):
    """git cannot or will not read this checkout; `dubious`: it belongs to another user."""

    def __init__(self, message: str, dubious: bool = False) -> None:
        super().__init__(message, ExitCode.UNSAFE if dubious else ExitCode.BAD_INPUT)
        self.dubious = dubious


def environment() -> dict[str, str]:
    """The environment a reading git runs in (also for `git diff --no-index` and
    `git merge-file` in a temporary folder)."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update(_READER_ENV)
    return env


def command(*args: str) -> list[str]:
    """`git -c ... ARGS`: git with every program of the repository's config switched off."""
    exe = shutil.which("git") or "git"
    return [exe, "--no-pager", *(x for kv in OFF for x in ("-c", kv)), *args]


@contextlib.contextmanager
def _pipe_safe() -> Iterator[None]:
    """sgpatch ends by SIGPIPE when its reader goes away (`status | head`); a git that exits
    before reading its stdin must not end it the same way (it did: exit 141, no output)."""
    previous = None
    with contextlib.suppress(ValueError, AttributeError):  # not the main thread / no SIGPIPE
        previous = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGPIPE, previous)


def run(repo: Path, *args: str, stdin: bytes | None = None, ok: Sequence[int] = (0,)) -> bytes:
    """stdout of a reading `git -C repo ARGS`; GitUnreadable when git is missing, refuses the
    repository (dubious ownership) or fails with an exit code not in `ok`."""
    planted = _special_git_file(repo)
    if planted is not None:
        raise GitUnreadable(f"git cannot read {repo}: {planted} is not a regular file")
    try:
        with _pipe_safe():
            proc = subprocess.run(
                command("-C", str(repo), *args),
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                env=environment(),
                check=False,
                timeout=120,
            )
    except FileNotFoundError:
        raise GitUnreadable(f"{repo}: git is not installed") from None
    except subprocess.TimeoutExpired as exc:
        raise GitUnreadable(f"{repo}: git did not answer in {exc.timeout:.0f} s") from None
    except OSError as exc:
        raise GitUnreadable(f"{repo}: git could not run ({exc.strerror or exc})") from None
    if proc.returncode in ok:
        return proc.stdout
    raise _failure(repo, proc.stderr)


# What the reads used here open in a repository: every read (HEAD, config and the files it
# includes, the index, packed-refs, commondir), object access (alternates, grafts), history
# (shallow), and `describe` (every loose ref: a tag is a file under refs/tags).
_GIT_FILES = ("HEAD", "config", "index", "packed-refs", "commondir", "shallow",
              "objects/info/alternates", "info/grafts")  # fmt: skip


def _special_git_file(repo: Path) -> Path | None:
    """A FIFO, device or socket where git would open a file of the repository `repo` is in
    (`.git` itself, one of _GIT_FILES, the branch HEAD names, a loose ref, a file the config
    includes): git would wait on it until its timeout, so it is found first. None when there
    is none, or no `.git` above `repo` at all (git then says so itself)."""
    from sgpatch.tree.files import read_regular

    here = repo.absolute()
    for folder in (here, *here.parents):
        dotgit = folder / ".git"
        mode = _lmode(dotgit)
        if mode is None:
            continue
        if _odd(mode):
            return dotgit
        if not stat.S_ISDIR(mode):  # a worktree's or submodule's `gitdir: PATH` file
            line = (read_regular(dotgit, 4096) or b"").decode("utf-8", "replace").strip()
            dotgit = folder / line.removeprefix("gitdir:").strip()
        names = [*_GIT_FILES, _head_ref(dotgit / "HEAD")]
        found = next((dotgit / n for n in names if n and _odd(_lmode(dotgit / n))), None)
        return found or _odd_ref(dotgit / "refs") or _odd_include(dotgit / "config", 0)
    return None


def _odd_ref(refs: Path) -> Path | None:
    """The first loose ref under `refs` that is a FIFO, device or socket (links not followed)."""
    try:
        entries = list(os.scandir(refs))
    except (OSError, ValueError):
        return None
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            inner = _odd_ref(Path(e.path))
            if inner is not None:
                return inner
        elif not (e.is_file(follow_symlinks=False) or e.is_symlink()):
            return Path(e.path)
    return None


_SECTION = re.compile(rb"^\s*\[\s*([A-Za-z.-]+)")
_PATH = re.compile(rb"^\s*path\s*=\s*(.+?)\s*$")


def _included(text: bytes) -> list[str]:
    """The `path =` values of a config's [include] and [includeIf "..."] sections."""
    out, inside = [], False
    for line in text.splitlines():
        head = _SECTION.match(line)
        if head is not None:
            inside = head.group(1).lower() in (b"include", b"includeif")
        elif inside and (m := _PATH.match(line)) is not None:
            out.append(m.group(1).strip(b'"').decode("utf-8", "surrogateescape"))
    return out


def _odd_include(config: Path, depth: int) -> Path | None:
    """A file `config` includes (nested up to 5 deep) that is a FIFO, device or socket: git
    opens it, links followed, on every read."""
    from sgpatch.tree.files import read_regular

    for raw in _included(read_regular(config, 1 << 20) or b"") if depth < 5 else ():
        path = Path(os.path.expanduser(raw))
        path = path if path.is_absolute() else config.parent / path
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            continue
        found = path if _odd(mode) else _odd_include(path, depth + 1)
        if found is not None:
            return found
    return None


def _lmode(path: Path) -> int | None:
    """`path`'s st_mode, not following a symlink; None when there is nothing there."""
    try:
        return os.lstat(path).st_mode
    except (OSError, ValueError):
        return None


def _odd(mode: int | None) -> bool:
    """Something is there, and it is neither a regular file, a folder nor a symlink."""
    return mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def _head_ref(head: Path) -> str | None:
    """The ref a regular HEAD names (`ref: refs/heads/main`), if it names one inside .git."""
    from sgpatch.tree.files import read_regular

    text = (read_regular(head, 4096) or b"").decode("utf-8", "replace").strip()
    ref = text.removeprefix("ref:").strip() if text.startswith("ref:") else ""
    return ref if ref.startswith("refs/") and ".." not in ref.split("/") else None


def _failure(repo: Path, stderr: bytes) -> GitUnreadable:
    text = stderr.decode("utf-8", "replace")
    m = _DUBIOUS.search(text)
    if m:
        where = m.group(1) or str(repo)
        return GitUnreadable(
            f"git refuses to read {where}: it belongs to another user (git's 'dubious "
            f"ownership'; `git config --global --add safe.directory {where}` trusts it)",
            dubious=True,
        )
    return GitUnreadable(f"git cannot read {repo}: {reason(text).removeprefix('fatal: ')}")


def reason(text: str) -> str:
    """git's own words from its stderr (or a GitPython error's text): the first `fatal:` or
    `error:` line, else the first line, without the `stderr: '...'` quoting GitPython wraps
    around it; at most 200 characters. The one rule every git failure message uses."""
    lines = [
        ln.strip().removeprefix("stderr:").strip().strip("'").strip() for ln in text.splitlines()
    ]
    lines = [ln for ln in lines if ln]
    said = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), None)
    return (said or (lines[0] if lines else "git failed"))[:200]


def error_reason(e: BaseException) -> str:
    """`reason` of a GitPython `GitCommandError` (its stderr), or of any exception's text."""
    return reason(getattr(e, "stderr", "") or str(e))


@dataclass(frozen=True)
class Checkout:
    """A work tree as git sees it: its top folder and the package root's path inside it
    (`python/sglang/`, with the slash; "" when they are one)."""

    top: Path
    prefix: str


def checkout(inside: Path) -> Checkout | None:
    """The work tree `inside` is in; None when it is in none (no git, a bare repository).
    GitUnreadable when git refuses it (another user's) or cannot read it."""
    try:
        out = run(inside, "rev-parse", "--is-inside-work-tree", "--show-toplevel", "--show-prefix")
    except GitUnreadable as exc:
        if exc.dubious:
            raise
        return None
    lines = out.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 3 or lines[0] != "true":
        return None
    return Checkout(Path(lines[1]), lines[2])


def unignored_exclude(top: Path, rel: str) -> Path | None:
    """The repository's `info/exclude` file when git would show `rel` (a folder of the work
    tree `top`) as untracked, so a person can add it there; None when git ignores it already,
    or cannot tell. sgpatch never writes into `.git` itself (it writes only inside the tree)."""
    try:
        # check-ignore takes no pathspec magic, so not the literal one the environment sets
        if run(top, "--no-literal-pathspecs", "check-ignore", rel, ok=(0, 1)).strip():
            return None
        where = run(top, "rev-parse", "--git-path", "info/exclude").decode().strip()
    except (GitUnreadable, UnicodeDecodeError):
        return None
    return Path(os.path.abspath(top / where))


def head(top: Path) -> str | None:
    """HEAD's commit, or None before the first commit."""
    out = run(top, "rev-parse", "-q", "--verify", "HEAD^{commit}", ok=(0, 1))
    return out.decode().strip() or None


def describe(repo: Path) -> str | None:
    """`git describe --tags --long --match v[0-9]*`, or None when there is no such tag (or no
    commit). GitUnreadable when git refuses or cannot read the repository."""
    out = run(repo, "describe", "--tags", "--long", "--match", "v[0-9]*", ok=(0, 128))
    if out.strip():
        return out.decode("utf-8", "replace").strip()
    # describe exits 128 both for "no tag" and for a repository git will not read (dubious
    # ownership, damage): one that git can read at all answers rev-parse
    run(repo, "rev-parse", "--git-dir")
    return None


def blobs(top: Path, names: Sequence[str]) -> list[bytes | None]:
    """The raw bytes (no filters) of each `REV:PATH` in `names`, None where there is none."""
    if not names:
        return []
    if any("\n" in n for n in names):
        raise GitUnreadable(f"{top}: a path holds a newline; git cannot be asked for it")
    request = "".join(f"{n}\n" for n in names).encode("utf-8", "surrogateescape")
    out = run(top, "cat-file", "--batch", stdin=request)
    found: list[bytes | None] = []
    at = 0
    for _ in names:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            found.append(out[at : at + size])
            at += size + 1
        elif len(header) == 3:  # a tree or a commit: not a file
            at += int(header[2]) + 1
            found.append(None)
        else:  # `<name> missing`
            found.append(None)
    return found


def index_ids(top: Path, paths: Sequence[str]) -> dict[str, str]:
    """Blob id per path in the index (the staged state), for the paths that are there."""
    if not paths:
        return {}
    out = run(top, "ls-files", "-s", "-z", "--", *paths)
    ids: dict[str, str] = {}
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        if "\t" in entry:
            meta, path = entry.split("\t", 1)
            parts = meta.split()
            if len(parts) == 3 and parts[2] == "0":
                ids[path] = parts[1]
    return ids


def tree_ids(top: Path, rev: str, paths: Sequence[str]) -> dict[str, str]:
    """Blob id per path in commit `rev`, for the paths that are there."""
    if not paths:
        return {}
    out = run(top, "ls-tree", "-r", "-z", rev, "--", *paths)
    ids: dict[str, str] = {}
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        if "\t" in entry:
            meta, path = entry.split("\t", 1)
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob":
                ids[path] = parts[2]
    return ids


@dataclass(frozen=True)
class Commit:
    """A commit as `log` reads it."""

    sha: str
    parents: tuple[str, ...]
    message: str


def log(top: Path, rev: str = "HEAD", limit: int = 5000) -> list[Commit]:
    """Commits reachable from `rev`, newest first (rev-list, which honours no log.* config)."""
    out = run(top, "rev-list", f"--max-count={limit}", "--format=%x00%H %P%n%B", rev)
    chunks = out.decode("utf-8", "replace").split("\0")[1:]
    commits = []
    for n, chunk in enumerate(chunks):
        first, _, body = chunk.partition("\n")
        if n + 1 < len(chunks):  # rev-list's own `commit <sha>` line of the next commit
            body = _HEADER.sub("", body)
        ids = first.split()
        commits.append(Commit(ids[0], tuple(ids[1:]), body.rstrip("\n") + "\n"))
    return commits


_HEADER = re.compile(r"\n?commit [0-9a-f]{40,64}\n\Z")


def changed_paths(top: Path, shas: Sequence[str]) -> list[str]:
    """Paths each commit changed against its first parent (both names of a rename; none for
    a root commit), all commits together."""
    if not shas:
        return []
    stdin = "".join(f"{s}\n" for s in shas).encode()
    out = run(
        top,
        "diff-tree",
        "--stdin",
        "-r",
        "-z",
        "--name-only",
        "--no-renames",
        "--no-commit-id",
        stdin=stdin,
    )
    return sorted({p for p in out.decode("utf-8", "surrogateescape").split("\0") if p})
