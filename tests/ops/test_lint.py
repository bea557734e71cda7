"""lint rules over a release matrix (pure logic, synthetic rows)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sgpatch.ops.lint import check, dead_by_specifiers, render, unchosen
from sgpatch.ops.matrix import Cell, Failure, Row
from sgpatch.patchset.manifest import load_manifest


def _set(tmp_path: Path) -> Path:
    d = tmp_path / "s"
    (d / "patches").mkdir(parents=True)
    (d / "patches" / "p.patch").write_text(
        "Subject: x\n\n--- a/python/sglang/srt/x.py\n+++ b/python/sglang/srt/x.py\n"
        "@@ -1 +1 @@\n-a\n+b\n"
    )
    (d / "patchset.yaml").write_text(
        """schema: 1
name: s
summary: s
sglang: ">=0.5.0,<0.6"
patches:
  - id: p
    summary: p
    type: bugfix
    upstream: {status: merged, ref: "o/r#1", since: "0.5.3"}
    probe: {file: srt/x.py, regex: '^b$'}
    variants:
      - {sglang: "<0.5.3", patch: patches/p.patch}
"""
    )
    return d / "patchset.yaml"


def test_clean_matrix_has_no_findings(tmp_path):
    m = load_manifest(_set(tmp_path))
    rows = [
        Row("0.5.1", {"p": Cell("pending", "clean")}),
        Row("0.5.3", {"p": Cell("upstream", "probe")}),
    ]
    assert check(m, rows) == []


def test_each_rule_fires(tmp_path):
    m = load_manifest(_set(tmp_path))
    rows = [
        Row("0.5.0", {"p": Cell("conflict", "conflict", note="x.py hunk #1: gone")}),
        Row("0.5.1", {"p": Cell("pending", "fuzz 1")}),
        Row("0.5.2", {"p": Cell("upstream", "probe")}),  # probe: upstream; manifest: from 0.5.3
        Row("0.5.4", {"p": Cell("pending", "clean")}),  # merged since 0.5.3, probe false
        Row("0.5.5", {}, error="no variant of patch 'p'"),
    ]
    msgs = [(f.level, f.release, f.message.split(";")[0][:30]) for f in check(m, rows)]
    assert ("error", "0.5.0", "does not apply: x.py hunk #1: ") in msgs
    assert ("error", "0.5.1", "applies only with fuzz 1") in msgs
    assert ("error", "0.5.2", "the probe says upstream has it") in msgs
    assert any(lvl == "error" and rel == "0.5.4" and "merged since" in t for lvl, rel, t in msgs)
    assert any(lvl == "error" and rel == "0.5.5" for lvl, rel, _ in msgs)


def test_each_rule_names_the_manifest_field_it_is_about(tmp_path):
    """Input: the rows of test_each_rule_fires, the last release without a variant for `p`
    (as the planner says it: Row.error_patch). Outcome: a conflict and fuzz blame the variant
    that serves the release, the probe rules the patch's probe, the release no variant covers
    `patches[0].variants` (about `p`, release-wide); none of it is read off the message."""
    m = load_manifest(_set(tmp_path))
    rows = [
        Row("0.5.0", {"p": Cell("conflict", "conflict", note="x.py hunk #1: gone")}),
        Row("0.5.1", {"p": Cell("pending", "fuzz 1")}),
        Row("0.5.2", {"p": Cell("upstream", "probe")}),
        Row("0.5.4", {"p": Cell("pending", "clean")}),
        Row("0.5.5", {}, error="no variant of patch 'p'", error_patch="p"),
    ]
    fields = {f.release: (f.field, f.scope, f.patch) for f in check(m, rows)}
    assert fields == {
        "0.5.0": ("patches[0].variants[0]", "cell", "p"),
        "0.5.1": ("patches[0].variants[0]", "cell", "p"),
        "0.5.2": ("patches[0].probe", "cell", "p"),
        "0.5.4": ("patches[0].probe", "cell", "p"),
        "0.5.5": ("patches[0].variants", "release", "p"),
    }
    (unnamed,) = check(m, [Row("0.5.5", {}, error="no such release")])
    assert (unnamed.field, unnamed.scope, unnamed.patch) == ("sglang", "release", None)


def test_a_variant_s_own_probe_is_the_field_its_probe_rules_blame(tmp_path):
    """Input: the variant for <0.5.3 carries its own probe (it replaces the patch's there), and
    that probe is false on the patched 0.5.1. Outcome: the finding names
    `patches[0].variants[0].probe`, where the probe that judged 0.5.1 is written."""
    path = _set(tmp_path)
    path.write_text(path.read_text().replace(
        '      - {sglang: "<0.5.3", patch: patches/p.patch}',
        '      - sglang: "<0.5.3"\n        patch: patches/p.patch\n'
        "        probe: {file: srt/x.py, regex: '^c$'}",
    ))  # fmt: skip
    m = load_manifest(path)
    rows = [Row("0.5.1", {"p": Cell("pending", "clean", probe=False, probe_after=False)})]
    (f,) = check(m, rows)
    assert f.field == "patches[0].variants[0].probe"


def test_github_annotations_format(tmp_path):
    m = load_manifest(_set(tmp_path))
    findings = check(m, [Row("0.5.0", {"p": Cell("conflict", "conflict", note="n")})])
    (line,) = render(findings, "github", "s")
    assert line.startswith("::error file=") and "sglang 0.5.0" in line


def test_a_probe_that_matches_where_the_manifest_says_pending_is_an_error(tmp_path):
    """Input: a pending patch whose probe matches on a release a variant covers (a probe that
    matches too much: the patch would silently never apply). Outcome: an error naming the
    release; once the manifest says merged since then, only a warning to narrow the variant."""
    path = _set(tmp_path)
    path.write_text(path.read_text().replace('{status: merged, ref: "o/r#1", since: "0.5.3"}',
                                             "{status: pending}"))  # fmt: skip
    m = load_manifest(path)
    (f,) = check(m, [Row("0.5.1", {"p": Cell("upstream", "probe")})])
    assert (f.level, f.release) == ("error", "0.5.1")
    assert "manifest says pending, so the patch is never applied here" in f.message


def test_a_variant_no_release_chooses_is_flagged_over_the_whole_range(tmp_path):
    """Input: a second variant `>=0.5.3` after a first `<0.6` that already covers every release
    of the set (a range typo). Outcome: over the whole range, a warning naming the dead
    variant; over a --releases subset nothing can be concluded, so nothing is said."""
    path = _set(tmp_path)
    path.write_text(
        path.read_text().replace(
            '      - {sglang: "<0.5.3", patch: patches/p.patch}',
            '      - {sglang: "<0.6", patch: patches/p.patch}\n'
            '      - {sglang: ">=0.5.3", patch: patches/p.patch}',
        )
    )
    m = load_manifest(path)
    rows = [Row(v, {"p": Cell("pending", "clean")}) for v in ("0.5.1", "0.5.2")]
    (dead,) = [f for f in check(m, rows, every_release=True) if "never chosen" in f.message]
    assert dead.level == "warning" and ">=0.5.3" in dead.message and dead.line
    assert not [f for f in check(m, rows) if "never chosen" in f.message]


def test_every_refused_hunk_is_its_own_finding(tmp_path):
    """Input: a conflict cell with two refused hunks and a file-level problem. Outcome: three
    error findings, each naming its file and hunk (not only the first)."""
    m = load_manifest(_set(tmp_path))
    fails = (
        Failure("srt/x.py", 1, "gone"),
        Failure("srt/x.py", 3, "ambiguous"),
        Failure("srt/y.py", None, "file does not exist"),
    )
    rows = [Row("0.5.1", {"p": Cell("conflict", "conflict", note="first", failures=fails)})]
    msgs = [f.message for f in check(m, rows) if f.level == "error"]
    assert msgs == [
        "does not apply: srt/x.py hunk #1: gone",
        "does not apply: srt/x.py hunk #3: ambiguous",
        "does not apply: srt/y.py: file does not exist",
    ]


def test_a_probe_false_after_its_patch_is_applied_is_an_error(tmp_path):
    """Input: a pending cell whose probe is false on the tree with the set applied. Outcome:
    an error for that release saying the probe does not recognise the patch."""
    m = load_manifest(_set(tmp_path))
    rows = [Row("0.5.1", {"p": Cell("pending", "clean", probe=False, probe_after=False)})]
    (f,) = check(m, rows)
    assert (f.level, f.release) == ("error", "0.5.1") and "does not recognise" in f.message
    ok = [Row("0.5.1", {"p": Cell("pending", "clean", probe=False, probe_after=True)})]
    assert check(m, ok) == []


def test_since_earlier_than_where_the_probe_turns_true_is_flagged(tmp_path):
    """Input: merged since 0.5.3, but the pristine probe is already true on 0.5.2 (where no
    variant covers it); then the same with status pending. Outcome: one warning per patch
    naming 0.5.2 and what to write in the manifest."""
    path = _set(tmp_path)
    path.write_text(path.read_text().replace('"<0.5.3"', '"<0.5.2"'))
    m = load_manifest(path)
    rows = [
        Row("0.5.1", {"p": Cell("pending", "clean", probe=False, probe_after=True)}),
        Row("0.5.2", {"p": Cell("upstream", "probe", probe=True)}),
        Row("0.5.3", {"p": Cell("upstream", "probe", probe=True)}),
    ]
    (f,) = check(m, rows)
    assert (f.level, f.release) == ("warning", "0.5.2") and 'set since: "0.5.2"' in f.message
    path.write_text(path.read_text().replace('{status: merged, ref: "o/r#1", since: "0.5.3"}',
                                             "{status: pending}"))  # fmt: skip
    (f,) = check(load_manifest(path), rows)
    assert 'status: merged, since: "0.5.2"' in f.message


def _two_ranges(tmp_path: Path, second: str) -> Path:
    """The test set with a first variant `<0.5.3` and a second one `second`."""
    path = _set(tmp_path)
    path.write_text(
        path.read_text().replace(
            '      - {sglang: "<0.5.3", patch: patches/p.patch}',
            f'      - {{sglang: "<0.5.3", patch: patches/p.patch}}\n'
            f'      - {{sglang: "{second}", patch: patches/p.patch}}',
        )
    )
    return path


def test_offline_dead_check_does_not_call_an_uncached_variant_dead(tmp_path):
    """Input: variants `<0.5.3` and `>=0.5.3,<0.5.4`, judged without the release list (lint
    --offline on a cache holding only 0.5.1). Outcome: no "never chosen" warning (0.5.3 would
    choose the second), and `unchosen` names the second variant as not checked."""
    m = load_manifest(_two_ranges(tmp_path, ">=0.5.3,<0.5.4"))
    assert dead_by_specifiers(m) == []
    assert unchosen(m, [Version("0.5.1")]) == [("p", ">=0.5.3,<0.5.4")]


@pytest.mark.parametrize("second", [">=0.5.1,<0.5.2", "==0.5.2.*", "~=0.5.1.0", ">=0.7"])
def test_offline_dead_check_still_finds_a_variant_no_version_chooses(tmp_path, second):
    """Input: a second variant inside the first one's range (`<0.5.3`), as a range, a
    wildcard or a compatible-release clause, or outside the set's range (`>=0.7`). Outcome:
    the specifier-only check warns that it is never chosen, as the full-cache check does."""
    m = load_manifest(_two_ranges(tmp_path, second))
    (dead,) = dead_by_specifiers(m)
    assert dead.level == "warning" and "never chosen" in dead.message and second in dead.message


def test_offline_dead_check_sees_the_stretch_just_above_a_bound(tmp_path):
    """Input: a first variant `<=0.5.3` and a second `>0.5.3,<0.5.4` (only the versions just
    above 0.5.3 choose it, post-releases of 0.5.3 excluded by `>`). Outcome: not dead."""
    path = _two_ranges(tmp_path, ">0.5.3,<0.5.4")
    path.write_text(path.read_text().replace('"<0.5.3"', '"<=0.5.3"'))
    assert dead_by_specifiers(load_manifest(path)) == []


def test_unchosen_leaves_out_variants_outside_the_asked_releases(tmp_path):
    """Input: variants `<0.5.3` and `>=0.5.3,<0.5.4`, nothing cached, `--releases >=0.5.3`.
    Outcome: only the second variant is named as not checked (the first is outside what was
    asked)."""
    m = load_manifest(_two_ranges(tmp_path, ">=0.5.3,<0.5.4"))
    assert unchosen(m, [], SpecifierSet(">=0.5.3")) == [("p", ">=0.5.3,<0.5.4")]
    assert len(unchosen(m, [])) == 2
