"""Git mode: when the target is a checkout inside a git work tree (docs/porting.md, "Git mode").

- `apply --commit` records each newly applied patch as its own commit (message from the patch
  header, then `Applied by sgpatch (<set>/<id>)`), built with plumbing on a temporary index so
  the user's own staged changes are never swept into sgpatch's commits;
- `export` writes the commits sgpatch made (found by that trailer) back to canonical patch files;
- `uncommitted` lists files a patch touches that hold uncommitted changes sgpatch did not make
  (for `status`).

GitPython is imported lazily: site-packages installs have no git at all. What only reads (the
status warning, and what the writers read of history) goes through `sgpatch.tree.gitread`: git
as a reader, never running a program the repository's config names. The writing commands
(`apply --commit`, `revert --commit`) run git as the user's own git would, hooks included
(docs/safety.md, "Git").
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.tree import gitread

TRAILER = "Applied by sgpatch ({set}/{id})"
VARIANT_TRAILER = "Sgpatch-Variant: {variant}"
_TRAILER_RE = re.compile(r"^Applied by sgpatch \((?P<set>[^/()\s]+)/(?P<id>[^()\s]+)\)$", re.M)
_VARIANT_RE = re.compile(r"^Sgpatch-Variant: (?P<variant>\S+)$", re.M)
_SUBJECT_RE = re.compile(r"^Subject:\s*(?:\[PATCH[^\]]*\]\s*)?(?P<s>.*)$")
_FALLBACK_IDENT = {
    "GIT_AUTHOR_NAME": "sgpatch",
    "GIT_AUTHOR_EMAIL": "sgpatch@localhost",
    "GIT_COMMITTER_NAME": "sgpatch",
    "GIT_COMMITTER_EMAIL": "sgpatch@localhost",
}


def checkout_of(target) -> gitread.Checkout | None:
    """The work tree a checkout target is in, read as a reader; None when there is none (not
    a checkout, not in git, git missing). GitUnreadable when git refuses it (another user's)."""
    if target.layout != "checkout" or target.repo_root is None:
        return None
    top = Path(target.repo_root).resolve()
    if not any((p / ".git").exists() for p in (top, *top.parents)):
        return None  # not in a work tree: do not run git at all
    return gitread.checkout(target.root)


def repo_for(target):
    """The GitPython Repo of a checkout target's work tree, or None (not a checkout / not a
    work tree)."""
    ck = checkout_of(target)
    if ck is None:
        return None
    try:
        import git
    except ImportError:
        return None
    try:
        repo = git.Repo(ck.top)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandError):
        return None
    if repo.bare or repo.working_tree_dir is None:
        return None
    return repo


def _prefix(repo, target) -> str:
    rel = os.path.relpath(target.root, repo.working_tree_dir).replace(os.sep, "/")
    return "" if rel == "." else rel + "/"


def _checkout(repo, target) -> gitread.Checkout:
    return gitread.Checkout(Path(repo.working_tree_dir), _prefix(repo, target))


def require_repo(target):
    """The Repo git mode writes to, checked first by a reading git: a checkout git refuses
    (another user's: "dubious ownership") or cannot read is refused in one line, before
    GitPython runs anything (exit 4, or 2 when git fails otherwise)."""
    try:
        ck = checkout_of(target)
        repo = repo_for(target) if ck is not None else None
        empty = ck is not None and gitread.head(ck.top) is None
    except gitread.GitUnreadable as exc:
        raise SgpatchError(
            f"git mode refused: {exc.message}; nothing was written", exc.code
        ) from None
    if repo is None:
        raise SgpatchError(
            f"git mode (apply --commit, export) needs a checkout inside a git work tree; "
            f"{target.root} is a "
            f"{target.layout} tree" + ("" if target.layout != "checkout" else " outside git")
        )
    if empty:
        raise SgpatchError(
            f"{repo.working_tree_dir}: the repository has no commit yet; commit the pristine "
            "tree first"
        )
    return repo


# ---------------------------------------------------------------------------------------------
# messages


