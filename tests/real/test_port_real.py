"""`sgpatch port` and `sgpatch refresh` on real SGLang history (wheels from the release cache).

The shipped kimi-eagle3-sm120 set is cut down to what it knew at 0.5.9 (only the variants that
cover 0.5.9, narrowed to >=0.5.9,<0.5.10), then ported to later releases; the result is checked
against what the shipped set does there (matrix states, lint, and the bytes `sgpatch apply`
writes). Where port cannot match the shipped set, the test pins exactly where and why.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from helpers import sgpatch
from sgpatch import lint, matrix, releases
from sgpatch.diffs import decode, encode, read_patch, split_lines
from sgpatch.engine import apply_hunks
from sgpatch.manifest import bundled_dir, load_manifest, select_variant
from sgpatch.plan import package_mapper
from sgpatch.refresh import FileDiff, canonical_diff, render

from .test_kimi_eagle3_sm120 import RELEASES

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

# What port decides from the 0.5.9-only set (measured; see docs/porting.md for the why).
EXPECTED = {
    "0.5.10": {KIMI: "upstream", SIZES: "applies", WORLD: "applies", FUSION: "applies",
               NOMC: "applies", AUX: "conflict"},
    "0.5.14": {KIMI: "upstream", SIZES: "applies", WORLD: "upstream", FUSION: "applies",
               NOMC: "applies", AUX: "upstream"},
    "0.5.16": {KIMI: "upstream", SIZES: "applies", WORLD: "upstream", FUSION: "ported",
               NOMC: "applies", AUX: "upstream"},
    "0.5.23": {KIMI: "upstream", SIZES: "applies", WORLD: "upstream", FUSION: "conflict",
               NOMC: "applies", AUX: "upstream"},
}  # fmt: skip
# Files where the ported set's result differs from the shipped set's, and why:
# from 0.5.14 upstream's flashinfer_comm_fusion._resolve_backend also rejects SM12; the shipped
# 0.5.14+ variants patch it, but no 3-way merge of the 0.5.8 variant (which predates that code)
# can invent that change: port reports "still applies"/"ported" for the communicator.py gate only.
DIFFERS = {
    "0.5.10": set(),
    "0.5.14": {"srt/layers/flashinfer_comm_fusion.py"},
    "0.5.16": {"srt/layers/flashinfer_comm_fusion.py"},
    "0.5.23": set(),
}


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


def port_json(capsys, sets: Path, version: str, *extra: str) -> tuple[int, dict]:
    """`port --offline --to version` after fetching every release from 0.5.9 to `version`, so
    what port sees in the cache (and reports as unchecked) is the same from any cache."""
    for v in RELEASES:
        if Version("0.5.9") <= Version(v) <= Version(version):
            releases.wheel_path(v)
    code = sgpatch(
        "port", "--set", SET, "--patchsets", str(sets), "--to", version, "--offline",
        "--scratch", str(sets.parent / "scratch"), "--json", *extra,
    )  # fmt: skip
    return code, json.loads(capsys.readouterr().out)


def applied_tree(tmp: Path, set_dir: Path, version: str, without: list[str]) -> Path:
    """`sgpatch apply` of a copy of the set without the patches in `without` (removed from the
    manifest: `apply --without` still wants a variant for them, see tests/test_port.py)."""
    sets = tmp / "sets"
    shutil.copytree(set_dir, sets / SET)
    doc = yaml.safe_load((sets / SET / "patchset.yaml").read_text())
    doc["patches"] = [p for p in doc["patches"] if p["id"] not in without]
    for p in doc["patches"]:
        p["requires"] = [r for r in p.get("requires", []) if r not in without]
    (sets / SET / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, width=200))
    members = matrix._member_filter(matrix.needed_files(load_manifest(SHIPPED / "patchset.yaml")))
    root = releases.extract(version, tmp / "tree", "site-packages", members)
    args = ["apply", "--set", SET, "--sglang-dir", str(root), "--patchsets", str(sets)]
    assert sgpatch(*args, *([] if NOMC in without else ["--with", NOMC])) == 0
    return root


def touched_files(manifest, version: str, skip) -> set[str]:
    out = set()
    for spec in manifest.patches:
        if spec.id in skip:
            continue
        for v in spec.variants:
            if v.sglang.contains(Version(version)):
                if v.patch is not None:
                    p = read_patch(v.patch)
                    out |= {package_mapper(p.name)(f.path) for f in p.files}
                break
    return out


@pytest.mark.parametrize("version", sorted(EXPECTED, key=Version))
def test_port_the_059_set_and_compare_with_the_shipped_set(version, tmp_path, capsys):
    """Input: the set as it was at 0.5.9, ported to `version`. Outcome: per patch the expected
    decision, which agrees with the shipped set's state there (upstream <-> upstream, applies/
    ported <-> pending); a conflict changes nothing; after porting the rest (--without the
    conflicting patch), lint passes on `version` for every patch port claimed, and apply gives
    the shipped set's bytes except exactly where DIFFERS says."""
    sets = tmp_path / "sets"
    set_dir = only_059(sets)
    snapshot = {p: p.read_bytes() for p in set_dir.rglob("*") if p.is_file()}
    code, doc = port_json(capsys, sets, version)
    got = {p["id"]: p["outcome"] for p in doc["patches"]}
    assert got == EXPECTED[version]
    conflicts = [p for p in doc["patches"] if p["outcome"] == "conflict"]
    if conflicts:
        assert code == 3 and doc["written"] == []
        assert {p: p.read_bytes() for p in set_dir.rglob("*") if p.is_file()} == snapshot
        for p in conflicts:
            for c in p["conflicts"]:
                assert c["hunks"] and c["scratch"] and Path(c["scratch"]).exists(), c
        code, doc = port_json(capsys, sets, version, *[f"--without={p['id']}" for p in conflicts])
    assert code == 0, doc
    skipped = [p["id"] for p in doc["patches"] if p["outcome"] == "skipped"]
    # the range now reaches `version`; the releases it jumped over are named, not hidden
    between = [v for v in RELEASES if Version("0.5.10") <= Version(v) < Version(version)]
    assert doc["unchecked"] == between

    # agrees with the shipped set's states on the pristine release
    shipped = matrix.compute(load_manifest(SHIPPED / "patchset.yaml"), [Version(version)], 1)[0]
    for p in doc["patches"]:
        state = shipped.cells[p["id"]].state
        if p["outcome"] == "upstream":
            assert state == "upstream", p["id"]
        elif p["outcome"] in ("applies", "ported"):
            assert state == "pending", p["id"]
            if p["outcome"] == "ported":
                new = set_dir / p["new_variant"]
                assert b"Ported to " + version.encode() + b" by sgpatch port" in new.read_bytes()

    # lint on the ported copy over just this release: no finding for what port claimed
    ported = load_manifest(set_dir / "patchset.yaml")
    rows = matrix.compute(ported, [Version(version)], 1)
    claimed = {p["id"] for p in doc["patches"] if p["outcome"] in ("applies", "ported", "upstream")}
    bad = [f for f in lint.check(ported, rows) if f.patch in claimed]
    assert bad == []

    # apply both sets to pristine trees; compare the files port's patches touch
    a = applied_tree(tmp_path / "shipped", SHIPPED, version, skipped)
    b = applied_tree(tmp_path / "ported", set_dir, version, skipped)
    shipped_m = load_manifest(SHIPPED / "patchset.yaml")
    touched = touched_files(ported, version, skipped) | touched_files(shipped_m, version, skipped)
    differ = {rel for rel in touched if (a / rel).read_bytes() != (b / rel).read_bytes()}
    assert differ == DIFFERS[version]


