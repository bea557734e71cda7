"""`sgpatch port` and `sgpatch refresh` on real SGLang history (wheels from the release cache).

The shipped kimi-eagle3-sm120 set is cut down to what it knew at 0.5.9 (only the variants that
cover 0.5.9, narrowed to >=0.5.9,<0.5.10), then ported to later releases; the result is checked
against what the shipped set does there (matrix states, lint, and the bytes `sgpatch apply`
writes). Where port cannot match the shipped set, the test pins exactly where and why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from helpers import sgpatch
from sgpatch.diff.canonical import FileDiff, canonical_diff, render
from sgpatch.diff.paths import package_mapper
from sgpatch.diff.unified import decode, encode, read_patch, split_lines
from sgpatch.ops import lint, matrix
from sgpatch.patchset.manifest import bundled_dir, load_manifest, select_variant
from sgpatch.placement.engine import apply_hunks
from sgpatch.port import folds as folds_mod
from sgpatch.port import merge
from sgpatch.releases import cache as releases
from sgpatch.state import ledger as ledger_mod

from .intent import RELEASES

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
ALL = (KIMI, SIZES, WORLD, FUSION, NOMC, AUX)


def only_059(dest: Path) -> Path:
    """A copy of the shipped set that only knows 0.5.9."""
    d = dest / SET
    shutil.copytree(SHIPPED, d)
    doc = yaml.safe_load((d / "patchset.yaml").read_text())
    doc["sglang"] = ">=0.5.9,<0.5.10"
    for p in doc["patches"]:
        p["variants"] = [
            {**v, "sglang": ">=0.5.9,<0.5.10"}
            for v in p["variants"]
            if "patch" in v and SpecifierSet(v["sglang"]).contains(Version("0.5.9"))
        ]
    (d / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, width=200))
    return d


def port_json(capsys, sets: Path, version: str, w: Path, *extra: str) -> tuple[int, dict]:
    """`port --offline --to version` into `w` after fetching every release from 0.5.9 to
    `version`, so what port sees in the cache is the same from any cache."""
    for v in RELEASES:
        if Version("0.5.9") <= Version(v) <= Version(version):
            releases.wheel_path(v)
    code = sgpatch(
        "port", "--set", SET, "--patchsets", str(sets), "--to", version, "--offline",
        "--workspace", str(w), "--json", *extra,
    )  # fmt: skip
    return code, json.loads(capsys.readouterr().out)


def fetch_between(a: str, b: str) -> None:
    """Every final release from A to B (either order) in the cache, so what `port --offline`
    knows (the nearest releases, the ranges it writes) is the same from any cache."""
    lo, hi = sorted((Version(a), Version(b)))
    for v in RELEASES:
        if lo <= Version(v) <= hi:
            releases.wheel_path(v)


def continue_json(capsys, w: Path) -> tuple[int, dict]:
    code = sgpatch("port", "--continue", "--workspace", str(w), "--json")
    return code, json.loads(capsys.readouterr().out)


def applied_tree(tmp: Path, set_dir: Path, version: str, name: str = SET) -> Path:
    """`sgpatch apply` of the set (optional patches included) to the files of a fresh tree."""
    manifest = load_manifest(set_dir / "patchset.yaml")
    members = matrix.member_filter(matrix.needed_files(manifest))
    root = releases.extract(version, tmp / "tree", "site-packages", members)
    with_opt = [a for p in manifest.patches if p.optional for a in ("--with", p.id)]
    args = ["apply", "--set", name, "--sglang-dir", str(root), "--patchsets", str(set_dir.parent)]
    assert sgpatch(*args, *with_opt) == 0
    return root


def git_apply(files: dict[str, bytes | None], patch: Path, tmp: Path) -> dict[str, bytes | None]:
    """The files after `git apply` of `patch` (an independent engine), outside any repository."""
    shutil.rmtree(tmp, ignore_errors=True)
    for rel, data in files.items():
        if data is not None:
            (tmp / "python/sglang" / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "python/sglang" / rel).write_bytes(data)
    tmp.mkdir(parents=True, exist_ok=True)
    only = [f"--include=python/sglang/{rel}" for rel in files]
    subprocess.run(["git", "apply", *only, str(patch)], cwd=tmp, check=True, capture_output=True)
    return {
        rel: (tmp / "python/sglang" / rel).read_bytes()
        if (tmp / "python/sglang" / rel).is_file()
        else None
        for rel in files
    }


def merge_file(base: bytes, ours: bytes, theirs: bytes, tmp: Path) -> tuple[bytes, int]:
    """Plain `git merge-file -p` (ours = the release, theirs = the patched base)."""
    tmp.mkdir(parents=True, exist_ok=True)
    for n, d in (("o", ours), ("b", base), ("t", theirs)):
        (tmp / n).write_bytes(d)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    p = subprocess.run(["git", "merge-file", "-p", "o", "b", "t"], cwd=tmp, env=env,
                       capture_output=True, check=False)  # fmt: skip
    return p.stdout, p.returncode


def check_against_merge_file(step: dict, w: Path, set_dir: Path, version: str, tmp: Path) -> int:
    """Every file of a carried (or partly carried) patch that no other patch touches, and that
    a plain three-way merge (base = the variant's base release, `git apply` for the patched
    side) resolves cleanly, must be in W with exactly the merged bytes. Returns how many were
    compared."""
    owners: dict[str, list[str]] = {}
    patches = {}
    for p in step["patches"]:
        if p["from_variant"] is None:
            continue
        patches[p["id"]] = p
        for f in touched(set_dir / p["from_variant"]):
            owners.setdefault(f, []).append(p["id"])
    compared = 0
    for rel, ids in owners.items():
        p = patches[ids[0]]
        if len(ids) > 1 or any(pr["file"] == rel for pr in p["problems"]):
            continue
        if rel in p["files_waiting"]:
            continue
        base = releases.read_member(p["base"], rel) if _has(p["base"], rel) else None
        ours = releases.read_member(version, rel) if _has(version, rel) else None
        if base is None or ours is None:
            continue
        theirs = git_apply({rel: base}, set_dir / p["from_variant"], tmp / "apply")[rel]
        merged, n = merge_file(base, ours, theirs or b"", tmp / "merge")
        if n == 0:
            assert (w / "sglang" / rel).read_bytes() == merged, rel
            compared += 1
    return compared


def _has(version: str, rel: str) -> bool:
    return f"sglang/{rel}" in releases.record(version)


def touched(patch: Path) -> list[str]:
    p = read_patch(patch)
    mapper = package_mapper(p.name)
    return sorted({mapper(f.path) for f in p.files})


def fix_with(w: Path, fixed: dict[str, bytes | None]) -> None:
    """Resolve by hand: write these files into the workspace (None: delete)."""
    for rel, data in fixed.items():
        target = w / "sglang" / rel
        if data is None:
            target.unlink(missing_ok=True)
        else:
            target.write_bytes(data)


def assert_apply_gives_workspace(tmp: Path, set_dir: Path, version: str, w: Path, name: str):
    """Applying the ported set to a pristine tree writes exactly what the workspace holds."""
    root = applied_tree(tmp, set_dir, version, name)
    m = load_manifest(set_dir / "patchset.yaml")
    files = set()
    for spec in m.patches:
        v = select_variant(spec, Version(version))
        if v is not None and v.patch is not None:
            files |= set(touched(v.patch))
    assert files
    for rel in files:
        got = (root / rel).read_bytes() if (root / rel).exists() else None
        want = (w / "sglang" / rel).read_bytes() if (w / "sglang" / rel).exists() else None
        assert got == want, rel


# Where the ported set's bytes differ from the shipped set's on a release: nowhere. From 0.5.14
# upstream's flashinfer_comm_fusion._resolve_backend also rejects SM12, which a carry of the
# 0.5.9 variant (older than that code) cannot know; lint on the release catches it (the probe
# is false with the set applied), so port reopens the fusion patch and the hand fix (the
# shipped files) adds the change. On 0.5.23 the gate moved to add_norm.py: fixed the same way.
DIFFERS: dict[str, set[str]] = {"0.5.10": set(), "0.5.14": set(), "0.5.16": set(), "0.5.23": set()}


@pytest.mark.parametrize("version", sorted(DIFFERS, key=Version))
def test_port_the_059_set_like_a_rebase(version, tmp_path, capsys):
    """Input: the set as it was at 0.5.9, ported to `version` into a workspace. Outcome: per
    patch a decision that agrees with the shipped set's state there (upstream <-> upstream,
    carried or needs a hand <-> pending); every carried file a plain `git merge-file` resolves
    is in W byte for byte; where a hand is needed (exit 3, set unchanged) the test fixes it with
    the shipped set's files and --continue writes the set (exit 0); then `sgpatch apply` of the
    ported set writes exactly W's files, and the shipped set's bytes except where DIFFERS says."""
    sets = tmp_path / "sets"
    set_dir = only_059(sets)
    snapshot = {p: p.read_bytes() for p in set_dir.rglob("*") if p.is_file()}
    w = tmp_path / "w"
    code, doc = port_json(capsys, sets, version, w)
    step = doc["steps"][-1]
    shipped = matrix.compute(load_manifest(SHIPPED / "patchset.yaml"), [Version(version)], 1)[0]
    for p in step["patches"]:
        state = shipped.cells[p["id"]].state
        assert (p["outcome"] == "upstream") == (state == "upstream"), (p["id"], state)
    check_against_merge_file(step, w, set_dir, version, tmp_path / "m")
    if code == 3:
        assert {p: p.read_bytes() for p in set_dir.rglob("*") if p.is_file()} == snapshot
        ref = applied_tree(tmp_path / "shipped", SHIPPED, version)
        stopped = [p for p in step["patches"] if p["outcome"] == "conflict"]
        shipped_m = load_manifest(SHIPPED / "patchset.yaml")
        for p in stopped:
            v = select_variant(shipped_m.patch(p["id"]), Version(version))
            names = {pr["file"] for pr in p["problems"]} | set(touched(v.patch))
            fix_with(w, {rel: _shipped_bytes(ref, version, rel) for rel in names})
        code, doc = continue_json(capsys, w)
    assert code == 0, doc
    assert_apply_gives_workspace(tmp_path / "ported", set_dir, version, w, SET)
    a = applied_tree(tmp_path / "shipped2", SHIPPED, version)
    b = applied_tree(tmp_path / "ported2", set_dir, version)
    shipped_m = load_manifest(SHIPPED / "patchset.yaml")
    files = {rel for m in (shipped_m, load_manifest(set_dir / "patchset.yaml"))
             for spec in m.patches
             if (v := select_variant(spec, Version(version))) is not None and v.patch is not None
             for rel in touched(v.patch)}  # fmt: skip
    differ = {rel for rel in files if (a / rel).read_bytes() != (b / rel).read_bytes()}
    assert differ == DIFFERS[version]


def _shipped_bytes(ref: Path, version: str, rel: str) -> bytes | None:
    """The file as the shipped set leaves it (the release's own when the set does not touch
    it, so the minimal tree lacks it; None when the release has no such file)."""
    if (ref / rel).exists():
        return (ref / rel).read_bytes()
    return releases.read_member(version, rel) if _has(version, rel) else None


def test_port_step_from_059_walks_every_release(tmp_path, capsys):
    """Input: the 0.5.9 set, `port --step --to 0.5.11`. Outcome: it stops at 0.5.10 (the aux
    capture patch needs a hand; 0.5.10's workspace is left, the set unchanged); fixed with the
    shipped file and --continue'd, a second --step carries 0.5.10.post1 and 0.5.11 by itself,
    each step's variants written and lint-clean on that release; the ranges stay bounded."""
    sets = tmp_path / "sets"
    set_dir = only_059(sets)
    w = tmp_path / "w"
    code, doc = port_json(capsys, sets, "0.5.11", w, "--step")
    assert code == 3 and [s["to"] for s in doc["steps"]] == ["0.5.10"]
    ref = applied_tree(tmp_path / "shipped", SHIPPED, "0.5.10")
    fix_with(w, {"srt/models/deepseek_v2.py": (ref / "srt/models/deepseek_v2.py").read_bytes()})
    assert continue_json(capsys, w)[0] == 0
    code, doc = port_json(capsys, sets, "0.5.11", w, "--step")
    assert code == 0, doc
    assert [s["to"] for s in doc["steps"]] == ["0.5.10.post1", "0.5.11"]
    m = load_manifest(set_dir / "patchset.yaml")
    for spec in m.patches:
        for v in spec.variants:
            assert any(s.operator in ("<", "<=", "==") for s in v.sglang), (spec.id, v.sglang)
    rows = matrix.compute(m, [Version(v) for v in ("0.5.10", "0.5.10.post1", "0.5.11")], 1)
    assert [f for f in lint.check(m, rows) if f.level == "error"] == []


def test_a_jump_port_claims_only_the_releases_it_checked(tmp_path, capsys):
    """Input: the set as it was at 0.5.9, made `==0.5.9`, ported straight to 0.5.12 (0.5.10,
    0.5.10.post1 and 0.5.11 in between); what needs a hand fixed with the shipped set's files,
    --continue until the set is written. Outcome: the set's range takes in 0.5.12 and leaves
    the three releases in between out (`!=`), saying so; `sgpatch lint` and `sgpatch verify`
    pass on every release the range claims (0.5.9 and 0.5.12); every variant is bounded."""
    sets = tmp_path / "sets"
    set_dir = only_059(sets)
    y = set_dir / "patchset.yaml"
    y.write_text(y.read_text().replace('">=0.5.9,<0.5.10"', '"==0.5.9"'))
    w = tmp_path / "w"
    code, doc = port_json(capsys, sets, "0.5.12", w)
    ref = applied_tree(tmp_path / "shipped", SHIPPED, "0.5.12")
    shipped_m = load_manifest(SHIPPED / "patchset.yaml")
    for _ in range(3):  # a fix may reopen another patch (lint on the release): fix that too
        if code != 3:
            break
        for p in doc["steps"][-1]["patches"]:
            if p["outcome"] == "conflict":
                v = select_variant(shipped_m.patch(p["id"]), Version("0.5.12"))
                names = {pr["file"] for pr in p["problems"]} | set(touched(v.patch))
                fix_with(w, {rel: _shipped_bytes(ref, "0.5.12", rel) for rel in names})
        code, doc = continue_json(capsys, w)
    assert code == 0, doc
    m = load_manifest(y)
    assert str(m.sglang) == ">=0.5.9,!=0.5.10,!=0.5.10.post1,!=0.5.11,<=0.5.12"
    changes = doc["steps"][-1]["changes"]
    assert any("not ported to 0.5.10, 0.5.10.post1, 0.5.11" in c for c in changes), changes
    for spec in m.patches:
        for v in spec.variants:
            assert any(c.operator in ("<", "<=", "==") for c in v.sglang), (spec.id, v.sglang)
    args = ("--set", SET, "--patchsets", str(sets), "--offline")
    assert sgpatch("lint", *args) == 0, capsys.readouterr().err
    assert sgpatch("verify", *args, "--json") == 0
    verified = json.loads(capsys.readouterr().out)
    assert sorted(r["release"] for r in verified["releases"]) == ["0.5.12", "0.5.9"]


# ---------------------------------------------------------------------------------------------
# real third-party stacks (tests/data/stacks): nobody here wrote them

STACKS = Path(__file__).resolve().parents[1] / "data" / "stacks"


def stack_series(project: str, version: str) -> list[Path]:
    d = STACKS / project / version
    return [d / n for n in (d / "series").read_text().split()]


def stack_set(project: str, version: str, dest: Path) -> Path:
    """A set with one patch per stack file, `==version` each (the stack as the project has it)."""
    d = dest / project
    (d / "patches" / version).mkdir(parents=True)
    text = f'schema: 1\nname: {project}\nsummary: s\nsglang: "=={version}"\npatches:\n'
    for n, f in enumerate(stack_series(project, version), 1):
        pid = _pid(f)
        rel = f"patches/{version}/{n:04d}-{pid}.patch"
        shutil.copyfile(f, d / rel)
        text += (f"  - id: {pid}\n    summary: {f.name}\n    type: feature\n"
                 f"    upstream: {{status: pending}}\n    variants:\n"
                 f"      - {{sglang: \"=={version}\", patch: {rel}}}\n")  # fmt: skip
    (d / "patchset.yaml").write_text(text)
    return d


def take_folds(capsys, w: Path, doc: dict) -> list[str]:
    """At a stop where a file the person wrote defines a name twice in one body (slime's own
    0.5.15.post1 decode.py defines DecodePreallocQueue.release_memory_occupation twice: the
    fuzz trap in a real hand port), the person takes the fold the stop suggests, with the
    command it shows (`port --fold FILE --workspace W`): the definition Python runs replaces
    the earlier copy in its place, so the code runs as the project's does and nothing of its
    change is dropped. Returns the files folded."""
    folded = []
    for p in doc["steps"][-1]["patches"]:
        for pr in p["problems"]:
            if pr.get("fold") is None:
                continue
            assert merge.python_problem(pr["file"], (w / "sglang" / pr["file"]).read_bytes(),
                                        None) is not None  # fmt: skip
            assert sgpatch("port", "--fold", f"sglang/{pr['file']}", "--workspace", str(w)) == 0
            capsys.readouterr()
            folded.append(pr["file"])
    return folded


def _pid(f: Path) -> str:
    return re.sub(r"[^a-z0-9]+", "-", f.stem.lower()).strip("-")


def project_files(project: str, version: str, upto: str, rels) -> dict[str, bytes | None]:
    """The project's own files on `version`: its stack applied with `git apply` up to and
    including the patch file named `upto` (the same name in both releases' series)."""
    import tempfile

    state: dict[str, bytes | None] = {}

    def now(r: str) -> bytes | None:
        if r not in state:
            state[r] = releases.read_member(version, r) if _has(version, r) else None
        return state[r]

    with tempfile.TemporaryDirectory() as tmp:
        for f in stack_series(project, version):
            mine = touched(f)
            state.update(git_apply({r: now(r) for r in mine}, f, Path(tmp) / "a"))
            if f.name == upto:
                break
    return {r: now(r) for r in rels}


STACK_PAIRS = [("slime", "0.5.9", "0.5.10.post1"), ("slime", "0.5.13", "0.5.15.post1"),
               ("areal", "0.5.1.post3", "0.5.2")]  # fmt: skip


@pytest.mark.parametrize(("project", "a", "b"), STACK_PAIRS)
def test_port_a_real_stack_to_the_release_its_project_ported_it_to(project, a, b, tmp_path, capsys):
    """Input: a real project's stack for release A, ported to B (where the project ported it
    by hand). Outcome: every file port carried by itself that a plain `git merge-file`
    resolves is byte-identical to that merge; what needs a hand stops with exit 3 and the set
    unchanged; fixed with the project's own B files (its B stack applied up to the same patch)
    and --continue'd (where such a file defines a name twice, the fold the stop suggests taken
    with its command, FOLDS: no file's change is dropped), the set is written (exit 0) and
    `sgpatch apply` of it on pristine B writes exactly what the workspace holds."""
    sets = tmp_path / "sets"
    set_dir = stack_set(project, a, sets)
    fetch_between(a, b)
    snapshot = {p: p.read_bytes() for p in set_dir.rglob("*") if p.is_file()}
    w = tmp_path / "w"
    code = sgpatch("port", "--set", project, "--patchsets", str(sets), "--to", b, "--offline",
                   "--workspace", str(w), "--json")  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    step = doc["steps"][-1]
    compared = check_against_merge_file(step, w, set_dir, b, tmp_path / "m")
    assert compared > 0
    by_id = {_pid(s): s.name for s in stack_series(project, a)}
    folds, fixed = 0, {}  # files folded; what the person wrote
    for _round in range(len(by_id) + 1):  # each round fixes what stopped; waiting ones follow
        if code != 3:
            break
        stopped = [p for p in step["patches"] if p["outcome"] == "conflict"]
        assert stopped
        assert {p: p.read_bytes() for p in set_dir.rglob("*") if p.is_file()} == snapshot
        for p in stopped:
            files = [pr["file"] for pr in p["problems"]]
            mine = project_files(project, b, by_id[p["id"]], files)
            fix_with(w, mine)
            fixed.update(mine)
        code, doc = continue_json(capsys, w)
        folded = take_folds(capsys, w, doc) if code == 3 else []
        for rel in folded:  # the project's own file with the fold's changes, nothing else
            pristine = releases.read_member(b, rel) if _has(b, rel) else None
            fold = folds_mod.suggest(rel, fixed[rel], pristine)
            assert fold is not None and (w / "sglang" / rel).read_bytes() == fold.data, rel
        if folded:
            folds += len(folded)
            code, doc = continue_json(capsys, w)
        assert "steps" in doc, doc
        step = doc["steps"][-1]
    assert code == 0, doc
    assert folds == FOLDS.get((project, a, b), 0)
    assert_apply_gives_workspace(tmp_path / "ported", set_dir, b, w, project)


# Steps where the project's own file defines a name twice, so the person takes the stop's fold
FOLDS = {("slime", "0.5.13", "0.5.15.post1"): 1}


def plain_merges(project: str, a: str, b: str, tmp: Path) -> dict[str, tuple[bytes, bool]]:
    """Per file of the stack, its patches merged one after another with a plain `git
    merge-file` (base = A's file so far, ours = B's file so far, theirs = `git apply` of the
    patch to the base): (the merged bytes, whether every merge of it was clean)."""

    def read(version: str, rel: str) -> bytes | None:
        return releases.read_member(version, rel) if _has(version, rel) else None

    a_side: dict[str, bytes | None] = {}
    b_side: dict[str, bytes | None] = {}
    out: dict[str, tuple[bytes, bool]] = {}
    for patch in stack_series(project, a):
        rels = touched(patch)
        before = {r: a_side[r] if r in a_side else read(a, r) for r in rels}
        after = git_apply(before, patch, tmp / "apply")
        for r in rels:
            ours = b_side[r] if r in b_side else read(b, r)
            merged, n = merge_file(before[r] or b"", ours or b"", after[r] or b"", tmp / "merge")
            out[r] = (merged, n == 0 and out.get(r, (b"", True))[1])
            a_side[r], b_side[r] = after[r], merged
    return out


MULTI = [("0.5.13", "0.5.13.post1"), ("0.5.13", "0.5.15.post1"), ("0.5.15.post1", "0.5.16")]


@pytest.mark.parametrize(("a", "b"), MULTI)
def test_every_file_a_plain_merge_resolves_is_carried_before_any_fix(a, b, tmp_path, capsys):
    """Input: slime's four-patch stack for A ported to B (one stopped file used to hold every
    later patch that touched it back, whole). Outcome: before any --continue, every file that a
    plain per-file `git merge-file` of the stack resolves cleanly, into a file that compiles
    and defines no name twice, is carried (no problem, not waiting) and holds exactly the
    merged bytes in W; what waits is only what a stopped patch still holds."""
    sets = tmp_path / "sets"
    stack_set("slime", a, sets)
    w = tmp_path / "w"
    fetch_between(a, b)
    sgpatch("port", "--set", "slime", "--patchsets", str(sets), "--to", b, "--offline",
            "--workspace", str(w), "--json", "--no-finish")  # fmt: skip
    step = json.loads(capsys.readouterr().out)["steps"][-1]
    held = {pr["file"] for p in step["patches"] for pr in p["problems"]}
    waiting = {f for p in step["patches"] for f in p["files_waiting"]}
    assert waiting <= held  # a file waits only for a file a stopped patch holds
    checked = 0
    for rel, (merged, clean) in plain_merges("slime", a, b, tmp_path / "m").items():
        pristine = releases.read_member(b, rel) if _has(b, rel) else None
        if not clean or merge.python_problem(rel, merged, pristine) is not None:
            continue
        assert rel not in held | waiting, rel
        assert (w / "sglang" / rel).read_bytes() == merged, rel
        checked += 1
    assert checked >= 20


def test_port_follows_the_renames_a_real_stack_meets(tmp_path, capsys):
    """Input: slime's 0.5.9 stack ported to 0.5.10.post1, where upstream moved
    srt/metrics/collector.py and srt/managers/scheduler_metrics_mixin.py into
    srt/observability/ (renamed, their code kept). Outcome: the note says both renames were
    followed; the change lands in the new files (which compile and differ from the release's),
    nothing is written at the old names; slime's own hand port edits the new mixin file too."""
    sets = tmp_path / "sets"
    stack_set("slime", "0.5.9", sets)
    fetch_between("0.5.9", "0.5.10.post1")
    w = tmp_path / "w"
    sgpatch("port", "--set", "slime", "--patchsets", str(sets), "--to", "0.5.10.post1",
            "--offline", "--workspace", str(w), "--json", "--no-finish")  # fmt: skip
    step = json.loads(capsys.readouterr().out)["steps"][-1]
    (patch,) = [p for p in step["patches"] if "followed" in p["note"]]
    obs = "srt/observability/"
    moves = {
        "srt/metrics/collector.py": f"{obs}metrics_collector.py",
        "srt/managers/scheduler_metrics_mixin.py": f"{obs}scheduler_metrics_mixin.py",
    }
    held = {pr["file"]: pr["why"] for pr in patch["problems"]}
    for old, new in moves.items():
        assert f"followed upstream's rename of {old} to {new}" in patch["note"]
        assert not (w / "sglang" / old).exists()
        data = (w / "sglang" / new).read_bytes()
        assert data != releases.read_member("0.5.10.post1", new)
        if new in held:  # a hunk that needs a hand there: markers, as in any other file
            assert merge.marker_lines(data), held[new]
        else:
            compile(data, new, "exec")
    theirs = {t for f in stack_series("slime", "0.5.10.post1") for t in touched(f)}
    assert moves["srt/managers/scheduler_metrics_mixin.py"] in theirs


def test_backport_a_real_stack(tmp_path, capsys):
    """Input: AReaL's 0.5.2 stack ported --to 0.5.1.post3 (backwards). Outcome: exit 0 or 3 as
    for a forward port; after a deterministic fix (AReaL's own 0.5.1.post3 files), the set
    reaches down to 0.5.1.post3 and applying it there writes exactly the workspace's files."""
    sets = tmp_path / "sets"
    set_dir = stack_set("areal", "0.5.2", sets)
    fetch_between("0.5.1.post3", "0.5.2")
    w = tmp_path / "w"
    code = sgpatch("port", "--set", "areal", "--patchsets", str(sets), "--to", "0.5.1.post3",
                   "--offline", "--workspace", str(w), "--json")  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    if code == 3:
        files = [pr["file"] for p in doc["steps"][-1]["patches"] for pr in p["problems"]]
        fix_with(w, project_files("areal", "0.5.1.post3", "v0.5.1.post3.patch", files))
        code, doc = continue_json(capsys, w)
    assert code == 0, doc
    m = load_manifest(set_dir / "patchset.yaml")
    assert m.sglang.contains("0.5.1.post3") and m.sglang.contains("0.5.2")
    assert_apply_gives_workspace(tmp_path / "ported", set_dir, "0.5.1.post3", w, "areal")


def at_055(dest: Path) -> Path:
    """A copy of the shipped set as it was at 0.5.5 (`==0.5.5`; the symmetric-memory patches on
    torch_symm_mem.py), without the aux-capture fix (n/a before 0.5.9 by the set's choice, not
    because its file is missing), and with the Kimi hooks' 0.5.9 patch file kept beside their
    0.5.5 n/a variant (so port can tell its file, kimi_k25.py, is absent)."""
    d = dest / SET
    shutil.copytree(SHIPPED, d)
    doc = yaml.safe_load((d / "patchset.yaml").read_text())
    doc["sglang"] = "==0.5.5"
    doc["patches"] = [p for p in doc["patches"] if p["id"] != AUX]
    for p in doc["patches"]:
        keep = [{**v, "sglang": "==0.5.5"} for v in p["variants"]
                if SpecifierSet(v["sglang"]).contains(Version("0.5.5"))]  # fmt: skip
        if p["id"] == KIMI:
            keep += [v for v in p["variants"] if v.get("patch", "").startswith("patches/0.5.9/")]
        p["variants"] = keep
    (d / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, width=200))
    return d


