"""Git mode on a synthetic checkout: apply --commit, export, and the status warning."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import sgpatch
from sgpatch.diff.canonical import FileDiff, canonical_diff, render
from sgpatch.git import mode as gitmode
from sgpatch.patchset.manifest import load_manifest
from sgpatch.tree.target import find_target

pytest.importorskip("git")

A0 = "".join(f"line {i}\n" for i in range(1, 30))
A1 = A0.replace("line 5\n", "line 5 patched by one\n")
A2 = A1.replace("line 25\n", "line 25 patched by two\n")
NEW = "created = True\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A git repo holding python/sglang (version 0.5.9) and a two-patch set beside it."""
    repo = tmp_path / "repo"
    pkg = repo / "python" / "sglang"
    (pkg / "srt").mkdir(parents=True)
    (pkg / "_version.py").write_text("__version__ = version = '0.5.9'\n")
    (pkg / "srt" / "a.py").write_text(A0)
    git(repo, "init", "-q")
    git(repo, "config", "user.name", "T")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "pristine")
    sets = tmp_path / "sets" / "demo"
    (sets / "patches").mkdir(parents=True)
    one = render(
        "Subject: [PATCH] one: patch line 5\n\nWhy one.\n\n",
        canonical_diff([FileDiff("srt/a.py", A0.encode(), A1.encode())]),
    )
    two = render(
        "Subject: [PATCH] two: line 25 and a new file\n\nWhy two.\n\n",
        canonical_diff(
            [
                FileDiff("srt/a.py", A1.encode(), A2.encode()),
                FileDiff("srt/new.py", None, NEW.encode()),
            ]
        ),
    )
    (sets / "patches" / "0001-one.patch").write_bytes(one)
    (sets / "patches" / "0002-two.patch").write_bytes(two)
    (sets / "patchset.yaml").write_text(
        "schema: 1\nname: demo\nsummary: demo set\nsglang: '>=0.5'\npatches:\n"
        "  - id: one\n    summary: one\n    type: bugfix\n    upstream: {status: pending}\n"
        "    variants:\n      - {sglang: '>=0.5', patch: patches/0001-one.patch}\n"
        "  - id: two\n    summary: two\n    type: bugfix\n    upstream: {status: pending}\n"
        "    variants:\n      - {sglang: '>=0.5', patch: patches/0002-two.patch}\n"
    )
    return repo, sets


def test_apply_commit_makes_one_commit_per_patch_and_export_round_trips(checkout, tmp_path):
    """Input: apply --commit of a two-patch set (both touch a.py, two creates new.py) with an
    unrelated staged change. Outcome: two commits with the header subject and the trailer, the
    staged change still staged and not committed, a clean tree for the patched files; export
    writes both patch files back byte-identical."""
    repo, sets = checkout
    (repo / "README").write_text("mine\n")
    git(repo, "add", "README")
    args = ["--set", "demo", "--patchsets", str(sets.parent), "--sglang-dir", str(repo)]
    assert sgpatch("apply", *args, "--commit") == 0
    log = git(repo, "log", "--format=%s%n%b%n--").split("--\n")
    assert log[0].startswith(
        "two: line 25 and a new file\nWhy two.\n\nApplied by sgpatch (demo/two)"
    )
    assert log[1].startswith("one: patch line 5\nWhy one.\n\nApplied by sgpatch (demo/one)")
    assert git(repo, "show", "HEAD~1:python/sglang/srt/a.py") == A1
    assert git(repo, "show", "HEAD:python/sglang/srt/new.py") == NEW
    status = git(repo, "status", "--porcelain", "--untracked-files=no")
    assert status == "A  README\n"
    out = tmp_path / "exported"
    assert sgpatch("export", *args, "--to", str(out)) == 0
    for name in ("0001-one.patch", "0002-two.patch"):
        assert (out / name).read_bytes() == (sets / "patches" / name).read_bytes()


