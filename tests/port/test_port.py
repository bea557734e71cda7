"""sgpatch port on synthetic releases (tiny fake wheels in a private cache, --offline): every
sequencer state (carried, merged, stopped, waiting, fixed, upstream, aborted), the workspace's
safety rules, backport, --step; plus the text edits and merge checks it is built from.
(Real releases and real third-party stacks: tests/real/test_port_real.py.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from helpers import (
    PATCHED10,
    V10,
    V11,
    V12,
    V13,
    apply_to,
    make_set,
    make_wheel,
    offline_cache,
    port_cache,
    port_diff,
    release_files,
    run_cli,
)
from sgpatch import port
from sgpatch.patchset import manifest_text
from sgpatch.patchset.manifest import load_manifest
from sgpatch.port import edits, merge


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private release cache holding 1.0, 1.1, 1.2 and 1.3; downloads fail loudly."""
    c = offline_cache(tmp_path, monkeypatch)
    for v, text in (("1.0", V10), ("1.1", V11), ("1.2", V12), ("1.3", V13)):
        make_wheel(c / "wheels", v, release_files(text, v))
    return c


def sgport(*args: str) -> tuple[int, dict]:
    code, out, _err = run_cli("port", "--offline", "--json", *args)
    return code, json.loads(out)


def by_id(doc: dict, step: int = -1) -> dict[str, dict]:
    return {p["id"]: p for p in doc["steps"][step]["patches"]}


def snapshot(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()}


# ---------------------------------------------------------------------------------------------
# carried, per hunk


def test_exact_hunks_are_kept_and_only_the_others_merged(cache, tmp_path):
    """Input: `first` made on 1.0 (two hunks); 1.1 shifts hunk 1 and changes hunk 2's context.
    Outcome: exit 0; hunk 1 kept, hunk 2 merged; the workspace file is what `git merge-file` of
    the whole file gives; a new `==1.1` variant with `base: "1.1"`, comments kept; `second`
    (unchanged file) serves 1.1 as it is: its range stretched to 1.1."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1",
                       "--workspace", str(w))  # fmt: skip
    assert code == 0, doc
    p = by_id(doc)
    assert (p["first"]["hunks_kept"], p["first"]["hunks_merged"]) == (1, 1)
    assert p["second"]["as_is"] and p["second"]["outcome"] == "carried"
    expected, n = merge.merge_file(V10.encode(), V11.encode(), PATCHED10.encode(), ("a", "b", "c"))
    assert n == 0 and (w / "sglang/srt/mod.py").read_bytes() == expected
    text = (d / "patchset.yaml").read_text()
    assert text.startswith("# a set made on 1.0 (this comment must survive every edit)\n")
    m = load_manifest(d / "patchset.yaml")
    first = m.patch("first").variants[0]
    assert str(first.sglang) == "==1.1" and first.base == Version("1.1")
    assert first.patch == d / "patches/1.1/0001-first.patch"
    assert str(m.patch("second").variants[0].sglang) == ">=1.0,<=1.1"
    assert m.sglang.contains("1.1") and not m.sglang.contains("1.2")
    assert apply_to(tmp_path, d.parent, "1.1", V11) == expected
    assert (w / ".sgpatch-port/finished").is_file()


def test_nothing_to_port_again(cache, tmp_path):
    """Input: the same port twice (the second into the finished workspace).
    Outcome: the second finds every patch as it is on 1.1 and writes nothing."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    args = ("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1", "--workspace", str(w))
    assert sgport(*args)[0] == 0
    before = snapshot(d)
    code, doc = sgport(*args)
    assert code == 0 and doc["steps"][0]["written"] == []
    assert snapshot(d) == before


# ---------------------------------------------------------------------------------------------
# stopped -> fix -> --continue / --abort


