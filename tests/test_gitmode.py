"""Git mode on a synthetic checkout: apply --commit, export, and the status warning."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import sgpatch
from sgpatch import gitmode
from sgpatch.manifest import load_manifest
from sgpatch.refresh import FileDiff, canonical_diff, render
from sgpatch.target import find_target

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


def test_status_warning_lists_foreign_uncommitted_changes_only(checkout, capsys):
    """Input: apply without --commit (sgpatch's own changes), then a hand edit. Outcome: no
    warning for sgpatch's own uncommitted changes; the hand-edited file is listed."""
    repo, sets = checkout
    args = ["--set", "demo", "--patchsets", str(sets.parent), "--sglang-dir", str(repo)]
    assert sgpatch("apply", *args) == 0
    target = find_target(repo)
    manifest = load_manifest(sets / "patchset.yaml")
    assert gitmode.uncommitted(target, manifest) == []
    a = repo / "python/sglang/srt/a.py"
    a.write_text(a.read_text() + "# mine\n")
    capsys.readouterr()
    assert gitmode.status_warning(target, manifest) == ["srt/a.py"]
    assert "uncommitted changes" in capsys.readouterr().err
    assert gitmode.status_warning(target, manifest, quiet=True) == ["srt/a.py"]
    assert capsys.readouterr().err == ""


def test_header_and_message_round_trip():
    header = "Subject: [PATCH] x: do y\n\nBody line.\n\nOrigin: z\n\n"
    msg = gitmode.commit_message(header, "s", "x", "patches/0001-x.patch")
    assert msg.splitlines()[0] == "x: do y"
    assert gitmode.message_header(msg) == header
    assert json.dumps(gitmode.header_message("plain first line\nmore\n")) == json.dumps(
        ["plain first line", "more"]
    )
