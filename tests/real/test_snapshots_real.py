"""Untested versions on real SGLang trees: a release's tree labelled as a snapshot of main just
before it (`0.5.10.dev3+gabc1234` holding 0.5.10's files, what a checkout of main shortly before
that release looks like), and 0.5.23's tree labelled `0.5.24.dev12+g1a2b3c4` (main after the
last release). The answers are known from the releases themselves (shared/SGLANG.md: which
change upstream has from which release): status and dry runs, `apply --untested` refusing any
hunk whose place is not certain (on a real third-party stack), `port --to-tree` through a stop
and --continue, later snapshots and the next release, matrix with snapshot rows, bad input.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from helpers import one_line_error, run_cli, stack_set, tree_snapshot
from sgpatch.ops import matrix
from sgpatch.patchset.manifest import bundled_dir, load_manifest
from sgpatch.releases import cache as releases

from .intent import CHECKS, EXPECTED

SET = "kimi-eagle3-sm120"
SHIPPED = bundled_dir() / SET
KIMI, SIZES, WORLD, FUSION, NOMC, AUX = (
    "kimi-k25-eagle3-hooks",
    "sm120-symm-mem-sizes",
    "sm120-symm-mem-world-sizes",
    "sm120-flashinfer-allreduce-fusion",
    "sm120-symm-mem-two-shot-no-multicast",
    "eagle3-aux-capture-allreduce-fusion",
)
MEMBERS = matrix.member_filter(matrix.needed_files(load_manifest(SHIPPED / "patchset.yaml")))

# (the release whose files the tree holds, the label it gets, the variants it is planned with,
# the patches that conflict with those variants there)
SNAPSHOTS = [
    # main just before 0.5.10: the 0.5.9 variants; 0.5.10 has the Kimi hooks (#19689), and the
    # aux-capture patch's 0.5.9 hunks meet 0.5.10's changed capture code (the set has a 0.5.10
    # variant for that reason)
    ("0.5.10", "0.5.10.dev3+gabc1234", "0.5.9", {AUX}),
    # main just before 0.5.14: the 0.5.13 variants; 0.5.14 has the world sizes' .get (#24548)
    # and the aux capture (#28343). The 0.5.8 fusion file still places exactly, though 0.5.14
    # also gates SM12 in _resolve_backend: exact is not complete (the set's 0.5.14 variant)
    ("0.5.14", "0.5.14.dev2+gdef5678", "0.5.13", set()),
    # main after 0.5.23 (the example): the 0.5.23 variants
    ("0.5.23", "0.5.24.dev12+g1a2b3c4", "0.5.23", set()),
]


def relabel(root: Path, version: str) -> Path:
    (root / "_version.py").write_text(f"__version__ = version = '{version}'\n")
    return root


def expected_states(release: str, conflicts: set[str]) -> dict[str, str]:
    """upstream where the release has the change (the shipped set's own measurement), a
    conflict where the nearest variants meet changed code, pending everywhere else."""
    return {
        pid: "upstream" if state == "upstream" else "conflict" if pid in conflicts else "pending"
        for pid, state in EXPECTED[release].items()
    }


@pytest.mark.parametrize(("release", "label", "lower", "conflicts"), SNAPSHOTS)
def test_status_and_dry_run_on_a_snapshot(release_tree, release, label, lower, conflicts):
    """Input: status --check --json, then `apply --dry-run --untested`, on `release`'s files
    labelled `label` (optional patch chosen). Outcome: one line says the tree is planned with
    the `lower` variants (JSON: `untested`); each patch is upstream exactly where the release
    has the change, a conflict where listed, pending elsewhere; --check exits 3 with a
    conflict, else 1; the dry run exits 3 or 0 alike and writes nothing."""
    root = relabel(release_tree(release, members=MEMBERS), label)
    args = ("--set", SET, "--sglang-dir", str(root), "--with", NOMC)
    code, out, err = run_cli("status", *args, "--check", "--json")
    assert code == (3 if conflicts else 1), err
    assert (
        f"sgpatch: {label} is not a release {SET} was checked on; planning with the {lower} "
        "variants"
    ) in err.splitlines()
    doc = json.loads(out)["sets"][0]
    assert doc["untested"] == {"version": label, "variants_of": lower}
    assert {p["id"]: p["state"] for p in doc["patches"]} == expected_states(release, conflicts)
    before = tree_snapshot(root)
    code, _out, err = run_cli("apply", *args, "--dry-run", "--untested")
    assert code == (3 if conflicts else 0), err
    assert tree_snapshot(root) == before


def test_untested_apply_writes_what_the_set_writes_on_the_release(release_tree):
    """Input: `apply --untested` (optional patch chosen) on 0.5.23's files labelled
    0.5.24.dev12+g1a2b3c4, where every hunk of the 0.5.23 variants is exact and unique.
    Outcome: exit 0; every file holds exactly what the shipped set writes on 0.5.23 itself,
    each applied patch meets its intent check; the ledger records the untested apply."""
    snap = relabel(release_tree("0.5.23", members=MEMBERS), "0.5.24.dev12+g1a2b3c4")
    ref = release_tree("0.5.23", members=MEMBERS)
    code, _out, err = run_cli("apply", "--set", SET, "--sglang-dir", str(snap), "--with", NOMC,
                              "--untested")  # fmt: skip
    assert code == 0, err
    assert run_cli("apply", "--set", SET, "--sglang-dir", str(ref), "--with", NOMC)[0] == 0
    mine = {k: v for k, v in tree_snapshot(snap).items() if k != "_version.py"}
    theirs = {k: v for k, v in tree_snapshot(ref).items() if k != "_version.py"}
    assert mine == theirs
    for pid in (SIZES, FUSION, NOMC):
        for check in CHECKS[pid]:
            check(snap)
    doc = json.loads(run_cli("status", "--set", SET, "--sglang-dir", str(snap), "--json")[1])
    assert doc["sets"][0]["applied_untested"] == {
        "version": "0.5.24.dev12+g1a2b3c4",
        "variants_of": "0.5.23",
    }


# slime's 0.5.13 stack on 0.5.13.post1's files (main shortly before 0.5.13.post1): two of its
# patches place only by their line numbers there. sglang-top-p's hunk in
# multi_tokenizer_mixin.py matches two places; sglang-release-hicache's one-line-context hunk
# in server_args.py (`)` + `parser.add_argument(`) matches 362.
SLIME_UNCERTAIN = {
    "sglang-top-p": "srt/managers/multi_tokenizer_mixin.py hunk #1: the lines it changes are at 2",
    "sglang-release-hicache": "srt/server_args.py hunk #2: the lines it changes are at 362",
}


def test_untested_apply_refuses_a_real_stack_s_uncertain_hunks(release_tree, tmp_path):
    """Input: slime's 0.5.13 stack (a set `==0.5.13`) on 0.5.13.post1's tree labelled
    0.5.13.post1.dev4+g0a1b2c3. Outcome: `apply --untested` exits 4 (ambiguous) naming the
    two hunks found at several places (its first patch conflicts there anyway, and its last,
    exact and unique, is pending: the whole set is refused as usual); the tree byte for byte
    unchanged. The same stack checked on 0.5.13.post1 (a set `==0.5.13.post1`, the tree
    labelled so) plans both pending there: the snapshot's certainty rule refuses them."""
    sets = tmp_path / "sets"
    stack_set("slime", "0.5.13", sets)
    root = relabel(release_tree("0.5.13.post1"), "0.5.13.post1.dev4+g0a1b2c3")
    args = ("--set", "slime", "--patchsets", str(sets), "--sglang-dir", str(root))
    before = tree_snapshot(root)
    code, out, err = run_cli("apply", *args, "--untested", "--json")
    assert code == 4, err
    plans = {p["id"]: p for p in json.loads(out)["patches"]}
    assert {pid for pid, p in plans.items() if p["how"] == "ambiguous"} == set(SLIME_UNCERTAIN)
    for pid, why in SLIME_UNCERTAIN.items():
        assert plans[pid]["note"].startswith(why), plans[pid]["note"]
    assert plans["sglang"]["state"] == "conflict"
    assert plans["sglang-pull-weights"]["state"] == "pending"
    assert json.loads(out)["written"] == [] and tree_snapshot(root) == before
    yaml = sets / "slime/patchset.yaml"
    yaml.write_text(yaml.read_text().replace('"==0.5.13"', '"==0.5.13.post1"'))
    relabel(root, "0.5.13.post1")
    code, out, err = run_cli("status", *args, "--json")
    states = {p["id"]: p["state"] for p in json.loads(out)["sets"][0]["patches"]}
    assert {states[p] for p in SLIME_UNCERTAIN} == {"pending"}, err


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A release cache of this test's own that reads the real wheels (a symlink to the cached
    wheels folder), so the snapshots port keeps do not land in the shared cache."""
    for v in ("0.5.9", "0.5.10", "0.5.13", "0.5.14", "0.5.1.post3", "0.5.2"):
        releases.wheel_path(v)  # in the shared cache, fetched if missing
    c = tmp_path / "cache"
    c.mkdir()
    os.symlink(releases.cache_dir() / "wheels", c / "wheels")
    monkeypatch.setenv("SGPATCH_CACHE", str(c))
    return c


def port_json(*argv: str) -> tuple[int, dict]:
    code, out, err = run_cli("port", "--offline", "--json", *argv)
    assert out, err
    return code, json.loads(out)


def test_port_onto_a_snapshot_through_a_stop_then_later_snapshots(
    own_cache, release_tree, tmp_path
):
    """Input: the shipped set (a copy) ported --to-tree onto 0.5.10's tree labelled
    0.5.10.dev3+gabc1234. Outcome: carried from the 0.5.9 variants (merge bases 0.5.9); only
    the aux-capture patch stops (exit 3, the set unchanged); fixed with what the shipped set's
    0.5.10 variant writes, --continue writes variants naming 0.5.10.dev3 alone (the set's own
    range unchanged); then the snapshot is checked: plain apply writes what the shipped set
    writes on 0.5.10; a later snapshot (0.5.10.dev9) is planned with the 0.5.10.dev3 variants
    and `apply --untested` writes the same; on the release 0.5.10 its own variants take over."""
    sets = tmp_path / "sets"
    set_dir = sets / SET
    shutil.copytree(SHIPPED, set_dir)
    range_before = str(load_manifest(set_dir / "patchset.yaml").sglang)
    snap = relabel(release_tree("0.5.10"), "0.5.10.dev3+gabc1234")
    w = tmp_path / "w"
    files_before = {p: p.read_bytes() for p in set_dir.rglob("*") if p.is_file()}
    code, doc = port_json("--set", SET, "--patchsets", str(sets), "--to-tree", str(snap),
                          "--workspace", str(w))  # fmt: skip
    assert code == 3, doc
    step = {p["id"]: p for p in doc["steps"][0]["patches"]}
    assert step[KIMI]["outcome"] == "upstream" and step[AUX]["outcome"] == "conflict"
    assert {step[p]["outcome"] for p in (SIZES, WORLD, FUSION, NOMC)} == {"carried"}
    assert {step[p]["base"] for p in (SIZES, WORLD, FUSION, NOMC, AUX)} == {"0.5.9"}
    assert {p: p.read_bytes() for p in set_dir.rglob("*") if p.is_file()} == files_before
    ref = release_tree("0.5.10")
    assert run_cli("apply", "--set", SET, "--sglang-dir", str(ref), "--with", NOMC)[0] == 0
    aux = "srt/models/deepseek_v2.py"
    (w / "sglang" / aux).write_bytes((ref / aux).read_bytes())
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 0, err
    m = load_manifest(set_dir / "patchset.yaml")
    assert str(m.sglang) == range_before
    for pid in (SIZES, WORLD, FUSION, NOMC, AUX):
        assert str(m.patch(pid).variants[0].sglang) == "==0.5.10.dev3", pid
    assert not (w / "sglang" / ".sgpatch").exists()
    args = ("--set", SET, "--patchsets", str(sets), "--with", NOMC)
    code, _out, err = run_cli("apply", *args, "--sglang-dir", str(snap))
    assert code == 0 and "planning with" not in err, err
    touched = [aux, "srt/layers/communicator.py",
               "srt/distributed/device_communicators/all_reduce_utils.py",
               "srt/distributed/device_communicators/torch_symm_mem.py"]  # fmt: skip
    for rel in touched:
        assert (snap / rel).read_bytes() == (ref / rel).read_bytes(), rel
    later = relabel(release_tree("0.5.10", members=MEMBERS), "0.5.10.dev9+g9999999")
    doc = json.loads(run_cli("status", *args, "--sglang-dir", str(later), "--json")[1])
    assert doc["sets"][0]["untested"]["variants_of"] == "0.5.10.dev3"
    assert run_cli("apply", *args, "--sglang-dir", str(later), "--untested")[0] == 0
    for rel in touched:
        assert (later / rel).read_bytes() == (ref / rel).read_bytes(), rel
    release = release_tree("0.5.10", members=MEMBERS)
    doc = json.loads(run_cli("status", *args, "--sglang-dir", str(release), "--json")[1])
    variants = {p["id"]: p["variant"] for p in doc["sets"][0]["patches"]}
    assert doc["sets"][0]["untested"] is None
    assert variants[AUX] == "patches/0.5.10/0006-eagle3-aux-capture-allreduce-fusion.patch"


def test_port_onto_a_snapshot_lints_what_exact_placement_cannot_see(
    own_cache, release_tree, tmp_path
):
    """Input: the shipped set (a copy) ported --to-tree onto 0.5.14's tree labelled
    0.5.14.dev2+gdef5678, planned with the 0.5.13 variants. Outcome: the world sizes and the
    aux capture are upstream (0.5.14 has both); the fusion gate's 0.5.8 file places exactly
    (kept 2, merged 0), but lint on the snapshot finds its probe false with the set applied
    (0.5.14 also rejects SM12 in `_resolve_backend`, which that file predates), so port stops
    on it (exit 3) with lint's reason, and the set is unchanged."""
    sets = tmp_path / "sets"
    shutil.copytree(SHIPPED, sets / SET)
    before = {p: p.read_bytes() for p in (sets / SET).rglob("*") if p.is_file()}
    snap = relabel(release_tree("0.5.14"), "0.5.14.dev2+gdef5678")
    w = tmp_path / "w"
    code, doc = port_json("--set", SET, "--patchsets", str(sets), "--to-tree", str(snap),
                          "--workspace", str(w))  # fmt: skip
    assert code == 3, doc
    assert doc["tree"]["variants_of"] == "0.5.13"
    step = {p["id"]: p for p in doc["steps"][0]["patches"]}
    assert {pid for pid, p in step.items() if p["outcome"] == "upstream"} == {KIMI, WORLD, AUX}
    fusion = step[FUSION]
    assert (fusion["outcome"], fusion["hunks_kept"], fusion["hunks_merged"]) == ("conflict", 2, 0)
    # the stop is on the fusion patch's probe (since the probe became a workspace file: the
    # probe step names it, with lint's reason, instead of a "lint:" problem of the files)
    assert "probe" in json.dumps(fusion), fusion
    assert {p: p.read_bytes() for p in (sets / SET).rglob("*") if p.is_file()} == before


