"""Stacked sets on a real release: a user's own set on top of the shipped kimi-eagle3-sm120 on a
0.5.9 site-packages tree, both patching srt/models/deepseek_v2.py (the user's change, a diff of
the pristine file imported with `sgpatch import`, sits a few lines below the shipped set's).
Applied in order, reverted in reverse order, every file back to the wheel's RECORD at the end.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from helpers import make_diff, run_cli

SET = "kimi-eagle3-sm120"
USER = "my-stack"
DSV2 = "srt/models/deepseek_v2.py"
ANCHOR = "        should_allreduce_fusion = (\n"  # 13 lines below the shipped set's 2nd hunk


def _user_set(sets: Path, pristine: str, tmp_path: Path) -> str:
    """The user's stack as users keep one: a diff made on the pristine 0.5.9 deepseek_v2.py
    (a comment added in DeepseekV2DecoderLayer.forward, below the shipped set's capture
    block), turned into a set with `sgpatch import`. Returns the patch id."""
    from sgpatch.patchset.manifest import load_manifest

    assert pristine.count(ANCHOR) == 1
    mine = pristine.replace(ANCHOR, "        # my-stack: trace the MLP input\n" + ANCHOR)
    diff = tmp_path / "0001-trace.patch"
    diff.write_text(make_diff(pristine, mine, f"python/sglang/{DSV2}"))
    args = ("--name", USER, "--sglang-version", "0.5.9", "--dest", str(sets), str(diff))
    code, _, err = run_cli("import", *args)
    assert code == 0, err
    return load_manifest(sets / USER / "patchset.yaml").patches[0].id


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _states(args, name: str) -> set[str]:
    code, out, err = run_cli("status", *args, "--set", name, "--json")
    assert code == 0, err
    return {p["state"] for p in json.loads(out)["sets"][0]["patches"] if p["selected"]}


def test_user_set_on_top_of_the_shipped_set_on_0_5_9(release_tree, record_sha, tmp_path):
    """Input: 0.5.9 site-packages; kimi-eagle3-sm120 applied, then a user's set imported
    (`sgpatch import`) from a diff of pristine deepseek_v2.py. Outcome: both apply (exit 0; the
    user's with an offset over the shipped set's inserted lines) and both are `applied`
    (status --check 0); reverting the shipped set first is exit 4 naming the user's set, the
    tree byte-identical; refreshing the user's patch is exit 4 (its diff against the pristine
    release would take the shipped change in); reverting the user's set gives back exactly the
    bytes the shipped set left; reverting the shipped set then leaves every file of RECORD
    hashing as RECORD says and no .sgpatch/."""
    root = release_tree("0.5.9")
    sets = tmp_path / "sets"
    sets.mkdir()
    args = ("--sglang-dir", str(root), "--patchsets", str(sets))
    pid = _user_set(sets, (root / DSV2).read_text(), tmp_path)
    assert run_cli("apply", "--set", SET, *args)[0] == 0
    shipped = _tree(root)
    code, out, err = run_cli("apply", "--set", USER, *args)
    assert code == 0, err
    assert "offset" in out + err  # placed below the shipped set's inserted lines
    text = (root / DSV2).read_text()
    assert "# my-stack: trace the MLP input" in text
    assert "captured_last_layer_outputs: Optional" in text
    assert _states(args, SET) <= {"applied", "upstream", "n/a"}
    assert _states(args, USER) == {"applied"}
    assert run_cli("status", *args, "--check")[0] == 0
    both = _tree(root)
    code, _, err = run_cli("revert", "--set", SET, *args)
    assert code == 4 and f"revert {USER} first" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("refresh", "--set", USER, "--patch", pid, *args)
    assert code == 4 and f"also patched by set {SET}" in err
    assert _tree(root) == both
    assert run_cli("revert", "--set", USER, *args)[0] == 0
    assert _tree(root) == shipped
    assert run_cli("revert", "--set", SET, *args)[0] == 0
    assert not (root / ".sgpatch").exists()
    for rel, digest in record_sha("0.5.9").items():
        path = root / rel
        if path.is_file():
            assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, rel
