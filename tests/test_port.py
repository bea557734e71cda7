"""sgpatch.port helpers: manifest text edits, specifier arithmetic, 3-way merge, conflicts.
(The end-to-end port runs on real releases in tests/real/test_port_real.py.)"""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sgpatch import port
from sgpatch.cli import main
from sgpatch.diffs import parse_patch

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
    path = tmp_path / "patchset.yaml"
    edited = port.set_variant_spec(YAML, path, "one", 1, ">=0.5.9,<0.5.12")
    assert edited == YAML.replace('">=0.5.9,<0.5.10", patch', '">=0.5.9,<0.5.12", patch')
    edited = port.insert_first_variant(YAML, path, "one", ">=0.5.12", "patches/0.5.12/p.patch")
    assert edited == YAML.replace(
        '      - sglang: "<0.5.9"',
        '      - {sglang: ">=0.5.12", patch: patches/0.5.12/p.patch}\n      - sglang: "<0.5.9"',
    )
    edited = port.set_set_spec(YAML, path, ">=0.5.5,<=0.5.12")
    assert edited == YAML.replace('">=0.5.5,<0.5.10"', '">=0.5.5,<=0.5.12"')


def test_specifier_arithmetic():
    assert port.capped(SpecifierSet(">=0.5.5,<0.5.24"), Version("0.5.14")) == ">=0.5.5,<0.5.14"
    assert port.capped(SpecifierSet(">=0.5.9"), Version("0.5.10")) == ">=0.5.9,<0.5.10"
    assert port._set_widened(SpecifierSet(">=0.5.9,<0.5.10"), Version("0.5.16")) == (
        ">=0.5.9,<=0.5.16"
    )


def test_merge_file_clean_and_conflict():
    base = b"a\nb\nc\nd\ne\nf\ng\n"
    ours = base.replace(b"b\n", b"B\n")
    theirs = base.replace(b"f\n", b"F\n")
    merged, n = port.merge_file(base, ours, theirs, ("ours", "base", "theirs"))
    assert n == 0 and merged == b"a\nB\nc\nd\ne\nF\ng\n"
    merged, n = port.merge_file(base, ours, base.replace(b"b\n", b"X\n"), ("o", "b", "t"))
    assert n == 1 and b"<<<<<<< o\nB\n||||||| b\nb\n=======\nX\n>>>>>>> t\n" in merged


def test_conflict_blocks_name_the_hunks():
    patch = parse_patch(
        "--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n-old_value = 1\n+new_value = 2\n keep\n"
        "@@ -10,2 +10,2 @@\n-other_line = 1\n+other_line = 2\n keep\n"
    )
    text = "x\n<<<<<<< ours\nnew_value = 2\n||||||| base\nold_value = 1\n=======\nz\n>>>>>>> t\n"
    marks, hunks = port._conflict_blocks(text, patch.files[0].hunks)
    assert marks == (2,) and hunks == (1,)


def test_apply_without_a_patch_that_has_no_variant_for_the_release(tmp_path):
    """Input: a set whose second patch has no variant for 0.5.10, applied --without it.
    Outcome (expected): the first patch applies, exit 0."""
    sets = tmp_path / "sets" / "demo"
    sets.mkdir(parents=True)
    (sets / "p.patch").write_text(
        "Subject: x\n\n--- a/srt/a.py\n+++ b/srt/a.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    (sets / "patchset.yaml").write_text(
        "schema: 1\nname: demo\nsummary: d\nsglang: '>=0.5'\npatches:\n"
        "  - id: one\n    summary: one\n    type: bugfix\n    upstream: {status: pending}\n"
        "    variants: [{sglang: '>=0.5', patch: p.patch}]\n"
        "  - id: two\n    summary: two\n    type: bugfix\n    upstream: {status: pending}\n"
        "    variants: [{sglang: '<0.5.10', patch: p.patch}]\n"
    )
    pkg = tmp_path / "tree" / "sglang"
    (pkg / "srt").mkdir(parents=True)
    (pkg / "_version.py").write_text("__version__ = version = '0.5.10'\n")
    (pkg / "srt" / "a.py").write_text("a\n")
    try:
        main(["apply", "--set", "demo", "--patchsets", str(sets.parent), "--sglang-dir",
              str(pkg), "--without", "two"])  # fmt: skip
    except SystemExit as exc:
        assert exc.code == 0
    assert (pkg / "srt" / "a.py").read_text() == "b\n"


def test_port_needs_a_known_set(tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["port", "--set", "nope", "--to", "0.5.10", "--patchsets", str(tmp_path)])
    assert exc.value.code == 2
