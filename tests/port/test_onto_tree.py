"""`sgpatch port --to-tree DIR` on synthetic releases (tiny wheels in a private cache,
--offline) and synthetic snapshot trees (a release's files labelled `1.2.dev3+gabc1234`, what a
checkout of main shortly before 1.2 looks like): the snapshot kept in the cache, patches carried
from the nearest lower checked version, a stop and --continue, variants that name the snapshot
alone, later snapshots and the next release. Real trees: tests/real/test_snapshots_real.py."""

from __future__ import annotations

import json
from pathlib import Path

from packaging.version import Version

from helpers import (
    FIXED12,
    V10,
    V11,
    V12,
    V13,
    make_set,
    one_line_error,
    release_files,
    run_cli,
    snapshot,
    tree_snapshot,
)
from sgpatch.patchset.manifest import load_manifest


def snapshot_tree(where: Path, text: str, version: str) -> Path:
    """A package tree holding a release's files with `version` in its _version.py."""
    for name, data in release_files(text, version).items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_bytes(data)
    return where / "sglang"


def port_tree(d: Path, tree: Path, w: Path, *extra: str) -> tuple[int, dict]:
    code, out, _err = run_cli("port", "--offline", "--json", "--set", "demo", "--patchsets",
                              str(d.parent), "--to-tree", str(tree), "--workspace", str(w),
                              *extra)  # fmt: skip
    return code, json.loads(out)


def outcomes(doc: dict) -> dict[str, str]:
    return {p["id"]: p["outcome"] for p in doc["steps"][-1]["patches"]}


def inserted(before: str, after: str) -> list[str]:
    """The lines `after` adds to `before` (port only ever inserts whole variant lines)."""
    old = before.splitlines()
    new = after.splitlines()
    for line in old:
        new.remove(line)
    return new


def test_port_onto_a_snapshot_through_a_stop_and_continue(cache, tmp_path):
    """Input: set `demo` (checked on 1.0) ported --to-tree onto 1.2's files labelled
    1.2.dev3+gabc1234. Outcome: the tree is kept as snapshot 1.2.dev3 in the cache and the
    patches come from the 1.0 variants; `first` stops (exit 3; the set and the tree
    unchanged); fixed in W, --continue writes variants that name 1.2.dev3 alone (a new file
    for `first`, based on the snapshot; `second`'s 1.0 file as it is), every other byte of the
    manifest kept, the set's range too; then status finds the tree checked and plain `apply`
    writes exactly W's file."""
    d = make_set(tmp_path)
    tree = snapshot_tree(tmp_path / "tree", V12, "1.2.dev3+gabc1234")
    manifest_before, tree_before = (d / "patchset.yaml").read_text(), tree_snapshot(tree)
    set_before = snapshot(d)
    w = tmp_path / "w"
    code, doc = port_tree(d, tree, w)
    assert code == 3, doc
    assert doc["tree"] == {
        "root": str(tree.resolve()),
        "version": "1.2.dev3+gabc1234",
        "snapshot": "1.2.dev3",
        "variants_of": "1.0",
        "kept": str(cache / "snapshots/sglang-1.2.dev3-py3-none-any.whl"),
    }
    assert outcomes(doc) == {"first": "conflict", "second": "carried"}
    assert {p["from_release"] for p in doc["steps"][0]["patches"]} == {"1.0"}
    assert snapshot(d) == set_before and tree_snapshot(tree) == tree_before
    assert (w / ".sgpatch-port/onto").read_text() == "1.2.dev3\n"
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 0, err
    new_file = "patches/1.2.dev3/0001-first.patch"
    assert inserted(manifest_before, (d / "patchset.yaml").read_text()) == [
        f'      - {{sglang: "==1.2.dev3", patch: {new_file}, base: "1.2.dev3"}}',
        '      - {sglang: "==1.2.dev3", patch: patches/1.0/0002-second.patch, base: "1.0"}',
    ]
    m = load_manifest(d / "patchset.yaml")
    assert str(m.sglang) == ">=1.0,<1.1"
    code, _out, err = run_cli("status", "--set", "demo", "--patchsets", str(d.parent),
                              "--sglang-dir", str(tree), "--check")  # fmt: skip
    assert code == 1 and "planning with" not in err
    code, _out, err = run_cli("apply", "--set", "demo", "--patchsets", str(d.parent),
                              "--sglang-dir", str(tree))  # fmt: skip
    assert code == 0, err
    assert (tree / "srt/mod.py").read_text() == FIXED12


