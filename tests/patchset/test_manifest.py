"""Tests for patchset.manifest: validation messages (file:line: field), variants, discovery."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.patchset.manifest import (
    PatchSpec,
    Upstream,
    Variant,
    find_sets,
    load_manifest,
    load_probe_text,
    load_set,
    probe_for,
    select_variant,
    set_supports,
)
from sgpatch.patchset.probe import AllProbe, AnyProbe, NotProbe, RegexProbe, SymbolProbe

GOOD = textwrap.dedent(
    """\
    schema: 1
    name: demo
    summary: Demo set
    sglang: ">=0.5.5,<0.6"
    fuzz: 1
    patches:
      - id: kimi-hooks
        summary: Kimi gets the EAGLE-3 interface
        type: feature
        upstream: {status: merged, ref: "sgl-project/sglang#19689", since: 0.5.10}
        optional: false
        probe:
          any:
            - {file: "srt/models/*.py", regex: '^\\s+def get_embed_and_head\\('}
            - not: {file: srt/x.py, absent: foo}
            - all:
                - symbol: {file: srt/models/kimi_k25.py, class: Kimi, method: get_embed_and_head}
        variants:
          - {sglang: ">=0.5.9,<0.5.10", patch: patches/0.5.9/0001-kimi.patch}
          - {sglang: "<0.5.9", na: "kimi_k25.py does not exist before 0.5.9"}
        environment:
          - {package: flashinfer-python, specifier: ">=0.6.17", why: "SM12 in the JIT"}
      - id: sm120-sizes
        summary: SM12 symmetric-memory sizes
        type: portability
        upstream: {status: submitted, ref: "sgl-project/sglang#1"}
        requires: [kimi-hooks]
        optional: true
        variants:
          - sglang: ">=0.5.5"
            patch: patches/0002-sizes.patch
    """
)

# A minimal valid manifest; each bad case below replaces one piece. Line numbers:
#  1 schema  2 name  3 summary  4 sglang  5 patches  6 - id  7 summary  8 type  9 upstream
# 10 variants  11 - sglang  12 patch
BASE = textwrap.dedent(
    """\
    schema: 1
    name: demo
    summary: Demo
    sglang: ">=0.5.5,<0.6"
    patches:
      - id: one
        summary: One
        type: bugfix
        upstream: {status: pending}
        variants:
          - sglang: ">=0.5.9"
            patch: patches/one.patch
    """
)

SECOND = textwrap.indent(
    textwrap.dedent(
        """\
        - id: two
          summary: Two
          type: bugfix
          upstream: {status: pending}
          requires: [one]
          variants:
            - {sglang: ">=0.5.9", na: "not needed"}
        """
    ),
    "  ",
)


def make_set(tmp_path: Path, text: str, name: str = "demo", files: tuple[str, ...] = ()) -> Path:
    set_dir = tmp_path / name
    set_dir.mkdir(parents=True, exist_ok=True)
    for rel in ("patches/one.patch", "patches/0.5.9/0001-kimi.patch", "patches/0002-sizes.patch"):
        (set_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (set_dir / rel).write_text("--- a/x\n+++ b/x\n")
    for rel in files:
        (set_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (set_dir / rel).write_text("")
    path = set_dir / "patchset.yaml"
    path.write_text(text)
    return path


def replace(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# (case id, manifest text, expected message fragment, exit code)
BAD: list[tuple[str, str, str, ExitCode]] = [
    (
        "yaml-syntax",
        replace("summary: Demo\n", "summary: [Demo\n"),
        ":4: invalid YAML: while parsing a flow sequence (from line 3), expected ','",
        2,
    ),
    ("yaml-tab", replace("  - id: one", "\t- id: one"), ":6: invalid YAML", 2),
    ("schema-2", replace("schema: 1", "schema: 2"), ":1: schema: unsupported schema 2", 2),
    ("schema-str", replace("schema: 1", "schema: one"), ":1: schema: must be an integer", 2),
    ("schema-missing", replace("schema: 1\n", ""), ":1: missing required key 'schema'", 2),
    ("name-mismatch", replace("name: demo", "name: other"), ":2: name: 'other' must equal", 2),
    (
        "unknown-top",
        replace("summary: Demo\n", "summary: Demo\nfuz: 1\n"),
        ":4: fuz: unknown key (did you mean 'fuzz'?",
        2,
    ),
    ("dup-key", replace("summary: Demo\n", "summary: Demo\nsummary: x\n"), ":4: summary: dup", 2),
    (
        "bad-top-spec",
        replace('sglang: ">=0.5.5,<0.6"', 'sglang: ">=0.5.x"'),
        ":4: sglang: invalid specifier '>=0.5.x'",
        2,
    ),
    (
        "bare-version-spec",
        replace('sglang: ">=0.5.5,<0.6"', "sglang: 0.5.9"),
        ":4: sglang: invalid specifier '0.5.9' (a bare version needs '==')",
        2,
    ),
    ("fuzz-3", replace("patches:\n", "fuzz: 3\npatches:\n"), ":5: fuzz: must be 0, 1 or 2", 2),
    ("fuzz-bool", replace("patches:\n", "fuzz: true\npatches:\n"), ":5: fuzz: must be an int", 2),
    (
        "patch-not-map",
        replace("  - id: one", "  - one\n  - id: one"),
        ":6: patches[0]: must be a mapping, got string 'one'",
        2,
    ),
    (
        "patches-empty-list",
        "schema: 1\nname: demo\nsummary: D\nsglang: '>=0.5'\npatches: []\n",
        ":5: patches: must not be empty",
        2,
    ),
    ("id-format", replace("id: one", "id: One_1"), ":6: patches[0].id: 'One_1' must match", 2),
    (
        "id-duplicate",
        BASE + SECOND.replace("id: two", "id: one").replace("    requires: [one]\n", ""),
        ":13: patches[1].id: duplicate id 'one' (first at line 6)",
        2,
    ),
    (
        "missing-summary",
        replace("    summary: One\n", ""),
        ":6: patches[0]: missing required key 'summary'",
        2,
    ),
    (
        "unknown-patch-key",
        replace("    type: bugfix\n", "    type: bugfix\n    upstrem: x\n"),
        ":9: patches[0].upstrem: unknown key (did you mean 'upstream'?",
        2,
    ),
    ("bad-type", replace("type: bugfix", "type: hotfix"), ":8: patches[0].type: 'hotfix'", 2),
    (
        "status-bad",
        replace("{status: pending}", "{status: done}"),
        ":9: patches[0].upstream.status: 'done' is not one of pending, submitted, merged",
        2,
    ),
    (
        "submitted-no-ref",
        replace("{status: pending}", "{status: submitted}"),
        ":9: patches[0].upstream: status submitted needs 'ref'",
        2,
    ),
    (
        "merged-no-since",
        replace("{status: pending}", "{status: merged, ref: 'a/b#1'}"),
        ":9: patches[0].upstream: status merged needs 'since'",
        2,
    ),
    (
        "merged-no-probe",
        replace("{status: pending}", "{status: merged, ref: 'a/b#1', since: '0.5.10'}"),
        ":9: patches[0].upstream: a merged patch needs a probe",
        2,
    ),
    (
        "since-on-pending",
        replace("{status: pending}", "{status: pending, since: '0.5.10'}"),
        ":9: patches[0].upstream.since: only valid with status merged",
        2,
    ),
    (
        "since-invalid",
        replace("{status: pending}", "{status: merged, ref: r, since: 'soon'}"),
        ":9: patches[0].upstream.since: invalid version 'soon'",
        2,
    ),
    (
        "optional-str",
        replace("    type: bugfix\n", "    type: bugfix\n    optional: 'no'\n"),
        ":9: patches[0].optional: must be true or false, got string 'no'",
        2,
    ),
    (
        "variant-spec",
        replace('- sglang: ">=0.5.9"', '- sglang: ">=0.5.x"'),
        ":11: patches[0].variants[0].sglang: invalid specifier '>=0.5.x'",
        2,
    ),
    (
        "variant-both",
        replace("patch: patches/one.patch", "patch: patches/one.patch\n        na: gone"),
        ":11: patches[0].variants[0]: needs exactly one of 'patch' or 'na'",
        2,
    ),
    (
        "variant-neither",
        replace("        patch: patches/one.patch\n", ""),
        ":11: patches[0].variants[0]: needs exactly one of 'patch' or 'na'",
        2,
    ),
    (
        "variants-empty",
        replace(
            '    variants:\n      - sglang: ">=0.5.9"\n        patch: patches/one.patch\n',
            "    variants: []\n",
        ),
        ":10: patches[0].variants: must not be empty",
        2,
    ),
    (
        "patch-missing",
        replace("patches/one.patch", "patches/nope.patch"),
        ":12: patches[0].variants[0].patch: patch file 'patches/nope.patch' not found",
        2,
    ),
    (
        "patch-absolute",
        replace("patches/one.patch", "/etc/passwd"),
        ":12: patches[0].variants[0].patch: patch path '/etc/passwd' must be a relative path",
        4,
    ),
    (
        "patch-dotdot",
        replace("patches/one.patch", "../other/x.patch"),
        ":12: patches[0].variants[0].patch: patch path '../other/x.patch' must not contain '..'",
        4,
    ),
    (
        "requires-unknown",
        BASE + SECOND.replace("[one]", "[one, three]"),
        ":17: patches[1].requires[1]: unknown patch id 'three' (known: one, two)",
        2,
    ),
    (
        "requires-self",
        BASE + SECOND.replace("[one]", "[two]"),
        ":17: patches[1].requires[0]: patch 'two' requires itself",
        2,
    ),
    (
        "requires-cycle",
        replace("    type: bugfix\n", "    type: bugfix\n    requires: [two]\n") + SECOND,
        ":18: patches[1].requires[0]: dependency cycle one -> two -> one",
        2,
    ),
    (
        "probe-regex",
        replace("    variants:", "    probe: {file: srt/x.py, regex: 'def ('}\n    variants:"),
        ":10: patches[0].probe.regex: invalid regex 'def (': missing ), unterminated subpattern",
        2,
    ),
    (
        "probe-unknown-form",
        replace("    variants:", "    probe: {grep: x}\n    variants:"),
        ":10: patches[0].probe: not a probe: unknown kind ('grep'); expected {file, regex}",
        2,
    ),
    (
        "probe-both",
        replace("    variants:", "    probe: {file: a.py, regex: x, absent: y}\n    variants:"),
        ":10: patches[0].probe: has both 'regex' and 'absent'",
        2,
    ),
    (
        "probe-glob-dotdot",
        replace("    variants:", "    probe: {file: ../../etc/*, regex: x}\n    variants:"),
        ":10: patches[0].probe.file: probe file '../../etc/*' must not contain '..'",
        4,
    ),
    (
        "probe-symbol-keys",
        replace("    variants:", "    probe: {symbol: {file: a.py, class: A}}\n    variants:"),
        ":10: patches[0].probe.symbol: missing required key 'method'",
        2,
    ),
    (
        "probe-any-empty",
        replace("    variants:", "    probe:\n      any: []\n    variants:"),
        ":11: patches[0].probe.any: must not be empty",
        2,
    ),
    (
        "probe-nested-line",
        replace(
            "    variants:",
            "    probe:\n      all:\n        - {file: a.py, regex: ok}\n"
            "        - not: {file: a.py, regex: '[z'}\n    variants:",
        ),
        ":13: patches[0].probe.all[1].not.regex: invalid regex",
        2,
    ),
    (
        "env-bad-spec",
        replace(
            "    variants:",
            "    environment:\n      - {package: flashinfer, specifier: '>=0.6.x', why: w}\n"
            "    variants:",
        ),
        ":11: patches[0].environment[0].specifier: invalid specifier '>=0.6.x'",
        2,
    ),
    (
        "env-missing-why",
        replace(
            "    variants:",
            "    environment:\n      - {package: flashinfer, specifier: '>=0.6'}\n    variants:",
        ),
        ":11: patches[0].environment[0]: missing required key 'why'",
        2,
    ),
    ("summary-null", replace("summary: Demo", "summary:"), ":3: summary: must be a string", 2),
    (
        "patches-map",
        "schema: 1\nname: demo\nsummary: D\nsglang: '>=0.5'\npatches: {}\n",
        ":5: patches: must be a list, got a mapping",
        2,
    ),
]


@pytest.mark.parametrize(("case", "text", "fragment", "code"), BAD, ids=[b[0] for b in BAD])
def test_bad_manifests(tmp_path: Path, case: str, text: str, fragment: str, code: int) -> None:
    path = make_set(tmp_path, text)
    with pytest.raises(SgpatchError) as info:
        load_manifest(path)
    message = info.value.message
    assert fragment in message, message
    assert "patchset.yaml" in message
    assert "\n" not in message
    assert info.value.code == code


def test_bad_case_count() -> None:
    assert len(BAD) >= 15


def test_base_is_valid(tmp_path: Path) -> None:
    manifest = load_manifest(make_set(tmp_path, BASE))
    assert [p.id for p in manifest.patches] == ["one"]
    assert manifest.fuzz == 0
    assert manifest.patches[0].optional is False
    assert manifest.patches[0].requires == ()
    assert manifest.patches[0].probe is None


def test_suggested_marker_and_a_variant_s_own_probe(tmp_path: Path) -> None:
    """Input: a patch probe with `suggested: true`, a variant with its own probe (block style),
    a probe file's text; then `suggested: "yes"` and a probe on an n/a variant. Outcome: the
    marker is read (False without it), the variant's probe speaks for its releases and the
    patch's for the rest (probe_for), a probe file loads alone (comments only: no probe);
    the two bad forms are refused with file:line and field (exit 2)."""
    text = BASE.replace(
        "    upstream: {status: pending}\n",
        "    upstream: {status: pending}\n    probe:\n      suggested: true\n"
        "      file: srt/a.py\n      regex: old\n",
    ).replace(
        '      - sglang: ">=0.5.9"\n        patch: patches/one.patch\n',
        '      - sglang: "==0.5.10"\n        patch: patches/one.patch\n'
        "        probe: {file: srt/a.py, regex: new}\n"
        '      - sglang: ">=0.5.9"\n        patch: patches/one.patch\n',
    )
    spec = load_manifest(make_set(tmp_path, text)).patches[0]
    assert spec.probe == RegexProbe("srt/a.py", "old") and spec.probe_suggested
    assert spec.variants[0].probe == RegexProbe("srt/a.py", "new")
    assert not spec.variants[0].probe_suggested and spec.variants[1].probe is None
    assert probe_for(spec, Version("0.5.10")) == RegexProbe("srt/a.py", "new")
    assert probe_for(spec, Version("0.5.9")) == RegexProbe("srt/a.py", "old")
    f = tmp_path / "probe.yaml"
    assert load_probe_text("# nothing\n", f) == (None, False)
    assert load_probe_text("suggested: true\nnot: {file: x.py, regex: y}\n", f) == (
        NotProbe(RegexProbe("x.py", "y")),
        True,
    )
    bad = text.replace("suggested: true", 'suggested: "yes"')
    with pytest.raises(SgpatchError) as e:
        load_manifest(make_set(tmp_path / "b", bad))
    assert "patches[0].probe.suggested: must be true or false" in e.value.message
    na = BASE.replace(
        "        patch: patches/one.patch\n",
        "        na: gone\n        probe: {file: a.py, regex: x}\n",
    )
    with pytest.raises(SgpatchError) as e:
        load_manifest(make_set(tmp_path / "c", na))
    assert e.value.code == ExitCode.BAD_INPUT
    assert "'probe' belongs to a variant with a patch file" in e.value.message


def test_good_manifest(tmp_path: Path) -> None:
    path = make_set(tmp_path, GOOD)
    m = load_manifest(path)
    assert m.name == "demo"
    assert m.summary == "Demo set"
    assert m.sglang == SpecifierSet(">=0.5.5,<0.6")
    assert m.fuzz == 1
    assert m.path == path.absolute()
    assert m.base_dir == path.parent.absolute()
    first, second = m.patches
    assert first.id == "kimi-hooks"
    assert first.type == "feature"
    assert first.line == 7
    assert first.upstream == Upstream("merged", "sgl-project/sglang#19689", Version("0.5.10"))
    assert first.probe == AnyProbe(
        (
            RegexProbe("srt/models/*.py", r"^\s+def get_embed_and_head\(", absent=False),
            NotProbe(RegexProbe("srt/x.py", "foo", absent=True)),
            AllProbe((SymbolProbe("srt/models/kimi_k25.py", "Kimi", "get_embed_and_head"),)),
        )
    )
    v0, v1 = first.variants
    assert v0.patch == m.base_dir / "patches/0.5.9/0001-kimi.patch"
    assert v0.na is None and v0.line == 19
    assert v1.patch is None and v1.na == "kimi_k25.py does not exist before 0.5.9"
    env = first.environment[0]
    assert (env.package, str(env.specifier), env.why) == (
        "flashinfer-python",
        ">=0.6.17",
        "SM12 in the JIT",
    )
    assert second.requires == ("kimi-hooks",)
    assert second.optional is True
    assert second.upstream == Upstream("submitted", "sgl-project/sglang#1", None)
    assert m.patch("sm120-sizes") is second
    with pytest.raises(SgpatchError, match="no patch 'nope'"):
        m.patch("nope")


def test_unquoted_float_since_keeps_text(tmp_path: Path) -> None:
    text = replace(
        "{status: pending}",
        "{status: merged, ref: r, since: 0.6}\n    probe: {file: a.py, regex: x}",
    )
    m = load_manifest(make_set(tmp_path, text))
    assert m.patches[0].upstream.since == Version("0.6")


def test_missing_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(SgpatchError, match="no such file") as info:
        load_manifest(tmp_path / "demo" / "patchset.yaml")
    assert info.value.code == ExitCode.BAD_INPUT
    with pytest.raises(SgpatchError, match="empty manifest"):
        load_manifest(make_set(tmp_path, "# nothing\n"))
    with pytest.raises(SgpatchError, match=r"patchset.yaml:1: must be a mapping, got a list"):
        load_manifest(make_set(tmp_path, "- a\n"))


def test_patch_symlink_escaping_set_dir_is_unsafe(tmp_path: Path) -> None:
    outside = tmp_path / "outside.patch"
    outside.write_text("x")
    path = make_set(tmp_path, replace("patches/one.patch", "patches/link.patch"))
    (path.parent / "patches" / "link.patch").symlink_to(outside)
    with pytest.raises(SgpatchError, match="resolves outside the set directory") as info:
        load_manifest(path)
    assert info.value.code == ExitCode.UNSAFE


def test_error_names_path_relative_to_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = make_set(tmp_path / "patchsets", replace("schema: 1", "schema: 2"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SgpatchError) as info:
        load_manifest(path)
    assert info.value.message.startswith("patchsets/demo/patchset.yaml:1: schema: ")


# --- variant selection ---------------------------------------------------------------------------


def _spec(*ranges: str) -> PatchSpec:
    variants = tuple(Variant(SpecifierSet(r), None, f"v{i}", i) for i, r in enumerate(ranges))
    return PatchSpec(
        id="p",
        summary="s",
        type="bugfix",
        upstream=Upstream("pending", None, None),
        requires=(),
        optional=False,
        probe=None,
        variants=variants,
        environment=(),
        line=1,
    )


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.5.9", "v1"),
        ("0.5.9.post1", "v1"),
        ("0.5.9+cu130", "v1"),
        ("0.5.9.post1.dev3+gabc123", "v1"),  # a checkout 3 commits after v0.5.9
        ("0.5.10", "v2"),
        ("0.5.10+cu130", "v2"),
        ("0.5.10.post1", "v2"),
        ("0.5.8.post1", "v0"),
        ("0.5.5", "v0"),
        ("0.5.24.dev3+gabc", "v2"),
        ("0.5.10rc1", None),  # < 0.5.10 excludes its own pre-releases (PEP 440) and >=0.5.10 too
        ("0.6.0", None),
        ("0.4.9", None),
    ],
)
def test_select_variant(version: str, expected: str | None) -> None:
    patch = _spec(">=0.5.5,<0.5.9", ">=0.5.9,<0.5.10", ">=0.5.10,<0.6")
    chosen = select_variant(patch, Version(version))
    assert (chosen.na if chosen else None) == expected


def test_select_variant_first_match_wins() -> None:
    patch = _spec(">=0.5.9,<0.5.10", ">=0.5")
    assert select_variant(patch, Version("0.5.9.post1")).na == "v0"  # type: ignore[union-attr]
    assert select_variant(patch, Version("0.5.12")).na == "v1"  # type: ignore[union-attr]


def test_exact_pin_matches_local_build() -> None:
    patch = _spec("==0.5.10")
    assert select_variant(patch, Version("0.5.10+cu130")) is not None
    assert select_variant(patch, Version("0.5.10.post1")) is None


def test_set_supports(tmp_path: Path) -> None:
    m = load_manifest(make_set(tmp_path, GOOD))
    assert set_supports(m, Version("0.5.9+cu130"))
    assert set_supports(m, Version("0.5.24.dev3+gabc"))
    assert not set_supports(m, Version("0.6.0"))


# --- discovery -----------------------------------------------------------------------------------


def _set(folder: Path, name: str) -> Path:
    (folder / name).mkdir(parents=True)
    text = replace("name: demo", f"name: {name}")
    make_set(folder, text, name=name)
    return folder / name


def test_find_sets_order_and_forms(tmp_path: Path) -> None:
    first = _set(tmp_path / "a", "alpha")
    _set(tmp_path / "b", "alpha")  # shadowed by --patchsets
    beta = _set(tmp_path / "b", "beta")
    gamma = _set(tmp_path / "c", "gamma")
    (tmp_path / "b" / "not-a-set").mkdir()
    env = {"SGPATCH_PATH": f"{tmp_path / 'b'}:{tmp_path / 'missing'}:{gamma}"}
    sets = find_sets([first], environ=env)  # a set directory itself
    assert sets["alpha"] == first
    assert sets["beta"] == beta
    assert sets["gamma"] == gamma
    assert "not-a-set" not in sets
    sets = find_sets([tmp_path / "b"], environ={})  # a folder of sets
    assert sets["alpha"] == tmp_path / "b" / "alpha"


def test_find_sets_missing_dir(tmp_path: Path) -> None:
    with pytest.raises(SgpatchError, match=r"--patchsets .*nope: not a directory"):
        find_sets([tmp_path / "nope"], environ={})


def test_load_set(tmp_path: Path) -> None:
    _set(tmp_path, "alpha")
    _set(tmp_path, "beta")
    assert load_set("alpha", [tmp_path], environ={}).name == "alpha"
    with pytest.raises(SgpatchError, match=r"unknown patch set 'zeta' \(known: .*alpha, beta"):
        load_set("zeta", [tmp_path], environ={})


def test_bundled_sets_are_found_and_valid() -> None:
    """Whatever ships in patchsets/ must load (none may exist yet while sets are written)."""
    sets = find_sets(environ={})
    for name in sets:
        assert load_set(name, environ={}).name == name


def test_docs_example_loads(tmp_path: Path) -> None:
    """The complete example in docs/manifest.md must stay valid."""
    import re

    doc = Path(__file__).resolve().parents[2] / "docs" / "manifest.md"
    match = re.search(r"```yaml\n(.*?)```", doc.read_text(), re.S)
    assert match is not None
    set_dir = tmp_path / "kimi-eagle3-sm120"
    patch = set_dir / "patches" / "0.5.9" / "0001-kimi-k25-eagle3-hooks.patch"
    patch.parent.mkdir(parents=True)
    patch.write_text("")
    (set_dir / "patchset.yaml").write_text(match.group(1))
    manifest = load_manifest(set_dir / "patchset.yaml")
    assert manifest.patches[0].variants[0].patch == patch


def test_ranges_print_as_the_manifest_wrote_them() -> None:
    """Input: `>= 0.5.5, <0.5.24,` in a manifest. Outcome: shown as `>=0.5.5,<0.5.24` (packaging
    alone would sort it to `<0.5.24,>=0.5.5`), while matching, equality and pickling (the
    matrix's worker processes) behave as for a plain SpecifierSet."""
    import pickle

    from sgpatch.patchset.manifest import AsWritten

    spec = AsWritten(">= 0.5.5, <0.5.24,")
    assert str(spec) == ">=0.5.5,<0.5.24"
    assert str(SpecifierSet(">=0.5.5, <0.5.24")) == "<0.5.24,>=0.5.5"
    assert spec == SpecifierSet("<0.5.24,>=0.5.5")
    assert spec.contains("0.5.9") and not spec.contains("0.5.24")
    again = pickle.loads(pickle.dumps(spec))
    assert str(again) == ">=0.5.5,<0.5.24" and again == spec