def start_conflict(tmp_path) -> tuple[Path, Path, int, dict]:
    """The set ported to 1.2, where `first` stops."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                       "--workspace", str(w))  # fmt: skip
    return d, w, code, doc


def test_conflict_stops_with_markers_and_readable_state(cache, tmp_path):
    """Input: 1.2 changed the very line hunk 2 of `first` changes.
    Outcome: exit 3; the set is byte-for-byte unchanged; W is a full 1.2 tree whose mod.py has
    diff3 markers (ours/base/theirs) with hunk 1 already kept; `second` (another file) was
    carried anyway; todo/done/needs-a-hand/fix/onto/marker are plain text naming all that."""
    d = make_set(tmp_path)
    before = snapshot(d)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3
    assert snapshot(d) == before
    text = (w / "sglang/srt/mod.py").read_text()
    for mark in ("<<<<<<< sglang 1.2\n", "||||||| sglang 1.0\n", "=======\n",
                 ">>>>>>> first (made on 1.0)\n"):  # fmt: skip
        assert mark in text
    assert "        return 100\n" in text  # the kept hunk
    assert (w / "sglang/srt/other.py").read_text().endswith("return 42\n")
    state = w / ".sgpatch-port"
    assert (state / "onto").read_text() == "1.2\n"
    assert (state / "needs-a-hand").read_text().startswith("first\tconflict\t")
    assert (state / "done").read_text().startswith("second\tcarried\t")
    assert (state / "todo").read_text() == ""
    fix = (state / "fix").read_text()
    assert fix.startswith("files to fix in W (then `sgpatch port --continue --workspace ")
    assert "\n  sglang/srt/mod.py (markers at lines " in fix and "first hunk(s) #2" in fix
    assert (state / "marker").is_file()
    assert by_id(doc)["first"]["outcome"] == "conflict"
    assert doc["steps"][0]["state"] == "stopped"


def test_continue_with_markers_left_exits_3_and_lists_them(cache, tmp_path):
    """Input: --continue on the stopped workspace without fixing anything.
    Outcome: exit 3 naming the file and marker lines; the set unchanged."""
    d, w, code, _ = start_conflict(tmp_path)
    before = snapshot(d)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 3
    assert any("srt/mod.py: conflict markers at lines" in f for f in doc["steps"][0]["fix"])
    assert snapshot(d) == before


def test_continue_after_a_fix_writes_the_variant(cache, tmp_path):
    """Input: the conflict resolved by hand (keep upstream's new line, and the patch's change),
    then --continue. Outcome: exit 0; `first` is `fixed` with a new `==1.2` variant whose diff
    is the fixed file against 1.2; applying the set to 1.2 gives the fixed file."""
    d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    fixed = V12.replace("        return 1\n", "        return 100\n").replace(
        "    y = 3\n", "    y = 30\n"
    )
    (w / "sglang/srt/mod.py").write_text(fixed)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    assert by_id(doc)["first"]["outcome"] == "fixed"
    m = load_manifest(d / "patchset.yaml")
    assert str(m.patch("first").variants[0].sglang) == "==1.2"
    assert apply_to(tmp_path, d.parent, "1.2", V12) == fixed.encode()


def test_abort_removes_only_what_sgpatch_wrote(cache, tmp_path):
    """Input: --abort on a stopped workspace where the user also saved notes.txt.
    Outcome: exit 0; the release tree and state are gone, notes.txt stays; the set unchanged;
    a second --abort is bad input (no workspace)."""
    d, w, code, _ = start_conflict(tmp_path)
    before = snapshot(d)
    (w / "notes.txt").write_text("mine\n")
    code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 0, err
    assert sorted(p.name for p in w.iterdir()) == ["notes.txt"]
    assert snapshot(d) == before
    assert run_cli("port", "--abort", "--workspace", str(w))[0] == 2


def test_workspace_rules(cache, tmp_path):
    """Input: a port into a live workspace; into a folder with other files; --continue on a
    folder that is no workspace; --continue without --workspace.
    Outcome: 4 (a port is in progress there), 2, 2, 2; nothing in them touched."""
    d, w, _code, _ = start_conflict(tmp_path)
    args = ("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1")
    assert sgport(*args, "--workspace", str(w))[0] == 4
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("x")
    assert sgport(*args, "--workspace", str(other))[0] == 2
    assert run_cli("port", "--continue", "--workspace", str(other))[0] == 2
    assert run_cli("port", "--continue")[0] == 2
    assert (other / "x").read_text() == "x"


def test_a_symlink_in_the_workspace_is_not_followed(cache, tmp_path):
    """Input: in a stopped workspace, the conflicted file replaced by a symlink to a file
    outside. Outcome: --continue refuses (exit 4); the outside file is untouched."""
    _d, w, _code, _ = start_conflict(tmp_path)
    outside = tmp_path / "outside.py"
    outside.write_text("keep = 1\n")
    target = w / "sglang/srt/mod.py"
    target.unlink()
    target.symlink_to(outside)
    assert run_cli("port", "--continue", "--workspace", str(w))[0] == 4
    assert outside.read_text() == "keep = 1\n"


def test_the_set_changed_since_the_port_began(cache, tmp_path):
    """Input: the manifest edited between the port and --continue. Outcome: exit 4, one line
    naming the set and the abort command as it works; W and the set untouched."""
    d, w, _code, _ = start_conflict(tmp_path)
    with (d / "patchset.yaml").open("a") as f:
        f.write("# edited\n")
    before, set_before = snapshot(w), snapshot(d)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 4, err
    (line,) = err.splitlines()
    assert "the set changed since the port began" in line
    assert f"`sgpatch port --abort --workspace {w}`" in line
    assert snapshot(w) == before and snapshot(d) == set_before


# ---------------------------------------------------------------------------------------------
# waiting, upstream, the fuzz trap


def test_a_later_patch_on_the_stopped_file_waits_then_carries(cache, tmp_path):
    """Input: `second` also edits srt/mod.py (after `first`, which stops on 1.2).
    Outcome: exit 3 with `second` waiting; after the fix, --continue carries `second` on top
    of the fixed file and writes both."""
    after_first = PATCHED10
    second = port_diff(
        after_first, after_first.replace("        return 2\n", "        return 200\n")
    )
    d = make_set(tmp_path, second=second)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3 and doc["steps"][0]["waiting"] == ["second"]
    fixed = V12.replace("        return 1\n", "        return 100\n").replace(
        "    y = 3\n", "    y = 30\n"
    )
    (w / "sglang/srt/mod.py").write_text(fixed)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    assert by_id(doc)["second"]["outcome"] == "carried"
    assert (w / "sglang/srt/mod.py").read_text() == fixed.replace("return 2\n", "return 200\n")


def test_upstream_by_probe_is_dropped(cache, tmp_path):
    """Input: `second`'s probe matches on 1.1 (regex on a line 1.1 has).
    Outcome: `second` is upstream; no variant of it covers 1.1 (its old one still ends
    below), `first` is carried."""
    probe = "\n    probe: {file: srt/mod.py, regex: '^import re$'}"
    d = make_set(tmp_path, probe=probe)
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 0, doc
    assert by_id(doc)["second"]["outcome"] == "upstream"
    m = load_manifest(d / "patchset.yaml")
    assert not any(v.sglang.contains("1.1") for v in m.patch("second").variants)


def test_a_clean_merge_that_defines_a_method_twice_is_a_conflict(cache, tmp_path):
    """Input: a patch made on 1.0 adds method `h` to class A; 1.4 added its own `h` next to
    other changes, so `git merge-file` is clean but A would define `h` twice (the fuzz trap).
    Outcome: exit 3, the file listed with 'defines the same name twice'."""
    v14 = V10.replace("import os\n", "import os\nimport abc\n").replace(
        "        return 2\n", "        return 2\n\n    def h(self):\n        return 'upstream'\n"
    )
    make_wheel(cache / "wheels", "1.4", release_files(v14, "1.4"))
    added = V10.replace(
        "    def g(self):\n", "    def h(self):\n        return 'ours'\n\n    def g(self):\n"
    )
    d = make_set(tmp_path)
    (d / "patches/1.0/0001-first.patch").write_text("Subject: h\n\n" + port_diff(V10, added))
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 3
    assert any("twice" in f for f in doc["steps"][0]["fix"]), doc


# ---------------------------------------------------------------------------------------------
# backport and --step


def test_backport_to_an_older_release(cache, tmp_path):
    """Input: a set made on 1.1 (its patch drawn on 1.1), ported --to 1.0.
    Outcome: exit 0; hunk 1 kept, hunk 2 merged; a `==1.0` variant; the set's range reaches
    down to 1.0; apply on 1.0 gives the same file as the 1.1 patch's merge."""
    patched11 = V11.replace("        return 1\n", "        return 100\n").replace(
        "    y = 2\n", "    y = 20\n"
    )
    d = make_set(tmp_path)
    (d / "patches/1.0/0001-first.patch").write_text(
        "Subject: first\n\n" + port_diff(V11, patched11)
    )
    text = (d / "patchset.yaml").read_text().replace('">=1.0,<1.1"', '">=1.1,<1.2"')
    (d / "patchset.yaml").write_text(text)
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.0",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 0, doc
    assert (by_id(doc)["first"]["hunks_kept"], by_id(doc)["first"]["hunks_merged"]) == (1, 1)
    m = load_manifest(d / "patchset.yaml")
    assert m.sglang.contains("1.0") and m.sglang.contains("1.1")
    assert apply_to(tmp_path, d.parent, "1.0", V10) == PATCHED10.encode()


