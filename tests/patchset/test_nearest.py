"""Which variants a version is planned with (sgpatch.patchset.nearest), on synthetic manifests:
checked releases, untested snapshots and releases, the nearest lower checked version, and the
PEP 440 corners a snapshot variant meets."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.patchset.manifest import SetManifest, load_manifest, select_variant
from sgpatch.patchset.nearest import basis, checked, named_versions, nearest_lower

# The shipped set's shape: a top bound `<0.5.24`, variants ending at 0.5.10, 0.5.14, 0.5.24.
RANGES = {
    "a": ['">=0.5.9,<0.5.10"', '">=0.5.10,<0.5.14"'],
    "b": ['">=0.5.5,<0.5.24"'],
    "c": ['">=0.5.21,<0.5.23"', '">=0.5.23,<0.5.24"'],
}


def make_manifest(tmp: Path, ranges: dict[str, list[str]], top: str = '">=0.5.5,<0.5.24"'):
    """A set whose patches have n/a variants with these ranges (selection needs no patch
    file); each variant's reason names its range, so a test can tell which one was chosen."""
    d = tmp / "sel"
    d.mkdir(exist_ok=True)
    text = f"schema: 1\nname: sel\nsummary: s\nsglang: {top}\npatches:\n"
    for pid, specs in ranges.items():
        text += f"  - id: {pid}\n    summary: s\n    type: bugfix\n"
        text += "    upstream: {status: pending}\n    variants:\n"
        text += "".join(f"      - {{sglang: {s}, na: {s}}}\n" for s in specs)
    (d / "patchset.yaml").write_text(text)
    return load_manifest(d / "patchset.yaml")


@pytest.fixture
def shipped_like(tmp_path: Path) -> SetManifest:
    return make_manifest(tmp_path, RANGES)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.5.9", True),  # a release in the set's range
        ("0.5.9+cu130", True),  # a local build of it
        ("0.5.9.post1", True),  # a post release in range
        ("0.5.12.dev5", False),  # a snapshot inside `>=0.5.10,<0.5.14`: nobody checked it
        ("0.5.9.post1.dev3+gabc", False),  # git describe, three commits past v0.5.9
        ("0.5.10rc1", False),  # a pre-release
        ("0.5.24", False),  # a release past the range
        ("0.5.24.dev12+g1a2b3c4", False),  # main, twelve commits past v0.5.23
        ("0.5.4", False),  # below the range
    ],
)
def test_checked(shipped_like, version, expected):
    """Input: versions against a set checked on releases 0.5.5 to 0.5.23. Outcome: only a
    final or post release (local label ignored) inside the set's range is checked; any dev or
    pre-release, even inside a variant's range, and anything outside the range is not."""
    assert checked(shipped_like, Version(version)) is expected


@pytest.mark.parametrize(
    ("version", "lower"),
    [
        ("0.5.24.dev12+g1a2b3c4", "0.5.23"),  # the example
        ("0.5.10.dev3+gabc1234", "0.5.9"),  # main shortly before 0.5.10: not 0.5.10's
        ("0.5.14.dev2", "0.5.10"),  # the greatest *named* version below it
        ("0.5.9.post1.dev3+gabc", "0.5.9"),
        ("0.5.30", "0.5.23"),  # `<0.5.24` names 0.5.24, but the set was not checked on it
        ("0.5.5.dev1", None),  # below 0.5.5: older than everything the set was checked on
    ],
)
def test_nearest_lower(shipped_like, version, lower):
    """Input: untested versions. Outcome: the greatest version below it that the manifest
    names and the set was checked on (a bound outside the set's range does not count)."""
    found = nearest_lower(shipped_like, Version(version))
    assert found == (Version(lower) if lower else None)


def test_basis_of_an_untested_version_says_so_on_one_line(shipped_like):
    """Input: 0.5.24.dev12+g1a2b3c4. Outcome: planned with the 0.5.23 variants, and the line
    status prints says exactly that; each patch then gets the variant 0.5.23 would get."""
    b = basis(shipped_like, Version("0.5.24.dev12+g1a2b3c4"))
    assert (b.checked, b.variants_of) == (False, Version("0.5.23"))
    assert b.line() == (
        "0.5.24.dev12+g1a2b3c4 is not a release sel was checked on; planning with the 0.5.23 "
        "variants"
    )
    chosen = {p.id: select_variant(p, b.variants_of) for p in shipped_like.patches}
    assert {k: v.na if v else None for k, v in chosen.items()} == {
        "a": None,
        "b": ">=0.5.5,<0.5.24",
        "c": ">=0.5.23,<0.5.24",
    }


