"""`sgpatch split` on sets imported from the real stacks in tests/data/stacks: the two halves
applied in order give the bytes the original patch gave, each half has a probe that lint
checked on the release, and the manifest's comments survive the edit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import sgpatch
from sgpatch.diff.unified import read_patch
from sgpatch.patchset.manifest import load_manifest

STACKS = Path(__file__).resolve().parents[1] / "data" / "stacks"


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not {".sgpatch", "__pycache__"} & set(p.relative_to(root).parts)
    }


def _applied(release_tree, version: str, sets: Path, name: str) -> dict[str, bytes]:
    root = release_tree(version, "checkout")
    assert sgpatch("apply", "--sglang-dir", str(root), "--set", name, "--patchsets", str(sets)) == 0
    return _files(root)


def _import(tmp_path: Path, name: str, version: str, *inputs: Path) -> Path:
    sets = tmp_path / "sets"
    args = ("--name", name, "--sglang-version", version, "--dest", str(sets))
    assert sgpatch("import", *args, *map(str, inputs)) == 0
    return sets


def test_split_by_file_keeps_the_result_and_the_comments(release_tree, tmp_path, capsys):
    """Input: slime's four-patch 0.5.13 stack imported (0.5.15.post1's defines a method twice,
    which import refuses), then its top_p patch split by file
    (decode.py and io_struct.py into a new patch). Outcome: exit 0; the new patch follows the
    old one in the manifest, holds exactly those two files, the old one the others; every
    comment line of the manifest is still there; applying the split set gives the bytes the
    unsplit set gives; both halves have probes."""
    folder = STACKS / "slime" / "0.5.13"
    inputs = [folder / n for n in (folder / "series").read_text().split()]
    sets = _import(tmp_path, "s", "0.5.13", *inputs)
    before = _applied(release_tree, "0.5.13", sets, "s")
    manifest = sets / "s" / "patchset.yaml"
    comments = [ln for ln in manifest.read_text().splitlines() if ln.lstrip().startswith("#")]
    take = ("--take", "srt/disaggregation/decode.py", "--take", "srt/managers/io_struct.py")
    capsys.readouterr()
    code = sgpatch(
        "split", "--set", "s", "--patchsets", str(sets), "--patch", "sglang-top-p", "--by",
        "file", *take, "--into", "top-p-disagg", "--json",
    )  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and all(doc["probes"].values()), doc
    text = manifest.read_text()
    assert all(c in text.splitlines() for c in comments)
    m = load_manifest(manifest)
    ids = [p.id for p in m.patches]
    assert ids[ids.index("sglang-top-p") + 1] == "top-p-disagg"
    new = read_patch(m.patch("top-p-disagg").variants[0].patch)
    assert sorted(f.path for f in new.files) == [
        "b/python/sglang/srt/disaggregation/decode.py",
        "b/python/sglang/srt/managers/io_struct.py",
    ]
    rest = read_patch(m.patch("sglang-top-p").variants[0].patch)
    assert not {f.path for f in rest.files} & {f.path for f in new.files}
    assert _applied(release_tree, "0.5.13", sets, "s") == before


def test_split_by_hunk_moves_exactly_that_hunk(release_tree, tmp_path, capsys):
    """Input: AReaL's 0.5.2 patch imported, then split by hunk (hunk 2 of loader.py into a new
    patch). Outcome: the new patch has one file with one hunk; applying the split set gives the
    bytes the unsplit set gives; a --take naming a hunk the patch lacks is exit 2 and leaves
    the set byte-for-byte as it was."""
    sets = _import(tmp_path, "a", "0.5.2", STACKS / "areal" / "0.5.2" / "v0.5.2.patch")
    before = _applied(release_tree, "0.5.2", sets, "a")
    saved = tmp_path / "saved"
    shutil.copytree(sets, saved)
    common = ("split", "--set", "a", "--patchsets", str(sets), "--patch", "v0-5-2", "--by", "hunk")
    assert sgpatch(*common, "--take", "srt/model_loader/loader.py:99", "--into", "x") == 2
    assert _files(sets) == _files(saved)
    assert sgpatch(*common, "--take", "srt/model_loader/loader.py:2", "--into", "loader-2") == 0
    m = load_manifest(sets / "a" / "patchset.yaml")
    new = read_patch(m.patch("loader-2").variants[0].patch)
    assert [(f.path, len(f.hunks)) for f in new.files] == [
        ("b/python/sglang/srt/model_loader/loader.py", 1)
    ]
    assert m.patch("loader-2").requires == ("v0-5-2",)
    assert _applied(release_tree, "0.5.2", sets, "a") == before
