"""A patch's probe during a port (sgpatch.port.probes), on synthetic releases: the probe file
kept in the workspace, the checks --continue makes, a suggestion taken or offered, a probe a
person edits during the stop, and a probe that can only serve its own release's variant."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from helpers import (
    V10,
    by_id,
    make_set,
    make_wheel,
    offline_cache,
    probe_set,
    release_files,
    sgport,
    snapshot,
)
from sgpatch.ops import lint, matrix
from sgpatch.patchset.manifest import load_manifest, probe_for
from sgpatch.patchset.probe import AnyProbe, RegexProbe

LINE = r"^[ \t]*return the_answer_to\(42\)[ \t\r]*$"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private release cache: 1.0 and 1.1 (same other.py), 1.4 (other.py returns 1)."""
    c = offline_cache(tmp_path, monkeypatch)
    make_wheel(c / "wheels", "1.0", release_files(V10, "1.0"))
    make_wheel(c / "wheels", "1.1", release_files(V10, "1.1"))
    other14 = {"sglang/srt/other.py": b"def other():\n    return 1\n"}
    make_wheel(c / "wheels", "1.4", release_files(V10, "1.4", other14))
    return c


def lint_errors(d: Path, versions: list[str]) -> list[str]:
    m = load_manifest(d / "patchset.yaml")
    rows = matrix.compute(m, [Version(v) for v in versions], workers=1)
    return [f.message for f in lint.check(m, rows) if f.level == "error"]


def test_a_hand_probe_the_change_does_not_match_stops_with_a_suggestion(cache, tmp_path):
    """Input: `second`'s hand-written probe looks for the_answer_to(43), which its patch never
    writes; ported to 1.1 (everything carries). Outcome: exit 3 before lint, the set
    unchanged; `fix` lists it under the probes heading (never as a file to fix); the probe
    file in W holds a suggestion from the change (marked suggested); --json says why. A plain
    --continue takes the suggestion: exit 0, the set's probe is it, lint is clean on 1.1."""
    d = probe_set(tmp_path, r"{file: srt/other.py, regex: 'the_answer_to\(43\)'}")
    before = snapshot(d)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3 and snapshot(d) == before
    second = by_id(doc)["second"]
    assert second["outcome"] == "conflict" and second["problems"] == []
    assert second["probe"]["file"] == f"{w}/.sgpatch-port/probes/second.yaml"
    assert second["probe"]["problem"].startswith("the probe is false with the patch applied")
    fix = doc["steps"][-1]["fix"]
    head = fix.index("probes (the probe files: edit them during the stop; --continue checks them):")
    assert fix[head + 1].startswith("  second: the probe is false with the patch applied")
    assert not any(ln.startswith("files to fix") for ln in fix)
    kept = (w / ".sgpatch-port/probes/second.yaml").read_text()
    assert "suggested: true" in kept and "the_answer_to\\(42\\)" in kept
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    spec = load_manifest(d / "patchset.yaml").patch("second")
    assert spec.probe == RegexProbe("srt/other.py", LINE) and spec.probe_suggested
    assert lint_errors(d, ["1.1"]) == []


def test_fixing_the_files_so_the_old_probe_matches_keeps_it(cache, tmp_path):
    """Input: the same stop (the probe an `any` of two regexes); the person makes other.py
    return the_answer_to(43) in W instead. Outcome: --continue exits 0 and the set keeps its
    own probe (it matches the fixed change); the new 1.1 variant holds the person's line."""
    probe = (
        "any:\n  - {file: srt/other.py, regex: 'the_answer_to\\(43\\)'}\n"
        "  - {file: srt/no.py, regex: x}"
    )
    d = probe_set(tmp_path, probe)
    w = tmp_path / "w"
    assert sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1",
                  "--workspace", str(w))[0] == 3  # fmt: skip
    (w / "sglang/srt/other.py").write_text("def other():\n    return the_answer_to(43)\n")
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    spec = load_manifest(d / "patchset.yaml").patch("second")
    assert spec.probe == AnyProbe(
        (RegexProbe("srt/other.py", r"the_answer_to\(43\)"), RegexProbe("srt/no.py", "x"))
    )
    assert "+    return the_answer_to(43)" in spec.variants[0].patch.read_text()