def test_backport_follows_upstream_s_rename_of_a_file(tmp_path, capsys):
    """Input: the set as it was at 0.5.5 (at_055), ported --to 0.5.4.post2, where the
    symmetric-memory communicator is still symm_mem.py (0.5.4.post3 renamed it
    torch_symm_mem.py). Outcome: exit 0 by itself; the two patches on it follow the rename
    (their notes say so) and get 0.5.4.post2 files naming symm_mem.py; the Kimi hooks stay n/a
    (kimi_k25.py is not in 0.5.4.post2 either: their n/a variant reaches it); applying the
    ported set there writes the very bytes the shipped set (its own hand-made variants)
    writes, and both say the Kimi hooks are n/a."""
    set_dir = at_055(tmp_path / "sets")
    fetch_between("0.5.4.post2", "0.5.5")
    w = tmp_path / "w"
    code = sgpatch("port", "--set", SET, "--patchsets", str(set_dir.parent), "--to",
                   "0.5.4.post2", "--offline", "--workspace", str(w), "--json")  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, [(p["id"], p["problems"], p["moved"]) for p in doc["steps"][-1]["patches"]]
    notes = {p["id"]: p["note"] for p in doc["steps"][-1]["patches"]}
    symm = "srt/distributed/device_communicators/"
    followed = f"followed upstream's rename of {symm}torch_symm_mem.py to {symm}symm_mem.py"
    assert notes[WORLD] == notes[NOMC] == followed
    assert notes[KIMI] == "n/a on 0.5.5, and none of its files is in 0.5.4.post2 either"
    kimi = load_manifest(set_dir / "patchset.yaml").patch(KIMI)
    assert (
        select_variant(kimi, Version("0.5.4.post2")).na
        == select_variant(
            load_manifest(SHIPPED / "patchset.yaml").patch(KIMI), Version("0.5.4.post2")
        ).na
    )
    ported = applied_tree(tmp_path / "ported", set_dir, "0.5.4.post2")
    shipped = applied_tree(tmp_path / "shipped", SHIPPED, "0.5.4.post2")
    for rel in (f"{symm}symm_mem.py", f"{symm}all_reduce_utils.py", "srt/layers/communicator.py"):
        assert (ported / rel).read_bytes() == (shipped / rel).read_bytes(), rel
    assert (ported / f"{symm}symm_mem.py").read_bytes() != releases.read_member(
        "0.5.4.post2", f"{symm}symm_mem.py"
    )