def test_export_over_a_symlink_replaces_the_link_and_writes_nothing_through_it(checkout, tmp_path):
    """Input: apply --commit, then `export --to OUT` where OUT/0001-one.patch is a symlink to a
    file outside OUT (planted, or left by a tool). Outcome: exit 0; the link's target keeps its
    bytes; OUT/0001-one.patch is a regular file holding the exported patch (the atomic writer
    of the file-system layer replaces the name, as every sgpatch writer does)."""
    repo, sets = checkout
    args = ["--set", "demo", "--patchsets", str(sets.parent), "--sglang-dir", str(repo)]
    assert sgpatch("apply", *args, "--commit") == 0
    out, victim = tmp_path / "exported", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("not yours\n")
    (out / "0001-one.patch").symlink_to(victim)
    assert sgpatch("export", *args, "--to", str(out)) == 0
    assert victim.read_text() == "not yours\n"
    assert not (out / "0001-one.patch").is_symlink()
    assert (out / "0001-one.patch").read_bytes() == (sets / "patches/0001-one.patch").read_bytes()


def test_apply_commit_refuses_dirty_files_and_non_git_trees(checkout, tmp_path):
    """Input: an uncommitted edit in a file the set touches; then a tree outside git. Outcome:
    exit 4 and nothing written; exit 2 outside git."""
    repo, sets = checkout
    a = repo / "python/sglang/srt/a.py"
    a.write_text(A0 + "mine\n")
    args = ["--set", "demo", "--patchsets", str(sets.parent), "--sglang-dir", str(repo)]
    assert sgpatch("apply", *args, "--commit") == 4
    assert a.read_text() == A0 + "mine\n"
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    plain = tmp_path / "plain" / "sglang"
    (plain / "srt").mkdir(parents=True)
    (plain / "_version.py").write_text("__version__ = version = '0.5.9'\n")
    (plain / "srt" / "a.py").write_text(A0)
    assert sgpatch("apply", "--set", "demo", "--patchsets", str(sets.parent),
                   "--sglang-dir", str(plain), "--commit") == 2  # fmt: skip


def test_status_check_lists_foreign_uncommitted_changes_only(checkout, capsys):
    """Input: apply without --commit (sgpatch's own changes), then a hand edit. Outcome: no
    warning for sgpatch's own uncommitted changes; the hand-edited file is listed, and the
    warning line naming it is returned, not printed (git mode leaves the streams to ops/cli)."""
    repo, sets = checkout
    args = ["--set", "demo", "--patchsets", str(sets.parent), "--sglang-dir", str(repo)]
    assert sgpatch("apply", *args) == 0
    target = find_target(repo)
    manifest = load_manifest(sets / "patchset.yaml")
    assert gitmode.uncommitted(target, manifest) == []
    a = repo / "python/sglang/srt/a.py"
    a.write_text(a.read_text() + "# mine\n")
    capsys.readouterr()
    checked = gitmode.status_check(target, manifest)
    assert checked.files == ["srt/a.py"]
    assert checked.notes == (gitmode.warning_line(["srt/a.py"]),)
    assert "uncommitted changes" in checked.notes[0]
    assert gitmode.status_check(target, manifest, quiet=True).files == ["srt/a.py"]
    assert capsys.readouterr().err == ""


def test_header_and_message_round_trip():
    header = "Subject: [PATCH] x: do y\n\nBody line.\n\nOrigin: z\n\n"
    msg = gitmode.commit_message(header, "s", "x", "patches/0001-x.patch")
    assert msg.splitlines()[0] == "x: do y"
    assert gitmode.message_header(msg) == header
    assert json.dumps(gitmode.header_message("plain first line\nmore\n")) == json.dumps(
        ["plain first line", "more"]
    )


# ------------------------------------------------------------------ all or nothing, revert --commit


def _args(repo: Path, sets: Path) -> list[str]:
    return ["--set", "demo", "--patchsets", str(sets.parent), "--sglang-dir", str(repo)]


def _tree(repo: Path) -> dict[str, bytes]:
    """Every file under the repository except .git/ internals, by path."""
    return {
        p.relative_to(repo).as_posix(): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }


def test_revert_commit_records_the_reversal_and_status_is_clean(checkout, capsys):
    """Input: apply --commit, then revert --commit. Outcome: one more commit 'Revert sgpatch
    set demo' with a 'Reverted by sgpatch (demo/<id>)' trailer per patch naming the commits it
    reverts; the work tree and HEAD's tree equal the pristine commit's; nothing uncommitted;
    no .sgpatch/; status shows both patches pending with no warning."""
    repo, sets = checkout
    args = _args(repo, sets)
    pristine_tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert sgpatch("apply", *args, "--commit") == 0
    made = git(repo, "log", "--format=%H", "-2").split()
    assert sgpatch("revert", *args, "--commit") == 0
    msg = git(repo, "log", "-1", "--format=%B")
    assert msg.startswith("Revert patch set demo (sgpatch)")
    assert "Reverted by sgpatch (demo/two)" in msg and "Reverted by sgpatch (demo/one)" in msg
    assert all(f"This reverts commit {sha}" in msg for sha in made)
    assert git(repo, "rev-parse", "HEAD^{tree}").strip() == pristine_tree
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / "python/sglang/.sgpatch").exists()
    capsys.readouterr()
    assert sgpatch("status", *args) == 0
    err = capsys.readouterr().err
    assert "warning:" not in err and "note:" not in err