def test_step_walks_release_by_release_and_stops_where_a_hand_is_needed(cache, tmp_path):
    """Input: --step --to 1.3 from a set made on 1.0. Outcome: 1.1 is ported and written, 1.2
    stops (exit 3) with its workspace; the set then covers 1.1 and is consistent (lint-clean
    on 1.1); after the fix and --continue, a second --step carries 1.3 as it is: the `==1.2`
    variant is stretched to `>=1.2,<=1.3` (one variant for the releases one file serves)."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    args = ("--set", "demo", "--patchsets", str(d.parent), "--workspace", str(w))
    code, doc = sgport(*args, "--to", "1.3", "--step")
    assert code == 3
    assert [s["to"] for s in doc["steps"]] == ["1.1", "1.2"]
    assert [s["state"] for s in doc["steps"]] == ["finished", "stopped"]
    m = load_manifest(d / "patchset.yaml")
    assert m.sglang.contains("1.1") and not m.sglang.contains("1.2")
    assert run_cli("lint", "--set", "demo", "--patchsets", str(d.parent), "--offline",
                   "--releases", "==1.1")[0] == 0  # fmt: skip
    fixed = V12.replace("        return 1\n", "        return 100\n").replace(
        "    y = 3\n", "    y = 30\n"
    )
    (w / "sglang/srt/mod.py").write_text(fixed)
    assert sgport("--continue", "--workspace", str(w))[0] == 0
    code, doc = sgport(*args, "--to", "1.3", "--step")
    assert code == 0, doc
    assert by_id(doc)["first"]["as_is"]
    first = load_manifest(d / "patchset.yaml").patch("first").variants
    assert str(first[0].sglang) == ">=1.2,<=1.3"
    assert first[0].patch == d / "patches/1.2/0001-first.patch"
    assert [v.patch for v in first].count(first[0].patch) == 1


def test_steps_either_direction(cache, tmp_path):
    """Input: the releases --step walks from a set covering 1.1, to 1.3 and to 1.0.
    Outcome: [1.2, 1.3] and [1.0]."""
    d = make_set(tmp_path)
    text = (d / "patchset.yaml").read_text().replace('">=1.0,<1.1"', '">=1.1,<1.2"')
    (d / "patchset.yaml").write_text(text)
    m = load_manifest(d / "patchset.yaml")
    known = [Version(v) for v in ("1.0", "1.1", "1.2", "1.3")]
    assert port.steps(m, Version("1.3"), known) == [Version("1.2"), Version("1.3")]
    assert port.steps(m, Version("1.0"), known) == [Version("1.0")]


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


def test_merge_file_clean_and_conflict():
    """Input: two edits far apart, then two edits of one line. Outcome: clean merge; one
    conflict block with diff3 markers and labels."""
    base = b"a\nb\nc\nd\ne\nf\ng\n"
    ours = base.replace(b"b\n", b"B\n")
    theirs = base.replace(b"f\n", b"F\n")
    merged, n = merge.merge_file(base, ours, theirs, ("ours", "base", "theirs"))
    assert n == 0 and merged == b"a\nB\nc\nd\ne\nF\ng\n"
    merged, n = merge.merge_file(base, ours, base.replace(b"b\n", b"X\n"), ("o", "b", "t"))
    assert n == 1 and b"<<<<<<< o\nB\n||||||| b\nb\n=======\nX\n>>>>>>> t\n" in merged
    assert merge.marker_lines(merged) == (2, 4, 6, 8)


def test_python_checks():
    """Input: a file that does not compile; one defining a method twice (with and without the
    release's copy among them); property setters, if/else branches and a duplicate the release
    already had. Outcome: the first two are problems, the duplicate named with every line it is
    defined at and the one that came with the release; the rest are not."""
    assert "does not compile" in merge.python_problem("a.py", b"def f(:\n", b"x = 1\n")
    twice = b"class A:\n    def f(self): pass\n    def f(self): pass\n"
    assert "A: f is defined twice in class A: line 2 (added) and line 3 (added)" in (
        merge.python_problem("a.py", twice, b"class A:\n    pass\n")
    )
    upstream = b"class A:\n    def f(self):\n        return 1\n"
    again = upstream + b"\n    def f(self):\n        return 2\n"
    assert "line 5 (added) and line 2 (already in sglang 1.4 at line 2)" in merge.python_problem(
        "a.py", again, upstream, "sglang 1.4"
    )
    assert merge.python_problem("a.py", twice, twice) is None
    setter = (
        b"class A:\n    @property\n    def x(self): pass\n    @x.setter\n    def x(self, v): pass\n"
    )
    assert merge.python_problem("a.py", setter, b"") is None
    branches = b"if X:\n    def f(): pass\nelse:\n    def f(): pass\n"
    assert merge.python_problem("a.py", branches, b"") is None
    assert merge.python_problem("a.txt", b"def f(:\n", None) is None


def test_port_needs_a_known_set_and_a_final_release(tmp_path):
    """Input: an unknown set; a pre-release --to; no --to. Outcome: exit 2 each."""
    assert run_cli("port", "--set", "nope", "--to", "0.5.10", "--patchsets", str(tmp_path))[0] == 2
    assert run_cli("port", "--set", "nope", "--to", "0.5.10rc1")[0] == 2
    assert run_cli("port", "--set", "nope")[0] == 2


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_workspace_that_is_a_symlink_is_refused(cache, tmp_path):
    """Input: --workspace pointing at a symlink to a folder. Outcome: exit 4, folder empty."""
    d = make_set(tmp_path)
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    code, _o, _e = run_cli("port", "--offline", "--set", "demo", "--patchsets", str(d.parent),
                           "--to", "1.1", "--workspace", str(tmp_path / "link"))  # fmt: skip
    assert code == 4 and not any(real.iterdir())


MOVED = "".join(f"def helper_{i}():\n    return {i}\n\n\n" for i in range(8)) + (
    "def other():\n    return 0\n"
)


def test_a_change_moved_to_another_file_by_hand(cache, tmp_path):
    """Input: 1.5 has no srt/other.py (upstream moved `other` into srt/moved.py, a bigger
    file: a move, not a rename port could follow); `second` patches srt/other.py. Outcome:
    exit 3 with a marker file at sglang/srt/other.py ("no such file"); the person deletes it,
    makes the change in srt/moved.py and also edits mod.py (a file the already carried `first`
    patched): as in a rebase, both edits join the stopped
    `second` (said in `notes`); --continue gives `second` a 1.5 variant with moved.py and the
    mod.py edit, and applying the set to 1.5 writes exactly W's files."""
    files = release_files(V10, "1.5")
    del files["sglang/srt/other.py"]
    files["sglang/srt/moved.py"] = MOVED.encode()
    make_wheel(cache / "wheels", "1.5", files)
    d = make_set(tmp_path)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.5",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3
    (problem,) = by_id(doc)["second"]["problems"]
    assert problem["file"] == "srt/other.py" and "no such file" in problem["why"]
    assert merge.marker_lines((w / "sglang/srt/other.py").read_bytes())
    first_file = load_manifest(d / "patchset.yaml").patch("first").variants[0].patch.read_bytes()
    (w / "sglang/srt/other.py").unlink()
    mod = w / "sglang/srt/mod.py"
    mod.write_text(mod.read_text() + "# an edit\n")
    (w / "sglang/srt/moved.py").write_text(MOVED.replace("return 0\n", "return 42\n"))
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    assert sorted(doc["steps"][0]["notes"]) == [
        "sglang/srt/mod.py: the edit there joins second",
        "sglang/srt/moved.py: the edit there joins second",
    ]
    m = load_manifest(d / "patchset.yaml")
    second = m.patch("second").variants[0]
    assert str(second.sglang) == "==1.5"
    text = second.patch.read_text()
    assert "srt/moved.py" in text and "srt/other.py" not in text and "+# an edit" in text
    assert m.patch("first").variants[0].patch.read_bytes() == first_file  # as it was
    files["sglang/srt/mod.py"] = V10.encode()
    assert _applied(tmp_path, d, "1.5", files, ["srt/mod.py", "srt/moved.py"]) == {
        r: (w / "sglang" / r).read_bytes() for r in ["srt/mod.py", "srt/moved.py"]
    }


def _applied(tmp: Path, set_dir: Path, version: str, files: dict, rels: list[str]) -> dict:
    """`sgpatch apply` of the set to a fresh tree holding `files`; the bytes of `rels`."""
    pkg = tmp / f"applied-{version}" / "sglang"
    for name, data in files.items():
        (pkg.parent / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg.parent / name).write_bytes(data)
    code, _o, err = run_cli("apply", "--set", "demo", "--patchsets", str(set_dir.parent),
                            "--sglang-dir", str(pkg))  # fmt: skip
    assert code == 0, err
    return {r: (pkg / r).read_bytes() for r in rels}


# ---------------------------------------------------------------------------------------------
# file by file: a later patch goes on with the files no stopped patch holds

OTHER = "def other():\n    return 0\n\n\ndef another():\n    return 1\n"


def two_file_set(tmp_path: Path, first_other: bool) -> Path:
    """`first`: mod.py's two hunks (stops on 1.2), plus, with `first_other`, other.py's
    `another` -> 11. `second`: other.py's `other` -> 42 and mod.py's `g` -> 200 (on top of
    `first`)."""
    d = make_set(tmp_path)
    other_1 = OTHER.replace("return 1\n", "return 11\n") if first_other else OTHER
    first = port_diff(V10, PATCHED10) + (
        port_diff(OTHER, other_1, "srt/other.py") if first_other else ""
    )
    second = port_diff(other_1, other_1.replace("return 0\n", "return 42\n"), "srt/other.py")
    second += port_diff(PATCHED10, PATCHED10.replace("        return 2\n", "        return 200\n"))
    (d / "patches/1.0/0001-first.patch").write_text("Subject: first\n\n" + first)
    (d / "patches/1.0/0002-second.patch").write_text("Subject: second\n\n" + second)
    return d


def other_release(cache: Path, version: str) -> dict[str, bytes]:
    files = release_files(V12, version, {"sglang/srt/other.py": OTHER.encode()})
    make_wheel(cache / "wheels", version, files)
    return files


FIXED12 = V12.replace("        return 1\n", "        return 100\n").replace(
    "    y = 3\n", "    y = 30\n"
)


def test_a_waiting_patch_carries_its_other_files_now(cache, tmp_path):
    """Input: `first` stops on 1.4's mod.py; `second` patches other.py and mod.py.
    Outcome: exit 3; `second`'s other.py is carried already (W has `return 42`), its mod.py
    waits: `second` is reported `waiting` on srt/mod.py, 1 of 2 files carried (state files
    `carried/second`, `partial`). After the fix, --continue carries `second`'s mod.py on top;
    its new patch holds both files; applying the set to 1.4 writes exactly W's files."""
    files = other_release(cache, "1.4")
    d = two_file_set(tmp_path, first_other=False)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3, doc
    second = by_id(doc)["second"]
    assert second["outcome"] == "waiting" and doc["steps"][0]["waiting"] == ["second"]
    assert second["files_carried"] == ["srt/other.py"]
    assert second["files_waiting"] == ["srt/mod.py"]
    assert (w / "sglang/srt/other.py").read_text() == OTHER.replace("return 0\n", "return 42\n")
    state = w / ".sgpatch-port"
    assert (state / "carried/second").read_text() == "srt/other.py\n"
    assert (state / "partial").read_text().startswith("second\tcarried\t")
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 3 and "srt/mod.py: conflict markers" in err  # nothing fixed yet
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    assert by_id(doc)["second"]["outcome"] == "carried"
    assert (w / "sglang/srt/mod.py").read_text() == FIXED12.replace("return 2\n", "return 200\n")
    rels = ["srt/mod.py", "srt/other.py"]
    assert _applied(tmp_path, d, "1.4", files, rels) == {
        r: (w / "sglang" / r).read_bytes() for r in rels
    }


def test_the_human_report_names_what_waits(cache, tmp_path):
    """Input: the port of test_a_waiting_patch_carries_its_other_files_now, without --json.
    Outcome: exit 3; stderr names `second` waiting on srt/mod.py with 1 of 2 files carried."""
    other_release(cache, "1.4")
    d = two_file_set(tmp_path, first_other=False)
    code, _out, err = run_cli("port", "--offline", "--set", "demo", "--patchsets", str(d.parent),
                              "--to", "1.4", "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 3
    assert "  second: waiting on srt/mod.py (1 of 2 files carried)" in err


def test_a_stopped_patch_keeps_its_own_change_to_a_file_a_later_one_carried(cache, tmp_path):
    """Input: `first` patches mod.py (stops on 1.4) and other.py (`another` -> 11, clean);
    `second` patches other.py (`other` -> 42) and mod.py. Outcome: `second`'s other.py is
    carried on top of `first`'s now; after the fix, `first`'s new patch changes other.py by
    `another` -> 11 only and `second`'s by `other` -> 42 only; the set applied to 1.4 writes
    exactly W's files."""
    files = other_release(cache, "1.4")
    d = two_file_set(tmp_path, first_other=True)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3 and by_id(doc)["second"]["files_carried"] == ["srt/other.py"]
    both = OTHER.replace("return 0\n", "return 42\n").replace("return 1\n", "return 11\n")
    assert (w / "sglang/srt/other.py").read_text() == both
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    m = load_manifest(d / "patchset.yaml")
    first = m.patch("first").variants[0].patch.read_text()
    second = m.patch("second").variants[0].patch.read_text()
    assert "+    return 11" in first and "return 42" not in first
    assert "+    return 42" in second and "return 11\n" not in second.replace(" return 11\n", "")
    rels = ["srt/mod.py", "srt/other.py"]
    assert _applied(tmp_path, d, "1.4", files, rels) == {
        r: (w / "sglang" / r).read_bytes() for r in rels
    }


def test_an_edit_under_a_later_patch_joins_the_stopped_one(cache, tmp_path):
    """Input: as in test_a_waiting_patch_carries_its_other_files_now; while fixing mod.py the
    person also edits other.py, where `second` carried `other` -> 42 already: once in a line of
    its own (`another` -> 7), once on the very line `second` changed. Outcome: the overlapping
    edit is refused at --continue (exit 3, naming `second`, nothing taken); the separate one
    joins `first` underneath `second`: `first`'s patch has `another` -> 7, `second`'s still
    only `other` -> 42, and the set applied to 1.4 writes exactly W's files."""
    files = other_release(cache, "1.4")
    d = two_file_set(tmp_path, first_other=False)
    w = tmp_path / "w"
    code, _doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
                        "--workspace", str(w))  # fmt: skip
    assert code == 3
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    other = w / "sglang/srt/other.py"
    carried = other.read_text()
    state = snapshot(w / ".sgpatch-port")
    other.write_text(carried.replace("return 42\n", "return 43\n"))
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 3 and "later patches (second) carried their changes there already" in err
    assert snapshot(w / ".sgpatch-port") == state
    other.write_text(carried.replace("return 1\n", "return 7\n"))
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    assert doc["steps"][0]["notes"] == ["sglang/srt/other.py: the edit there joins first"]
    m = load_manifest(d / "patchset.yaml")
    first = m.patch("first").variants[0].patch.read_text()
    second = m.patch("second").variants[0].patch.read_text()
    assert "+    return 7" in first and "return 42" not in first
    assert "+    return 42" in second and "+    return 7" not in second
    rels = ["srt/mod.py", "srt/other.py"]
    assert _applied(tmp_path, d, "1.4", files, rels) == {
        r: (w / "sglang" / r).read_bytes() for r in rels
    }


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


def test_a_renamed_file_that_needed_a_merge_is_written_as_delete_and_create(cache, tmp_path):
    """Input: `second` renames srt/other.py to srt/renamed.py and changes `return 0`; 1.6's
    other.py starts with a new import, so the hunk (anchored at the start of the file) does
    not place exactly and is merged. Outcome: exit 0;
    the new patch removes srt/other.py and creates srt/renamed.py; applying the set to 1.6
    leaves no other.py and a renamed.py equal to W's."""
    other6 = "import os\n\n\ndef other():\n    return 0\n"
    files = release_files(V10, "1.6", {"sglang/srt/other.py": other6.encode()})
    make_wheel(cache / "wheels", "1.6", files)
    rename = (
        "diff --git a/python/sglang/srt/other.py b/python/sglang/srt/renamed.py\n"
        "similarity index 60%\nrename from python/sglang/srt/other.py\n"
        "rename to python/sglang/srt/renamed.py\n"
        "--- a/python/sglang/srt/other.py\n+++ b/python/sglang/srt/renamed.py\n"
        "@@ -1,2 +1,2 @@\n def other():\n-    return 0\n+    return 42\n"
    )
    d = make_set(tmp_path, second=rename)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.6",
                       "--workspace", str(w))  # fmt: skip
    assert code == 0, doc
    assert by_id(doc)["second"]["hunks_merged"] == 1
    assert not (w / "sglang/srt/other.py").exists()
    renamed = (w / "sglang/srt/renamed.py").read_bytes()
    assert renamed == b"import os\n\n\ndef other():\n    return 42\n"
    text = load_manifest(d / "patchset.yaml").patch("second").variants[0].patch.read_text()
    assert "+++ /dev/null" in text and "--- /dev/null" in text
    got = _applied(tmp_path, d, "1.6", files, ["srt/renamed.py"])
    assert got == {"srt/renamed.py": renamed}
    assert not (tmp_path / "applied-1.6/sglang/srt/other.py").exists()


