"""What --continue writes into the set (port/finish.py), on synthetic releases: a patch n/a
on the nearest release although one of its files is on V gets a `==V` n/a variant when the
person wrote the reason into W/.sgpatch-port/na-ID at the stop."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from helpers import (
    V10,
    V13,
    by_id,
    make_set,
    make_wheel,
    port_cache,
    port_diff,
    probe_set,
    release_files,
    run_cli,
    sgport,
    snapshot,
)
from sgpatch.patchset.manifest import load_manifest

THIRD = """\
  - id: third
    summary: third
    type: bugfix
    upstream: {status: pending}
    variants:
      - {sglang: ">=2.0", patch: patches/2.0/0003-third.patch}
      - {sglang: ">=1.0,<1.1", na: "no srt/extra.py before 2.0"}
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    c = port_cache(tmp_path, monkeypatch)
    extra = {"sglang/srt/extra.py": b"def extra():\n    return 0\n"}
    make_wheel(c / "wheels", "1.8", release_files(V10, "1.8", extra))
    return c


def na_set(tmp_path: Path) -> Path:
    """Set `demo` plus `third`: n/a on 1.0 ("no srt/extra.py"), a patch file for 2.0 on it."""
    d = make_set(tmp_path)
    (d / "patches/2.0").mkdir()
    extra = "def extra():\n    return 0\n"
    (d / "patches/2.0/0003-third.patch").write_text(
        "Subject: third\n\n" + port_diff(extra, extra.replace("0\n", "1\n"), "srt/extra.py")
    )
    (d / "patchset.yaml").write_text((d / "patchset.yaml").read_text() + THIRD)
    return d


def test_a_patch_n_a_nearby_whose_file_is_here_is_n_a_as_the_person_says(cache, tmp_path):
    """Input: `third` is n/a on 1.0, ported to 1.8, which has srt/extra.py: port stops (exit
    3) with a note naming W/.sgpatch-port/na-third; the person writes a reason there and runs
    the --continue the note gives, as typed. Outcome: exit 0; `third` gets a `==1.8` n/a
    variant with that reason, and lint on 1.8 is clean (no --abort needed)."""
    d = na_set(tmp_path)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.8",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3, doc
    note = {p["id"]: p for p in doc["steps"][0]["patches"]}["third"]["note"]
    assert f"write why into {w}/.sgpatch-port/na-third" in note
    (w / ".sgpatch-port/na-third").write_text("1.8's srt/extra.py has no such path\n")
    from helpers import hint_commands

    cont = hint_commands(note)[0]  # then --abort, and the port again
    assert cont == ["port", "--continue", "--workspace", str(w)]
    code, _out, err = run_cli(*cont)
    assert code == 0, err
    assert "third: n/a on 1.8 (as na-third says): new variant '==1.8'" in err
    na = [v for v in load_manifest(d / "patchset.yaml").patch("third").variants if v.na]
    assert [str(v.sglang) for v in na] == ["==1.8", ">=1.0,<1.1"]
    assert na[0].na == "1.8's srt/extra.py has no such path"
    assert run_cli("lint", "--set", "demo", "--patchsets", str(d.parent), "--offline")[0] == 0


# moved from tests/port/test_port.py


def test_a_patch_n_a_nearby_and_here_stays_n_a(cache, tmp_path):
    """Input: `third` is n/a on 1.0 (its patch file, for 2.0, patches srt/extra.py), ported to
    1.1, which has no srt/extra.py either. Outcome: exit 0; `third` is n/a, its note says none
    of its files is in 1.1; its n/a variant now reaches 1.1 (the comment kept), lint is clean."""
    d = na_set(tmp_path)
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 0, doc
    third = by_id(doc)["third"]
    assert third["outcome"] == "n/a" and "none of its files is in 1.1 either" in third["note"]
    m = load_manifest(d / "patchset.yaml")
    na = [v for v in m.patch("third").variants if v.patch is None]
    assert [str(v.sglang) for v in na] == [">=1.0,<=1.1"]
    assert na[0].na == "no srt/extra.py before 2.0"
    assert (d / "patchset.yaml").read_text().startswith("# a set made on 1.0")


def test_a_patch_n_a_nearby_whose_file_is_here_needs_a_variant(cache, tmp_path):
    """Input: as above, ported to 1.8, which has srt/extra.py. Outcome: `third` is n/a with a
    note naming srt/extra.py and saying the set needs a variant for 1.8; nothing n/a is
    written for it; lint then stops the port (exit 3) on `third` having no variant, listed
    under the lint heading by patch and field (and in `lint_refusals`); the set is
    unchanged."""
    files = release_files(V10, "1.8", {"sglang/srt/extra.py": b"def extra():\n    return 0\n"})
    make_wheel(cache / "wheels", "1.8", files)
    d = na_set(tmp_path)
    before = snapshot(d)
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.8",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 3, doc
    note = by_id(doc)["third"]["note"]
    assert "srt/extra.py is in 1.8: the set needs a variant for 1.8" in note
    fix = doc["steps"][0]["fix"]
    assert fix[0] == "lint refuses the set as --continue would write it (patch, manifest field):"
    assert fix[1].startswith("  third (patches[2].variants): no variant of patch 'third'")
    (refusal,) = doc["steps"][0]["lint_refusals"]
    assert refusal["patch"] == "third" and refusal["field"] == "patches[2].variants"
    assert snapshot(d) == before


