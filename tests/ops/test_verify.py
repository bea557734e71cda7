"""verify: the per-release check (apply, compile, reapply no-op, status, exact revert) on a
small synthetic release, with the release cache replaced by a folder of pristine files."""

from __future__ import annotations

import base64
import hashlib
import shutil
from pathlib import Path

import pytest

from helpers import lines, make_diff
from sgpatch.ops import verify
from sgpatch.patchset.manifest import load_set
from sgpatch.releases import cache as releases

SET = "tiny"
MOD = lines("def f():", *(f"    x{i} = {i}" for i in range(12)), "    return x0")


def _record(pristine: Path) -> dict[str, str]:
    out = {}
    for path in pristine.rglob("*"):
        if path.is_file():
            digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest())
            out[f"sglang/{path.relative_to(pristine).as_posix()}"] = (
                "sha256=" + digest.decode().rstrip("=")
            )
    return out


@pytest.fixture
def release(tmp_path: Path, monkeypatch):
    """A pristine 0.5.9 'release' and a set folder; returns (sets dir, function writing the
    set's one patch from a new module text)."""
    pristine = tmp_path / "pristine" / "sglang"
    (pristine / "srt").mkdir(parents=True)
    (pristine / "_version.py").write_text("__version__ = version = '0.5.9'\n")
    (pristine / "srt" / "mod.py").write_text(MOD)

    def copy_tree(version, dest, layout="site-packages", members=None):
        shutil.copytree(pristine, Path(dest) / "sglang")
        return Path(dest) / "sglang"

    monkeypatch.setattr(releases, "copy_tree", copy_tree)
    monkeypatch.setattr(releases, "record", lambda version: _record(pristine))
    monkeypatch.setattr(releases, "has_member", lambda v, rel: (pristine / rel).is_file())
    monkeypatch.setattr(releases, "read_member", lambda v, rel: (pristine / rel).read_bytes())
    sets = tmp_path / "sets"
    (sets / SET / "patches").mkdir(parents=True)
    (sets / SET / "patchset.yaml").write_text(
        f"""schema: 1
name: {SET}
summary: one patch
sglang: ">=0.5.0,<0.6"
patches:
  - id: change
    summary: change f
    type: feature
    upstream: {{status: pending}}
    variants:
      - {{sglang: ">=0.5.0", patch: patches/0001-change.patch}}
"""
    )

    def write_patch(new: str, old: str = MOD) -> None:
        diff = make_diff(old, new, "python/sglang/srt/mod.py")
        (sets / SET / "patches" / "0001-change.patch").write_text("Change f.\n\n" + diff)

    return sets, write_patch, tmp_path / "work"


def _check(sets: Path, work: Path) -> verify.ReleaseCheck:
    return verify.check_release(load_set(SET, (sets,)), [sets], "0.5.9", work)


def test_a_good_set_passes_every_step(release):
    """Input: a patch that changes one line. Outcome: exit 0, every step ok, the patch
    applied and one file written."""
    sets, write_patch, work = release
    write_patch(MOD.replace("    x5 = 5\n", "    x5 = 50\n"))
    check = _check(sets, work)
    assert check.exit_code == 0, check.steps
    assert [(s.name, s.ok) for s in check.steps] == [(n, True) for n in verify.STEPS]
    assert check.states == {"change": "applied"} and check.written == ("srt/mod.py",)


def test_a_patch_that_breaks_the_syntax_fails_compile(release):
    """Input: a patch that leaves an unclosed bracket. Outcome: apply ok, compile FAIL naming
    file and line, exit 3; later steps not run."""
    sets, write_patch, work = release
    write_patch(MOD.replace("    x5 = 5\n", "    x5 = (5\n"))
    check = _check(sets, work)
    assert check.exit_code == 3
    assert [(s.name, s.ok) for s in check.steps] == [("apply", True), ("compile", False)]
    assert "srt/mod.py:" in check.steps[-1].detail
    assert verify.row(check)[2:] == ("ok", "FAIL", "-", "-", "-", "-")


def test_an_import_the_patch_adds_that_the_release_lacks_fails_imports(release):
    """Input: a patch that adds `from sglang.srt.gone import helper` (no srt/gone.py on the
    release) and one that imports from the module it patches. Outcome: the first compiles,
    then imports FAIL naming srt/mod.py, the line and the missing module, exit 3, later steps
    not run; the second passes every step."""
    sets, write_patch, work = release
    write_patch("from sglang.srt.gone import helper\n" + MOD)
    check = _check(sets, work)
    assert check.exit_code == 3
    assert [(s.name, s.ok) for s in check.steps] == [
        ("apply", True), ("compile", True), ("imports", False)
    ]  # fmt: skip
    assert check.steps[-1].detail == (
        "srt/mod.py:1: from sglang.srt.gone import helper: no module sglang.srt.gone; "
        "not found elsewhere on this release"
    )
    write_patch("from sglang.srt.mod import f\n" + MOD)
    assert _check(sets, work / "again").exit_code == 0


def test_a_conflicting_patch_fails_apply_with_its_exit_code(release):
    """Input: a patch whose removed line is not in the release. Outcome: apply FAIL with
    apply's exit code 3 and the patch named."""
    sets, write_patch, work = release
    other = MOD.replace("    x5 = 5\n", "    x5 = 99\n")  # not what the release has
    write_patch(other.replace("    x5 = 99\n", "    x5 = 50\n"), old=other)
    check = _check(sets, work)
    assert check.exit_code == 3
    assert check.steps[-1].name == "apply" and "change conflict" in check.steps[-1].detail


def test_record_differences_names_changed_missing_and_extra_files(release, tmp_path):
    """Input: a tree with one file edited, one deleted, one added, and a .sgpatch folder.
    Outcome: three differences named; the state folder is not one."""
    assert release
    root = releases.copy_tree("0.5.9", tmp_path / "t")
    (root / "srt" / "mod.py").write_text("edited\n")
    (root / "_version.py").unlink()
    (root / "srt" / "new.py").write_text("x = 1\n")
    (root / ".sgpatch").mkdir()
    (root / ".sgpatch" / "ledger.json").write_text("{}")
    assert verify.record_differences(root, "0.5.9") == [
        "srt/mod.py differs from RECORD",
        "_version.py missing",
        "srt/new.py left behind",
    ]