def test_a_workspace_of_an_older_sgpatch_is_not_continued(cache, tmp_path):
    """Input: a stopped workspace whose state has no `format` file (as the previous sgpatch
    left it). Outcome: --continue is bad input (exit 2) naming --abort, W untouched;
    --abort still removes it."""
    _d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    (w / ".sgpatch-port/format").unlink()
    before = snapshot(w)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 2 and "made by an older sgpatch" in err and "--abort" in err
    assert snapshot(w) == before
    assert run_cli("port", "--abort", "--workspace", str(w))[0] == 0
    assert not w.exists()


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("needs-a-hand", lambda t: t.replace("kept 1, merged 0", "kept x, merged 0")),
        ("needs-a-hand", lambda t: t.replace("\tconflict\t", "\tbogus\t")),
        ("needs-a-hand", lambda t: t.split("\t", 1)[0] + "\n"),
        ("done", lambda t: t.replace("as-is", "maybe")),
        ("problems/first", lambda t: t.replace("\t2\t", "\ttwo\t")),
        ("onto", lambda t: "not a version\n"),
        ("done", lambda t: "\udcff"),
        ("fixing/first", lambda t: "srt/mo\n"),
        ("files/second", lambda t: "../../etc/passwd\n"),
        ("before/first.absent", lambda t: "srt/elsewhere.py\n"),
    ],
)
def test_a_damaged_state_file_is_one_line_and_exit_4(cache, tmp_path, name, damage):
    """Input: a stopped workspace, one state file damaged by hand (a count that is not a
    number, an unknown outcome, a line cut short, a bad hunk number, a bad release, bytes that
    are not UTF-8, a path list naming a file the patch does not have or a path out of W).
    Outcome: --continue exits 4 with one line naming the file and --abort;
    W is byte-for-byte as it was; the set too."""
    d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    f = w / ".sgpatch-port" / name
    f.write_bytes(damage(f.read_text()).encode("utf-8", "surrogateescape"))
    before, set_before = snapshot(w), snapshot(d)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 4, err
    (line,) = err.splitlines()
    assert f"{name}: damaged" in line and "--abort" in line
    assert snapshot(w) == before and snapshot(d) == set_before