def test_backport_to_before_a_patch_s_files_existed(tmp_path, capsys):
    """Input: the set as it was at 0.5.5 (at_055), ported --to 0.5.2: no symmetric-memory
    all-reduce yet (neither all_reduce_utils.py nor any symm_mem file), and an older fusion
    gate. Outcome: exit 3; the three symmetric-memory patches are n/a by themselves (notes: none
    of their files is in 0.5.2), the Kimi hooks stay n/a, the fusion gate needs a hand. Fixed
    with the shipped set's own 0.5.2 communicator.py, --continue writes the set (exit 0): an
    n/a variant for each of the four, a 0.5.2 patch for the gate; applied to 0.5.2 it writes
    the shipped set's very bytes, and it is n/a exactly where the shipped set is."""
    set_dir = at_055(tmp_path / "sets")
    fetch_between("0.5.2", "0.5.5")
    w = tmp_path / "w"
    code = sgpatch("port", "--set", SET, "--patchsets", str(set_dir.parent), "--to", "0.5.2",
                   "--offline", "--workspace", str(w), "--json")  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 3, doc
    out = {p["id"]: p for p in doc["steps"][-1]["patches"]}
    for pid in (SIZES, WORLD, NOMC):
        assert (
            out[pid]["outcome"] == "n/a"
            and "none of its files is in sglang 0.5.2" in (out[pid]["note"])
        )
    assert out[KIMI]["outcome"] == "n/a" and out[FUSION]["outcome"] == "conflict"
    shipped = applied_tree(tmp_path / "shipped", SHIPPED, "0.5.2")
    gate = "srt/layers/communicator.py"
    fix_with(w, {gate: (shipped / gate).read_bytes()})
    code, doc = continue_json(capsys, w)
    assert code == 0, doc
    ported = applied_tree(tmp_path / "ported", set_dir, "0.5.2")
    assert (ported / gate).read_bytes() == (shipped / gate).read_bytes()
    mine, theirs = (
        load_manifest(set_dir / "patchset.yaml"),
        load_manifest(SHIPPED / "patchset.yaml"),
    )
    for spec in mine.patches:
        here = select_variant(spec, Version("0.5.2"))
        there = select_variant(theirs.patch(spec.id), Version("0.5.2"))
        assert (here.patch is None) == (there.patch is None), spec.id