def test_port_dry_run_and_rerun_are_no_ops(tmp_path, capsys):
    """Input: port --dry-run, then a real port, then the same port again. Outcome: the dry run
    writes nothing but reports what it would write; the second port finds nothing to do."""
    sets = tmp_path / "sets"
    set_dir = only_059(sets)
    before = (set_dir / "patchset.yaml").read_bytes()
    code, doc = port_json(capsys, sets, "0.5.16", "--dry-run")
    assert code == 0 and doc["written"] and not doc["changed"]
    assert (set_dir / "patchset.yaml").read_bytes() == before
    code, doc = port_json(capsys, sets, "0.5.16")
    assert code == 0 and doc["changed"]
    code, doc = port_json(capsys, sets, "0.5.16")
    assert code == 0 and doc["written"] == [], doc


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
    refreshed. Outcome: the patch file now carries the edit, and on that tree the set is still
    `applied` (status --check 0) and `revert` gives back the release, as quilt refresh leaves a
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
    assert sgpatch("refresh", *common, "--patch", SIZES) == 0
    (spec,) = [s for s in load_manifest(sets / SET / "patchset.yaml").patches if s.id == SIZES]
    serving = select_variant(spec, Version("0.5.9"))  # the variant 0.5.9 uses after the refresh
    assert serving is not None and serving.patch is not None
    assert b"+        6: 96 * MiB" in serving.patch.read_bytes()
    assert sgpatch("status", *common, "--check") == 0
    capsys.readouterr()
    assert sgpatch("revert", *common) == 0
    assert f.read_bytes() == releases.read_member("0.5.9", f.relative_to(root).as_posix())