def test_a_real_stack_onto_a_snapshot_carries_by_itself(own_cache, release_tree, tmp_path):
    """Input: AReaL's 0.5.1.post3 stack ported --to-tree onto 0.5.2's tree labelled
    0.5.2.dev5+gabcdef0 (AReaL ported it to 0.5.2 by hand). Outcome: exit 0 without a stop;
    one `==0.5.2.dev5` variant; plain apply on the snapshot then writes exactly the workspace's
    files."""
    sets = tmp_path / "sets"
    set_dir = stack_set("areal", "0.5.1.post3", sets)
    snap = relabel(release_tree("0.5.2"), "0.5.2.dev5+gabcdef0")
    w = tmp_path / "w"
    code, doc = port_json("--set", "areal", "--patchsets", str(sets), "--to-tree", str(snap),
                          "--workspace", str(w))  # fmt: skip
    assert code == 0, doc
    (patch,) = load_manifest(set_dir / "patchset.yaml").patches
    assert [str(v.sglang) for v in patch.variants] == ["==0.5.2.dev5", "==0.5.1.post3"]
    assert run_cli("apply", "--set", "areal", "--patchsets", str(sets), "--sglang-dir",
                   str(snap))[0] == 0  # fmt: skip
    carried = doc["steps"][0]["patches"][0]["files_carried"]
    assert carried
    for rel in carried:
        assert (snap / rel).read_bytes() == (w / "sglang" / rel).read_bytes(), rel


