"""examples/: the scripts the docs tell a person to run write what the docs say (issue 45.18).

examples/demo.sh runs for real in tests/real/test_demo.py; the commands engine.md and README.md
run on examples/duplicated_block.py's files are run by tests/real/test_docs_examples.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_cli

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "duplicated_block.py"


def _written(where: Path) -> tuple[list[str], str]:
    """The script run as the docs say (`python3 examples/duplicated_block.py DIR`), from
    elsewhere: DIR's t.txt lines and dup.diff."""
    other = where.parent / "cwd"
    other.mkdir(exist_ok=True)
    subprocess.run([sys.executable, str(SCRIPT), str(where)], cwd=other, capture_output=True,
                   check=True)  # fmt: skip
    assert not any(other.iterdir())
    return (where / "t.txt").read_text().splitlines(), (where / "dup.diff").read_text()


def test_duplicated_block_writes_the_files_engine_md_describes(tmp_path: Path) -> None:
    """Input: `python3 examples/duplicated_block.py DIR`. Outcome: DIR/t.txt holds `# header`,
    pad0..pad9, `def f()`, mid0..mid8, `mid9 renamed upstream`, new0..new39, the same `def
    f()`, tail0..tail9 (the hunk's two places start at lines 11 and 66, the lines above the
    blocks: the page's numbers); DIR/dup.diff is one hunk, at line 26 of the file as it was,
    that changes `y = 2` to `y = 3` with `mid9` above it, 3 lines of context."""
    t, diff = _written(tmp_path / "dup")
    assert [i for i, ln in enumerate(t) if ln == "def f():"] == [11, 66]  # 1-based: 12, 67
    assert t[:11] == ["# header", *(f"pad{i}" for i in range(10))]
    assert t[11:16] == t[66:71] and t[13] == "    y = 2"
    assert t[24:26] == ["mid8", "mid9 renamed upstream"]
    assert t[26:66] == [f"new{i}" for i in range(40)] and t[71:] == [f"tail{i}" for i in range(10)]
    hunk = diff.splitlines()[2:]
    assert hunk[0] == "@@ -26,7 +26,7 @@" and hunk[1] == " mid9"
    assert [ln for ln in hunk if ln[:1] in "+-"] == ["-    y = 2", "+    y = 3"]


def test_duplicated_block_without_argument_writes_the_current_folder(tmp_path: Path) -> None:
    """Input: the script run with no argument, from DIR. Outcome: DIR/t.txt and DIR/dup.diff,
    each file's path printed, nothing else in DIR."""
    done = subprocess.run([sys.executable, str(SCRIPT)], cwd=tmp_path, capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout.split() == ["t.txt", "dup.diff"]  # what it wrote, as paths
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup.diff", "t.txt"]


def test_duplicated_block_fuzz_0_refuses_with_the_best_match(tmp_path, monkeypatch) -> None:
    """Input: the script's files; `sgpatch patch -p0 --fuzz 0 dup.diff` in their folder.
    Outcome: exit 3, `best match at line 66`, t.txt unchanged (what engine.md shows)."""
    tmp_path = tmp_path / "dup"
    _written(tmp_path)
    before = (tmp_path / "t.txt").read_bytes()
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("patch", "-p0", "--fuzz", "0", "dup.diff")
    assert code == 3 and "best match at line 66" in out + err
    assert (tmp_path / "t.txt").read_bytes() == before


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed")
def test_duplicated_block_gnu_patch_takes_the_first_copy(tmp_path: Path) -> None:
    """Input: the script's files; GNU `patch -p0 --dry-run -i dup.diff`. Outcome: exit 0,
    `Hunk #1 succeeded at 11 with fuzz 1 (offset -15 lines)`: the wrong copy, as index.md's
    scenario 1 says."""
    tmp_path = tmp_path / "dup"
    _written(tmp_path)
    done = subprocess.run(["patch", "-p0", "--dry-run", "-i", "dup.diff"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0
    assert "Hunk #1 succeeded at 11 with fuzz 1 (offset -15 lines)" in done.stdout