def test_plain_revert_after_apply_commit_is_noted_and_revert_commit_finishes_it(checkout, capsys):
    """Input: apply --commit, then revert without --commit (the reversal left uncommitted).
    Outcome: status does not call the files 'not made by sgpatch'; it notes that sgpatch's
    revert is not committed; `revert --commit` then commits it (exit 0), leaving a clean tree."""
    repo, sets = checkout
    args = _args(repo, sets)
    assert sgpatch("apply", *args, "--commit") == 0
    assert sgpatch("revert", *args) == 0
    capsys.readouterr()
    assert sgpatch("status", *args) == 0
    err = capsys.readouterr().err
    assert "not made by sgpatch" not in err
    assert "revert is not committed" in err
    assert sgpatch("revert", *args, "--commit") == 0
    assert git(repo, "log", "-1", "--format=%s").strip() == "Revert patch set demo (sgpatch)"
    assert git(repo, "status", "--porcelain") == ""


def test_index_lock_refuses_in_one_line_and_changes_nothing(checkout, capsys):
    """Input: .git/index.lock present (another git running). Outcome: apply --commit exits 4
    with one line naming it; the work tree, HEAD and the ledger are untouched; once the lock
    is gone the same command works."""
    repo, sets = checkout
    args = _args(repo, sets)
    before, head = _tree(repo), git(repo, "rev-parse", "HEAD")
    (repo / ".git" / "index.lock").write_text("")
    capsys.readouterr()
    assert sgpatch("apply", *args, "--commit") == 4
    err = capsys.readouterr().err
    assert "index.lock exists" in err and err.count("\n") == 1 and "Traceback" not in err
    assert _tree(repo) == before and git(repo, "rev-parse", "HEAD") == head
    (repo / ".git" / "index.lock").unlink()
    assert sgpatch("apply", *args, "--commit") == 0
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "3"


def test_head_that_moved_meanwhile_puts_the_tree_back(checkout, capsys, monkeypatch):
    """Input: HEAD moves (someone commits) after sgpatch built its commits and before it moves
    HEAD. Outcome: exit 4 in one line, the patched files are put back (work tree as before
    apply), no ledger; a retry applies and commits."""
    repo, sets = checkout
    args = _args(repo, sets)
    real = gitmode.apply_plan

    def racing(*a, **k):
        plan = real(*a, **k)
        (repo / "OTHER").write_text("x\n")
        git(repo, "add", "OTHER")
        git(repo, "commit", "-q", "-m", "someone else")
        return plan

    monkeypatch.setattr(gitmode, "apply_plan", racing)
    before = _tree(repo)
    capsys.readouterr()
    assert sgpatch("apply", *args, "--commit") == 4
    err = capsys.readouterr().err
    assert "cannot move HEAD" in err and err.count("\n") == 1
    assert {k: v for k, v in _tree(repo).items() if k != "OTHER"} == before
    assert not (repo / "python/sglang/.sgpatch").exists()
    monkeypatch.setattr(gitmode, "apply_plan", real)
    assert sgpatch("apply", *args, "--commit") == 0
    assert (
        git(repo, "log", "-1", "--format=%B")
        .rstrip()
        .endswith("Applied by sgpatch (demo/two)\nSgpatch-Variant: patches/0002-two.patch")
    )


def test_a_run_stopped_before_head_moved_is_finished_by_a_retry(checkout, capsys, monkeypatch):
    """Input: apply --commit wrote the files and the ledger (with the commits it built) but
    stopped before moving HEAD. Outcome: a retry of apply --commit moves HEAD to those
    commits (exit 0), the tree is clean, the set applied."""
    repo, sets = checkout
    args = _args(repo, sets)
    monkeypatch.setattr(gitmode, "finish", lambda *a, **k: [])
    assert sgpatch("apply", *args, "--commit") == 0
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    monkeypatch.undo()
    assert sgpatch("apply", *args, "--commit") == 0
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "3"
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""


