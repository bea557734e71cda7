"""tree.gitread: a checkout's git is read, never executed (issue 22, item 3).

A checkout whose `.git/config` names a program for every hook git has (fsmonitor, filters,
textconv, pagers, credential helper, gpg, editors, hooks in .git/hooks and core.hooksPath),
each writing a canary file: the read-only commands run none of them and leave `.git/` (the
index included) byte-identical. A checkout git refuses (another user's) is read as a plain
tree, in one line, and git mode is refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import helpers as tp
from helpers import OTHER, fake_index, full_snapshot, git, make_wheel, root_only, run_cli
from sgpatch.tree import gitread

HOOKS = (
    "post-index-change",
    "reference-transaction",
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-checkout",
    "post-rewrite",
    "pre-auto-gc",
    "fsmonitor-watchman",
)


def _programs(canary: Path) -> dict[str, str]:
    """Every program-valued setting a repository's config can hold, each touching a canary."""

    def touch(name: str, then: str = "") -> str:
        return f"touch {canary}/{name}{'; ' + then if then else ''}"

    return {
        "core.fsmonitor": touch("core.fsmonitor", "true"),
        "core.pager": touch("core.pager", "cat"),
        "pager.status": touch("pager.status", "cat"),
        "pager.log": touch("pager.log", "cat"),
        "pager.diff": touch("pager.diff", "cat"),
        "core.askPass": touch("core.askPass"),
        "core.sshCommand": touch("core.sshCommand"),
        "core.editor": touch("core.editor"),
        "core.gitProxy": touch("core.gitProxy"),
        "core.alternateRefsCommand": touch("core.alternateRefsCommand"),
        "sequence.editor": touch("sequence.editor"),
        "credential.helper": "!" + touch("credential.helper"),
        "diff.external": touch("diff.external"),
        "diff.evil.textconv": touch("diff.textconv", "cat"),
        "filter.evil.clean": touch("filter.clean", "cat"),
        "filter.evil.smudge": touch("filter.smudge", "cat"),
        "filter.evil.process": touch("filter.process"),
        "filter.evil.required": "true",
        "gpg.program": touch("gpg.program"),
        "log.showSignature": "true",
        "core.hooksPath": str(canary.parent / "hooks"),
        "uploadpack.packObjectsHook": touch("packObjectsHook"),
    }


def hostile_checkout(tmp_path: Path, tagged: bool = True) -> tuple[Path, Path]:
    """(repo, canary folder): a checkout of release 1.0 (python/sglang, no _version.py: its
    version comes from `git describe`) whose config names a canary-writing program for every
    program setting, with hooks in .git/hooks and in core.hooksPath, `* filter=evil diff=evil`
    in .gitattributes, and a stat-dirty file (git status would refresh the index there)."""
    repo, canary, hooks = tmp_path / "repo", tmp_path / "canary", tmp_path / "hooks"
    pkg = repo / "python" / "sglang"
    for name, data in tp.release_files(tp.V10, "1.0").items():
        if name != "sglang/_version.py":
            (pkg.parent / name).parent.mkdir(parents=True, exist_ok=True)
            (pkg.parent / name).write_bytes(data)
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    canary.mkdir()
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "pristine 1.0")
    if tagged:
        git(repo, "tag", "v1.0")
    for key, value in _programs(canary).items():
        git(repo, "config", key, value)
    for folder in (hooks, repo / ".git" / "hooks"):
        folder.mkdir(exist_ok=True)
        for hook in HOOKS:
            (folder / hook).write_text(f"#!/bin/sh\ntouch {canary}/hook.{hook}\n")
            (folder / hook).chmod(0o755)
    os.utime(pkg / "srt" / "mod.py", (1e9, 1e9))  # stat-dirty: status would refresh it
    return repo, canary