def _covering(spec, versions):
    """The first of `versions` (ascending) that the variant covers."""
    for r in versions:
        if spec.sglang.contains(r, prereleases=True):
            return r
    return None


def test_refresh_of_every_shipped_variant_is_byte_identical(tmp_path, capsys):
    """Input: each shipped variant applied to a pristine tree of the first release it covers.
    Outcome: `sgpatch refresh` leaves every patch file byte-identical (the shipped patches are
    in canonical form), and `sgpatch diff` prints the same diff the file holds."""
    sets = tmp_path / "sets"
    shutil.copytree(SHIPPED, sets / SET)
    manifest = load_manifest(sets / SET / "patchset.yaml")
    for spec in manifest.patches:
        for v in spec.variants:
            if v.patch is None:
                continue
            version = _covering(v, RELEASES)
            assert version is not None, v.patch
            patch = read_patch(v.patch)
            mapper = package_mapper(patch.name)
            names = {f"sglang/{mapper(f.path)}" for f in patch.files}
            root = releases.extract(
                version, tmp_path / f"{spec.id}-{version}", "site-packages",
                lambda n, names=names: n in names or n.endswith(("_version.py", "version.py"))
                or n.endswith("/METADATA"),
            )  # fmt: skip
            files = []
            for fp in patch.files:
                rel = mapper(fp.path)
                res = apply_hunks(split_lines(decode((root / rel).read_bytes())), fp.hunks)
                assert res.ok
                (root / rel).write_bytes(encode("".join(res.lines)))
                files.append(rel)
            before = v.patch.read_bytes()
            assert sgpatch(
                "refresh", "--set", SET, "--patchsets", str(sets), "--patch", spec.id,
                "--sglang-dir", str(root), "--sglang-version", version, "--json",
            ) == 0  # fmt: skip
            out = json.loads(capsys.readouterr().out)
            assert out["changed"] is False, v.patch
            assert v.patch.read_bytes() == before
            assert sgpatch("diff", "--sglang-dir", str(root), "--against", version, *files) == 0
            assert encode(patch.header) + capsys.readouterr().out.encode() == before


