"""Port stops on an import the carried file makes that the release no longer has (issue 42.4;
port/carry.py, port/stopped.py): synthetic releases where upstream moved the fla kernels from
srt/layers/attention/fla/ (1.0) to kernels/ops/attention/fla/ (1.1). The set's patch adds
`from sglang.srt.layers.attention.fla.fused_recurrent import fused_recurrent_rule` to chunk.py;
port follows the moved file and carries the hunk, and must not finish with a file that fails
at import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from helpers import (
    FLA_IMPORT,
    FLA_NEW,
    FLA_OLD,
    fla_cache,
    fla_chunk,
    fla_release_files,
    fla_set,
    one_patch_set,
    port_diff,
    run_cli,
    sgport,
)
from sgpatch.patchset.manifest import load_manifest, select_variant

CHUNK = f"{FLA_NEW}/chunk.py"
GONE = "sglang.srt.layers.attention.fla.fused_recurrent"
HOME = "sglang.kernels.ops.attention.fla.fused_recurrent"


def _snapshot_tree(where: Path) -> Path:
    """1.1's files labelled as a checkout of main (`port --to-tree`)."""
    for name, data in fla_release_files("1.1.dev1+gabc1234", FLA_NEW).items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_bytes(data)
    return where / "sglang"


def _start(tmp_path: Path, how: str) -> tuple[Path, Path, int, dict]:
    d = fla_set(tmp_path)
    w = tmp_path / "w"
    onto = {"to": ["--to", "1.1"], "step": ["--step", "--to", "1.1"],
            "tree": ["--to-tree", str(_snapshot_tree(tmp_path / "tree"))]}[how]  # fmt: skip
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), *onto, "--workspace",
                       str(w))  # fmt: skip
    return d, w, code, doc


@pytest.mark.parametrize("how", ["to", "step", "tree"])
def test_a_carried_import_of_a_moved_module_stops_the_port_naming_where_it_is(
    tmp_path, monkeypatch, how
):
    """Input: the set (made on 1.0) ported to 1.1 with --to, --step, or --to-tree onto 1.1's
    files as a snapshot. Outcome: exit 3, patch `fla` stopped (not carried) on the moved
    chunk.py, its problem naming line 9, the import, the module that is gone and where it is
    now; W's file holds the carried change (no markers) for the person to edit; the set is
    unchanged."""
    fla_cache(tmp_path, monkeypatch)
    d, w, code, doc = _start(tmp_path, how)
    manifest = (d / "patchset.yaml").read_text()
    assert code == 3, doc
    (fla,) = [p for p in doc["steps"][-1]["patches"] if p["id"] == "fla"]
    assert fla["outcome"] == "conflict"
    (problem,) = fla["problems"]
    assert problem["file"] == CHUNK and problem["markers"] == []
    assert f"line 9: {FLA_IMPORT.strip()}: no module {GONE}, now at {HOME}" in problem["why"], (
        problem["why"]
    )
    assert FLA_IMPORT in (w / "sglang" / CHUNK).read_text()
    assert (d / "patchset.yaml").read_text() == manifest


def test_continue_rechecks_the_import_and_finishes_once_it_is_fixed(tmp_path, monkeypatch):
    """Input: the stop above; `--continue` with the file unchanged, then with the import
    pointed at the new home (as the stop says). Outcome: the first stays stopped (exit 3),
    `left` naming the file and the import; the second finishes (exit 0), the 1.1 variant's
    patch file adds the import of the new home, and `lint` of the set on 1.1 is clean."""
    fla_cache(tmp_path, monkeypatch)
    d, w, code, _doc = _start(tmp_path, "to")
    assert code == 3
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 3
    (left,) = doc["steps"][-1]["left"]
    assert CHUNK in left and f"no module {GONE}, now at {HOME}" in left
    chunk = w / "sglang" / CHUNK
    chunk.write_text(chunk.read_text().replace(GONE, HOME))
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    variant = select_variant(load_manifest(d / "patchset.yaml").patch("fla"), Version("1.1"))
    assert variant is not None and variant.patch is not None
    assert f"+from {HOME} import fused_recurrent_rule" in variant.patch.read_text()
    code, out, _ = run_cli("lint", "--offline", "--patchsets", str(d.parent), "--set", "demo",
                           "--releases", "==1.1", "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["findings"] == []


def test_an_import_of_a_name_the_set_adds_in_another_file_does_not_stop(tmp_path, monkeypatch):
    """Input: a patch made on 1.0 that adds `def helper` to utils.py and `from .utils import
    helper` to chunk.py (a relative import, right on both releases once helper is there).
    Outcome: the port to 1.1 follows both files and finishes (exit 0): the name the set adds
    resolves in W."""
    fla_cache(tmp_path, monkeypatch)
    utils = "def cdiv(a):\n    return a\n"
    chunk = fla_chunk(FLA_OLD)
    diff = port_diff(utils, utils + "\n\ndef helper(a):\n    return a\n", f"{FLA_OLD}/utils.py")
    diff += port_diff(chunk, chunk.replace("# kernel note 5\n", "# kernel note 5\nfrom .utils "
                      "import helper\n"), f"{FLA_OLD}/chunk.py")  # fmt: skip
    d = one_patch_set(tmp_path, diff, "fla")
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 0, doc
    assert "from .utils import helper" in (tmp_path / "w/sglang" / CHUNK).read_text()