BIG = "".join(f"def helper_number_{i}():\n    return {i}\n\n\n" for i in range(6))


def test_a_file_upstream_renamed_is_followed(cache, tmp_path):
    """Input: 1.7 renamed srt/big.py to srt/big_impl.py (same folder, same lines); `second`
    patches srt/big.py. Outcome: exit 0 by itself: `second` is carried onto srt/big_impl.py,
    its note says it followed the rename; its new 1.7 patch names only the new file, and
    applying the set to 1.7 writes exactly W's file. (A file moved into a bigger one, or two
    files merged into one, is not followed: the tests below.)"""
    make_wheel(
        cache / "wheels", "1.0", release_files(V10, "1.0", {"sglang/srt/big.py": BIG.encode()})
    )
    files = release_files(V10, "1.7", {"sglang/srt/big_impl.py": BIG.encode()})
    make_wheel(cache / "wheels", "1.7", files)
    d = make_set(
        tmp_path, second=port_diff(BIG, BIG.replace("return 2\n", "return 22\n"), "srt/big.py")
    )
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.7",
                       "--workspace", str(w))  # fmt: skip
    assert code == 0, doc
    second = by_id(doc)["second"]
    assert second["note"] == "followed upstream's rename of srt/big.py to srt/big_impl.py"
    assert second["files_carried"] == ["srt/big_impl.py"] and not second["as_is"]
    assert not (w / "sglang/srt/big.py").exists()
    variant = load_manifest(d / "patchset.yaml").patch("second").variants[0]
    assert str(variant.sglang) == "==1.7"
    text = variant.patch.read_text()
    assert "srt/big_impl.py" in text and "srt/big.py" not in text
    got = _applied(tmp_path, d, "1.7", files, ["srt/big_impl.py"])
    assert got == {"srt/big_impl.py": (w / "sglang/srt/big_impl.py").read_bytes()}