def test_a_backport_to_before_a_patch_s_file_existed_makes_it_n_a(cache, tmp_path):
    """Input: 0.9 has no srt/other.py (it came in 1.0); the set made on 1.0 is ported --to 0.9.
    Outcome: exit 0 by itself: `second` (srt/other.py only) is n/a, its note and its new
    `==0.9` n/a variant say none of its files is in 0.9; `first` is carried. (Forward, a file
    that is gone needs a hand: test_a_change_moved_to_another_file_by_hand.)"""
    files = release_files(V10, "0.9")
    del files["sglang/srt/other.py"]
    make_wheel(cache / "wheels", "0.9", files)
    d = make_set(tmp_path)
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "0.9",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 0, doc
    second = by_id(doc)["second"]
    why = "none of its files is in sglang 0.9 (srt/other.py): added later upstream"
    assert second["outcome"] == "n/a" and second["note"] == why
    assert by_id(doc)["first"]["outcome"] == "carried"
    variant = load_manifest(d / "patchset.yaml").patch("second").variants[0]
    assert str(variant.sglang) == "==0.9" and variant.patch is None and variant.na == why


@pytest.mark.parametrize("to", ["1.1", "1.2"])
def test_a_patch_left_out_with_without_gets_an_n_a_variant(cache, tmp_path, to):
    """Input: port --without first, to 1.1 (first would carry) and to 1.2 (first would stop).
    Outcome: exit 0 by itself: `first` is skipped, the set gets a `==V` n/a variant for it
    saying it was left out by port --without (first match: it wins on V), `second` is carried;
    lint is clean, so the set applies on V."""
    d = make_set(tmp_path)
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", to, "--without",
                       "first", "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 0, doc
    assert by_id(doc)["first"]["outcome"] == "skipped"
    variant = load_manifest(d / "patchset.yaml").patch("first").variants[0]
    assert str(variant.sglang) == f"=={to}" and variant.patch is None
    assert variant.na == f"left out when the set was ported to {to} (sgpatch port --without)"


# ---------------------------------------------------------------------------------------------
# a port never claims a release it did not check


def lint_set(d: Path) -> int:
    """`sgpatch lint` of the set on every release its range claims (verify too: the real
    jump test, tests/real/test_port_real.py)."""
    return run_cli("lint", "--set", "demo", "--patchsets", str(d.parent), "--offline")[0]