def test_matrix_with_snapshot_rows(release_tree):
    """Input: `matrix --releases '>=0.5.9,<=0.5.10' --tree A --tree B --json`, A = 0.5.10's
    files as 0.5.10.dev3+gabc1234, B = 0.5.23's as 0.5.24.dev12+g1a2b3c4. Outcome: rows 0.5.9,
    0.5.10 (their own variants), then A and B with the variants they are planned with and the
    states status gives them; --fail-on conflict exits 3 (A's aux capture)."""
    a = relabel(release_tree("0.5.10", members=MEMBERS), "0.5.10.dev3+gabc1234")
    b = relabel(release_tree("0.5.23", members=MEMBERS), "0.5.24.dev12+g1a2b3c4")
    argv = ("matrix", "--set", SET, "--releases", ">=0.5.9,<=0.5.10", "--tree", str(a),
            "--tree", str(b))  # fmt: skip
    code, out, err = run_cli(*argv, "--json")
    assert code == 0, err
    rows = json.loads(out)["releases"]
    assert [(r["release"], r["variants_of"]) for r in rows] == [
        ("0.5.9", None),
        ("0.5.10", None),
        ("0.5.10.dev3+gabc1234", "0.5.9"),
        ("0.5.24.dev12+g1a2b3c4", "0.5.23"),
    ]
    trees = (SNAPSHOTS[0], SNAPSHOTS[2])
    for row, (release, _label, _lower, conflicts) in zip(rows[2:], trees, strict=True):
        states = {k: c["state"] for k, c in row["cells"].items()}
        assert states == expected_states(release, conflicts)
    assert run_cli(*argv, "--fail-on", "conflict")[0] == 3