A_FILE = "".join(f"def a_function_{i}():\n    return {i}\n\n\n" for i in range(5))
B_FILE = "".join(f"def b_function_{i}():\n    return {i}\n\n\n" for i in range(5))


@pytest.mark.parametrize("both", [False, True])
def test_files_merged_into_one_are_not_followed(cache, tmp_path, both):
    """Input: 1.9 merged srt/a.py and srt/b.py into srt/ab.py (each is half of it); `second`
    patches a.py (and, with `both`, b.py too). Outcome: nothing is followed (a move into a
    bigger file is for a person): exit 3, each patched file "no such file in this release",
    never "no merge base", and the note claims no rename."""
    extra = {"sglang/srt/a.py": A_FILE.encode(), "sglang/srt/b.py": B_FILE.encode()}
    make_wheel(cache / "wheels", "1.0", release_files(V10, "1.0", extra))
    ab = (A_FILE + B_FILE).encode()
    make_wheel(cache / "wheels", "1.9", release_files(V10, "1.9", {"sglang/srt/ab.py": ab}))
    second = port_diff(A_FILE, A_FILE.replace("return 1\n", "return 111\n"), "srt/a.py")
    if both:
        second += port_diff(B_FILE, B_FILE.replace("return 3\n", "return 333\n"), "srt/b.py")
    d = make_set(tmp_path, second=second)
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.9",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 3
    out = by_id(doc)["second"]
    assert "rename" not in out["note"]
    assert {p["file"] for p in out["problems"]} == (
        {"srt/a.py", "srt/b.py"} if both else {"srt/a.py"}
    )
    assert all("no such file in this release" in p["why"] for p in out["problems"])