def test_basis_of_a_checked_release_is_its_own(shipped_like):
    """Input: 0.5.12 (a release in range). Outcome: checked, planned with its own variants."""
    b = basis(shipped_like, Version("0.5.12"))
    assert b.checked and b.variants_of == Version("0.5.12")


def test_older_than_everything_is_bad_input(shipped_like):
    """Input: 0.5.4.dev1 against a set checked from 0.5.5. Outcome: bad input (exit 2), one
    line naming the set's range and the version."""
    with pytest.raises(SgpatchError) as err:
        basis(shipped_like, Version("0.5.4.dev1"))
    assert err.value.code == ExitCode.BAD_INPUT
    assert err.value.message == (
        "patch set sel supports sglang >=0.5.5,<0.5.24; this tree is 0.5.4.dev1, older than "
        "every version the set was checked on"
    )


def test_a_snapshot_variant_is_checked_and_serves_later_snapshots(tmp_path):
    """Input: the set after `port --to-tree` onto 0.5.24.dev12 (a `==0.5.24.dev12` variant
    first). Outcome: 0.5.24.dev12+g1a2b3c4 is checked (`==` ignores the local label); a later
    snapshot (dev20) is planned with the dev12 variants, an earlier one (dev5) with 0.5.23's;
    the release 0.5.24, not checked yet, with dev12's (the nearest lower); once ported to
    (`<=0.5.24` written), 0.5.24 is checked and later snapshots take its variants."""
    ranges = {**RANGES, "c": ['"==0.5.24.dev12"', *RANGES["c"]]}
    m = make_manifest(tmp_path, ranges)
    assert checked(m, Version("0.5.24.dev12+g1a2b3c4"))
    assert select_variant(m.patch("c"), Version("0.5.24.dev12+g1a2b3c4")).na == "==0.5.24.dev12"
    assert nearest_lower(m, Version("0.5.24.dev20+gfff")) == Version("0.5.24.dev12")
    assert nearest_lower(m, Version("0.5.24.dev5")) == Version("0.5.23")
    assert basis(m, Version("0.5.24")).variants_of == Version("0.5.24.dev12")
    released = make_manifest(
        tmp_path, {**ranges, "c": ['"==0.5.24.dev12"', '">=0.5.23,<=0.5.24"']}, '">=0.5.5,<=0.5.24"'
    )
    assert checked(released, Version("0.5.24"))
    assert nearest_lower(released, Version("0.5.25.dev1")) == Version("0.5.24")


def test_pep440_corners_of_snapshot_ranges():
    """Input: the ranges a snapshot meets. Outcome: `<0.5.24` excludes every pre-release of
    0.5.24, `>=0.5.24.dev0,<0.5.24` contains none of them (so port never writes ranges for a
    snapshot), and `==0.5.24.dev12` holds dev12 whatever its local label."""
    dev = Version("0.5.24.dev12")
    assert not SpecifierSet("<0.5.24").contains(dev, prereleases=True)
    assert not SpecifierSet(">=0.5.24.dev0,<0.5.24").contains(dev, prereleases=True)
    assert SpecifierSet("==0.5.24.dev12").contains(Version("0.5.24.dev12"), prereleases=True)


def test_named_versions_skip_wildcards_and_exclusions(tmp_path):
    """Input: clauses `==0.5.*`, `!=0.5.7`, `~=0.5.2`, `>0.5.1`. Outcome: the versions named
    are those of `~=`, `>` and the set's range; a wildcard or an exclusion names none."""
    m = make_manifest(tmp_path, {"a": ['"==0.5.*"', '"!=0.5.7,>0.5.1"', '"~=0.5.2"']}, '">=0.5.0"')
    assert named_versions(m) == [Version("0.5.0"), Version("0.5.1"), Version("0.5.2")]
