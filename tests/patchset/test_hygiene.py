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
    mode and the fix (`list` still lists the shipped set on stdout); the tree byte-identical
    (nothing written)."""
    pkg, _, _ = make_env(tmp_path)
    sets = tmp_path / "open"
    write_set(sets)
    sets.chmod(0o777)
    monkeypatch.setenv("SGPATCH_PATH", str(sets))
    before = full_snapshot(pkg, with_state=True)
    line = _refusal(sets, "0777", f"patch set folder {sets} (from $SGPATCH_PATH)")
    code, out, err = run_cli("list")
    assert (code, err) == (4, line) and "kimi-eagle3-sm120" in out and "safety-set" not in out
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
        assert (code, err) == (4, _refusal(top, "0777", what, above=True))
        assert "safety-set" not in out and "kimi-eagle3-sm120" in out


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
    if part != "patch file":  # the set itself, or its manifest: "it", never "a folder above"
        what = f"patch set safety-set (--patchsets {sets})"
        what = what if part == "set folder" else f"the manifest of {what}"
        mode = f"{target.stat().st_mode & 0o7777:04o}"
        assert err == _refusal(target, mode, what)


def test_list_shows_every_set_but_the_one_others_may_write(tmp_path):
    """Input: --patchsets DIR holding two sets, one of them (`open-set`) a folder with mode
    0757. Outcome: `list` shows the other set and the shipped one on stdout, and names the
    open one in one error line (the set folder itself, `it`); exit 4; --json lists the
    readable sets and the refusal."""
    import json

    _pkg, sets, _args = make_env(tmp_path)
    write_set(sets / "x")  # sets/x/safety-set, renamed below
    (sets / "x" / "safety-set").rename(sets / "open-set")
    manifest = sets / "open-set" / "patchset.yaml"
    manifest.write_text(manifest.read_text().replace("name: safety-set", "name: open-set"))
    (sets / "open-set").chmod(0o757)
    code, out, err = run_cli("list", "--patchsets", str(sets))
    assert code == 4 and "safety-set" in out and "kimi-eagle3-sm120" in out
    assert "open-set" not in out
    assert err == _refusal(sets / "open-set", "0757", f"patch set open-set (--patchsets {sets})")
    code, out, _ = run_cli("list", "--patchsets", str(sets), "--json")
    doc = json.loads(out)
    assert code == 4 and doc["exit_code"] == 4
    assert [s["name"] for s in doc["sets"]] == ["kimi-eagle3-sm120", "safety-set"]
    (refused,) = doc["refused"]
    assert "refusing patch set open-set" in refused


def test_list_shows_every_set_but_one_whose_manifest_is_broken(tmp_path):
    """Input: --patchsets DIR whose set's patchset.yaml is not YAML. Outcome: the shipped set
    listed, one error line naming the manifest, exit 2."""
    _pkg, sets, _args = make_env(tmp_path)
    (sets / "safety-set" / "patchset.yaml").write_text("name: [unclosed\n")
    code, out, err = run_cli("list", "--patchsets", str(sets))
    assert code == 2 and "kimi-eagle3-sm120" in out and err.count("\n") == 1
    assert err.startswith("sgpatch: error: ") and "patchset.yaml" in err


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
