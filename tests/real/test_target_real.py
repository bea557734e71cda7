"""Target detection on a real SGLang tree that only git can date (tests/test_target.py covers git
describe on synthetic trees; this one runs the shipped set on the real 0.5.9 sources)."""

from __future__ import annotations

import shutil

import pytest

from helpers import git

from .intent import CHECKS
from .test_kimi_eagle3_sm120 import SET, SET_FILES, Cli, states

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _no_version_file(name: str) -> bool:
    """The set's files and version.py of the wheel, but not _version.py (a fresh clone has none)."""
    rel = name[len("sglang/") :] if name.startswith("sglang/") else None
    return rel is not None and rel != "_version.py" and rel in SET_FILES


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.delenv("SGPATCH_PATH", raising=False)
    monkeypatch.delenv("SGLANG_DIR", raising=False)
    return Cli(capsys)


def test_git_checkout_of_059_is_detected_and_patched(release_tree, cli) -> None:
    """Input: a git repository holding python/sglang of 0.5.9 without _version.py (version.py
    only imports it, with a 0.0.0.dev0 fallback), committed and tagged v0.5.9, passed as the
    repository root. Expected: status says 0.5.9 from `git describe`, checkout layout, the 0.5.9
    states; `apply` exits 0 and the kimi hooks meet their intent check; after one more commit
    the version is 0.5.9.post1.devN+g<sha>, which still gets the 0.5.9 variants (done)."""
    root = release_tree("0.5.9", "checkout", members=_no_version_file)
    repo = root.parent.parent
    assert not (root / "_version.py").exists() and (root / "version.py").exists()
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "sglang 0.5.9")
    git(repo, "tag", "v0.5.9")

    code, doc, err = cli("status", "--set", SET, "--sglang-dir", str(repo), "--json")
    assert code == 0, err
    assert doc["target"]["version"] == "0.5.9"
    assert doc["target"]["version_source"] == "git describe"
    assert doc["target"]["layout"] == "checkout"
    assert doc["target"]["root"] == str(root.resolve())
    assert states(doc)["kimi-k25-eagle3-hooks"] == "pending"

    code, doc, err = cli("apply", "--set", SET, "--sglang-dir", str(repo), "--json")
    assert code == 0, err
    assert "srt/models/kimi_k25.py" in doc["written"]
    for check in CHECKS["kimi-k25-eagle3-hooks"]:
        check(root)

    git(repo, "commit", "-q", "-am", "patched")
    code, doc, err = cli("status", "--set", SET, "--sglang-dir", str(repo), "--check", "--json")
    assert code == 0, err
    assert doc["target"]["version"].startswith("0.5.9.post1.dev1+g")
    assert states(doc)["kimi-k25-eagle3-hooks"] == "applied"
