"""Help at a stop (sgpatch.port.already, carry's hunk details): a hunk whose whole change
upstream already made in the same scope is dropped with the evidence; a conflicted hunk says
what upstream did to its lines and what the patch does, side by side, in `fix` and --json."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import (
    V10,
    V12,
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
    Outcome: already there (evidence: the scope and the line) only for the first."""
    h = _hunk(BASE, ADDED)
    base = split_lines(BASE)
    at = BASE.splitlines().index("    def g(self):") - 2 + 1
    grown = ADDED.replace("        return 2\n", "        log()\n        return 2\n")
    ev = already_there(h, at, base, split_lines(grown))
    assert ev is not None and ev.scope == "A.g"
    assert ev.lines == ((9, "        self.ready = compute_ready()"),)
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
    assert second["hunks_dropped"][0]["evidence"][0].startswith("in other of the release's file")
    assert (w / "sglang/srt/other.py").read_bytes() == other14
    assert code == 0, doc
