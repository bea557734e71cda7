"""bench/scale.py's generator and its rows' structure, on small N (nothing here is timed)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from sgpatch.diff.unified import parse_patch, split_lines
from sgpatch.placement.engine import apply_hunks

ROOT = Path(__file__).resolve().parent.parent


def _scale():
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "bench" / "scale.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_generated_diff_has_one_hunk_per_four_lines_and_applies_to_the_expected_bytes():
    """generate(50): a 200-line file, 50 hunks each at its stated line; the engine's result is
    exactly the generated `after`."""
    case = _scale().generate(50)
    lines = split_lines(case.before.decode())
    hunks = parse_patch(case.diff).files[0].hunks
    assert (len(lines), len(hunks), case.lines) == (200, 50, 200)
    result = apply_hunks(lines, hunks)
    assert [h.offset for h in result.hunks] == [0] * 50
    assert "".join(result.lines).encode() == case.after


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch not installed")
def test_rows_and_section_for_small_counts(tmp_path):
    """Two small rows (5 and 20 hunks), one round: each row holds both tools' times and the
    floor; the section has one table line per row, both targets judged, between its marks."""
    scale = _scale()
    rows = [scale.measure(scale.generate(n), 1, tmp_path) for n in (5, 20)]
    assert [r.hunks for r in rows] == [5, 20]
    assert all(r.sgpatch > 0 and r.gnu > 0 and r.floor > 0 and r.rounds == 1 for r in rows)
    section = scale.render(rows, 1)
    assert [ln.split("|")[1].strip() for ln in section.splitlines() if ln.startswith("| 2")] == [
        "20"
    ]
    assert section.count("**pass**") + section.count("**FAIL**") == 2
    doc = tmp_path / "b.md"
    doc.write_text(f"# B\n\n{scale.BEGIN}\nold\n{scale.END}\n\ntail\n")
    scale.update_doc(doc, section)
    text = doc.read_text()
    assert "old" not in text and text.endswith("tail\n") and "| 5 | 20 |" in text


def test_a_small_row_gets_ten_times_the_rounds():
    """Input: the default rows (1k, 10k, 100k hunks) at 3 rounds. Outcome: 30, 3, 3 rounds:
    the 1,000-hunk row's per-hunk time is a ~20 ms difference of two process times, which a
    few ms of noise would move by half at 3 rounds."""
    scale = _scale()
    assert [scale.rounds_for(n, 3) for n in scale.HUNKS] == [30, 3, 3]