def test_a_jump_port_claims_only_the_releases_it_checked(cache, tmp_path):
    """Input: the 1.0 set ported straight to 1.3 (1.1 and 1.2 in between, in the cache);
    `first` fixed by hand, --continue; then `--to 1.1` fills one of the holes. Outcome: the
    set's range takes in 1.3 and leaves 1.1 and 1.2 out (`!=`), said in the change line;
    lint passes on every release the range claims (1.0, 1.3); the port to 1.1 drops
    its `!=1.1` only, and lint passes on 1.0, 1.1 and 1.3."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    args = ("--set", "demo", "--patchsets", str(d.parent), "--workspace", str(w))
    code, _doc = sgport(*args, "--to", "1.3")
    assert code == 3
    (w / "sglang/srt/mod.py").write_text(
        V13.replace("        return 1\n", "        return 100\n").replace("y = 3\n", "y = 30\n")
    )
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    m = load_manifest(d / "patchset.yaml")
    assert str(m.sglang) == ">=1.0,!=1.1,!=1.2,<=1.3"
    assert any("not ported to 1.1, 1.2" in c for c in doc["steps"][0]["changes"])
    assert lint_set(d) == 0
    code, doc = sgport(*args, "--to", "1.1")
    assert code == 0, doc
    assert str(load_manifest(d / "patchset.yaml").sglang) == ">=1.0,!=1.2,<=1.3"
    assert lint_set(d) == 0


def test_step_stretches_one_variant_over_the_releases_one_file_serves(tmp_path, monkeypatch):
    """Input: a set made for `==1.0` only (both variants `==1.0`), `--step --to 1.1` over
    1.0, 1.0.post1 (same files as 1.0) and 1.1 (`first` needs a merge there). Outcome: exit 0;
    `second`'s one variant becomes `>=1.0,<=1.1` (1.0.post1 inside it, between 1.0 and 1.1),
    never a `==V` variant per release naming the same file; `first` keeps one variant
    `>=1.0,<=1.0.post1` for its old file and gets a `==1.1` one for the merged file; the set
    covers `>=1.0,<=1.1`; lint passes on all three releases."""
    port_cache(tmp_path, monkeypatch, ("1.0", "1.0.post1", "1.1"))
    d = make_set(tmp_path)
    y = d / "patchset.yaml"
    y.write_text(y.read_text().replace('">=1.0,<1.1"', '"==1.0"'))
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1", "--step",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 0, doc
    assert [s["to"] for s in doc["steps"]] == ["1.0.post1", "1.1"]
    m = load_manifest(y)
    second = [(str(v.sglang), v.patch.name) for v in m.patch("second").variants]
    assert second == [(">=1.0,<=1.1", "0002-second.patch")]
    first = [(str(v.sglang), v.patch.relative_to(d).as_posix()) for v in m.patch("first").variants]
    assert first == [("==1.1", "patches/1.1/0001-first.patch"),
                     (">=1.0,<=1.0.post1", "patches/1.0/0001-first.patch")]  # fmt: skip
    assert str(m.sglang) == ">=1.0,<=1.1"
    assert run_cli("lint", "--set", "demo", "--patchsets", str(d.parent), "--offline")[0] == 0


def test_lint_releases_are_those_whose_patches_change(cache, tmp_path):
    """Input: the 1.0 set and two edited copies: `first` stretched to 1.1 on its old file
    (set range too), and `first` given a new file for `>=1.0,<=1.2`. Outcome: --continue
    lints the first on 1.1 only (1.0 gets what it got), the second on 1.0, 1.1 and 1.2 (1.0
    gets another file, 1.1 and 1.2 are newly claimed)."""
    from sgpatch.port.finish import lint_releases

    d = make_set(tmp_path)
    old = load_manifest(d / "patchset.yaml")
    known = [Version(v) for v in ("1.0", "1.1", "1.2", "1.3")]
    text = (d / "patchset.yaml").read_text()

    def edited(name: str, new: str) -> object:
        e = tmp_path / name / "demo"
        import shutil

        shutil.copytree(d, e)
        (e / "patchset.yaml").write_text(new)
        return load_manifest(e / "patchset.yaml")

    stretched = text.replace('sglang: ">=1.0,<1.1"', 'sglang: ">=1.0,<=1.1"', 1).replace(
        '{sglang: ">=1.0,<1.1", patch: patches/1.0/0001',
        '{sglang: ">=1.0,<=1.1", patch: patches/1.0/0001',
    )
    assert lint_releases(old, edited("a", stretched), Version("1.1"), known) == [Version("1.1")]
    refiled = text.replace('sglang: ">=1.0,<1.1"', 'sglang: ">=1.0,<=1.2"', 1).replace(
        '{sglang: ">=1.0,<1.1", patch: patches/1.0/0001-first.patch}',
        '{sglang: ">=1.0,<=1.2", patch: patches/1.0/0002-second.patch}',
    )
    got = lint_releases(old, edited("b", refiled), Version("1.2"), known)
    assert got == [Version("1.0"), Version("1.1"), Version("1.2")]


def _merged_since_1_1(tmp_path: Path) -> Path:
    """`demo` whose `second` is merged upstream since 1.1 by the manifest, with a probe that
    finds the patch's own change (so 1.1, which lacks it, is `pending`: lint refuses)."""
    d = probe_set(tmp_path, "all: [{file: srt/other.py, regex: 'the_answer_to\\(42\\)'}]")
    text = (d / "patchset.yaml").read_text()
    at = text.index("  - id: second")
    merged = 'upstream: {status: merged, ref: "o/r#1", since: "1.1"}'
    text = text[:at] + text[at:].replace("upstream: {status: pending}", merged, 1)
    (d / "patchset.yaml").write_text(text)
    return d


@pytest.mark.parametrize("reworded", [False, True])
def test_port_blames_the_field_lint_names_whatever_its_message_says(
    cache, tmp_path, monkeypatch, reworded
):
    """Input: the set above ported to 1.1; lint refuses `second` on its probe. Run as it is,
    and with every lint message reworded to one that says nothing of a probe. Outcome: both
    runs stop (exit 3) blaming `patches[1].probe` in `lint_refusals` and under the lint
    heading of `fix`, with the message lint gave: the field comes from lint's record."""
    from dataclasses import replace

    from sgpatch.ops import lint

    if reworded:
        real = lint.check
        monkeypatch.setattr(lint, "check", lambda *a, **k: [
            replace(f, message=f"reworded {i}") for i, f in enumerate(real(*a, **k))])  # fmt: skip
    d = _merged_since_1_1(tmp_path)
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 3, doc
    (refusal,) = doc["steps"][0]["lint_refusals"]
    assert (refusal["patch"], refusal["field"]) == ("second", "patches[1].probe")
    said = "reworded 0" if reworded else "manifest says merged since 1.1, but the probe does not"
    assert refusal["message"].startswith(said)
    assert f"  second (patches[1].probe): {refusal['message']}" in doc["steps"][0]["fix"]