def test_refresh_rewrites_an_edited_tree_canonically(tmp_path, release_tree):
    """Input: the 0.5.9 kimi patch applied, then one more line edited in the tree. Outcome:
    refresh writes header + the canonical diff of the edited tree; the old hunks stay."""
    sets = tmp_path / "sets"
    shutil.copytree(SHIPPED, sets / SET)
    root = release_tree("0.5.9", members=lambda n: "kimi_k25" in n or n.endswith("version.py"))
    f = root / "srt/models/kimi_k25.py"
    pristine = releases.read_member("0.5.9", "srt/models/kimi_k25.py")
    patch = read_patch(sets / SET / "patches/0.5.9/0001-kimi-k25-eagle3-hooks.patch")
    res = apply_hunks(split_lines(decode(pristine)), patch.files[0].hunks)
    edited = encode("".join(res.lines)).replace(b"support EAGLE3", b"support EAGLE-3", 1)
    f.write_bytes(edited)
    assert sgpatch("refresh", "--set", SET, "--patchsets", str(sets), "--patch", KIMI,
                   "--sglang-dir", str(root), "--sglang-version", "0.5.9") == 0  # fmt: skip
    want = render(
        patch.header, canonical_diff([FileDiff("srt/models/kimi_k25.py", pristine, edited)])
    )
    assert (sets / SET / "patches/0.5.9/0001-kimi-k25-eagle3-hooks.patch").read_bytes() == want
    assert b"support EAGLE-3" in want


