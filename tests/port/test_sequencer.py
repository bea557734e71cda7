"""The port sequencer (port/sequencer.py, port/__init__.py), on synthetic releases: waiting
and upstream patches, backport, --step in either direction, bad input, the human report."""

from __future__ import annotations

from packaging.version import Version

from helpers import (
    ALIAS,
    FIXED12,
    KINDS,
    MODE_BLOCKS,
    PATCHED10,
    V10,
    V11,
    apply_to,
    by_id,
    kinds_in,
    make_set,
    modes_set,
    other_release,
    port_applied,
    port_diff,
    port_onto,
    release_files,
    run_cli,
    sgport,
    two_file_set,
)
from sgpatch.patchset.manifest import load_manifest
from sgpatch.port import driver

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
    fixed = FIXED12
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
    fixed = FIXED12
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
    assert driver.steps(m, Version("1.3"), known) == [Version("1.2"), Version("1.3")]
    assert driver.steps(m, Version("1.0"), known) == [Version("1.0")]


def test_port_needs_a_known_set_and_a_final_release(tmp_path):
    """Input: an unknown set; a pre-release --to; no --to. Outcome: exit 2 each."""
    assert run_cli("port", "--set", "nope", "--to", "0.5.10", "--patchsets", str(tmp_path))[0] == 2
    assert run_cli("port", "--set", "nope", "--to", "0.5.10rc1")[0] == 2
    assert run_cli("port", "--set", "nope")[0] == 2


def test_the_human_report_names_what_waits(cache, tmp_path):
    """Input: the port of test_a_waiting_patch_carries_its_other_files_now, without --json.
    Outcome: exit 3; stderr names `second` waiting on srt/mod.py with 1 of 2 files carried."""
    other_release(cache, "1.4")
    d = two_file_set(tmp_path, first_other=False)
    code, _out, err = run_cli("port", "--offline", "--set", "demo", "--patchsets", str(d.parent),
                              "--to", "1.4", "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 3
    assert "  second: waiting on srt/mod.py (1 of 2 files carried)" in err


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
# symlinks and the execute bit (issue 42: nothing a real stack carries is lost)


def test_a_rewritten_patch_keeps_its_symlink_and_execute_bits(cache, tmp_path):
    """Input: `first` makes a symlink, an executable script and a file executable, and its
    mod.py hunk needs a merge on 1.1 (so port writes it a new patch file).
    Outcome: exit 0; W lays the link as a link and the execute bits; the new 1.1 patch file
    says `new file mode 120000`, `new file mode 100755`, `old mode`/`new mode`; the ported set
    applied to a fresh 1.1 tree makes the same link and modes."""
    d = modes_set(tmp_path)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1",
                       "--workspace", str(w))  # fmt: skip
    assert code == 0, doc
    assert by_id(doc)["first"]["as_is"] is False
    assert kinds_in(w / "sglang") == KINDS
    (new,) = (d / "patches/1.1").glob("*first*.patch")
    text = new.read_text()
    assert all(block in text for block in MODE_BLOCKS), text
    port_applied(tmp_path, d, "1.1", release_files(V11, "1.1"), ["srt/mod.py"])
    assert kinds_in(tmp_path / "applied-1.1/sglang") == KINDS


def test_a_symlink_port_cannot_make_stops_naming_it_and_the_hand_made_link_is_kept(cache, tmp_path):
    """Input: `first` makes srt/alias.py a symlink; release 1.4 ships a file there. Outcome:
    port stops (exit 3) naming srt/alias.py and why (the file is there); W keeps the
    release's file. The person makes the link by hand; --continue writes a patch that turns
    1.4's file into that link (git's two blocks), and applying the set to 1.4 makes it."""
    files = release_files(V10, "1.4", {"sglang/srt/alias.py": b"x = 1\n"})
    d = modes_set(tmp_path)
    w, code, doc = port_onto(cache, tmp_path, d, "1.4", files)
    assert code == 3
    (problem,) = by_id(doc)["first"]["problems"]
    assert problem["file"] == "srt/alias.py" and "file to create already exists" in problem["why"]
    assert (w / "sglang/srt/alias.py").read_bytes() == b"x = 1\n"
    (w / "sglang/srt/alias.py").unlink()
    (w / "sglang/srt/alias.py").symlink_to(ALIAS)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    text = next((d / "patches/1.4").glob("*first*.patch")).read_text()
    assert "deleted file mode 100644\n" in text and "new file mode 120000\n" in text
    port_applied(tmp_path, d, "1.4", files, ["srt/mod.py"])
    assert kinds_in(tmp_path / "applied-1.4/sglang") == KINDS
