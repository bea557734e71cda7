"""The manifest edits port makes (port/edits.py, patchset/manifest_text.py): text edits that
keep every other byte, and specifier arithmetic."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sgpatch.patchset import manifest_text
from sgpatch.port import edits

# ---------------------------------------------------------------------------------------------
# the pieces


YAML = """\


# comment kept
schema: 1
name: demo
summary: demo
sglang: ">=0.5.5,<0.5.10"   # trailing comment kept
patches:
  - id: one
    summary: one
    type: bugfix
    upstream: {status: pending}
    variants:
      - sglang: "<0.5.9"
        na: "not before 0.5.9"
      - {sglang: ">=0.5.9,<0.5.10", patch: p.patch}
"""


def test_text_edits_keep_every_other_byte(tmp_path):
    """Input: the three text edits on a manifest with comments. Outcome: only the edited
    value/line differs."""
    path = tmp_path / "patchset.yaml"
    edited = manifest_text.set_variant_spec(YAML, path, "one", 1, ">=0.5.9,<0.5.12")
    assert edited == YAML.replace('">=0.5.9,<0.5.10", patch', '">=0.5.9,<0.5.12", patch')
    edited = manifest_text.insert_first_variant(YAML, path, "one", "==0.5.12", "p2.patch", "0.5.12")
    assert edited == YAML.replace(
        '      - sglang: "<0.5.9"',
        '      - {sglang: "==0.5.12", patch: p2.patch, base: "0.5.12"}\n      - sglang: "<0.5.9"',
    )
    edited = manifest_text.set_set_spec(YAML, path, ">=0.5.5,<=0.5.12")
    assert edited == YAML.replace('">=0.5.5,<0.5.10"', '">=0.5.5,<=0.5.12"')


def test_specifier_arithmetic():
    """Input: ranges capped, floored, stretched. Outcome: bounded, in a stable clause order."""
    assert edits.capped(SpecifierSet(">=0.5.5,<0.5.24"), Version("0.5.14")) == ">=0.5.5,<0.5.14"
    assert edits.floored(SpecifierSet(">=0.5.5,<0.5.24"), Version("0.5.5")) == ">0.5.5,<0.5.24"
    assert edits.widened(SpecifierSet(">=0.5.9,<0.5.10"), Version("0.5.10")) == (">=0.5.9,<=0.5.10")
    assert edits.widened(SpecifierSet(">=0.5.9,<0.5.10"), Version("0.5.8")) == ">=0.5.8,<0.5.10"
    assert edits.widened(SpecifierSet(">=0.5.9"), Version("0.5.10")) is None
    assert edits.set_widened(SpecifierSet(">=0.5.9,<0.5.10"), Version("0.5.16")) == (
        ">=0.5.9,<=0.5.16",
        [],
    )
    assert edits.set_widened(SpecifierSet(">=0.5.9,<0.5.10"), Version("0.5.1")) == (
        ">=0.5.1,<0.5.10",
        [],
    )
    assert edits.set_widened(SpecifierSet("==0.5.9"), Version("0.5.10")) == (">=0.5.9,<=0.5.10", [])
    assert edits.set_widened(SpecifierSet("==0.5.9"), Version("0.5.8")) == (">=0.5.8,<=0.5.9", [])
    # one release reads as bounds; `!=` clauses stay (but the one for the release)
    assert edits.widened(SpecifierSet("==0.5.9"), Version("0.5.10")) == ">=0.5.9,<=0.5.10"
    assert edits.widened(SpecifierSet("==0.5.9"), Version("0.5.8")) == ">=0.5.8,<=0.5.9"
    assert edits.widened(SpecifierSet(">=0.5.9,!=0.5.10,<=0.5.10.post1"), Version("0.5.11")) == (
        ">=0.5.9,!=0.5.10,<=0.5.11"
    )
    assert edits.widened(SpecifierSet("~=0.5.9"), Version("0.5.10")) is None
    # a jump: the releases in between that port did not check are left out
    known = [Version(v) for v in ("0.5.9", "0.5.10", "0.5.10.post1", "0.5.11", "0.5.12")]
    got = edits.set_widened(SpecifierSet("==0.5.9"), Version("0.5.12"), known)
    assert got == (">=0.5.9,!=0.5.10,!=0.5.10.post1,!=0.5.11,<=0.5.12", known[1:4])
    got = edits.set_widened(SpecifierSet(got[0]), Version("0.5.10.post1"), known)
    assert got == (">=0.5.9,!=0.5.10,!=0.5.11,<=0.5.12", [])
    got = edits.set_widened(SpecifierSet("==0.5.12"), Version("0.5.10"), known)
    assert got == (">=0.5.10,!=0.5.10.post1,!=0.5.11,<=0.5.12", known[2:4])
