"""Stacked sets on a real release: a user's own set on top of the shipped kimi-eagle3-sm120 on a
0.5.9 site-packages tree, both patching srt/models/deepseek_v2.py (the user's change sits a
line away from the shipped set's). Applied in order, reverted in reverse order, every file back
to the wheel's RECORD at the end."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from helpers import make_diff, run_cli

SET = "kimi-eagle3-sm120"
USER = "my-stack"
DSV2 = "srt/models/deepseek_v2.py"
ANCHOR = "        captured_last_layer_outputs: Optional[List[torch.Tensor]] = None,\n"
USER_MANIFEST = f"""schema: 1
name: {USER}
summary: a user's own stack on top of {SET}
sglang: "==0.5.9"
patches:
  - id: dsv2-tweak
    summary: one more argument beside the shipped set's
    type: feature
    upstream: {{status: pending}}
    variants:
      - {{sglang: "==0.5.9", patch: patches/0001-dsv2-tweak.patch}}
"""


def _user_set(sets: Path, patched: str) -> None:
    """The user's set, its diff made on deepseek_v2.py as the shipped set left it (what
    `git diff` in the user's checkout would give): one argument added right below the shipped
    set's new one."""
    assert patched.count(ANCHOR) == 1
    mine = patched.replace(ANCHOR, ANCHOR + "        my_debug_hook: Optional[object] = None,\n")
    (sets / USER / "patches").mkdir(parents=True)
    (sets / USER / "patchset.yaml").write_text(USER_MANIFEST)
    diff = make_diff(patched, mine, f"python/sglang/{DSV2}")
    (sets / USER / "patches" / "0001-dsv2-tweak.patch").write_text(diff)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _states(args, name: str) -> set[str]:
    code, out, err = run_cli("status", *args, "--set", name, "--json")
    assert code == 0, err
    return {p["state"] for p in json.loads(out)["sets"][0]["patches"] if p["selected"]}


def test_user_set_on_top_of_the_shipped_set_on_0_5_9(release_tree, record_sha, tmp_path):
    """Input: 0.5.9 site-packages; kimi-eagle3-sm120 applied, then a user's set on
    deepseek_v2.py made from the patched file. Outcome: both apply (exit 0) and both are
    `applied` (status --check 0); reverting the shipped set first is exit 4 naming the user's
    set, the tree byte-identical; refreshing the user's patch is exit 4 (its diff against the
    pristine release would take the shipped change in); reverting the user's set gives back
    exactly the bytes the shipped set left; reverting the shipped set then leaves every file of
    RECORD hashing as RECORD says and no .sgpatch/."""
    root = release_tree("0.5.9")
    sets = tmp_path / "sets"
    sets.mkdir()
    args = ("--sglang-dir", str(root), "--patchsets", str(sets))
    assert run_cli("apply", "--set", SET, *args)[0] == 0
    shipped = _tree(root)
    _user_set(sets, (root / DSV2).read_text())
    code, _, err = run_cli("apply", "--set", USER, *args)
    assert code == 0, err
    assert "my_debug_hook" in (root / DSV2).read_text()
    assert "captured_last_layer_outputs: Optional" in (root / DSV2).read_text()
    assert _states(args, SET) <= {"applied", "upstream", "n/a"}
    assert _states(args, USER) == {"applied"}
    assert run_cli("status", *args, "--check")[0] == 0
    both = _tree(root)
    code, _, err = run_cli("revert", "--set", SET, *args)
    assert code == 4 and f"revert {USER} first" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("refresh", "--set", USER, "--patch", "dsv2-tweak", *args)
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
