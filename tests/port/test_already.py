"""Help at a stop (sgpatch.port.already, carry's hunk details): a hunk whose whole change
upstream already made in the same scope is dropped with the evidence; a conflicted hunk says
what upstream did to its lines and what the patch does, side by side, in `fix` and --json."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import (
    V10,
    V12,
    make_diff,
    make_set,
    make_wheel,
    offline_cache,
    patch_of,
    port_diff,
    release_files,
    sgport,
)
from sgpatch.diff.unified import split_lines
from sgpatch.port.already import already_there
from sgpatch.port.stopreport import side_by_side


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    c = offline_cache(tmp_path, monkeypatch)
    for v, text in (("1.0", V10), ("1.2", V12)):
        make_wheel(c / "wheels", v, release_files(text, v))
    return c


BASE = (
    "import os\n\n\nclass A:\n    def f(self):\n        return 1\n\n"
    "    def g(self):\n        return 2\n\n\ndef h():\n    return 3\n"
)
ADDED = BASE.replace(
    "        return 2\n", "        self.ready = compute_ready()\n        return 2\n"
)


def _hunk(old: str, new: str):
    (fp,) = patch_of(old, new).files
    (h,) = fp.hunks
    return h


def test_a_hunk_upstream_already_made_in_its_scope_is_there():
    """Input: a hunk adding `self.ready = compute_ready()` to A.g; releases that have that
    line in A.g (moved, the method grown), in A.f instead, re-indented, and at module level.
    Outcome: already there (evidence: the statement, its scope and its line) only for the
    first."""
    h = _hunk(BASE, ADDED)
    base = split_lines(BASE)
    at = BASE.splitlines().index("    def g(self):") - 2 + 1
    grown = ADDED.replace("        return 2\n", "        log()\n        return 2\n")
    ev = already_there(h, at, base, split_lines(grown))
    assert ev is not None
    assert ev.matched == ("the assignment self.ready in A.g: line 9 of the release's file",)
    in_f = BASE.replace(
        "        return 1\n", "        self.ready = compute_ready()\n        return 1\n"
    )
    assert already_there(h, at, base, split_lines(in_f)) is None
    deeper = BASE.replace(
        "        return 2\n",
        "        if x:\n            self.ready = compute_ready()\n        return 2\n",
    )
    assert already_there(h, at, base, split_lines(deeper)) is None
    assert already_there(h, at, base, split_lines(BASE + "self.ready = compute_ready()\n")) is None


def test_a_hunk_of_short_lines_is_never_dropped():
    """Input: a hunk whose only change is `x = 1` (too little to tell by), a release that has
    it. Outcome: not already there."""
    old = "def f():\n    pass\n"
    new = "def f():\n    x = 1\n    pass\n"
    assert already_there(_hunk(old, new), 0, split_lines(old), split_lines(new)) is None


def test_a_conflicted_hunk_says_what_upstream_and_the_patch_did(cache, tmp_path):
    """Input: 1.2 changed the very line (`y = 2` -> `y = 3`) that hunk 2 of `first` changes
    (to `y = 20`). Outcome: exit 3; the fix entry of srt/mod.py is followed by hunk #2's
    detail: upstream's change (sglang 1.0 -> sglang 1.2) and the patch's, side by side; --json
    has the same as lists."""
    d = make_set(tmp_path)
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 3
    (first,) = [p for p in doc["steps"][-1]["patches"] if p["id"] == "first"]
    (detail,) = first["problems"][0]["details"]
    assert detail["hunk"] == 2 and detail["status"] == "conflict"
    assert detail["upstream"] == ["-    y = 2", "+    y = 3"]
    assert detail["patch"] == ["-    y = 2", "+    y = 20"]
    assert detail["upstream_label"] == "sglang 1.0 -> sglang 1.2"
    assert detail["where"].startswith("sglang 1.0 lines ") and "def helper" in detail["where"]
    fix = doc["steps"][-1]["fix"]
    at = next(i for i, ln in enumerate(fix) if ln.startswith("  sglang/srt/mod.py"))
    assert fix[at + 1].startswith("    hunk #2: conflict (sglang 1.0 lines ")
    assert fix[at + 2 : at + 5] == [
        "    " + ln
        for ln in side_by_side(
            ["upstream, sglang 1.0 -> sglang 1.2:", "-    y = 2", "+    y = 3"],
            ["the patch, first (made on 1.0):", "-    y = 2", "+    y = 20"],
        )
    ]


def test_a_hunk_already_made_upstream_is_dropped_at_port(cache, tmp_path):
    """Input: `second` makes other() compute and return a value; 1.4's other() already does
    exactly that, under a new docstring, so the hunk neither places nor merges cleanly.
    Outcome: exit 0 by itself; --json lists the hunk as dropped with its evidence (the
    scope, the lines); W keeps the release's file."""
    other14 = b'def other():\n    """Doc."""\n    value = compute_the_value()\n    return value\n'
    make_wheel(cache / "wheels", "1.4", release_files(V10, "1.4", {"sglang/srt/other.py": other14}))
    old = "def other():\n    return 0\n"
    new = "def other():\n    value = compute_the_value()\n    return value\n"
    d = make_set(tmp_path, second=port_diff(old, new, "srt/other.py"))
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
                       "--workspace", str(w))  # fmt: skip
    assert "steps" in doc, doc
    (second,) = [p for p in doc["steps"][-1]["patches"] if p["id"] == "second"]
    assert second["hunks_dropped"][0]["file"] == "srt/other.py"
    said = second["hunks_dropped"][0]["evidence"]
    assert "the assignment value in other: line 3 of the release's file" in said[1], said
    assert (w / "sglang/srt/other.py").read_bytes() == other14
    assert code == 0, doc