def test_revert_commit_refuses_foreign_uncommitted_changes(checkout, capsys):
    """Input: apply --commit, then an uncommitted hand edit in a.py, then revert --commit
    --force. Outcome: exit 4 (the commit would carry the edit under sgpatch's name), nothing
    written."""
    repo, sets = checkout
    args = _args(repo, sets)
    assert sgpatch("apply", *args, "--commit") == 0
    a = repo / "python/sglang/srt/a.py"
    a.write_text("# mine\n" + a.read_text())
    before = _tree(repo)
    assert sgpatch("revert", *args, "--commit", "--force") == 4
    assert _tree(repo) == before


def test_an_index_left_behind_after_head_moved_is_resynced_by_a_retry(checkout, monkeypatch):
    """Input: apply --commit moved HEAD, but re-syncing the index failed (another git took
    index.lock at that moment). Outcome: exit 4 in one line saying to run it again; the retry
    exits 0 and leaves nothing staged or modified."""
    repo, sets = checkout
    args = _args(repo, sets)
    real = gitmode._resync_index

    def locked_out(repo_, paths):
        """The real re-sync, while another git holds index.lock (once)."""
        monkeypatch.setattr(gitmode, "_resync_index", real)
        (repo / ".git" / "index.lock").write_text("")
        try:
            real(repo_, paths)
        finally:
            (repo / ".git" / "index.lock").unlink()

    monkeypatch.setattr(gitmode, "_resync_index", locked_out)
    assert sgpatch("apply", *args, "--commit") == 4
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "3"
    assert git(repo, "status", "--porcelain", "--untracked-files=no") != ""
    assert sgpatch("apply", *args, "--commit") == 0
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""


ALL_HOOKS = (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
    "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
    "post-merge", "pre-push", "reference-transaction", "pre-auto-gc", "post-rewrite",
    "post-index-change", "push-to-checkout",
)  # fmt: skip


def test_writing_git_mode_runs_exactly_the_hooks_the_docs_list(checkout, tmp_path):
    """Input: a checkout with every client-side hook (each logging its name) and a
    core.fsmonitor program; `apply --commit`, then `revert --commit` (what docs/safety.md,
    "Git", lists). Outcome: both exit 0; the hooks that ran are exactly reference-transaction
    (HEAD moved by update-ref) and post-index-change (the temporary index, the re-sync of the
    user's), plus the fsmonitor program: no commit, checkout, merge or gc hook."""
    repo, sets = checkout
    ran = tmp_path / "ran"
    ran.mkdir()
    for hook in ALL_HOOKS:
        path = repo / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\ncat >/dev/null\ntouch {ran}/{hook}\n")
        path.chmod(0o755)
    git(repo, "config", "core.fsmonitor", f"touch {ran}/fsmonitor; true")
    args = ["--set", "demo", "--patchsets", str(sets.parent), "--sglang-dir", str(repo)]
    for command in ("apply", "revert"):
        assert sgpatch(command, *args, "--commit") == 0
        assert sorted(os.listdir(ran)) == [
            "fsmonitor",
            "post-index-change",
            "reference-transaction",
        ], command
        for f in ran.iterdir():
            f.unlink()