def test_an_edited_probe_is_checked_then_taken(cache, tmp_path):
    """Input: the same stop; the person writes a probe that matches nothing into the probe
    file, --continue, then a right one, --continue. Outcome: the first --continue exits 3
    naming the probe file, why, and a suggestion (the set unchanged); the second exits 0 and
    the set's probe is the person's, without the suggested marker."""
    d = probe_set(tmp_path, r"{file: srt/other.py, regex: 'the_answer_to\(43\)'}")
    before = snapshot(d)
    w = tmp_path / "w"
    sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1", "--workspace", str(w))
    kept = w / ".sgpatch-port/probes/second.yaml"
    kept.write_text("file: srt/other.py\nregex: 'nothing_like_this'\n")
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 3 and snapshot(d) == before
    why = by_id(doc)["second"]["probe"]["problem"]
    assert why.startswith(f"the probe in {kept} is false with the patch applied")
    assert "a suggestion: regex srt/other.py" in why
    kept.write_text("# mine\nfile: srt/other.py\nregex: 'return the_answer_to'\n")
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    spec = load_manifest(d / "patchset.yaml").patch("second")
    assert spec.probe == RegexProbe("srt/other.py", "return the_answer_to")
    assert not spec.probe_suggested
    assert "suggested" not in (d / "patchset.yaml").read_text()


def test_a_bad_probe_file_is_a_stop_that_names_it(cache, tmp_path):
    """Input: the same stop; the probe file holds YAML that is not a probe. Outcome:
    --continue exits 3 (not an error), naming the file and the problem; the set unchanged."""
    d = probe_set(tmp_path, r"{file: srt/other.py, regex: 'the_answer_to\(43\)'}")
    before = snapshot(d)
    w = tmp_path / "w"
    sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1", "--workspace", str(w))
    (w / ".sgpatch-port/probes/second.yaml").write_text("files: srt/other.py\n")
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 3 and snapshot(d) == before
    assert "second.yaml:1: probe: not a probe" in by_id(doc)["second"]["probe"]["problem"]


def test_a_probe_file_past_the_bound_is_a_stop_that_says_so_unread(cache, tmp_path):
    """Input: the same stop; the probe file replaced by 10 MB of comments (YAML would take
    seconds to parse). Outcome: --continue exits 3, naming the file and the 64 KiB bound;
    the file is not parsed, the set unchanged."""
    from sgpatch.port.stopreport import MAX_PROBE_FILE

    d = probe_set(tmp_path, r"{file: srt/other.py, regex: 'the_answer_to\(43\)'}")
    before = snapshot(d)
    w = tmp_path / "w"
    sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1", "--workspace", str(w))
    (w / ".sgpatch-port/probes/second.yaml").write_text("# x\n" * 2_500_000)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 3 and snapshot(d) == before
    problem = by_id(doc)["second"]["probe"]["problem"]
    assert f"second.yaml: more than {MAX_PROBE_FILE} bytes, too big for a probe" in problem


def test_a_suggested_probe_is_replaced_by_a_new_suggestion(cache, tmp_path):
    """Input: `second`'s probe is marked `suggested: true` (as import writes it); on 1.4
    other.py returns 1, so its hunk conflicts, and the person resolves it as
    `return the_answer_to(42, 1)`. Outcome: --continue exits 0 by itself: the old suggestion
    no longer matches, a new one from the fixed change takes its place (the notes say so),
    still marked suggested, on the new ==1.4 variant (on 1.0 the patch still writes
    the_answer_to(42), which the new one does not match); lint is clean on 1.0 and 1.4."""
    d = probe_set(tmp_path, f"suggested: true\nfile: srt/other.py\nregex: '{LINE}'")
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3 and by_id(doc)["second"]["problems"][0]["file"] == "srt/other.py"
    assert "suggested: true" in (w / ".sgpatch-port/probes/second.yaml").read_text()
    (w / "sglang/srt/other.py").write_text("def other():\n    return the_answer_to(42, 1)\n")
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    (note,) = [n for n in doc["steps"][-1]["notes"] if "replaced" in n]
    assert note.startswith("second: the probe sgpatch suggested was false with the patch applied")
    assert "not right on 1.0: false with the set applied: written on the variant for 1.4" in note
    spec = load_manifest(d / "patchset.yaml").patch("second")
    new = RegexProbe("srt/other.py", r"^[ \t]*return the_answer_to\(42, 1\)[ \t\r]*$")
    assert spec.variants[0].probe == new and spec.variants[0].probe_suggested
    assert lint_errors(d, ["1.0", "1.4"]) == []