def header_message(header: str) -> tuple[str, str]:
    """(subject, body) of a patch header: the `Subject:` line (or first line) and the rest."""
    lines = [ln.rstrip() for ln in header.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return "", ""
    m = _SUBJECT_RE.match(lines[0])
    subject = m.group("s").strip() if m else lines[0].strip()
    body = "\n".join(lines[1:]).strip("\n")
    return subject, body


def commit_message(header: str, set_name: str, patch_id: str, variant: str) -> str:
    subject, body = header_message(header)
    subject = subject or f"{set_name}: {patch_id}"
    trailer = (
        TRAILER.format(set=set_name, id=patch_id) + "\n" + VARIANT_TRAILER.format(variant=variant)
    )
    return f"{subject}\n\n{body}\n\n{trailer}\n" if body else f"{subject}\n\n{trailer}\n"


def message_header(message: str) -> str:
    """The patch header `export` writes for a commit message (trailers dropped)."""
    text = _TRAILER_RE.sub("", _VARIANT_RE.sub("", message)).rstrip()
    subject, _, body = text.partition("\n")
    body = body.strip("\n")
    head = f"Subject: [PATCH] {subject.strip()}\n\n"
    return head + (f"{body}\n\n" if body else "")


# ---------------------------------------------------------------------------------------------
# apply --commit


def check_clean(target, paths: Sequence[str]) -> None:
    """Refuse (exit 4) when a file the set will touch has uncommitted changes: the commits
    would otherwise carry the user's edits under sgpatch's name."""
    repo = require_repo(target)
    dirty = _dirty(repo, target, paths)
    if dirty:
        raise SgpatchError(
            "apply --commit: uncommitted changes in files the set touches (commit or stash "
            "them first): " + ", ".join(dirty),
            ExitCode.UNSAFE,
        )


def _dirty(repo, target, paths: Sequence[str]) -> list[str]:
    prefix = _prefix(repo, target)
    if not paths:
        return []
    out = repo.git.status(
        "--porcelain=v1", "-z", "--untracked-files=no", "--", *[prefix + p for p in paths]
    )
    dirty = []
    for entry in out.split("\0"):
        if len(entry) > 3:
            path = entry[3:]
            dirty.append(path[len(prefix) :] if path.startswith(prefix) else path)
    return sorted(set(dirty))


@dataclass(frozen=True)
class Made:
    """A commit git mode made for one patch (or for a whole revert)."""

    patch_id: str
    sha: str
    subject: str

    def to_json(self) -> dict[str, object]:
        """The commit in `revert --commit --json`'s `commits` (docs/json.md)."""
        return {"id": self.patch_id, "commit": self.sha}

    def line(self) -> str:
        """The stderr line that says it was made (the caller prints: git mode never does)."""
        return f"committed {self.sha[:12]} {self.patch_id}: {self.subject}"


@dataclass(frozen=True)
class Finished:
    """What finishing an earlier `apply --commit` did: the commits HEAD moved to, and notes
    for stderr (HEAD moved since: the commits are left alone)."""

    made: tuple[Made, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GitPlan:
    """Commits built (objects only: HEAD, index and work tree untouched) and waiting for the
    files to be written; `finish` then moves HEAD from `head` to `tip`."""

    head: str
    tip: str
    made: tuple[Made, ...]
    touched: tuple[str, ...]  # repository-relative paths to re-sync in the user's index
    reflog: str

    @property
    def commits(self):
        from sgpatch.state.ledger import GitCommit

        return tuple(GitCommit(m.patch_id, m.sha) for m in self.made)


def _check_index_lock(repo) -> None:
    """A present `.git/index.lock` means another git runs (or one crashed): refuse before
    anything is written, in one line, instead of failing half-way."""
    lock = Path(repo.git_dir) / "index.lock"
    if lock.exists():
        raise SgpatchError(
            f"git: {lock} exists (another git process is running, or one crashed: remove "
            "it); nothing was written",
            ExitCode.UNSAFE,
        )


def _store_blob(repo, data: bytes) -> str:
    from gitdb.base import IStream

    stored = repo.odb.store(IStream(b"blob", len(data), io.BytesIO(data)))
    return stored.hexsha.decode() if isinstance(stored.hexsha, bytes) else stored.hexsha


def _stage(
    repo, g, env: dict, path: str, data: bytes | None, new_mode: int | None, link: bool = False
) -> None:
    """Put `data` at `path` in the temporary index (None: remove it; `link`: `data` is a
    symlink's target, git's mode 120000)."""
    if data is None:
        g.update_index("--force-remove", "--", path, env=env)
        return
    mode = "120000" if link else _mode(g, path, env, new_mode)
    g.update_index("--add", "--cacheinfo", f"{mode},{_store_blob(repo, data)},{path}", env=env)


def apply_plan(target, manifest, plan) -> GitPlan:
    """One commit per newly applied patch of `plan`, in order, built before anything is
    written. Each commit holds the patch's own file states (FilePlan before/after, so two
    patches on one file give two commits); the user's index is untouched until `finish`."""
    repo = require_repo(target)
    _check_index_lock(repo)
    prefix = _prefix(repo, target)
    applied = [p for p in plan.patches if p.selected and p.state == "pending" and p.files]
    env = _ident_env(repo)
    head = parent = repo.head.commit.hexsha
    made: list[Made] = []
    touched: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="sgpatch-git-") as tmp:
        env["GIT_INDEX_FILE"] = str(Path(tmp) / "index")
        g = repo.git
        g.read_tree(head, env=env)
        for p in applied:
            for f in p.files:
                if f.source != f.path:
                    _stage(repo, g, env, prefix + f.source, None, None)
                    touched.add(prefix + f.source)
                touched.add(prefix + f.path)
                _stage(repo, g, env, prefix + f.path, f.after, f.mode, f.link)
            tree = g.write_tree(env=env)
            header = _header_of(manifest, p.variant)
            message = commit_message(header, manifest.name, p.id, p.variant or "")
            parent = _commit_tree(repo, tree, parent, message, env)
            made.append(Made(p.id, parent, message.split("\n", 1)[0]))
    return GitPlan(
        head, parent, tuple(made), tuple(sorted(touched)), f"sgpatch apply {manifest.name}"
    )


def finish(target, gplan: GitPlan, undo: Sequence = ()) -> list[Made]:
    """Move HEAD to the commits (compare-and-swap from the HEAD they were built on), then
    re-sync the user's index for the paths they touch. If HEAD cannot move, the files just
    written (`undo`: the txn changes) are put back, so the tree is as it was: all or nothing.
    If only the index cannot be re-synced (a git started meanwhile), one line says so and the
    same command run again finishes the job."""
    import git

    repo = require_repo(target)
    if gplan.tip == gplan.head:
        return []
    try:
        repo.git.update_ref("-m", gplan.reflog, "HEAD", gplan.tip, gplan.head)
    except git.GitCommandError as e:
        _undo(target, undo)
        raise SgpatchError(
            f"git: cannot move HEAD to sgpatch's commits ({gitread.error_reason(e)}); the tree "
            "was put back as it was, nothing was changed",
            ExitCode.UNSAFE,
        ) from None
    _resync_index(repo, gplan.touched)
    return list(gplan.made)


def _resync_index(repo, paths: Sequence[str]) -> None:
    import git

    if not paths:
        return
    try:
        repo.git.reset("-q", "HEAD", "--", *paths)
    except git.GitCommandError as e:
        raise SgpatchError(
            f"git: HEAD holds sgpatch's commits, but the index could not be updated "
            f"({gitread.error_reason(e)}); run the same command again to finish",
            ExitCode.UNSAFE,
        ) from None


def _undo(target, changes: Sequence) -> None:
    """Write back what a transaction wrote (HEAD could not follow): every change reversed."""
    from sgpatch.state.ledger import state_dir
    from sgpatch.state.txn import FileChange, commit

    back = [FileChange(c.path, c.after, c.before) for c in changes]
    commit(target.root, state_dir(target.root), back)


def finish_apply(target, record) -> Finished:
    """`apply --commit` again on a set already applied: if the commits recorded for it were
    made but HEAD never moved to them (a run stopped between writing the files and moving
    HEAD), move it now; if HEAD is on them but the index was not re-synced, re-sync it."""
    if record is None or not record.commits:
        return Finished()
    repo = require_repo(target)
    tip = record.commits[-1].sha
    try:
        first = repo.commit(record.commits[0].sha)
        base = first.parents[0].hexsha if first.parents else None
    except (ValueError, KeyError, Exception):  # objects gone (gc after a reset): nothing to do
        return Finished()
    head = repo.head.commit.hexsha
    ck = _checkout(repo, target)
    if head == tip:  # moved; the index may have been left behind (a git held index.lock)
        paths = _commit_paths(ck, [c.sha for c in record.commits])
        if paths and repo.git.diff("--cached", "--name-only", "HEAD", "--", *paths).strip():
            _check_index_lock(repo)
            _resync_index(repo, paths)
        return Finished()
    if head != base:
        note = (
            f"warning: the commits sgpatch made for {record.name} "
            f"({record.commits[0].sha[:12]}..{tip[:12]}) are not on HEAD; HEAD moved since"
        )
        return Finished(notes=(note,))
    _check_index_lock(repo)
    paths = _commit_paths(ck, [c.sha for c in record.commits])
    made = [Made(c.id, c.sha, repo.commit(c.sha).summary) for c in record.commits]
    plan = GitPlan(head, tip, tuple(made), tuple(paths), f"sgpatch apply {record.name}")
    return Finished(tuple(finish(target, plan)))


def _commit_paths(ck: gitread.Checkout, shas: Sequence[str]) -> list[str]:
    """Repository paths the commits changed (read by a reading git)."""
    return gitread.changed_paths(ck.top, shas)


REVERT_TRAILER = "Reverted by sgpatch ({set}/{id})"
_REVERT_RE = re.compile(r"^Reverted by sgpatch \((?P<set>[^/()\s]+)/(?P<id>[^()\s]+)\)$", re.M)


def revert_plan(target, set_name: str, record, changes: Sequence) -> GitPlan:
    """One commit recording the whole revert of a set (every restored file, one message
    listing the patches and the commits reverted), built before anything is written. Refused
    when a file to revert holds uncommitted changes sgpatch did not make: the commit would
    carry them under sgpatch's name."""
    from sgpatch.state.ledger import STATE_DIR, sha256

    repo = require_repo(target)
    _check_index_lock(repo)
    prefix = _prefix(repo, target)
    files = [c for c in changes if not c.path.startswith(STATE_DIR + "/")]
    foreign = [
        p
        for p in _dirty(repo, target, [c.path for c in files])
        if p not in record.files or sha256(_read(target, p)) != record.files[p].after
    ]
    if foreign:
        raise SgpatchError(
            "revert --commit: uncommitted changes sgpatch did not make in files the revert "
            "writes (commit or stash them first): " + ", ".join(sorted(foreign)),
            ExitCode.UNSAFE,
        )
    ids = [p.id for p in reversed(record.patches)]
    return _revert_commit(repo, prefix, set_name, ids, list(record.commits), files)


def _read(target, rel: str) -> bytes | None:
    """A work-tree file's bytes, through the tree's path guards (None: absent or unsafe)."""
    from sgpatch.tree.files import read_bytes

    try:
        return read_bytes(target.root, rel)
    except (OSError, SgpatchError):
        return None


def _revert_commit(repo, prefix: str, set_name: str, ids, commits, files) -> GitPlan:
    """The revert commit on top of HEAD: HEAD's tree with `files` (txn changes) written."""
    env = _ident_env(repo)
    head = repo.head.commit.hexsha
    with tempfile.TemporaryDirectory(prefix="sgpatch-git-") as tmp:
        env["GIT_INDEX_FILE"] = str(Path(tmp) / "index")
        g = repo.git
        g.read_tree(head, env=env)
        for c in files:
            data = c.after if c.link is None else c.link.encode("utf-8", "surrogateescape")
            _stage(repo, g, env, prefix + c.path, data, c.mode, c.link is not None)
        tree = g.write_tree(env=env)
        if tree == repo.head.commit.tree.hexsha:  # HEAD already has these bytes
            return GitPlan(head, head, (), (), "")
        message = _revert_message(set_name, ids, commits)
        sha = _commit_tree(repo, tree, head, message, env)
    touched = tuple(sorted(prefix + c.path for c in files))
    made = (Made(set_name, sha, message.split("\n", 1)[0]),)
    return GitPlan(head, sha, made, touched, f"sgpatch revert {set_name}")


def _revert_message(set_name: str, ids: Sequence[str], commits) -> str:
    body = ["sgpatch revert --commit: the set's files restored to their original bytes."]
    if commits:
        body.append("")
        body += [f"This reverts commit {c.sha} ({c.id})." for c in reversed(commits)]
    trailers = "\n".join(REVERT_TRAILER.format(set=set_name, id=i) for i in ids)
    head = f"Revert patch set {set_name} (sgpatch)"
    return f"{head}\n\n" + "\n".join(body) + (f"\n\n{trailers}\n" if trailers else "\n")


def finish_revert(target, set_name: str) -> list[Made]:
    """`revert --commit` again once the set is no longer in the ledger: if HEAD's newest
    sgpatch commits for the set are applies (no revert commit after them) and the work tree
    holds the bytes from before them (a plain `revert`, or a run stopped before HEAD moved),
    commit that reversal now. Otherwise nothing."""
    from sgpatch.state.ledger import GitCommit
    from sgpatch.state.txn import FileChange

    repo = require_repo(target)
    ck = _checkout(repo, target)
    applied = _unreverted(ck, set_name)
    if not applied or not applied[-1][0].parents:
        return []
    base = applied[-1][0].parents[0]
    prefix = ck.prefix
    files = []
    for path in _commit_paths(ck, [c.sha for c, _ in applied]):
        if not path.startswith(prefix):
            continue
        rel = path[len(prefix) :]
        if _read(target, rel) != _tree_bytes(ck, base, path):
            return []  # not sgpatch's reversal: leave it to the user
        files.append(FileChange(rel, None, _read(target, rel)))
    _check_index_lock(repo)
    commits = [GitCommit(pid, c.sha) for c, pid in reversed(applied)]
    ids = [pid for _, pid in applied]
    return finish(target, _revert_commit(repo, prefix, set_name, ids, commits, files))


def _unreverted(ck: gitread.Checkout, set_name: str) -> list[tuple[gitread.Commit, str]]:
    """(commit, patch id) of the set's apply commits on HEAD after its last revert commit,
    newest first."""
    out = []
    for c in gitread.log(ck.top, "HEAD", 5000):
        if any(m.group("set") == set_name for m in _REVERT_RE.finditer(c.message)):
            break
        for m in _TRAILER_RE.finditer(c.message):
            if m.group("set") == set_name:
                out.append((c, m.group("id")))
                break
    return out


def _tree_bytes(ck: gitread.Checkout, sha: str, path: str) -> bytes | None:
    """The raw bytes of `path` in commit `sha` (None: not there)."""
    return gitread.blobs(ck.top, [f"{sha}:{path}"])[0]


# what git says when it does not know who commits (no user.name/email, or useConfigOnly)
_NO_IDENT = ("identity unknown", "unable to auto-detect", "empty ident", "was given")


def _ident_env(repo) -> dict[str, str]:
    """{} when git knows who commits; sgpatch's own identity when git says it does not (a
    container without user.name still gets its commits). Any other failure of `git var` (a
    broken config file, ...) is said as git said it, exit 2 as any git failure in git mode:
    it is not "no identity"."""
    import git

    try:
        repo.git.var("GIT_COMMITTER_IDENT")
        repo.git.var("GIT_AUTHOR_IDENT")
    except git.GitCommandError as e:
        why = gitread.error_reason(e)
        if any(words in str(e.stderr).lower() for words in _NO_IDENT):
            return dict(_FALLBACK_IDENT)
        raise SgpatchError(
            f"git mode: git cannot say who commits ({why}); nothing was written",
            ExitCode.BAD_INPUT,
        ) from None
    return {}


def _mode(g, path: str, env: dict, new_mode: int | None) -> str:
    """The git mode to stage: the patch's (`new mode`, `new file mode`), else the index's."""
    if new_mode is not None:
        return "100755" if new_mode & 0o111 else "100644"
    out = g.ls_files("-s", "--", path, env=env).strip()
    if out and not out.startswith("120000"):  # a link turned into a file takes a file's mode
        return out.split()[0]
    return "100644"


def _commit_tree(repo, tree: str, parent: str, message: str, env: dict) -> str:
    import subprocess

    full = {**os.environ, **{k: v for k, v in env.items() if k != "GIT_INDEX_FILE"}}
    proc = subprocess.run(
        ["git", "commit-tree", tree, "-p", parent, "-F", "-"],
        input=message.encode("utf-8"),
        capture_output=True,
        cwd=repo.working_tree_dir,
        env=full,
        check=False,
    )
    if proc.returncode != 0:
        raise SgpatchError(f"git commit-tree failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode().strip()


def _header_of(manifest, variant: str | None) -> str:
    from sgpatch.diff.unified import read_patch

    if not variant:
        return ""
    return read_patch(manifest.base_dir / variant).header


# ---------------------------------------------------------------------------------------------
# export


@dataclass(frozen=True)
class Exported:
    """A patch file `export` wrote back from its commit."""

    patch_id: str
    sha: str
    path: Path

    def to_json(self) -> dict[str, object]:
        """The patch file in `export --json` (docs/json.md)."""
        return {"id": self.patch_id, "commit": self.sha, "file": str(self.path)}


def sgpatch_commits(repo, set_name: str) -> list[tuple[str, str, str]]:
    """(sha, patch id, message) of the commits sgpatch made for `set_name`, newest first."""
    out = []
    for c in repo.iter_commits("HEAD"):
        msg = c.message
        for m in _TRAILER_RE.finditer(msg):
            if m.group("set") == set_name:
                out.append((c.hexsha, m.group("id"), msg))
                break
    return out


def export(target, set_name: str, dest: Path, manifest=None) -> list[Exported]:
    """Write the newest sgpatch commit of each patch of the set to `dest` in canonical form."""
    from sgpatch.diff import canonical as rf
    from sgpatch.fs import atomic

    repo = require_repo(target)
    prefix = _prefix(repo, target)
    seen: dict[str, tuple[str, str]] = {}
    for sha, pid, msg in sgpatch_commits(repo, set_name):
        seen.setdefault(pid, (sha, msg))
    if not seen:
        raise SgpatchError(
            f"no commit made by sgpatch for set {set_name} in {repo.working_tree_dir} "
            f"(looked for '{TRAILER.format(set=set_name, id='<id>')}')"
        )
    order = [p.id for p in manifest.patches] if manifest is not None else []
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for n, pid in enumerate(sorted(seen, key=lambda i: (order.index(i) if i in order else 99, i))):
        sha, msg = seen[pid]
        commit = repo.commit(sha)
        parent = commit.parents[0] if commit.parents else None
        files = []
        for d in parent.diff(commit) if parent is not None else []:
            paths = {p for p in (d.a_path, d.b_path) if p}
            for path in sorted(paths):
                if not path.startswith(prefix):
                    continue
                rel = path[len(prefix) :]
                (old, old_mode), (new, new_mode) = _blob(parent, path), _blob(commit, path)
                files.append(rf.FileDiff(rel, old, new, old_mode, new_mode))
        header = message_header(msg)
        m = _VARIANT_RE.search(msg)
        name = Path(m.group("variant")).name if m else f"{n + 1:04d}-{pid}.patch"
        target_path = dest / name
        # the one atomic writer: a link at the name is replaced, never written through
        atomic.write_path(target_path, rf.render(header, rf.canonical_diff(files)), None)
        out.append(Exported(pid, sha, target_path))
    return out


def _blob(commit, path: str) -> tuple[bytes | None, int]:
    """A path's bytes in a commit (None: absent) and its git mode (a symlink's: 120000)."""
    try:
        blob = commit.tree[path]
    except KeyError:
        return None, 0o100644
    return blob.data_stream.read(), blob.mode


# ---------------------------------------------------------------------------------------------
# status


def uncommitted(target, manifest, ledger=None) -> list[str]:
    """Package-relative files a patch of the set touches (on this release, or as recorded in
    the ledger) that hold uncommitted changes sgpatch did not make. [] outside git mode;
    GitUnreadable when git refuses or cannot read the checkout. Read by a reading git only."""
    ck = checkout_of(target)
    if ck is None or gitread.head(ck.top) is None:
        return []
    from sgpatch.state import ledger as ledger_mod
    from sgpatch.state.digest import sha256

    ledger = ledger if ledger is not None else ledger_mod.load(target.root)
    record = ledger.sets.get(manifest.name)
    dirty = _changed(ck, target, sorted(_touched(target, manifest, record)))
    out = []
    reverted = set(_reverted_uncommitted(ck, target, manifest.name, dirty))
    for rel in dirty:
        if rel in reverted:
            continue  # sgpatch's own revert, not committed yet: status_check says so
        rec = record.files.get(rel) if record is not None else None
        if rec is not None and sha256(_read(target, rel)) == rec.after:
            continue  # what sgpatch wrote (apply without --commit): status shows it
        out.append(rel)
    return out


def _touched(target, manifest, record) -> set[str]:
    """Files the set's patches for this release change, and those the ledger records."""
    from sgpatch.diff.paths import patch_files
    from sgpatch.diff.unified import read_patch
    from sgpatch.patchset.manifest import select_variant

    paths: set[str] = set()
    for spec in manifest.patches:
        v = select_variant(spec, target.version)
        if v is not None and v.patch is not None:
            paths.update(patch_files(read_patch(v.patch)))
    if record is not None:
        paths.update(record.files)
    return paths


def _changed(ck: gitread.Checkout, target, paths: Sequence[str]) -> list[str]:
    """The paths (package-relative) whose work-tree bytes or staged state differ from HEAD:
    what `git status --untracked-files=no` lists, found without `status` (which refreshes the
    index and runs the repository's filters and fsmonitor). Bytes are compared as git stores
    them: a file git converts on checkout (eol, filters) reads as changed."""
    full = [ck.prefix + p for p in paths]
    at_head = gitread.tree_ids(ck.top, "HEAD", full)
    staged = gitread.index_ids(ck.top, full)
    wanted = [f for f in full if f in staged and staged[f] == at_head.get(f)]
    stored = dict(zip(wanted, gitread.blobs(ck.top, [staged[f] for f in wanted]), strict=True))
    out = []
    for rel, f in zip(paths, full, strict=True):
        if staged.get(f) != at_head.get(f):
            out.append(rel)  # staged, added to or removed from the index
        elif f in stored and _read(target, rel) != stored[f]:
            out.append(rel)  # changed in the work tree
    return out


def _reverted_uncommitted(
    ck: gitread.Checkout, target, set_name: str, dirty: Sequence[str]
) -> list[str]:
    """Dirty files holding the bytes from before the set's sgpatch commits on HEAD (that no
    revert commit undid): a plain `revert` after `apply --commit`, not someone's edit."""
    if not dirty:
        return []
    applied = _unreverted(ck, set_name)
    if not applied or not applied[-1][0].parents:
        return []
    base = applied[-1][0].parents[0]
    before = gitread.blobs(ck.top, [f"{base}:{ck.prefix}{rel}" for rel in dirty])
    return [rel for rel, b in zip(dirty, before, strict=True) if _read(target, rel) == b]


def warning_line(files: Sequence[str]) -> str:
    return (
        "warning: uncommitted changes (not made by sgpatch) in files a patch touches: "
        + ", ".join(files)
    )


@dataclass(frozen=True)
class StatusCheck:
    """What `status` says of a checkout: the files holding someone's uncommitted changes
    (None: git refused or could not read the checkout, so they were not checked) and the
    lines for stderr (the caller prints them)."""

    files: list[str] | None
    notes: tuple[str, ...] = ()


def status_check(target, manifest, ledger=None, quiet: bool = False) -> StatusCheck:
    """For `status`: the files with foreign uncommitted changes and the warning line naming
    them; and (unless quiet: JSON says it in its fields) a note when sgpatch's own revert of
    the set's commits is not committed yet. A checkout git refuses or cannot read is read as a
    plain tree: one warning line, files None."""
    try:
        files = uncommitted(target, manifest, ledger)
        mine = [] if quiet else _uncommitted_revert(target, manifest.name, ledger)
    except gitread.GitUnreadable as exc:
        note = (
            f"sgpatch: warning: {exc.message}; read as a plain tree (uncommitted changes "
            "are not checked)"
        )
        return StatusCheck(None, (note,))
    notes = [warning_line(files)] if files else []
    if mine:
        from sgpatch.shown import command, context

        commit = command("revert", "--set", manifest.name, *context(target.root), "--commit")
        notes.append(
            f"note: sgpatch reverted {manifest.name} but the revert is not committed "
            f"({', '.join(mine)}); {commit} commits it"
        )
    return StatusCheck(files, tuple(notes))


def _uncommitted_revert(target, name: str, ledger) -> list[str]:
    """Files of a set no longer in the ledger that hold the bytes from before its sgpatch
    commits, uncommitted: sgpatch's own plain revert after `apply --commit`."""
    from sgpatch.state.ledger import Ledger

    ck = checkout_of(target)
    if ck is None or (ledger or Ledger()).sets.get(name) is not None:
        return []
    if gitread.head(ck.top) is None:
        return []
    paths = _commit_paths(ck, [c.sha for c, _ in _unreverted(ck, name)])
    rels = [p[len(ck.prefix) :] for p in paths if p.startswith(ck.prefix)]
    return _reverted_uncommitted(ck, target, name, _changed(ck, target, rels))