def test_bad_snapshot_trees_are_one_line_exit_2(release_tree):
    """Input: status on a real 0.5.9 checkout without _version.py and outside git (no version
    at all); status and apply on 0.5.1's files labelled 0.5.1.dev2 (older than every version
    the set was checked on: it starts at 0.5.1). Outcome: exit 2, one line each, the trees
    unchanged."""
    nover = release_tree("0.5.9", "checkout", members=lambda n: "_version.py" not in n)
    before = tree_snapshot(nover)
    code, _out, err = run_cli("status", "--set", SET, "--sglang-dir", str(nover))
    assert code == 2 and "cannot tell the SGLang version" in one_line_error(err)
    assert tree_snapshot(nover) == before
    old = relabel(release_tree("0.5.1", members=MEMBERS), "0.5.1.dev2")
    before = tree_snapshot(old)
    for command in ("status", "apply"):
        code, _out, err = run_cli(command, "--set", SET, "--sglang-dir", str(old))
        assert code == 2
        assert one_line_error(err) == (
            f"sgpatch: error: patch set {SET} supports sglang >=0.5.1,<0.5.24; this tree is "
            "0.5.1.dev2, older than every version the set was checked on\n"
        )
    assert tree_snapshot(old) == before
    assert Version("0.5.1.dev2") < Version("0.5.1")