THIRD = """\
  - id: third
    summary: third
    type: bugfix
    upstream: {status: pending}
    variants:
      - {sglang: ">=2.0", patch: patches/2.0/0003-third.patch}
      - {sglang: ">=1.0,<1.1", na: "no srt/extra.py before 2.0"}
"""


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


class Killed(BaseException):
    """A failure at a chosen write (BaseException, as Ctrl-C is: nothing catches it)."""


@pytest.mark.parametrize("at", ["carried", "todo", "joined"])
def test_a_step_that_fails_mid_write_is_put_back(cache, tmp_path, monkeypatch, at):
    """Input: a port that fails while it writes: inside a carry (W's file written, `carried/ID`
    not yet), between `done` and `todo` of one save, or while --continue records a joined
    edit. Outcome: the step is put back as it was before it (state files byte for byte; the
    person's edits in W untouched), and the next --continue redoes it and goes on: exit 3 (the
    port's stop) or 0 (the fixed --continue); never --abort. (A real SIGKILL at fixed points:
    tests/port/test_workspace.py.)"""
    from sgpatch.port import snapshots
    from sgpatch.port.workspace import Workspace

    other_release(cache, "1.4")
    d = two_file_set(tmp_path, first_other=False)
    w = tmp_path / "w"
    args = ("port", "--offline", "--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
            "--workspace", str(w))  # fmt: skip
    real_add, real_lines, real_put = snapshots.add_carried, Workspace.put_lines, snapshots.put

    def add_carried(ws, pid, rels):
        if pid == "second":
            raise Killed
        return real_add(ws, pid, rels)

    def put_lines(self, name, lines):
        lines = list(lines)
        if name == "todo" and lines == ["second"]:
            raise Killed
        return real_lines(self, name, lines)

    want = 3
    if at == "joined":
        assert run_cli(*args)[0] == 3
        (w / "sglang/srt/mod.py").write_text(FIXED12)
        (w / "sglang/srt/other.py").write_text(OTHER.replace("return 1\n", "return 7\n") + "\n")
        monkeypatch.setattr(snapshots, "put", lambda *a: (_ for _ in ()).throw(Killed()))
        args, want = ("port", "--continue", "--workspace", str(w)), 0
    elif at == "carried":
        monkeypatch.setattr(snapshots, "add_carried", add_carried)
    else:
        monkeypatch.setattr(Workspace, "put_lines", put_lines)
    before = snapshot(w) if w.exists() else None
    with pytest.raises(Killed):
        run_cli(*args)
    if before is not None:
        assert snapshot(w) == before
    monkeypatch.setattr(snapshots, "add_carried", real_add)
    monkeypatch.setattr(Workspace, "put_lines", real_lines)
    monkeypatch.setattr(snapshots, "put", real_put)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == want, err


