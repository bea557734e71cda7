"""suggest.py: a probe built from a patch's own lines, checked false before and true after."""

from __future__ import annotations

import yaml

from sgpatch.ops.suggest import check, line_regex, suggest
from sgpatch.patchset.probe import AllProbe, NotProbe, RegexProbe
from sgpatch.patchset.probe import render as to_yaml

BEFORE = b"def f():\n    return compute_something(x)\n\n\nclass A:\n    pass\n"
AFTER = (
    b"def f():\n    value = compute_something_else(x, y)\n    return value\n\n\n"
    b"class A:\n    pass\n"
)


def test_added_line_becomes_an_indentation_tolerant_regex():
    """Input: a file where one distinctive line is added. Outcome: one regex entry on that
    file, false on the pristine bytes and true on the new ones."""
    sug = suggest(["srt/f.py"], {"srt/f.py": BEFORE}.get, {"srt/f.py": BEFORE}, {"srt/f.py": AFTER})
    assert sug.probe == RegexProbe("srt/f.py", line_regex("value = compute_something_else(x, y)"))


def test_deletion_only_change_gives_a_not():
    """Input: a change that only removes a distinctive line. Outcome: `not` of that line."""
    sug = suggest(["f.py"], {"f.py": BEFORE}.get, {"f.py": BEFORE}, {"f.py": b"def f():\n"})
    assert isinstance(sug.probe, NotProbe)
    assert sug.probe.node.regex == line_regex("return compute_something(x)")


def test_nothing_distinctive_means_no_probe_and_a_reason():
    """Input: a change adding only short lines (`pass`). Outcome: no probe, with the reason."""
    after = BEFORE + b"    pass\n"
    sug = suggest(["f.py"], {"f.py": BEFORE}.get, {"f.py": BEFORE}, {"f.py": after})
    assert sug.probe is None and "distinctive" in sug.why


def test_line_an_earlier_patch_added_is_not_used():
    """Input: the new line is already in the file before this patch (an earlier patch added it
    elsewhere). Outcome: it is not used (the probe would be true before the patch); the next
    distinctive added line of the hunk is."""
    line = b"    value = compute_something_else(x, y)\n"
    before = BEFORE + line
    sug = suggest(["f.py"], {"f.py": BEFORE}.get, {"f.py": before}, {"f.py": AFTER + line})
    assert sug.probe == RegexProbe("f.py", line_regex("return value"))


def test_check_names_what_is_wrong():
    """Input: a probe true on the pristine bytes. Outcome: check says so (not an empty string)."""
    node = RegexProbe("f.py", "compute_something")
    read = {"f.py": BEFORE}.get
    assert check(node, read, read, read) == "true on the pristine release already"
    assert check(node, {}.get, {}.get, {}.get) == "false after the patch is applied"


def test_yaml_form_loads_back_to_the_same_probe():
    """Input: an all() of a regex with quotes and backslashes and a not. Outcome: the YAML lines
    load back (yaml.safe_load) to the same file/regex values."""
    node = AllProbe((RegexProbe("a.py", r"^x = 'it''s' \d"), NotProbe(RegexProbe("b.py", "y"))))
    doc = yaml.safe_load("\n".join(to_yaml(node, 0)))
    assert doc == {
        "all": [
            {"file": "a.py", "regex": r"^x = 'it''s' \d"},
            {"not": {"file": "b.py", "regex": "y"}},
        ]
    }


def test_probe_for_a_crlf_file_matches():
    """Input: a CRLF file gaining a distinctive line. Outcome: a probe (its regex matches the
    CRLF line, so the after-check passes)."""
    before = BEFORE.replace(b"\n", b"\r\n")
    after = AFTER.replace(b"\n", b"\r\n")
    sug = suggest(["f.py"], {"f.py": before}.get, {"f.py": before}, {"f.py": after})
    assert sug.probe == RegexProbe("f.py", line_regex("value = compute_something_else(x, y)"))


def test_blocks_from_the_canonical_diff_give_the_same_probe():
    """Input: the same change, once with its canonical diff given and once without. Outcome:
    the same probe (the diff only saves diffing the files again)."""
    from sgpatch.diff.canonical import FileDiff, canonical_diff

    diff = canonical_diff([FileDiff("srt/f.py", BEFORE, AFTER)])
    args = (["srt/f.py"], {"srt/f.py": BEFORE}.get, {"srt/f.py": BEFORE}, {"srt/f.py": AFTER})
    assert suggest(*args, diff).probe == suggest(*args).probe is not None


def test_every_probe_form_is_written_and_read_back(tmp_path):
    """Input: a probe using every node form (all, any, not over all, regex, absent, symbol, a
    quote in a regex), written as port writes a probe (with and without the suggested marker).
    Outcome: the manifest's probe loader reads back the very same probe and marker."""
    from sgpatch.patchset.manifest import load_probe_text
    from sgpatch.patchset.probe import (
        AllProbe,
        AnyProbe,
        NotProbe,
        RegexProbe,
        SymbolProbe,
        probe_lines,
    )

    inner = AllProbe((SymbolProbe("c.py", "C", "m"), RegexProbe("d.py", "it's")))
    probe = AllProbe(
        (AnyProbe((RegexProbe("a.py", r"x\d"), RegexProbe("b/*.py", "y", True))), NotProbe(inner))
    )
    for suggested in (False, True):
        text = "\n".join(probe_lines(probe, 0, suggested)) + "\n"
        assert load_probe_text(text, tmp_path / "p.yaml") == (probe, suggested)


def test_check_of_a_symbol_probe_reads_its_file():
    """Input: a person's symbol probe (a method the patch adds), checked as split and import
    check a probe. Outcome: "" (false before, true after): its file is written into the small
    trees the check evaluates on (it used to hold only regex files, so a symbol probe was
    always "false after the patch")."""
    from sgpatch.patchset.probe import SymbolProbe

    before = b"class C:\n    def a(self):\n        pass\n"
    after = before + b"\n    def m(self):\n        pass\n"
    node = SymbolProbe("srt/c.py", "C", "m")
    assert (
        check(node, {"srt/c.py": before}.get, {"srt/c.py": before}.get, {"srt/c.py": after}.get)
        == ""
    )
