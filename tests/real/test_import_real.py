"""`sgpatch import` on the real third-party stacks in tests/data/stacks (slime, AReaL, TraceLens,
Relax), each on the pristine release it was made for: the imported set applied by sgpatch must
give, file for file and byte for byte, what `git apply` (or GNU patch -F0 for AReaL's `diff -ruN`
file) gives on a copy of the same pristine tree, and every suggested probe must be false on the
pristine release and true on the patched tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import sgpatch
from sgpatch.patchset.manifest import load_manifest
from sgpatch.patchset.probe import evaluate

STACKS = Path(__file__).resolve().parents[1] / "data" / "stacks"


def _stacks() -> list[tuple[str, str]]:
    out = []
    for series in sorted(STACKS.glob("*/*/series")):
        out.append((series.parent.parent.name, series.parent.name))
    return out


def _series(project: str, version: str) -> list[Path]:
    folder = STACKS / project / version
    return [folder / n for n in (folder / "series").read_text().split()]


def _files(root: Path) -> dict[str, tuple[str, bytes, bool]]:
    """Every path of a package tree, package-relative, as (kind, bytes or link target,
    executable): sgpatch's state and Python's caches left out."""
    out = {}
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if {".sgpatch", "__pycache__"} & set(rel.parts):
            continue
        if p.is_symlink():
            out[rel.as_posix()] = ("link", os.readlink(p).encode(), False)
        elif p.is_file():
            out[rel.as_posix()] = ("file", p.read_bytes(), bool(p.stat().st_mode & 0o111))
    return out


def _differ(expected: dict, got: dict) -> list[str]:
    return sorted(p for p in set(expected) | set(got) if expected.get(p) != got.get(p))


def _git_applied(release_tree, version: str, patches: list[Path]) -> Path:
    root = release_tree(version, "checkout")
    repo = root.parent.parent
    for patch in patches:
        subprocess.run(["git", "apply", str(patch)], cwd=repo, check=True, capture_output=True)
    return root


def _imported(tmp_path: Path, capsys, name: str, version: str, inputs: list[Path]) -> dict:
    capsys.readouterr()
    code = sgpatch(
        "import",
        "--name",
        name,
        "--sglang-version",
        version,
        "--dest",
        str(tmp_path / "sets"),
        *map(str, inputs),
        "--json",
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    return doc


def _sgpatch_applied(release_tree, version: str, sets: Path, name: str) -> Path:
    root = release_tree(version, "checkout")
    code = sgpatch("apply", "--sglang-dir", str(root), "--set", name, "--patchsets", str(sets))
    assert code == 0
    return root


# Stacks whose own files define a name twice in one body, exactly as written on their own
# release (slime adds methods 0.5.12.post1 / 0.5.15.post1 already define). git apply writes
# them and slime runs them; the faithful import applies them with a warning (issue 42, item 2:
# the `already` rule in placement/pydefs.py and present.py).
DEFINES_TWICE = {
    ("slime", "0.5.12.post1"): "get_cpu_copy is defined twice in class NSATokenToKVPool",
    ("slime", "0.5.15.post1"): "release_memory_occupation is defined twice in class Decode",
    ("relax", "0.5.12.post1"): "get_cpu_copy is defined twice in class NSATokenToKVPool",
    ("relax", "0.5.15.post1"): "release_memory_occupation is defined twice in class Decode",
}


def _cases() -> list:
    return list(_stacks())


@pytest.mark.parametrize(("project", "version"), _cases())
def test_imported_stack_gives_what_git_apply_gives(
    project, version, release_tree, tmp_path, capsys
):
    """Input: a real stack's patch files in series order, imported onto their release.
    Outcome: exit 0, one patch per input, nothing left out of the package; sgpatch apply of the
    set leaves every path of the package as `git apply` of the inputs leaves it on another
    pristine tree (same paths, bytes, kinds and execute bits); every probe is false on the
    pristine tree and true on the patched one. A stack that defines a name twice as written
    (DEFINES_TWICE) is imported as written, with the warning naming it."""
    inputs = _series(project, version)
    name = f"{project}-{version.replace('.', '-')}"
    doc = _imported(tmp_path, capsys, name, version, inputs)
    assert [p["input"] for p in doc["patches"]] == [str(p) for p in inputs]
    if (project, version) in DEFINES_TWICE:
        said = " ".join(doc["warnings"])
        assert DEFINES_TWICE[project, version] in said and "Python runs" in said, said
    assert [e for e in doc["left_out"] if e["kind"] != "outside"] == []
    expected = _files(_git_applied(release_tree, version, inputs))
    pristine = release_tree(version, "checkout")
    got_root = _sgpatch_applied(release_tree, version, tmp_path / "sets", name)
    assert _differ(expected, _files(got_root)) == []
    manifest = load_manifest(tmp_path / "sets" / name / "patchset.yaml")
    for spec in manifest.patches:
        if spec.probe is None:
            continue
        assert not evaluate(spec.probe, pristine).value, spec.id
        assert evaluate(spec.probe, got_root).value, spec.id


def test_diff_ruN_between_unrelated_folders_imports_like_gnu_patch(release_tree, tmp_path, capsys):
    """Input: AReaL's shipped 0.5.2 patch, a `diff -ruN` whose old paths are `./srt/...` and new
    paths `../../../my-sglang/python/sglang/srt/...` (with timestamps). Outcome: imported with
    canonical `a/python/sglang/...` paths, and applying the set gives what AReaL's own
    `patch -p1 -F0` in the package folder gives."""
    inputs = [STACKS / "areal" / "0.5.2" / "v0.5.2-diff-ruN.patch"]
    doc = _imported(tmp_path, capsys, "areal-run", "0.5.2", inputs)
    patch_file = tmp_path / "sets" / "areal-run" / doc["patches"][0]["file"]
    heads = [ln for ln in patch_file.read_text().splitlines() if ln.startswith("diff --git")]
    assert heads and all(h.startswith("diff --git a/python/sglang/srt/") for h in heads)
    gnu = release_tree("0.5.2", "checkout")
    subprocess.run(["patch", "-p1", "-F0", "-s", "-i", str(inputs[0])], cwd=gnu, check=True)
    got = _files(_sgpatch_applied(release_tree, "0.5.2", tmp_path / "sets", "areal-run"))
    expected = {k: v for k, v in _files(gnu).items() if not k.endswith((".orig", ".rej"))}
    assert _differ(expected, got) == []


def test_mbox_of_commits_imports_one_patch_per_commit(release_tree, tmp_path, capsys):
    """Input: a git checkout of the 0.5.2 tree with AReaL's patch committed as two commits (one
    also touching the repository's own test/ and docs/), exported as one mbox with
    `git format-patch --stdout`. Outcome: two patches in commit order, author/subject/date in
    each header, the repository-only files listed as left out, and the same bytes as git
    applying both commits; --git RANGE --repo gives the same patches."""
    root = release_tree("0.5.2", "checkout")
    repo = root.parent.parent
    git = ["git", "-c", "user.name=Ada Lovelace", "-c", "user.email=ada@example.org"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "v0.5.2"], cwd=repo, check=True)
    subprocess.run([*git, "tag", "base"], cwd=repo, check=True)
    patch = STACKS / "areal" / "0.5.2" / "v0.5.2.patch"
    subprocess.run(["git", "apply", "--include=*/loader.py", str(patch)], cwd=repo, check=True)
    (repo / "test").mkdir()
    (repo / "test" / "test_loader.py").write_text("def test_x():\n    pass\n")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        [*git, "commit", "-qm", "Loader: fast path\n\nWhy: speed."], cwd=repo, check=True
    )
    subprocess.run(["git", "apply", "--exclude=*/loader.py", str(patch)], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "Qwen3: use it"], cwd=repo, check=True)
    mbox = tmp_path / "two.mbox"
    out = subprocess.run(
        ["git", "format-patch", "--stdout", "base..HEAD"], cwd=repo, check=True, capture_output=True
    )
    mbox.write_bytes(out.stdout)
    doc = _imported(tmp_path, capsys, "two", "0.5.2", [mbox])
    assert [p["id"] for p in doc["patches"]] == ["loader-fast-path", "qwen3-use-it"]
    assert [(e["input"], e["path"], e["kind"]) for e in doc["left_out"]] == [
        (f"{mbox} [1/2]", "test/test_loader.py", "outside")
    ]
    first = (tmp_path / "sets" / "two" / doc["patches"][0]["file"]).read_text()
    assert "From: Ada Lovelace <ada@example.org>" in first and "Why: speed." in first
    assert "Left-out: test/test_loader.py" in first
    got = _files(_sgpatch_applied(release_tree, "0.5.2", tmp_path / "sets", "two"))
    assert _differ(_files(root), got) == []
    shutil.rmtree(tmp_path / "sets")
    capsys.readouterr()
    code = sgpatch(
        "import", "--name", "two", "--sglang-version", "0.5.2", "--dest", str(tmp_path / "sets"),
        "--git", "base..HEAD", "--repo", str(repo), "--json",
    )  # fmt: skip
    again = json.loads(capsys.readouterr().out)
    assert code == 0 and [p["id"] for p in again["patches"]] == ["loader-fast-path", "qwen3-use-it"]


def test_edited_tree_imports_as_one_patch_giving_the_same_tree(release_tree, tmp_path, capsys):
    """Input: a 0.5.9 checkout with slime's 0.5.9 stack applied by git apply, plus what issue
    42's shape 3 added beside it: 8 MoE tuning JSON files in a new `configs/triton_3_6_0/`, a
    symlink `configs/latest -> triton_3_6_0`, an executable tuning script, and one packaged
    file made executable; imported with --tree (version read from the tree). Outcome: one
    patch covering every changed path (the JSON files, the link and the modes included),
    nothing left out; the set applied to a pristine 0.5.9 gives the edited tree's paths,
    bytes, kinds and execute bits."""
    edited = _git_applied(release_tree, "0.5.9", _series("slime", "0.5.9"))
    configs = edited / "srt/layers/moe/fused_moe_triton/configs"
    (configs / "triton_3_6_0").mkdir()
    for n in (128, 256, 384, 512, 640, 768, 896, 1024):
        name = f"E=128,N={n},device_name=NVIDIA_H200.json"
        (configs / "triton_3_6_0" / name).write_text(json.dumps({"1": {"BLOCK_SIZE_M": n}}))
    (configs / "latest").symlink_to("triton_3_6_0")
    (configs / "triton_3_6_0" / "tune.sh").write_text("#!/bin/sh\necho tune\n")
    os.chmod(configs / "triton_3_6_0" / "tune.sh", 0o755)
    os.chmod(edited / "srt/server_args.py", 0o755)
    capsys.readouterr()
    code = sgpatch(
        "import", "--name", "edited", "--dest", str(tmp_path / "sets"), "--tree", str(edited),
        "--json",
    )  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["sglang_version"] == "0.5.9" and len(doc["patches"]) == 1
    assert doc["left_out"] == []
    files = doc["patches"][0]["files"]
    assert sum(f.endswith("device_name=NVIDIA_H200.json") for f in files) == 8
    assert "srt/layers/moe/fused_moe_triton/configs/latest" in files
    assert "srt/server_args.py" in files
    got = _files(_sgpatch_applied(release_tree, "0.5.9", tmp_path / "sets", "edited"))
    assert _differ(_files(edited), got) == []