def test_abort_of_a_workspace_with_a_damaged_tree_list(cache, tmp_path):
    """Input: a stopped workspace whose `tree` list has a line cut short and one naming a path
    out of W. Outcome: --abort still removes W (exit 0): what a damaged line names is never
    followed out of W, and nothing outside W is touched."""
    _d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    tree = w / ".sgpatch-port/tree"
    tree.write_text(tree.read_text() + "0123abcd\n" + "ab  ../outside.txt\n")
    code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 0, err
    assert not w.exists() and outside.read_text() == "keep"


def test_offline_never_downloads_a_merge_base(cache, tmp_path):
    """Input: `first`'s variant says `base: "0.8"`, a release not in the cache; ported
    --offline to 1.2, where a hunk needs a merge. Outcome: exit 3; the problem says there is no
    merge base because 0.8 is not in the cache (nothing downloaded: the test cache refuses
    downloads loudly); `second` is carried; --abort removes W."""
    d = make_set(tmp_path)
    y = d / "patchset.yaml"
    y.write_text(y.read_text().replace("0001-first.patch}", '0001-first.patch, base: "0.8"}'))
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3, doc
    (problem,) = by_id(doc)["first"]["problems"]
    assert problem["why"].startswith("no merge base: sglang 0.8 is not in the release cache")
    assert by_id(doc)["second"]["outcome"] == "carried"
    assert run_cli("port", "--abort", "--workspace", str(w))[0] == 0


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


def test_a_patch_that_requires_a_stopped_one_says_so(cache, tmp_path):
    """Input: `second` (other.py only) requires `first`, which stops on 1.2's mod.py.
    Outcome: exit 3; `second` waits whole: JSON `waiting_for` is ["first"], nothing of it is
    carried, and the report says it waits for `first` because it requires it (not "on
    srt/other.py", a file nobody holds)."""
    d = make_set(tmp_path)
    y = d / "patchset.yaml"
    y.write_text(
        y.read_text().replace("  - id: second\n", "  - id: second\n    requires: [first]\n")
    )
    args = ("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2")
    code, doc = sgport(*args, "--workspace", str(tmp_path / "w"))
    assert code == 3
    second = by_id(doc)["second"]
    assert second["waiting_for"] == ["first"] and second["files_carried"] == []
    code, _out, err = run_cli("port", "--offline", *args, "--workspace", str(tmp_path / "w2"))
    assert code == 3 and "  second: waiting for first (it requires it)" in err, err


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