@pytest.fixture
def release_cache(tmp_path, monkeypatch) -> Path:
    """Release 1.0 in an offline cache, for `diff` and `matrix`; git's user config ignored."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SGPATCH_CACHE", str(cache))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    fake_index(monkeypatch)
    make_wheel(cache / "wheels", "1.0", tp.release_files(tp.V10, "1.0"))
    return cache


def test_read_only_commands_run_nothing_the_checkout_names(tmp_path, release_cache, monkeypatch):
    """Input: the hostile checkout (every program setting and hook writes a canary), run from
    inside it: `status`, `status --json`, `probe`, `apply --dry-run`, `diff`, `matrix`.
    Outcome: each exits 0 (version 1.0 from `git describe`); no canary file appears; `.git/`
    (index, config, refs, objects) and the work tree are byte-identical, modes and owners too."""
    repo, canary = hostile_checkout(tmp_path)
    sets = tp.make_set(tmp_path).parent
    before = full_snapshot(repo, with_state=True)
    monkeypatch.chdir(repo)
    common = ("--sglang-dir", str(repo), "--patchsets", str(sets))
    runs = [
        ("status", *common),
        ("status", *common, "--json"),
        ("probe", "--set", "demo", *common),
        ("apply", "--dry-run", "--set", "demo", *common),
        ("diff", "--sglang-dir", str(repo)),
        ("matrix", "--set", "demo", "--patchsets", str(sets), "--offline", "--workers", "1"),
    ]
    for argv in runs:
        code, _, err = run_cli(*argv)
        assert code == 0, (argv, err)
        assert "Traceback" not in err
        assert sorted(os.listdir(canary)) == [], argv
        assert full_snapshot(repo, with_state=True) == before, argv
    assert "version from git describe" in run_cli("status", *common)[1]


def test_the_reader_switches_off_every_program_on_the_command_line() -> None:
    """Input: the command a reading git runs. Outcome: `--no-pager`, then `-c` for fsmonitor,
    hooks, pager, credential helper, external diff, signatures and transport, before the
    subcommand (a command-line `-c` beats the repository's config); the environment never
    lets git write the index and drops variables that point git elsewhere."""
    cmd = gitread.command("status")
    assert cmd[1] == "--no-pager" and cmd[-1] == "status"
    settings = {cmd[i + 1] for i, x in enumerate(cmd) if x == "-c"}
    wanted = {
        "core.fsmonitor=false",
        "core.hooksPath=/dev/null",
        "credential.helper=",
        "diff.external=",
        "protocol.allow=never",
        "log.showSignature=false",
    }
    assert wanted <= settings
    env = gitread.environment()
    assert env["GIT_OPTIONAL_LOCKS"] == "0" and "GIT_DIR" not in env


@root_only
def test_another_users_checkout_is_read_as_a_plain_tree(tmp_path, release_cache, monkeypatch):
    """Input: as root, the hostile checkout owned by uid 4242 (git refuses it: "dubious
    ownership"). Outcome: `status` (version only from git describe) exits 2 with one line that
    says git refuses the checkout and to pass --sglang-version; with --sglang-version 1.0 it
    exits 0 with one warning line (read as a plain tree) and the table, in a real process too
    (never 141, never a traceback); `apply --commit` exits 4 in one line (git mode refused);
    no canary, and the checkout byte-identical (names, modes, owners)."""
    repo, canary = hostile_checkout(tmp_path)
    sets = tp.make_set(tmp_path).parent
    subprocess.run(["chown", "-R", f"{OTHER}:{OTHER}", str(repo)], check=True)
    before = full_snapshot(repo, with_state=True)
    common = ("--sglang-dir", str(repo), "--patchsets", str(sets))
    code, out, err = run_cli("status", *common)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "git refuses to read" in err and "pass --sglang-version" in err
    code, out, err = run_cli("status", *common, "--sglang-version", "1.0")
    lines = err.splitlines()
    assert code == 0 and "patch set demo" in out
    assert [ln for ln in lines if "warning" in ln] == [
        f"sgpatch: warning: git refuses to read {repo}: it belongs to another user (git's "
        f"'dubious ownership'; `git config --global --add safe.directory {repo}` trusts it); "
        "read as a plain tree (uncommitted changes are not checked)"
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "sgpatch", "status", *common, "--sglang-version", "1.0"],
        capture_output=True,
        text=True,
        env=os.environ,
        check=False,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "demo" in proc.stdout
    code, out, err = run_cli("apply", "--set", "demo", *common, "--sglang-version", "1.0",
                             "--commit")  # fmt: skip
    assert code == 4 and err.count("\n") == 1
    assert err.startswith("sgpatch: error: git mode refused: git refuses to read")
    assert err.rstrip().endswith("nothing was written")
    assert os.listdir(canary) == [] and full_snapshot(repo, with_state=True) == before


def test_a_checkout_git_cannot_read_says_why_in_one_line(tmp_path, monkeypatch):
    """Input: a checkout without tags whose `.git/HEAD` is damaged; `status` without a version.
    Outcome: exit 2, one line naming git's own reason and --sglang-version; nothing written."""
    repo, canary = hostile_checkout(tmp_path, tagged=False)
    (repo / ".git" / "HEAD").write_text("garbage\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    before = full_snapshot(repo, with_state=True)
    code, out, err = run_cli("status", "--sglang-dir", str(repo))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "git cannot read" in err and "pass --sglang-version" in err
    assert os.listdir(canary) == [] and full_snapshot(repo, with_state=True) == before


def test_one_git_reason_for_every_git_failure_message():
    """Input: git's stderr as git prints it, as GitPython wraps it (`stderr: '...'`), with
    hints before the fatal line, and empty. Outcome: the first fatal/error line, unquoted;
    else the first line; else "git failed"; never more than 200 characters."""
    wrapped = "Cmd('git') failed due to: exit code(128)\n  stderr: 'fatal: bad revision 'x''"
    assert gitread.reason(wrapped) == "fatal: bad revision 'x"
    assert gitread.reason("hint: try this\nerror: cannot lock ref\n") == "error: cannot lock ref"
    assert gitread.reason("warning: something odd\n") == "warning: something odd"
    assert gitread.reason("") == "git failed"
    assert len(gitread.reason("fatal: " + "x" * 500)) == 200


def test_a_gitpython_error_is_read_by_its_stderr(tmp_path):
    """Input: a real GitCommandError from GitPython (a revision that does not exist in a new
    repository). Outcome: error_reason gives git's own fatal line, not GitPython's quoting."""
    import git

    repo = git.Repo.init(tmp_path)
    with pytest.raises(git.GitCommandError) as e:
        repo.git.rev_parse("--verify", "no-such-rev")
    said = gitread.error_reason(e.value)
    assert said.startswith("fatal:") and "stderr" not in said and not said.endswith("'")


@pytest.mark.parametrize(
    "where",
    ["HEAD", "config", "packed-refs", "refs/heads/BRANCH", ".git", "shallow",
     "objects/info/alternates", "refs/tags/v1.0", "refs/tags/nested/v2"],
)  # fmt: skip
def test_a_fifo_in_the_checkouts_git_is_found_before_git_waits_on_it(tmp_path, monkeypatch, where):
    """Input: a tagged checkout whose `.git/HEAD`, `.git/config`, `.git/packed-refs`, the
    branch HEAD names, `.git/shallow`, `.git/objects/info/alternates`, a tag (its loose ref,
    at the top or in a sub-folder of refs/tags) or `.git` itself is a FIFO; `status` without
    a version. Outcome: exit 2
    in one line within seconds (git would have waited on the FIFO for its 120 s timeout),
    naming the FIFO; the checkout byte-identical and no program of its config run."""
    repo, canary = hostile_checkout(tmp_path)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    branch = (repo / ".git" / "HEAD").read_text().removeprefix("ref:").strip()
    rel = where.replace("refs/heads/BRANCH", branch)
    planted = repo / rel if where == ".git" else repo / ".git" / rel
    if planted.is_dir():
        subprocess.run(["rm", "-rf", str(planted)], check=True)
    else:
        planted.unlink(missing_ok=True)
    planted.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(planted)
    before = full_snapshot(repo, with_state=True)
    with tp.no_hang():
        code, out, err = run_cli("status", "--sglang-dir", str(repo / "python" / "sglang"))
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"{planted} is not a regular file" in err and "pass --sglang-version" in err
    assert os.listdir(canary) == [] and full_snapshot(repo, with_state=True) == before


@pytest.mark.parametrize("section", ["[include]", '[includeIf "gitdir:/"]'])
def test_a_fifo_the_checkouts_config_includes_is_found_before_git_waits_on_it(
    tmp_path, monkeypatch, section
):
    """Input: a tagged checkout whose `.git/config` includes (`[include]` or `[includeIf]`,
    `path = ../extra.cfg`) a FIFO; `status` without a version. Outcome: exit 2 in one line
    naming the FIFO, at once; the checkout byte-identical, no program of its config run."""
    repo, canary = hostile_checkout(tmp_path)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    with (repo / ".git" / "config").open("a") as f:
        f.write(f"{section}\n\tpath = ../extra.cfg\n")
    os.mkfifo(repo / "extra.cfg")
    before = full_snapshot(repo, with_state=True)
    with tp.no_hang():
        code, out, err = run_cli("status", "--sglang-dir", str(repo / "python" / "sglang"))
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"{repo / '.git' / '../extra.cfg'} is not a regular file" in err
    assert os.listdir(canary) == [] and full_snapshot(repo, with_state=True) == before


def test_a_git_that_does_not_answer_is_one_line_without_its_argv(tmp_path, monkeypatch):
    """Input: git that never finishes (subprocess.run timing out). Outcome: GitUnreadable whose
    message says how long git was waited for, not the whole git command line."""

    def slow(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw["timeout"])

    monkeypatch.setattr(subprocess, "run", slow)
    with pytest.raises(gitread.GitUnreadable) as e:
        gitread.run(tmp_path, "rev-parse", "HEAD")
    assert e.value.message == f"{tmp_path}: git did not answer in 120 s"