def test_refresh_with_the_whole_set_applied_keeps_patches_apart(tmp_path):
    """Input: the whole set applied to 0.5.9 with the optional no-multicast patch (it shares
    torch_symm_mem.py with the world-sizes patch), then every patch refreshed from that tree.
    Outcome: every patch file keeps its hunks exactly (only line numbers of variants made on
    older releases move): the other applied patches' changes are taken out first, so no patch
    picks up another's hunks."""
    sets = tmp_path / "sets"
    shutil.copytree(SHIPPED, sets / SET)
    root = releases.copy_tree("0.5.9", tmp_path / "t", "site-packages")
    common = ("--set", SET, "--patchsets", str(sets), "--sglang-dir", str(root))
    assert sgpatch("apply", *common, "--with", NOMC) == 0
    before = _patch_bodies(sets)
    for pid in ALL:
        assert sgpatch("refresh", *common, "--patch", pid) == 0, pid
    assert _patch_bodies(sets) == before


def _patch_bodies(sets: Path) -> dict[str, str]:
    """Every patch file, with the @@ line numbers blanked: a variant made on an older release
    (0.5.5, 0.5.8) gets 0.5.9's numbers when refreshed there, and nothing else may change."""
    return {
        str(p.relative_to(sets)): re.sub(
            r"(?m)^@@ -\d+(,\d+)? \+\d+(,\d+)? @@", "@@", p.read_text()
        )
        for p in sorted((sets / SET).rglob("*.patch"))
    }