def test_apply_commit_records_symlinks_and_modes_as_git_does(checkout, capsys):
    """Input: a set whose one patch makes srt/a.py executable (`old mode`/`new mode`, no hunk)
    and adds a symlink srt/latest -> a.py; apply --commit, then revert --commit. Outcome: the
    commit's tree has srt/a.py as 100755 and srt/latest as a 120000 blob holding `a.py`; the
    work tree is clean against it; `export` writes the mode change and the link back as git
    does; the revert commit's tree is the pristine one again."""
    repo, sets = checkout
    (sets / "patches" / "0001-one.patch").write_text(
        "Subject: [PATCH] one\n\n"
        "diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py\nold mode 100644\n"
        "new mode 100755\n"
        "diff --git a/python/sglang/srt/latest b/python/sglang/srt/latest\nnew file mode 120000\n"
        "--- /dev/null\n+++ b/python/sglang/srt/latest\n@@ -0,0 +1 @@\n+a.py\n"
        "\\ No newline at end of file\n"
    )
    text = (sets / "patchset.yaml").read_text()
    (sets / "patchset.yaml").write_text(text[: text.index("  - id: two")])
    pristine_tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert sgpatch("apply", *_args(repo, sets), "--commit") == 0, capsys.readouterr().err
    entries = git(repo, "ls-tree", "-r", "HEAD", "python/sglang/srt").splitlines()
    modes = {e.split("\t")[1]: e.split()[0] for e in entries}
    assert modes == {"python/sglang/srt/a.py": "100755", "python/sglang/srt/latest": "120000"}
    assert git(repo, "show", "HEAD:python/sglang/srt/latest") == "a.py"
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    (exported,) = gitmode.export(find_target(repo), "demo", repo.parent / "out")
    text = exported.path.read_text()
    assert "b/python/sglang/srt/a.py\nold mode 100644\nnew mode 100755\n" in text
    assert "new file mode 120000\n--- /dev/null\n+++ b/python/sglang/srt/latest\n" in text
    assert sgpatch("revert", *_args(repo, sets), "--commit") == 0, capsys.readouterr().err
    assert git(repo, "rev-parse", "HEAD^{tree}").strip() == pristine_tree


def _no_identity(repo: Path, monkeypatch) -> None:
    """git with no user.name/email anywhere and no guessing (as in a bare container)."""
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    git(repo, "config", "user.useConfigOnly", "true")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)


def test_no_git_identity_commits_as_sgpatch(checkout, capsys, monkeypatch):
    """Input: apply --commit where git knows no identity (`git var` says "no name was given").
    Outcome: exit 0, the commits made with sgpatch's own identity."""
    repo, sets = checkout
    _no_identity(repo, monkeypatch)
    assert sgpatch("apply", *_args(repo, sets), "--commit") == 0, capsys.readouterr().err
    assert git(repo, "log", "-1", "--format=%an <%ae>").strip() == "sgpatch <sgpatch@localhost>"


def test_a_git_that_fails_otherwise_is_said_not_read_as_no_identity(checkout, capsys, monkeypatch):
    """Input: apply --commit where `git var` fails for a reason other than a missing identity
    (git cannot read a config file; stood in by a GitPython that raises it). Outcome: exit 2,
    one line carrying git's reason; no commit under a made-up identity, tree and HEAD as they
    were."""
    import git as gitpython

    def var(self, *args, **kwargs):
        stderr = "fatal: unable to access '/home/u/.config/git/config': Permission denied"
        raise gitpython.GitCommandError(["git", "var", *args], 128, stderr=stderr)

    repo, sets = checkout
    before, head = _tree(repo), git(repo, "rev-parse", "HEAD")
    monkeypatch.setattr(gitpython.cmd.Git, "var", var, raising=False)
    capsys.readouterr()
    assert sgpatch("apply", *_args(repo, sets), "--commit") == 2
    err = capsys.readouterr().err
    assert err.startswith("sgpatch: error: git mode: git cannot say who commits ("), err
    assert "Permission denied" in err and err.count("\n") == 1, err
    assert _tree(repo) == before and git(repo, "rev-parse", "HEAD") == head


def test_revert_and_export_json_name_each_commit(checkout, capsys, tmp_path):
    """Input: apply --commit, export --json, then revert --commit --json. Outcome: export's
    `patches` and revert's `commits` name each patch with its commit (and export the file it
    wrote), as `git log` has them; revert's one commit is named by the set (one per set),
    from the records' own to_json."""
    repo, sets = checkout
    args = _args(repo, sets)
    assert sgpatch("apply", *args, "--commit") == 0
    shas = git(repo, "log", "-2", "--format=%H").split()  # newest first: two, one
    capsys.readouterr()
    out = tmp_path / "exported"
    assert sgpatch("export", *args, "--to", str(out), "--json") == 0
    exported = json.loads(capsys.readouterr().out)["patches"]
    assert [(e["id"], e["commit"]) for e in exported] == [("one", shas[1]), ("two", shas[0])]
    assert all(Path(e["file"]).is_file() for e in exported)
    assert sgpatch("revert", *args, "--commit", "--json") == 0
    commits = json.loads(capsys.readouterr().out)["commits"]
    assert commits == [{"id": "demo", "commit": git(repo, "rev-parse", "HEAD").strip()}]