# Shape 1 of issue 42: a keyword added to `self.topk = TopK(...)`; upstream moved that call lower
# in the same __init__ (and changed its first argument), and `layer_id=self.layer_id,` stands in
# the *other* call of the method.
TOPK_BASE = """class Block:
    def __init__(self, config):
        self.top_k = config.top_k
        self.layer_id = config.layer_id
        self.topk = TopK(
            top_k=self.top_k,
            renormalize=config.norm_topk_prob,
        )
        self.gate = make_gate(config)
"""
TOPK_PATCHED = TOPK_BASE.replace(
    "            top_k=self.top_k,\n",
    "            top_k=self.top_k,\n            layer_id=self.layer_id,\n",
)
TOPK_RELEASE = """class Block:
    def __init__(self, config):
        self.top_k = config.top_k
        self.layer_id = config.layer_id
        self.experts = get_moe_impl_class()(
            num_experts=config.num_experts,
            layer_id=self.layer_id,
        )
        self.gate = make_gate(config)
        self.topk = TopK(
            top_k=self.top_k + 0,
            renormalize=config.norm_topk_prob,
        )
"""


def _carry(old: str, new: str, release: str, n: int = 3):
    from sgpatch.diff.unified import parse_patch
    from sgpatch.port.carry import Labels, carry_patch

    diff = make_diff(old, new, "python/sglang/srt/m.py", n)
    w, base = {"srt/m.py": release.encode()}, {"srt/m.py": old.encode()}
    return carry_patch(parse_patch(diff, "p.patch"), "p", w.get, base.get,
                       Labels("o", "b", "t"), pristine=w.get)  # fmt: skip


def test_a_line_found_in_another_call_of_the_scope_is_no_evidence():
    """Input (shape 1): a hunk adding `layer_id=self.layer_id,` to `self.topk = TopK(...)`;
    the release moved that call lower in __init__ without the keyword, and has the line in
    another call. Outcome: not already there (the judge says the assignment's counterpart does
    not read as the result); carried, port stops on the file (a conflict), nothing dropped."""
    h = _hunk(TOPK_BASE, TOPK_PATCHED)
    at = h.source_start - 1
    assert already_there(h, at, split_lines(TOPK_BASE), split_lines(TOPK_RELEASE)) is None
    (f,) = _carry(TOPK_BASE, TOPK_PATCHED, TOPK_RELEASE).files
    assert f.dropped == () and f.problem is not None and "conflict" in f.problem


def test_a_statement_that_reads_as_the_result_is_named_as_the_evidence():
    """Input: the same hunk; a release whose moved `self.topk = TopK(...)` has the keyword.
    Outcome: already there, the evidence naming the assignment self.topk in Block.__init__."""
    h = _hunk(TOPK_BASE, TOPK_PATCHED)
    release = TOPK_RELEASE.replace(
        "            top_k=self.top_k + 0,\n",
        "            top_k=self.top_k,\n            layer_id=self.layer_id,\n",
    )
    ev = already_there(h, h.source_start - 1, split_lines(TOPK_BASE), split_lines(release))
    assert ev is not None
    assert ev.matched == ("the assignment self.topk in Block.__init__: line 10 of the "
                          "release's file",)  # fmt: skip


# Shape 2 of issue 42: `self._profiler = None` added at the end of two methods, neither upstream.
FILLER = "".join(f"        step_{i}()\n" for i in range(8))
PROF_BASE = (
    "class Profiler:\n    def start(self):\n" + FILLER + '        log("profiler started")\n\n'
    "    def stop(self):\n" + FILLER + '        log("profiler stopped")\n'
)
PROF_PATCHED = PROF_BASE.replace(
    '        log("profiler started")\n',
    '        log("profiler started")\n        self._profiler = None\n',
).replace('        log("profiler stopped")\n', '        log("profiler stopped")\n'
          "        self._profiler = None\n")  # fmt: skip
STOP_AT = PROF_BASE.index("    def stop")
PROF_RELEASE = PROF_BASE[:STOP_AT] + PROF_BASE[STOP_AT:].replace("step_6()", "step_six()")


def test_the_patch_s_own_line_from_another_hunk_is_no_evidence():
    """Input (shape 2): two hunks each adding `self._profiler = None` at the end of a method;
    the release has neither, and changed the second hunk's context (it must be merged). Outcome:
    the first hunk kept, the second merged cleanly, nothing dropped: both methods set it."""
    (f,) = _carry(PROF_BASE, PROF_PATCHED, PROF_RELEASE).files
    assert (f.kept, f.merged, f.dropped, f.problem) == ((1,), (2,), (), None)
    assert (f.after or b"").decode().count("self._profiler = None") == 2, f
