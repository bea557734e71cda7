"""Imports that no longer resolve (placement.pyimports) on the real fla move: SGLang 0.5.16
moved srt/layers/attention/fla/ to kernels/ops/attention/fla/ (issue 42.4)."""

from __future__ import annotations

from sgpatch.diff.unified import decode
from sgpatch.ops.importcheck import cached_release, with_changes
from sgpatch.placement.pyimports import unresolved
from sgpatch.releases import cache as releases
from sgpatch.tree.files import FileChange

OLD = "srt/layers/attention/fla"
NEW = "kernels/ops/attention/fla"
IMPORT = (
    "from sglang.srt.layers.attention.fla.fused_recurrent import fused_recurrent_gated_delta_rule"
)


def _with_import(text: str) -> str:
    """chunk.py with the hunk's import added after its `from einops import rearrange` line."""
    anchor = "from einops import rearrange\n"
    assert anchor in text
    return text.replace(anchor, anchor + IMPORT + "\n", 1)


def test_the_old_fla_import_is_named_on_0_5_16_with_its_new_home() -> None:
    """Input: 0.5.16's chunk.py (moved) with the hunk's `from sglang.srt.layers.attention.fla.
    fused_recurrent import fused_recurrent_gated_delta_rule` added, checked against 0.5.16 read
    from the cache with that change over it. Outcome: one finding: no module ...fla.
    fused_recurrent, now at sglang.kernels.ops.attention.fla.fused_recurrent (the one module
    named)."""
    before = decode(releases.read_member("0.5.16", f"{NEW}/chunk.py"))
    after = _with_import(before)
    change = FileChange(f"{NEW}/chunk.py", before.encode(), after.encode())
    release = with_changes(cached_release("0.5.16"), [change])
    (u,) = unresolved(f"{NEW}/chunk.py", after, before, release)
    assert (u.module, u.name) == ("sglang.srt.layers.attention.fla.fused_recurrent", None)
    assert u.homes == ("sglang.kernels.ops.attention.fla.fused_recurrent",)
    assert u.text == IMPORT


def test_the_same_import_resolves_on_0_5_15_post1_and_upstreams_own_imports_are_left_alone():
    """Input: the same change on 0.5.15.post1's chunk.py (where the module is); and 0.5.16's
    chunk.py as upstream ships it, checked as a file the set creates (every import checked).
    Outcome: nothing in either: the import is right on 0.5.15.post1, and every import of
    SGLang upstream's file makes resolves on its own release (no false finding)."""
    before = decode(releases.read_member("0.5.15.post1", f"{OLD}/chunk.py"))
    release = cached_release("0.5.15.post1")
    assert unresolved(f"{OLD}/chunk.py", _with_import(before), before, release) == []
    shipped = decode(releases.read_member("0.5.16", f"{NEW}/chunk.py"))
    assert unresolved(f"{NEW}/chunk.py", shipped, None, cached_release("0.5.16")) == []