def test_a_clean_snapshot_port_finishes_by_itself_and_stretches_no_range(cache, tmp_path):
    """Input: `demo` ported onto 1.1's files labelled 1.1.dev2+gabc (hunk 1 kept, hunk 2
    merged cleanly). Outcome: exit 0 without a stop; `first` gets a `==1.1.dev2` file,
    `second` a `==1.1.dev2` variant on its 1.0 file; `second`'s `>=1.0,<1.1` stays as it is
    (a release port to 1.1 stretches it to `<=1.1`), and so does the set's range."""
    d = make_set(tmp_path)
    tree = snapshot_tree(tmp_path / "tree", V11, "1.1.dev2+gabc")
    code, doc = port_tree(d, tree, tmp_path / "w")
    assert code == 0, doc
    m = load_manifest(d / "patchset.yaml")
    second = [str(v.sglang) for v in m.patch("second").variants]
    assert second == ["==1.1.dev2", ">=1.0,<1.1"]
    assert [str(v.sglang) for v in m.patch("first").variants] == ["==1.1.dev2", ">=1.0,<1.1"]
    assert str(m.sglang) == ">=1.0,<1.1"


def test_later_snapshots_use_it_and_the_next_release_takes_over(cache, tmp_path):
    """Input: after the port onto 1.2.dev3: a later snapshot (1.2's files as 1.2.dev7+gdef);
    then the release 1.2, ported --to as usual (it stops on `first` again, fixed the same way);
    then a snapshot after it (1.3.dev1). Outcome: 1.2.dev7 is planned with the 1.2.dev3
    variants (`apply --untested` writes W's file); `--to 1.2` carries from 1.0, not from the
    snapshot, and writes `==1.2` variants; 1.3.dev1 is then planned with the 1.2 variants."""
    d = make_set(tmp_path)
    tree = snapshot_tree(tmp_path / "tree", V12, "1.2.dev3+gabc1234")
    w = tmp_path / "w"
    assert port_tree(d, tree, w)[0] == 3
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    assert run_cli("port", "--continue", "--workspace", str(w))[0] == 0
    later = snapshot_tree(tmp_path / "later", V12, "1.2.dev7+gdef")
    args = ("--set", "demo", "--patchsets", str(d.parent), "--sglang-dir", str(later))
    doc = json.loads(run_cli("status", *args, "--json")[1])["sets"][0]
    assert doc["untested"] == {"version": "1.2.dev7+gdef", "variants_of": "1.2.dev3"}
    assert run_cli("apply", *args, "--untested")[0] == 0
    assert (later / "srt/mod.py").read_text() == FIXED12
    w2 = tmp_path / "w2"
    code, out, _err = run_cli("port", "--offline", "--json", "--set", "demo", "--patchsets",
                              str(d.parent), "--to", "1.2", "--workspace", str(w2))  # fmt: skip
    assert code == 3
    assert {p["from_release"] for p in json.loads(out)["steps"][0]["patches"]} == {"1.0"}
    (w2 / "sglang/srt/mod.py").write_text(FIXED12)
    assert run_cli("port", "--continue", "--workspace", str(w2))[0] == 0
    m = load_manifest(d / "patchset.yaml")
    assert m.sglang.contains(Version("1.2"))
    after = snapshot_tree(tmp_path / "after", V13, "1.3.dev1+g123")
    args = ("--set", "demo", "--patchsets", str(d.parent), "--sglang-dir", str(after))
    doc = json.loads(run_cli("status", *args, "--json")[1])["sets"][0]
    assert doc["untested"]["variants_of"] == "1.2"


