"""sgpatch.state.put: every write and delete of a tree through folder descriptors opened
without following links (issue 46, items 3 and 4): a folder swapped for a symlink while sgpatch
writes stops it, and nothing is ever written or deleted outside the tree."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers import (
    OTHER,
    C,
    chown_tree,
    fork_cli,
    full_snapshot,
    make_env,
    one_line_error,
    root_only,
    run_cli,
    without_owners,
)
from sgpatch.fs import steps
from sgpatch.state.lock import SAFE_ENV
from sgpatch.state.put import Tree, put


def _victim(tmp_path: Path, pkg: Path, folder: str) -> Path:
    """A folder outside the tree (root's, say) holding files of the same names as `folder`,
    with other bytes: where a planted symlink would send sgpatch's writes."""
    victim = tmp_path / "victim"
    shutil.copytree(pkg / folder, victim)
    for f in victim.rglob("*.py"):
        f.write_text("# not sgpatch's to touch\n")
    return victim


def _swap_when_journalled(monkeypatch, pkg: Path, folder: str, victim: Path) -> list[str]:
    """At the first write step taken while `.sgpatch/journal` exists, move `folder` aside and
    leave in its place a symlink to `victim` (what a hostile user racing root does)."""
    real = steps.step
    done: list[str] = []

    def step() -> None:
        real()
        if not done and (pkg / ".sgpatch" / "journal").exists():
            os.rename(pkg / folder, pkg.parent / "moved-aside")
            (pkg / folder).symlink_to(victim)
            done.append(folder)

    monkeypatch.setattr(steps, "step", step)
    return done


OWNERS = [
    pytest.param("own", id="own-tree"),
    pytest.param("other", id="another-users-tree", marks=root_only),
]


def _owned(pkg: Path, victim: Path, owner: str) -> None:
    """`owner` "other": the tree given to uid 4242 (root then writes it as that user would,
    docs/safety.md "Who may write a tree"), and the victim folder made root's only (0700), as
    issue 46 items 3 and 4 had it."""
    if owner == "other":
        chown_tree(pkg, OTHER)
        victim.chmod(0o700)
    return victim


@pytest.mark.parametrize("owner", OWNERS)
@pytest.mark.parametrize("folder", ["srt/models", "srt/layers", "srt"])
def test_a_folder_swapped_for_a_symlink_mid_apply_is_never_written_through(
    tmp_path, monkeypatch, folder, owner
):
    """Input: `apply` of the synthetic set (on the runner's own tree, or as root on a tree uid
    4242 owns, with no $SGPATCH_SAFE_DIRECTORY); once its journal is on disk, a folder holding
    a file it writes is moved aside and a symlink to a folder outside the tree (holding files
    of the same names; root's only) left in its place. Outcome: exit 4 in one line; the
    folder outside is byte for byte as it was (names, bytes, modes, owners): nothing was
    written or deleted through the link. Put back, the tree rolls back to pristine."""
    pkg, _sets, args = make_env(tmp_path)
    pristine = full_snapshot(pkg)
    victim = _victim(tmp_path, pkg, folder)
    _owned(pkg, victim, owner)
    before = full_snapshot(victim)
    done = _swap_when_journalled(monkeypatch, pkg, folder, victim)
    code, _out, err = run_cli("apply", *args)
    assert done == [folder]
    assert code == 4, err
    one_line_error(err)
    assert full_snapshot(victim) == before
    _put_back(pkg, folder)
    monkeypatch.setenv(SAFE_ENV, str(pkg))  # the journal is the run's own: replay it
    assert run_cli("recover", "--sglang-dir", str(pkg))[0] == 0
    assert without_owners(full_snapshot(pkg)) == without_owners(pristine)


@pytest.mark.parametrize("owner", OWNERS)
def test_a_folder_swapped_for_a_symlink_mid_rollback_is_never_written_through(
    tmp_path, monkeypatch, owner
):
    """Input: an apply killed after writing some files (its journal left), then `recover`
    (as root on a tree uid 4242 owns: with $SGPATCH_SAFE_DIRECTORY naming it, so the journal
    is replayed at all), during which srt/models is moved aside and a symlink to a folder
    outside the tree (root's only) put in its place. Outcome: exit 4 in one line, the journal
    kept; the folder outside byte for byte as it was: the rollback wrote nothing through the
    link (issue 46.3 wrote that user's bytes, owned by root, there)."""
    pkg, _sets, args = make_env(tmp_path)
    assert fork_cli(["apply", *args], kill_at=8) == ("killed", 9)
    assert (pkg / ".sgpatch" / "journal").exists()
    victim = _victim(tmp_path, pkg, "srt/models")
    _owned(pkg, victim, owner)
    monkeypatch.setenv(SAFE_ENV, str(pkg))
    before = full_snapshot(victim)
    done = _swap_when_journalled(monkeypatch, pkg, "srt/models", victim)
    code, _out, err = run_cli("recover", "--sglang-dir", str(pkg))
    assert done == ["srt/models"]
    assert code == 4, err
    one_line_error(err)
    assert (pkg / ".sgpatch" / "journal").exists()
    assert full_snapshot(victim) == before


def _put_back(pkg: Path, folder: str) -> None:
    """Undo the swap: the link removed, the folder moved back."""
    (pkg / folder).unlink()
    os.rename(pkg.parent / "moved-aside", pkg / folder)


def test_a_symlinked_folder_inside_the_tree_is_still_written(tmp_path):
    """Input: `srt/alias` a symlink to `srt/real` (inside the tree, as the path guards
    allow); a file put at srt/alias/x.py. Outcome: it lands in srt/real/x.py; the link stays
    a link."""
    (tmp_path / "srt/real").mkdir(parents=True)
    (tmp_path / "srt/alias").symlink_to("real")
    with Tree(tmp_path) as tree:
        put(tree, "srt/alias/x.py", b"x = 1\n", None)
    assert (tmp_path / "srt/real/x.py").read_bytes() == b"x = 1\n"
    assert os.readlink(tmp_path / "srt/alias") == "real"


def test_a_new_folder_is_0755_whatever_the_umask(tmp_path):
    """Input: umask 000, a file put in a folder that does not exist yet. Outcome: the folder
    is 0755 and the file 0644 (not 0777 and 0666)."""
    old = os.umask(0)
    try:
        with Tree(tmp_path) as tree:
            put(tree, "new/dir/f.py", C.encode(), None)
    finally:
        os.umask(old)
    assert (tmp_path / "new/dir").stat().st_mode & 0o7777 == 0o755
    assert (tmp_path / "new/dir/f.py").stat().st_mode & 0o7777 == 0o644