def test_a_probe_only_the_new_release_can_use_goes_on_its_variant(cache, tmp_path):
    """Input: as above, but the set covers 1.0 and 1.1, where the patch still writes
    the_answer_to(42). Outcome: the new suggestion is false there with the set applied, so it
    is written on the new ==1.4 variant only (the notes say where it is not right); the
    patch's own probe stays for 1.0 and 1.1, and lint is clean on all three releases."""
    old = f"suggested: true\nfile: srt/other.py\nregex: '{LINE}'"
    d = probe_set(tmp_path, old, spec=">=1.0,<1.2")
    w = tmp_path / "w"
    sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4", "--workspace", str(w))
    (w / "sglang/srt/other.py").write_text("def other():\n    return the_answer_to(42, 1)\n")
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    assert any("not right on 1.0: false with the set applied; 1.1: false with the set applied"
               in n for n in doc["steps"][-1]["notes"])  # fmt: skip
    spec = load_manifest(d / "patchset.yaml").patch("second")
    new = RegexProbe("srt/other.py", r"^[ \t]*return the_answer_to\(42, 1\)[ \t\r]*$")
    assert str(spec.variants[0].sglang) == "==1.4" and spec.variants[0].probe == new
    assert probe_for(spec, Version("1.4")) == new
    assert probe_for(spec, Version("1.0")) == spec.probe == RegexProbe("srt/other.py", LINE)
    assert lint_errors(d, ["1.0", "1.1", "1.4"]) == []


# moved from tests/port/test_port.py


def test_a_probe_the_carried_change_does_not_match_stops_on_the_probe(cache, tmp_path):
    """Input: `second`'s probe looks for `return 43`, which its patch (`return 42`) never
    writes. Outcome: everything carries, but the probe is false with the patch applied: exit
    3 before lint, nothing written, `second` back in needs-a-hand under the probes heading
    (no line is too short to suggest another); after the person makes it `return 43` in W,
    --continue writes `second` as a new 1.1 variant and exits 0."""
    probe = "\n    probe: {file: srt/other.py, regex: '^    return 43$'}"
    d = make_set(tmp_path, probe=probe)
    before = snapshot(d)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3 and snapshot(d) == before
    assert by_id(doc)["second"]["outcome"] == "conflict"
    fix = doc["steps"][0]["fix"]
    assert fix[0].startswith("probes (") and fix[1].startswith(
        "  second: the probe is false with the patch applied"
    ), fix
    assert "no new one can be suggested" in fix[1]
    (w / "sglang/srt/other.py").write_text("def other():\n    return 43\n")
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    second = load_manifest(d / "patchset.yaml").patch("second").variants[0]
    assert str(second.sglang) == "==1.1" and "+    return 43" in second.patch.read_text()


def test_a_probe_sgpatch_replaced_itself_is_no_hand_edit_when_w_is_reused(cache, tmp_path):
    """Input: the suggested-probe port above, finished by --continue (sgpatch replaced the
    suggested probe in W's probe file itself), then the same port run again into that W.
    Outcome: the new port takes the finished W (exit 0: the set has its 1.4 variant now),
    never exit 4
    "holds your edits of .sgpatch-port/probes/second.yaml" (issue 44, dead end 1): W's
    `tree` lists the probe file with the bytes sgpatch wrote last."""
    d = probe_set(tmp_path, f"suggested: true\nfile: srt/other.py\nregex: '{LINE}'")
    w = tmp_path / "w"
    args = ("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4", "--workspace", str(w))
    assert sgport(*args)[0] == 3
    (w / "sglang/srt/other.py").write_text("def other():\n    return the_answer_to(42, 1)\n")
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0 and any("replaced" in n for n in doc["steps"][-1]["notes"]), doc
    code, doc = sgport(*args)
    assert code == 0, doc
    assert not list(tmp_path.glob("w.aborted-*"))