def bad(tmp_path: Path, d: Path, *argv: str) -> str:
    """Run a port that must be refused: exit 2 with one line, no workspace, the set as it
    was. Returns the line."""
    before = snapshot(d)
    w = tmp_path / "w-bad"
    code, _out, err = run_cli("port", "--offline", "--set", "demo", "--patchsets",
                              str(d.parent), "--workspace", str(w), *argv)  # fmt: skip
    assert code == 2, err
    assert snapshot(d) == before and not w.exists()
    return one_line_error(err)


def test_bad_trees_are_refused_on_one_line(cache, tmp_path):
    """Input: --to-tree onto: a release's tree (1.2), a tree with no version, a tree older
    than every version the set was checked on (0.9.dev1), a tree with the set applied, a
    folder that is no SGLang tree. Outcome: exit 2, one line each, nothing written (no
    workspace, the set and the tree unchanged)."""
    d = make_set(tmp_path)
    release = snapshot_tree(tmp_path / "release", V12, "1.2")
    said = bad(tmp_path, d, "--to-tree", str(release))
    assert f"is a release, not a snapshot: `sgpatch port --set demo --patchsets {d.parent} --to " \
        f"1.2 --workspace {tmp_path / 'w-bad'}`" in said  # fmt: skip
    unversioned = snapshot_tree(tmp_path / "nover", V12, "1.2.dev1")
    (unversioned / "_version.py").unlink()
    assert "cannot tell the SGLang version" in bad(tmp_path, d, "--to-tree", str(unversioned))
    old = snapshot_tree(tmp_path / "old", V10, "0.9.dev1")
    assert "older than every version the set was checked on" in bad(
        tmp_path, d, "--to-tree", str(old)
    )
    applied = snapshot_tree(tmp_path / "applied", V10, "1.0.post1.dev2+gabc")
    assert run_cli("apply", "--set", "demo", "--patchsets", str(d.parent), "--sglang-dir",
                   str(applied), "--untested")[0] == 0  # fmt: skip
    before = tree_snapshot(applied)
    assert "patch set(s) demo are applied there" in bad(tmp_path, d, "--to-tree", str(applied))
    assert tree_snapshot(applied) == before
    nowhere = tmp_path / "empty"
    nowhere.mkdir()
    assert "not an SGLang tree" in bad(tmp_path, d, "--to-tree", str(nowhere))


def test_flags_that_do_not_go_with_to_tree(cache, tmp_path):
    """Input: --to-tree with --to, with --step; --continue with --to-tree. Outcome: exit 2,
    one line each, nothing written."""
    d = make_set(tmp_path)
    tree = snapshot_tree(tmp_path / "tree", V12, "1.2.dev3")
    assert "choose one" in bad(tmp_path, d, "--to-tree", str(tree), "--to", "1.2")
    assert "--step walks releases" in bad(tmp_path, d, "--to-tree", str(tree), "--step")
    code, _out, err = run_cli("port", "--continue", "--workspace", str(tmp_path / "w"),
                              "--to-tree", str(tree))  # fmt: skip
    assert code == 2 and "take only --workspace" in one_line_error(err)


def test_another_snapshot_under_the_same_version_is_refused(cache, tmp_path):
    """Input: a snapshot 1.2.dev3 kept (ported once, aborted), then another tree also labelled
    1.2.dev3 but holding other files (1.3's). Outcome: the second port exits 2 with one line
    naming the kept archive; the kept snapshot is unchanged; the same tree again is fine."""
    d = make_set(tmp_path)
    tree = snapshot_tree(tmp_path / "tree", V12, "1.2.dev3+gabc")
    assert port_tree(d, tree, tmp_path / "w")[0] == 3
    assert run_cli("port", "--abort", "--workspace", str(tmp_path / "w"))[0] == 0
    kept = cache / "snapshots/sglang-1.2.dev3-py3-none-any.whl"
    data = kept.read_bytes()
    other = snapshot_tree(tmp_path / "other", V13, "1.2.dev3+gfff")
    line = bad(tmp_path, d, "--to-tree", str(other))
    assert f"already keeps another snapshot 1.2.dev3 ({kept})" in line
    assert kept.read_bytes() == data
    assert port_tree(d, tree, tmp_path / "w")[0] == 3
