"""Port's per-hunk carry (port/carry.py), on synthetic releases: exact hunks kept and only
the others merged, a port to where the set already is, a waiting patch's other files carried
at once."""

from __future__ import annotations

import pytest
from packaging.version import Version

from helpers import (
    FIXED12,
    PATCHED10,
    PORT_OTHER,
    V10,
    V11,
    apply_to,
    by_id,
    make_set,
    other_release,
    port_applied,
    run_cli,
    sgport,
    snapshot,
    two_file_set,
)
from sgpatch.patchset.manifest import load_manifest
from sgpatch.port import merge

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
    assert (w / "sglang/srt/other.py").read_text() == PORT_OTHER.replace(
        "return 0\n", "return 42\n"
    )
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
    assert port_applied(tmp_path, d, "1.4", files, rels) == {
        r: (w / "sglang" / r).read_bytes() for r in rels
    }


# ---------------------------------------------------------------------------------------------
# conflict details, worked out in the workers


def test_conflict_details_are_the_same_from_the_workers_as_worked_out_here(monkeypatch):
    """Input: a base file, upstream's change to it (ours) and a two-hunk patch whose first hunk
    conflicts with upstream's and whose second merges alone, explained by `Explanations` with
    no worker pool and with the process's pool (as a big carry has it). Outcome: both give
    what `hunk_details` gives here (a conflict row and a merges-alone row), at the file's
    index among the patch's carried files."""
    from helpers import make_diff
    from sgpatch.diff.unified import encode, parse_patch
    from sgpatch.port import carry

    base = "".join(f"line {i}\n" for i in range(60))
    ours = base.replace("line 10\n", "line ten upstream\n").replace("line 40\n", "line 40b\n")
    mine = base.replace("line 10\n", "line ten mine\n").replace("line 50\n", "line fifty\n")
    hunks = parse_patch(make_diff(base, mine, "a.py"), "t.patch").files[0].hunks
    labels = carry.Labels("sglang 1.1", "sglang 1.0", "p (made on 1.0)")
    job = carry._Conflict(hunks, encode(base), encode(ours), labels, ())
    alone = carry._Alone(carry._lines(encode(base)))
    want = carry.hunk_details(hunks, (encode(base), alone, encode(ours)), labels, ())
    assert [d.status for d in want] == [carry.CONFLICT, carry.ALONE]
    files = [carry.CarriedFile("b.py", b"", b""), carry.CarriedFile("a.py", b"", b"")]
    for pooled in (False, True):
        if pooled and merge.workers() is None:
            pytest.skip("one core (or threads running): no worker pool to compare with")
        if not pooled:
            monkeypatch.setattr(carry, "workers", lambda make=True: None)
        explain = carry.Explanations()
        explain.at = 1
        explain.add(job, alone)
        assert (1 in explain.sent) is pooled  # sent to a worker, or worked out here
        got = explain.filled(files)
        assert got[1].details == want and got[0].details == ()
        monkeypatch.undo()


def test_each_carried_file_has_the_git_mode_the_patch_leaves_it_in():
    """Input: a workspace with an executable script and a plain file; a patch that edits the
    script, makes a symlink, makes the plain file executable (mode alone) and creates a file.
    Outcome: every file carried; the script keeps 100755, the link is 120000 (its bytes its
    target, never checked as Python), the plain file 100755, the new file 100644."""
    from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK, FileDiff, canonical_diff
    from sgpatch.diff.unified import parse_patch
    from sgpatch.port.carry import Labels, carry_patch

    w = {"srt/run.sh": b"#!/bin/sh\necho 1\n", "srt/x.py": b"x = 1\n"}
    modes = {"srt/run.sh": EXECUTABLE}
    diff = canonical_diff([
        FileDiff("srt/run.sh", w["srt/run.sh"], b"#!/bin/sh\necho 2\n", EXECUTABLE, EXECUTABLE),
        FileDiff("srt/alias.py", None, b"../srt/x.py", new_mode=SYMLINK),
        FileDiff("srt/x.py", w["srt/x.py"], w["srt/x.py"], REGULAR, EXECUTABLE),
        FileDiff("srt/new.py", None, b"y = 2\n"),
    ])  # fmt: skip
    res = carry_patch(parse_patch(diff, "p.patch"), "p", w.get, None, Labels("o", "b", "t"),
                      modes=lambda rel: modes.get(rel, REGULAR))  # fmt: skip
    assert res.ok
    got = {f.path: (f.mode, f.after) for f in res.files}
    assert got == {
        "srt/run.sh": (EXECUTABLE, b"#!/bin/sh\necho 2\n"),
        "srt/alias.py": (SYMLINK, b"../srt/x.py"),
        "srt/x.py": (EXECUTABLE, b"x = 1\n"),
        "srt/new.py": (REGULAR, b"y = 2\n"),
    }


def test_a_symlink_the_release_has_a_file_for_needs_a_hand_and_keeps_the_file():
    """Input: a patch that makes srt/alias.py a symlink, carried onto a workspace that has a
    file there. Outcome: a problem naming what the patch makes and why it cannot (no merge
    of a link's target); the workspace's file is kept as it was, with its mode."""
    from sgpatch.diff.canonical import REGULAR, SYMLINK, FileDiff, canonical_diff
    from sgpatch.diff.unified import parse_patch
    from sgpatch.port.carry import Labels, carry_patch

    w = {"srt/alias.py": b"x = 1\n"}
    diff = canonical_diff([FileDiff("srt/alias.py", None, b"x.py", new_mode=SYMLINK)])
    res = carry_patch(parse_patch(diff, "p.patch"), "p", w.get, w.get, Labels("o", "b", "t"),
                      modes=lambda rel: REGULAR)  # fmt: skip
    (f,) = res.files
    assert f.problem is not None and "makes a symlink to 'x.py'" in f.problem
    assert "already exists" in f.problem
    assert (f.after, f.mode) == (b"x = 1\n", REGULAR)
