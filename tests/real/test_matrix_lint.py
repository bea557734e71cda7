"""`sgpatch lint` and `sgpatch matrix` on the shipped set over every release on the index."""

from __future__ import annotations

import json

from helpers import sgpatch
from real.intent import EXPECTED

SET = "kimi-eagle3-sm120"


def test_lint_passes_on_the_shipped_sets(capsys):
    """Input: every shipped set over every release it claims. Outcome: exit 0, no error, no
    warning (every variant applies at fuzz 0 where it says, probes agree with the manifest)."""
    assert sgpatch("lint", "--format", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["findings"] == []


def test_matrix_states_match_the_measured_table(capsys):
    """Input: the set over every release. Outcome: each patch's state on each pristine release
    is the one measured from the wheels (tests/real/intent.py EXPECTED), no conflict, no fuzz."""
    assert (
        sgpatch(
            "matrix", "--set", SET, "--format", "json", "--fail-on", "conflict", "--fail-on", "fuzz"
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["releases"]) >= 42
    for row in doc["releases"]:
        assert row["error"] is None, row
        expected = EXPECTED[row["release"]]
        got = {k: c["state"] for k, c in row["cells"].items()}
        assert {k: got[k] for k in expected} == expected, row["release"]


def test_the_set_page_shows_the_current_matrix(capsys):
    """docs/patchsets/kimi-eagle3-sm120.md embeds `sgpatch matrix --format markdown`; it must be
    what the command prints today (regenerate it with that command when a release is added)."""
    from pathlib import Path

    assert sgpatch("matrix", "--set", SET, "--format", "markdown") == 0
    table = capsys.readouterr().out
    page = Path(__file__).parents[2] / "docs" / "patchsets" / f"{SET}.md"
    text = page.read_text()
    embedded = text.split("<!-- matrix:begin -->\n", 1)[1].split("<!-- matrix:end -->", 1)[0]
    assert embedded == table


def test_matrix_and_lint_list_every_refused_hunk_of_a_real_stack(tmp_path, capsys):
    """Input: slime's 0.5.9 stack imported onto 0.5.9, its ranges widened by hand to cover
    0.5.10.post1 (where slime had to port it). Outcome: the matrix cell is a conflict whose
    `failures` list more than one refused hunk, each with file, hunk number and reason, every
    one of them in the text output too; lint has one error finding per refused hunk."""
    from pathlib import Path

    stack = Path(__file__).resolve().parents[1] / "data" / "stacks" / "slime" / "0.5.9"
    sets = tmp_path / "sets"
    args = ("--name", "s59", "--sglang-version", "0.5.9", "--dest", str(sets))
    assert sgpatch("import", *args, str(stack / "sglang.patch")) == 0
    manifest = sets / "s59" / "patchset.yaml"
    manifest.write_text(manifest.read_text().replace("==0.5.9", ">=0.5.9,<=0.5.10.post1"))
    capsys.readouterr()
    common = ("--set", "s59", "--patchsets", str(sets), "--releases", "==0.5.10.post1")
    assert sgpatch("matrix", *common, "--format", "json", "--fail-on", "conflict") == 3
    (row,) = json.loads(capsys.readouterr().out)["releases"]
    cell = row["cells"]["sglang"]
    assert cell["state"] == "conflict" and len(cell["failures"]) > 1
    assert all(f["file"] and f["reason"] for f in cell["failures"])
    sgpatch("matrix", *common)
    text = capsys.readouterr().out
    for f in cell["failures"]:
        hunk = f" hunk #{f['hunk']}" if f["hunk"] else ""
        assert f"0.5.10.post1 sglang: {f['file']}{hunk}: {f['reason']}" in text
    assert sgpatch("lint", *common, "--format", "json") == 3
    findings = json.loads(capsys.readouterr().out)["findings"]
    refused = [f for f in findings if f["message"].startswith("does not apply: ")]
    assert len(refused) == len(cell["failures"])