def test_refresh_after_an_edit_leaves_the_patch_applied(tmp_path, capsys):
    """Input: the set applied to a 0.5.9 tree, one value edited in a patched file, the patch
    refreshed. Outcome: its variant serves other releases too, so a new `==0.5.9` variant
    carries the edit (the old file stays as it was), and on that tree the set is still
    `applied` (status --check 0; the store holds exactly the bytes the ledger names) and
    `revert` gives back the release (no .sgpatch/ left), as quilt refresh leaves a
    patch applied; before, the tree was stuck `modified` and revert --force refused."""
    sets = tmp_path / "sets"
    shutil.copytree(SHIPPED, sets / SET)
    top = tmp_path / "t"
    root = releases.copy_tree("0.5.9", top, "site-packages")
    common = ("--set", SET, "--patchsets", str(sets), "--sglang-dir", str(root))
    assert sgpatch("apply", *common) == 0
    f = root / "srt/distributed/device_communicators/all_reduce_utils.py"
    text = f.read_text()
    block = text.index("    12: {")
    f.write_text(text[:block] + text[block:].replace("6: 128 * MiB", "6: 96 * MiB", 1))
    assert sgpatch("status", *common, "--check") == 1  # modified
    old = select_variant(load_manifest(sets / SET / "patchset.yaml").patch(SIZES), Version("0.5.9"))
    before = old.patch.read_bytes()
    assert sgpatch("refresh", *common, "--patch", SIZES) == 0
    # the variant serves 0.5.5 to 0.5.23: refresh splits 0.5.9 off instead of rewriting it
    new = select_variant(load_manifest(sets / SET / "patchset.yaml").patch(SIZES), Version("0.5.9"))
    assert str(new.sglang) == "==0.5.9" and new.patch != old.patch
    assert old.patch.read_bytes() == before
    assert b"+        6: 96 * MiB" in new.patch.read_bytes()
    assert sgpatch("status", *common, "--check") == 0
    store = {p.name for p in (root / ".sgpatch" / "originals").iterdir()}  # no orphan
    assert store == ledger_mod.referenced(ledger_mod.load(root))
    capsys.readouterr()
    assert sgpatch("revert", *common) == 0
    assert f.read_bytes() == releases.read_member("0.5.9", f.relative_to(root).as_posix())
    assert not (root / ".sgpatch").exists()
