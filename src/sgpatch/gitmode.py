"""Git mode: when the target is a checkout inside a git work tree (docs/porting.md, "Git mode").

- `apply --commit` records each newly applied patch as its own commit (message from the patch
  header, then `Applied by sgpatch (<set>/<id>)`), built with plumbing on a temporary index so
  the user's own staged changes are never swept into sgpatch's commits;
- `export` writes the commits sgpatch made (found by that trailer) back to canonical patch files;
- `uncommitted` lists files a patch touches that hold uncommitted changes sgpatch did not make
  (for `status`).

GitPython is imported lazily: site-packages installs have no git at all.
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


def repo_for(target):
    """The GitPython Repo of a checkout target, or None (not a checkout / not a work tree)."""
    if target.layout != "checkout" or target.repo_root is None:
        return None
    top = Path(target.repo_root).resolve()
    if not any((p / ".git").exists() for p in (top, *top.parents)):
        return None  # not in a work tree: do not pay for importing GitPython
    try:
        import git
    except ImportError:
        return None
    try:
        repo = git.Repo(target.repo_root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandError):
        return None
    if repo.bare or repo.working_tree_dir is None:
        return None
    return repo


def _prefix(repo, target) -> str:
    rel = os.path.relpath(target.root, repo.working_tree_dir).replace(os.sep, "/")
    return "" if rel == "." else rel + "/"


def require_repo(target):
    repo = repo_for(target)
    if repo is None:
        raise SgpatchError(
            f"git mode (apply --commit, export) needs a checkout inside a git work tree; "
            f"{target.root} is a "
            f"{target.layout} tree" + ("" if target.layout != "checkout" else " outside git")
        )
    try:
        _ = repo.head.commit
    except ValueError:
        raise SgpatchError(
            f"{repo.working_tree_dir}: the repository has no commit yet; commit the pristine "
            "tree first"
        ) from None
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
    """A commit `apply --commit` made for one patch."""

    patch_id: str
    sha: str
    subject: str


def commit_plan(target, manifest, plan) -> list[Made]:
    """One commit per newly applied patch of `plan` (the plan apply just wrote), in order.

    Each commit holds the patch's own file states (FilePlan before/after, so two patches on one
    file give two commits); the user's index is left as it was except for those paths, which
    are reset to the new HEAD (their working-tree bytes are already what was committed).
    """
    import git
    from gitdb.base import IStream

    repo = require_repo(target)
    prefix = _prefix(repo, target)
    applied = [p for p in plan.patches if p.selected and p.state == "pending" and p.files]
    if not applied:
        return []
    env = {} if _has_ident(repo) else dict(_FALLBACK_IDENT)
    head = repo.head.commit.hexsha
    parent = head
    made: list[Made] = []
    touched: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="sgpatch-git-") as tmp:
        env["GIT_INDEX_FILE"] = str(Path(tmp) / "index")
        g = repo.git
        g.read_tree(head, env=env)
        for p in applied:
            for f in p.files:
                if f.source != f.path:
                    g.update_index("--force-remove", "--", prefix + f.source, env=env)
                    touched.add(prefix + f.source)
                path = prefix + f.path
                touched.add(path)
                if f.after is None:
                    g.update_index("--force-remove", "--", path, env=env)
                    continue
                stored = repo.odb.store(IStream(b"blob", len(f.after), io.BytesIO(f.after)))
                blob = stored.hexsha.decode() if isinstance(stored.hexsha, bytes) else stored.hexsha
                mode = _mode(g, path, env, f.mode)
                g.update_index("--add", "--cacheinfo", f"{mode},{blob},{path}", env=env)
            tree = g.write_tree(env=env)
            spec = manifest.patch(p.id)
            header = _header_of(manifest, p.variant)
            message = commit_message(header, manifest.name, spec.id, p.variant or "")
            sha = _commit_tree(repo, tree, parent, message, env)
            made.append(Made(p.id, sha, message.split("\n", 1)[0]))
            parent = sha
    try:
        repo.git.update_ref("-m", f"sgpatch apply {manifest.name}", "HEAD", parent, head)
    except git.GitCommandError as e:  # pragma: no cover - HEAD moved under us
        raise SgpatchError(f"cannot move HEAD to sgpatch's commits: {e}", ExitCode.UNSAFE) from None
    repo.git.reset("-q", "HEAD", "--", *sorted(touched))
    return made


def _has_ident(repo) -> bool:
    try:
        repo.git.var("GIT_COMMITTER_IDENT")
        repo.git.var("GIT_AUTHOR_IDENT")
    except Exception:
        return False
    return True


def _mode(g, path: str, env: dict, new_mode: int | None) -> str:
    out = g.ls_files("-s", "--", path, env=env).strip()
    if out:
        return out.split()[0]
    if new_mode is not None and new_mode & 0o111:
        return "100755"
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
    from sgpatch.diffs import read_patch

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
    from sgpatch import refresh as rf

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
                files.append(rf.FileDiff(rel, _blob(parent, path), _blob(commit, path)))
        header = message_header(msg)
        m = _VARIANT_RE.search(msg)
        name = Path(m.group("variant")).name if m else f"{n + 1:04d}-{pid}.patch"
        target_path = dest / name
        target_path.write_bytes(rf.render(header, rf.canonical_diff(files)))
        out.append(Exported(pid, sha, target_path))
    return out


def _blob(commit, path: str) -> bytes | None:
    try:
        return commit.tree[path].data_stream.read()
    except KeyError:
        return None


# ---------------------------------------------------------------------------------------------
# status


def uncommitted(target, manifest, ledger=None) -> list[str]:
    """Package-relative files a patch of the set touches (on this release, or as recorded in
    the ledger) that hold uncommitted changes sgpatch did not make. [] outside git mode."""
    repo = repo_for(target)
    if repo is None:
        return []
    from sgpatch import ledger as ledger_mod
    from sgpatch.diffs import read_patch
    from sgpatch.ledger import sha256
    from sgpatch.manifest import select_variant
    from sgpatch.refresh import patch_files

    try:
        _ = repo.head.commit
    except ValueError:
        return []
    ledger = ledger if ledger is not None else ledger_mod.load(target.root)
    paths: set[str] = set()
    for spec in manifest.patches:
        v = select_variant(spec, target.version)
        if v is not None and v.patch is not None:
            paths.update(patch_files(read_patch(v.patch)))
    record = ledger.sets.get(manifest.name)
    if record is not None:
        paths.update(record.files)
    dirty = _dirty(repo, target, sorted(paths))
    out = []
    for rel in dirty:
        rec = record.files.get(rel) if record is not None else None
        if rec is not None:
            try:
                now = (target.root / rel).read_bytes()
            except OSError:
                now = None
            if sha256(now) == rec.after:
                continue  # what sgpatch wrote (apply without --commit): status shows it
        out.append(rel)
    return out


def warning_line(files: Sequence[str]) -> str:
    return (
        "warning: uncommitted changes (not made by sgpatch) in files a patch touches: "
        + ", ".join(files)
    )


def status_warning(target, manifest, ledger=None, quiet: bool = False) -> list[str]:
    """For `status`: print the warning line to stderr (unless quiet) and return the files."""
    files = uncommitted(target, manifest, ledger)
    if files and not quiet:
        from sgpatch import report

        report.err(warning_line(files))
    return files


def report_commits(made: Sequence[Made]) -> None:
    """One stderr line per commit `apply --commit` made."""
    from sgpatch import report

    for m in made:
        report.err(f"committed {m.sha[:12]} {m.patch_id}: {m.subject}")
