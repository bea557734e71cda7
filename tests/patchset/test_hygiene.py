"""patchset.hygiene: where sets come from must not be writable by other users (issue 22,
item 7), and a user set that shadows a shipped one is said."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import (
    NOBODY,
    full_snapshot,
    make_env,
    reachable_dir,
    root_only,
    run_cli,
    write_set,
)
from sgpatch.patchset.manifest import bundled_dir


def _refusal(where: Path, mode: str, what: str, above: bool = False) -> str:
    target = f"{where}, a folder above it," if above else "it"
    how = ", no sticky bit" if above else ""
    return (
        f"sgpatch: error: refusing {what}: {target} may be written by other users (mode "
        f"{mode}{how}), so anyone could plant or replace a patch set there; `chmod o-w {where}`\n"
    )


def test_an_sgpatch_path_folder_others_may_write_is_refused(tmp_path, monkeypatch):
    """Input: $SGPATCH_PATH naming a folder of sets with mode 0777; `list`, then `apply`
    of the shipped set. Outcome: both exit 4 with exactly one line naming the folder, its
    mode and the fix; the tree byte-identical (nothing written)."""
    pkg, _, _ = make_env(tmp_path)
    sets = tmp_path / "open"
    write_set(sets)
    sets.chmod(0o777)
    monkeypatch.setenv("SGPATCH_PATH", str(sets))
    before = full_snapshot(pkg, with_state=True)
    line = _refusal(sets, "0777", f"patch set folder {sets} (from $SGPATCH_PATH)")
    assert run_cli("list") == (4, "", line)
    code, out, err = run_cli("apply", "--set", "safety-set", "--sglang-dir", str(pkg))
    assert (code, out, err) == (4, "", line)
    assert full_snapshot(pkg, with_state=True) == before


@pytest.mark.parametrize("sticky", [False, True])
def test_a_folder_above_others_may_write_counts_only_without_the_sticky_bit(tmp_path, sticky):
    """Input: --patchsets DIR/sets where DIR has mode 0777 (anyone may rename sets/ away and
    put theirs there), or 1777 like /tmp (the sticky bit forbids that). Outcome: 0777 is exit
    4, one line naming DIR as the folder above; 1777 lists the set (exit 0)."""
    top = tmp_path / "shared"
    write_set(top / "sets")
    top.chmod(0o1777 if sticky else 0o777)
    code, out, err = run_cli("list", "--patchsets", str(top / "sets"))
    if sticky:
        assert code == 0 and "safety-set" in out
    else:
        what = f"--patchsets {top / 'sets'}"
        assert (code, out, err) == (4, "", _refusal(top, "0777", what, above=True))


@pytest.mark.parametrize("part", ["set folder", "manifest", "patch file"])
def test_a_set_others_may_write_is_refused(tmp_path, part):
    """Input: a safe --patchsets folder whose set folder, patchset.yaml or one patch file
    has o+w. Outcome: `apply` exits 4 in one line naming that path; nothing written."""
    pkg, sets, args = make_env(tmp_path)
    d = sets / "safety-set"
    target = {
        "set folder": d,
        "manifest": d / "patchset.yaml",
        "patch file": d / "patches" / "0002-pb.patch",
    }[part]
    target.chmod(target.stat().st_mode | 0o002)
    before = full_snapshot(pkg, with_state=True)
    code, out, err = run_cli("apply", *args)
    assert code == 4 and out == "" and err.count("\n") == 1
    assert err.startswith("sgpatch: error: refusing ") and f"`chmod o-w {target}`" in err
    assert full_snapshot(pkg, with_state=True) == before


@root_only
def test_a_set_another_user_planted_in_an_open_folder_is_never_used(tmp_path, monkeypatch):
    """Input: a world-writable folder on $SGPATCH_PATH in which user nobody (a real process
    with root dropped) plants a set named like the shipped one. Outcome: root's `apply` of
    that name exits 4 in one line and the tree is byte-identical: the planted set never runs."""
    pkg, _, _ = make_env(tmp_path)
    with reachable_dir() as open_dir:
        open_dir.chmod(0o777)
        planted = open_dir / "kimi-eagle3-sm120"
        subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             "mkdir", str(planted)],
            check=True,
        )  # fmt: skip
        assert planted.stat().st_uid == NOBODY
        before = full_snapshot(pkg, with_state=True)
        monkeypatch.setenv("SGPATCH_PATH", str(open_dir))
        code, out, err = run_cli("apply", "--set", "kimi-eagle3-sm120", "--sglang-dir", str(pkg))
        assert code == 4 and out == "" and err.count("\n") == 1
        assert f"refusing patch set folder {open_dir} (from $SGPATCH_PATH)" in err
        assert full_snapshot(pkg, with_state=True) == before


def test_a_user_set_shadowing_a_shipped_one_is_said_in_one_line(tmp_path):
    """Input: --patchsets holding a set named like the shipped kimi-eagle3-sm120; `show`
    and `list`. Outcome: exit 0 both, each with exactly one stderr line saying that set
    shadows the shipped one and that this run uses the user's; the user's set is shown."""
    shipped = (bundled_dir() / "kimi-eagle3-sm120" / "patchset.yaml").read_text()
    mine = tmp_path / "mine" / "kimi-eagle3-sm120"
    mine.mkdir(parents=True)
    src = bundled_dir() / "kimi-eagle3-sm120"
    for f in src.rglob("*"):
        if f.is_file():
            (mine / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            (mine / f.relative_to(src)).write_bytes(f.read_bytes())
    (mine / "patchset.yaml").write_text(shipped.replace("summary: ", "summary: MINE ", 1))
    note = (
        f"sgpatch: note: set kimi-eagle3-sm120 from {mine} shadows the shipped set of that "
        "name; this run uses yours\n"
    )
    for argv in (("show", "kimi-eagle3-sm120"), ("list",)):
        code, out, err = run_cli(*argv, "--patchsets", str(mine.parent))
        assert code == 0 and err == note and "MINE" in out, argv
