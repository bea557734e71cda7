"""Target detection on a real SGLang tree that only git can date (tests/test_target.py covers git
describe on synthetic trees; this one runs the shipped set on the real 0.5.9 sources)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import git

from .intent import CHECKS
from .kimi import SET, SET_FILES, Cli, members, states

SGPATCH = str(Path(sys.executable).with_name("sgpatch"))
# the Python the console script runs (its #! line): the one sgpatch's warnings name, which is
# not always the spelling this process started with (pytest-xdist starts workers as python3)
SCRIPT_PYTHON = Path(SGPATCH).read_text().splitlines()[0].removeprefix("#!").strip()

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


def _sgpatch(cwd: Path, *args: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    """The installed console script, run as a user would: from `cwd`, no --sglang-dir, no
    $SGLANG_DIR; `pythonpath` stands for where the image's Python imports sglang from."""
    env = {k: v for k, v in os.environ.items() if k not in ("SGLANG_DIR", "PYTHONPATH")}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [SGPATCH, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_a_bare_command_inside_a_checkout_uses_it(release_tree) -> None:
    """Input: `sgpatch status --check` and `sgpatch apply` with no --sglang-dir, run from
    `<repo>/python/sglang/srt/models` of a real 0.5.9 checkout, with this Python importing no
    sglang. Expected: the checkout is used; the first stderr line says so, the second warns
    that Python does not import it; the status header (on stdout) names it; status exits 1
    (pending), apply exits 0 and the tree then has the Kimi hooks."""
    root = release_tree("0.5.9", "checkout", members=members)
    inside = root / "srt" / "models"
    proc = _sgpatch(inside, "status", "--set", SET, "--check")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == (
        f"sgpatch: using the SGLang tree around the current directory: {root.resolve()} "
        "(--sglang-dir to choose another)"
    )
    assert lines[1] == (
        f"sgpatch: warning: {SCRIPT_PYTHON} imports no sglang; this tree may not be the one "
        "that runs"
    )
    # the table and its header line are status's product: stdout
    assert f"sglang 0.5.9 (checkout, version from _version.py) at {root.resolve()}" in proc.stdout
    proc = _sgpatch(inside, "apply", "--set", SET)
    assert proc.returncode == 0, proc.stderr
    for check in CHECKS["kimi-k25-eagle3-hooks"]:
        check(root)


def test_inside_a_site_packages_folder_python_imports(release_tree) -> None:
    """Input: `sgpatch status --check --json` from a real 0.5.9 site-packages folder that this
    Python imports sglang from, then from a checkout while Python still imports the
    site-packages one. Expected: the folder's tree with the "using" line and no warning; then
    the checkout, with a warning that names the tree Python imports."""
    site_root = release_tree("0.5.9", "site-packages", members=members)
    site = site_root.parent
    proc = _sgpatch(site, "status", "--set", SET, "--check", "--json", pythonpath=site)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        f"sgpatch: using the SGLang tree around the current directory: {site_root.resolve()} "
        "(--sglang-dir to choose another)"
    ]
    assert json.loads(proc.stdout)["target"]["layout"] == "site-packages"
    checkout = release_tree("0.5.9", "checkout", members=members)
    proc = _sgpatch(checkout.parent.parent, "status", "--set", SET, "--check", pythonpath=site)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines()[1] == (
        f"sgpatch: warning: {SCRIPT_PYTHON} imports sglang from {site_root.resolve()}, not "
        "from this tree"
    )
