"""importer.py: inputs applied in order to a (here: fake, in-memory) pristine release, one
canonical patch per input, a manifest that loads; bad input changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from helpers import make_diff, run_cli, sgpatch
from sgpatch.diff.unified import parse_patch, split_lines
from sgpatch.errors import SgpatchError
from sgpatch.ops import importer
from sgpatch.ops.sources import from_text
from sgpatch.patchset.manifest import load_manifest
from sgpatch.placement.engine import apply_hunks

V = Version("0.5.9")
ORIG = "".join(f"line {i} of the module with some words\n" for i in range(1, 41))


@pytest.fixture
def release(monkeypatch):
    """A fake pristine release: {package-relative path: bytes}."""
    files = {"srt/a.py": ORIG.encode(), "srt/b.py": ORIG.encode()}
    monkeypatch.setattr(importer, "pristine", lambda version, rel: files.get(rel))
    monkeypatch.setattr(importer, "executables", lambda version: frozenset({"srt/b.py"}))
    return files


def edit(text: str, at: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines.insert(at, new)
    return "".join(lines)


def src(diff: str, label: str):
    return from_text(diff, label, Path(label).stem)[0]


def test_two_diffs_become_two_patches_in_order(release, tmp_path):
    """Input: diff 1 adds a line to srt/a.py, diff 2 adds another next to it (its context holds
    diff 1's line). Outcome: two patches; the second requires the first; each patch file is
    canonical (a/python/sglang/ paths, a header naming its input); the manifest loads; each
    probe names its own added line and is marked as sgpatch's suggestion (`suggested: true`)."""
    one = edit(ORIG, 10, "    first_added = configure_the_first_thing()\n")
    two = edit(one, 11, "    second_added = configure_the_second_thing()\n")
    d1 = make_diff(ORIG, one, "python/sglang/srt/a.py")
    d2 = make_diff(one, two, "python/sglang/srt/a.py")
    res = importer.import_sources("mine", V, [src(d1, "one.patch"), src(d2, "two.patch")])
    assert [p.id for p in res.patches] == ["one", "two"]
    assert res.patches[1].requires == ("one",)
    text = res.patches[0].data.decode()
    assert "Imported-from: one.patch, onto sglang 0.5.9" in text
    assert "diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py" in text
    set_dir = tmp_path / "mine"
    for p in res.patches:
        (set_dir / p.file).parent.mkdir(parents=True, exist_ok=True)
        (set_dir / p.file).write_bytes(p.data)
    (set_dir / "patchset.yaml").write_text(res.manifest)
    manifest = load_manifest(set_dir / "patchset.yaml")
    assert [str(v.sglang) for p in manifest.patches for v in p.variants] == ["==0.5.9"] * 2
    assert "first_added" in manifest.patches[0].probe.regex
    assert "second_added" in manifest.patches[1].probe.regex
    assert all(p.probe_suggested for p in manifest.patches)
    assert (
        res.manifest.count("      suggested: true  # made from the patch's lines by sgpatch") == 2
    )


def test_a_hunk_that_does_not_apply_is_a_conflict_listing_it(release):
    """Input: a diff whose context is not in the release. Outcome: exit 3, the message names
    the input, the file and the hunk."""
    bad = make_diff("nothing like it\n" * 3, "nothing like it\nnew\n" * 2, "python/sglang/srt/a.py")
    with pytest.raises(SgpatchError) as e:
        importer.import_sources("mine", V, [src(bad, "bad.patch")])
    assert e.value.code == 3 and "bad.patch: srt/a.py hunk #1" in e.value.message


def test_a_patch_already_in_the_release_is_refused(release):
    """Input: a diff whose post-image is what the release already has (upstream has it).
    Outcome: exit 3, `already there`: git apply would not apply it either; the message says
    exactly what to change (take the hunk out of the input), never a dead end."""
    done = make_diff(edit(ORIG, 5, "    gone_line = remove_me_later()\n"), ORIG, "srt/a.py")
    with pytest.raises(SgpatchError) as e:
        importer.import_sources("mine", V, [src(done, "done.patch")])
    assert e.value.code == 3 and "already there" in e.value.message
    assert "take this hunk out of the input" in e.value.message, e.value.message


def test_hunk_with_more_context_before_than_after_applies_mid_file_as_git_does(release):
    """Input: a hand-edited hunk with 6 lines of context before and 3 after, in the middle of
    the file (GNU patch ties such a hunk to the end of the file; the engine follows git: only a
    hunk with no trailing context is tied there). Outcome: the engine places it mid-file, and
    the import adds exactly that line there."""
    ctx = ORIG.splitlines(keepends=True)
    text = (
        "--- a/python/sglang/srt/b.py\n+++ b/python/sglang/srt/b.py\n@@ -15,9 +15,10 @@\n"
        + "".join(" " + ln for ln in ctx[14:20])
        + "+    added_mid_file = True_and_long_enough()\n"
        + "".join(" " + ln for ln in ctx[20:23])
    )
    hunks = parse_patch(text).files[0].hunks
    assert apply_hunks(split_lines(ORIG), hunks).hunks[0].status == "applied"
    res = importer.import_sources("mine", V, [src(text, "edited.patch")])
    assert "+    added_mid_file = True_and_long_enough()" in res.patches[0].data.decode()


def test_bad_name_is_bad_input(release):
    """Input: --name with a capital letter and a space. Outcome: exit 2 before anything."""
    with pytest.raises(SgpatchError) as e:
        importer.import_sources("My Set", V, [])
    assert e.value.code == 2


@pytest.mark.parametrize(
    "args",
    [
        ["--sglang-version", "0.5.9", "missing.patch"],
        ["--sglang-version", "0.5.9", "--git", "a..b"],
        ["--sglang-version", "0.5.9"],
        ["in.patch"],
        ["--sglang-version", "not-a-version", "in.patch"],
        ["--sglang-version", "0.5.9", "--git", "a..b", "--repo", "nowhere"],
    ],
)
def test_cli_bad_input_exits_2_and_leaves_dest_as_it_was(tmp_path, monkeypatch, capsys, args):
    """Input: a missing patch file, --git without --repo, no input, no --sglang-version, a bad
    version, a --repo that is not a checkout. Outcome: exit 2, one error line, DEST untouched."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.patch").write_text(make_diff("a\n", "b\n", "python/sglang/srt/a.py"))
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    code = sgpatch("import", "--name", "s", "--dest", str(dest), *args)
    err = capsys.readouterr().err
    assert code == 2
    assert [ln for ln in err.splitlines() if ln.startswith("sgpatch: error:")] == err.splitlines()
    assert sorted(p.name for p in dest.iterdir()) == ["keep.txt"]


def test_existing_set_folder_is_not_overwritten(tmp_path):
    """Input: DEST/NAME exists already. Outcome: exit 2 and its content is unchanged."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "patchset.yaml").write_text("mine\n")
    res = importer.ImportResult("s", V, (), (), "schema: 1\n")
    with pytest.raises(SgpatchError) as e:
        importer.write_set(res, tmp_path)
    assert e.value.code == 2
    assert (tmp_path / "s" / "patchset.yaml").read_text() == "mine\n"


def test_probe_entry_a_later_patch_removes_is_dropped(release):
    """Input: patch 1 adds two distinctive lines; patch 2 removes one of them again. Outcome:
    patch 1's probe keeps only the line still there at the end (lint checks probes on the tree
    with the whole set applied)."""
    one = edit(edit(ORIG, 10, "    stays_in_the_end = keep_this_line()\n"), 30,
               "    removed_later = drop_this_line_later()\n")  # fmt: skip
    two = one.replace("    removed_later = drop_this_line_later()\n", "")
    d1 = make_diff(ORIG, one, "python/sglang/srt/a.py")
    d2 = make_diff(one, two, "python/sglang/srt/a.py")
    res = importer.import_sources("mine", V, [src(d1, "one.patch"), src(d2, "two.patch")])
    probe = res.patches[0].probe
    assert "stays_in_the_end" in probe.regex and "removed_later" not in str(probe)


@pytest.mark.parametrize(
    "path", ["python/sglang/../../../etc/x.py", "sglang/srt/../../../x.py", "python/sglang/../x"]
)
def test_a_path_that_climbs_out_of_the_package_is_refused_for_safety(tmp_path, capsys, path):
    """Input: a diff (beside a good one) whose path climbs out of python/sglang/ with `..`.
    Outcome: exit 4 (refused for safety, not "nothing left to import"), one error line naming
    the path; DEST as it was; nothing downloaded or read for it."""
    good = make_diff("a\n", "b\n", "python/sglang/srt/a.py")
    (tmp_path / "in.patch").write_text(good + make_diff("a\n", "b\n", path))
    dest = tmp_path / "dest"
    dest.mkdir()
    code = sgpatch("import", "--name", "s", "--sglang-version", "0.5.9", "--dest", str(dest),
                   str(tmp_path / "in.patch"))  # fmt: skip
    err = capsys.readouterr().err
    assert code == 4, err
    assert err.splitlines() == [err.splitlines()[0]] and "climbs out of the SGLang package" in err
    assert list(dest.iterdir()) == []


# --- odd inputs (issue 22, item 9)


@pytest.fixture
def cached_release(tmp_path, monkeypatch):
    """Release 1.0 (helpers.V10) in an offline cache; no index, no download (the per-version
    memos start empty: other tests make other releases named 1.0)."""
    importer.pristine.cache_clear()
    importer.executables.cache_clear()
    import helpers as tp
    from helpers import fake_index, make_wheel

    monkeypatch.setenv("SGPATCH_CACHE", str(tmp_path / "cache"))
    fake_index(monkeypatch)
    make_wheel(tmp_path / "cache" / "wheels", "1.0", tp.release_files(tp.V10, "1.0"))
    new = tp.V10.replace("x = 1\n", "x = 12345  # a_distinctive_change_here\n")
    diff = make_diff(tp.V10, new, "python/sglang/srt/mod.py")
    return diff


def _mail(subject: str, diff: str) -> str:
    return (
        "From 1234567890abcdef1234567890abcdef12345678 Mon Sep 17 00:00:00 2001\n"
        f"From: A <a@example.com>\nDate: Mon, 1 Jan 2024 00:00:00 +0000\nSubject: {subject}\n"
        f"\nWhy.\n---\n{diff}--\n2.39.5\n"
    )


def test_a_subject_with_control_characters_makes_a_readable_set(tmp_path, cached_release):
    """Input: a format-patch whose Subject holds a BEL and an escape sequence. Outcome: exit 0;
    the set's manifest loads back, its summary and the patch header's Subject hold spaces where
    the control characters were (no control character anywhere in either file)."""
    mail = tmp_path / "in.patch"
    mail.write_text(_mail("[PATCH] Fix\x07 the\x1b[31m thing", cached_release))
    dest = tmp_path / "dest"
    code, _, err = run_cli("import", "--name", "s", "--sglang-version", "1.0", "--dest",
                           str(dest), str(mail))  # fmt: skip
    assert code == 0, err
    manifest = load_manifest(dest / "s" / "patchset.yaml")
    assert manifest.patches[0].summary == "Fix the [31m thing"
    texts = [(dest / "s" / "patchset.yaml").read_text(), manifest.patches[0].variants[0].patch]
    header = texts[1].read_text().split("\n", 1)[0]
    assert header == "Subject: [PATCH] Fix the [31m thing"
    assert not any(c in texts[0] + header for c in "\x07\x1b")


def test_a_manifest_import_cannot_read_back_is_its_own_bug_named_as_dest(
    tmp_path, cached_release, monkeypatch
):
    """Input: an import whose manifest text (forced, as a bug would) is not YAML. Outcome: exit
    70, one line `sgpatch: internal error: sgpatch import wrote a manifest it cannot read back,
    so nothing was written: DEST/s/patchset.yaml: ...` (never the temporary folder's name);
    DEST holds nothing (no temporary folder left)."""
    monkeypatch.setattr(importer, "manifest_text", lambda result: "schema: [\n")
    mail = tmp_path / "in.patch"
    mail.write_text(_mail("[PATCH] Fix it", cached_release))
    dest = tmp_path / "dest"
    dest.mkdir()
    code, _, err = run_cli("import", "--name", "s", "--sglang-version", "1.0", "--dest",
                           str(dest), str(mail))  # fmt: skip
    assert code == 70 and err.count("\n") == 1
    assert err.startswith(
        "sgpatch: internal error: sgpatch import wrote a manifest it cannot read back, so "
        f"nothing was written: {dest / 's' / 'patchset.yaml'}"
    )
    assert "-import-" not in err and list(dest.iterdir()) == []


def test_a_failed_import_leaves_no_dest_it_created(tmp_path, cached_release, monkeypatch):
    """Input: a 300-character --name; then a --dest that does not exist yet where making the
    temporary folder fails (ENOSPC). Outcome: the first is exit 2 in one line naming --name;
    the second exit 2 in one line; neither leaves the --dest folder behind."""
    import errno
    import tempfile

    mail = tmp_path / "in.patch"
    mail.write_text(_mail("[PATCH] Fix it", cached_release))
    dest = tmp_path / "new" / "dest"
    code, _, err = run_cli("import", "--name", "a" * 300, "--sglang-version", "1.0", "--dest",
                           str(dest), str(mail))  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "300 characters; at most 100" in err
    assert not (tmp_path / "new").exists()

    real = tempfile.mkdtemp

    def full(*args, **kwargs):  # only import's own temporary folder in DEST fails
        if "-import-" in str(kwargs.get("prefix", "")):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkdtemp", full)
    code, _, err = run_cli("import", "--name", "s", "--sglang-version", "1.0", "--dest",
                           str(dest), str(mail))  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "No space left on device" in err
    assert not dest.exists()


CLASS = "class Pool:\n    def a(self):\n        return 1\n\n    def get(self):\n        return 2\n"


def test_a_method_the_release_already_has_is_imported_as_written(release):
    """Input: a diff adding `get` to class Pool, which the release's own file already defines
    (the author's own duplicate, at the hunk's own line). Outcome: imported as written (exit
    0; the patch adds the second `get`, as `git apply` does), and the engine's warning for
    that placement names both places, the copy Python runs (the added one) and that the two
    are different code; no message advises deleting a copy."""
    release["srt/c.py"] = CLASS.encode()
    new = CLASS + "\n    def get(self):\n        return 3\n"
    diff = make_diff(CLASS, new, "python/sglang/srt/c.py")
    res = importer.import_sources("mine", V, [src(diff, "dup.patch")])
    assert "+    def get(self):\n+        return 3\n" in res.patches[0].data.decode()
    hunks = parse_patch(diff, "d").files[0].hunks
    got = apply_hunks(split_lines(CLASS), hunks, authored=True)
    assert "".join(got.lines) == new
    warning = got.hunks[0].warning or ""
    assert "get is defined twice in class Pool" in warning
    assert "Python runs line 8 (the added copy); the copies are different code" in warning
    assert "delete" not in warning


def test_a_method_an_earlier_input_added_twice_is_imported_as_written(release):
    """Input: one diff adding `get` to class Pool, a second diff adding it again. Outcome:
    both imported as written (the second patch adds the second copy), nothing refused."""
    base = CLASS.replace("    def get(self):\n        return 2\n", "    pass\n")
    release["srt/c.py"] = base.encode()
    one = base + "\n    def get(self):\n        return 2\n"
    two = one + "\n    def get(self):\n        return 3\n"
    first = make_diff(base, one, "python/sglang/srt/c.py")
    second = make_diff(one, two, "python/sglang/srt/c.py")
    res = importer.import_sources("mine", V, [src(first, "one.patch"), src(second, "two.patch")])
    assert [p.id for p in res.patches] == ["one", "two"]
    assert "+        return 3\n" in res.patches[1].data.decode()


def test_a_method_added_twice_away_from_its_line_is_still_refused(release):
    """Input: the diff adding a second `get` to class Pool, but its header states a line
    three lines off (the hunk lands at an offset: sgpatch would be the one to put the copy
    there). Outcome: exit 3 naming the hunk and `would define get twice`, and no advice to
    delete a copy."""
    release["srt/c.py"] = ("# a\n# b\n# c\n" + CLASS).encode()
    new = CLASS + "\n    def get(self):\n        return 3\n"
    diff = make_diff(CLASS, new, "python/sglang/srt/c.py")
    with pytest.raises(SgpatchError) as e:
        importer.import_sources("mine", V, [src(diff, "dup.patch")])
    msg = e.value.message
    assert e.value.code == 3 and "dup.patch: srt/c.py hunk #1: would define get twice" in msg
    assert "delete" not in msg


# --- a patch that only creates a file; a path into sgpatch's state folder (issue 46, 14-15)

NEW_MODULE = (
    "diff --git a/python/sglang/srt/brand_new.py b/python/sglang/srt/brand_new.py\n"
    "new file mode 100644\n--- /dev/null\n+++ b/python/sglang/srt/brand_new.py\n"
    "@@ -0,0 +1,2 @@\n+def brand_new_helper_function():\n+    return compute_the_answer(42)\n"
)


def test_a_patch_that_only_creates_a_file_imports_lints_and_applies(tmp_path, cached_release):
    """Input: a diff that only creates srt/brand_new.py (no file of the release is read), on a
    release in the cache. Outcome: import exit 0; `lint` of the set exit 0 (no "not an SGLang
    tree" about a scratch tree); `apply` to a tree of that release creates the file with the
    diff's bytes, exit 0."""
    import helpers as tp

    (tmp_path / "new.patch").write_text(NEW_MODULE)
    dest = tmp_path / "dest"
    code, _, err = run_cli("import", "--name", "s", "--sglang-version", "1.0", "--dest",
                           str(dest), str(tmp_path / "new.patch"))  # fmt: skip
    assert code == 0, err
    code, _, err = run_cli("lint", "--set", "s", "--patchsets", str(dest), "--offline")
    assert code == 0 and "not an SGLang tree" not in err, err
    for name, data in tp.release_files(tp.V10, "1.0").items():
        (tmp_path / "t" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "t" / name).write_bytes(data)
    pkg = tmp_path / "t" / "sglang"
    code, _, err = run_cli("apply", "--set", "s", "--patchsets", str(dest), "--sglang-dir",
                           str(pkg))  # fmt: skip
    assert code == 0, err
    assert (pkg / "srt/brand_new.py").read_bytes() == (
        b"def brand_new_helper_function():\n    return compute_the_answer(42)\n"
    )


@pytest.mark.parametrize(
    "path", ["python/sglang/.sgpatch/ledger.json", "sglang/srt/.SGPATCH/x", ".sgpatch/journal"]
)
def test_a_diff_path_into_the_state_folder_is_refused_for_safety_in_one_line(tmp_path, path):
    """Input: a diff creating a file inside sgpatch's state folder (three spellings). Outcome:
    exit 4 (refused for safety, docs/exit-codes.md), one line naming the path and the state
    folder, no stray `None:`; DEST as it was; nothing downloaded (the release is never read)."""
    diff = NEW_MODULE.replace("python/sglang/srt/brand_new.py", path)
    (tmp_path / "in.patch").write_text(diff)
    dest = tmp_path / "dest"
    dest.mkdir()
    code, _, err = run_cli("import", "--name", "s", "--sglang-version", "0.5.9", "--dest",
                           str(dest), str(tmp_path / "in.patch"))  # fmt: skip
    assert code == 4, err
    assert err.count("\n") == 1 and "sgpatch's state folder (.sgpatch/)" in err, err
    assert "None" not in err and list(dest.iterdir()) == []


# --- any unified diff: the strip level (issue 45, item 2)


def test_diff_ru_between_folders_not_named_a_b_imports_with_the_detected_level(
    tmp_path, cached_release
):
    """Input: `diff -ru b c` of two site-packages copies of release 1.0 (paths
    b/sglang/srt/mod.py, c/sglang/srt/mod.py, with timestamps). Outcome: exit 0, the patch
    file's paths are a/python/sglang/srt/mod.py, stderr says the paths were read with -p1
    (detected), `--json` says `"strip": 1`; `-p 0` instead names the unstripped file as
    missing (exit 3)."""
    import json

    body = cached_release.split("@@", 1)[1]
    diff = (
        "diff -ru b/sglang/srt/mod.py c/sglang/srt/mod.py\n"
        "--- b/sglang/srt/mod.py\t2026-01-01 10:00:00.000000000 +0000\n"
        "+++ c/sglang/srt/mod.py\t2026-01-01 11:00:00.000000000 +0000\n@@" + body
    )
    (tmp_path / "x.patch").write_text(diff)
    dest = tmp_path / "dest"
    args = ("import", "--name", "s", "--sglang-version", "1.0", str(tmp_path / "x.patch"))
    code, out, err = run_cli(*args, "--dest", str(dest), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["patches"][0]["strip"] == 1 and doc["patches"][0]["files"] == ["srt/mod.py"]
    data = (dest / "s" / doc["patches"][0]["file"]).read_text()
    assert "diff --git a/python/sglang/srt/mod.py b/python/sglang/srt/mod.py" in data
    code, _, err = run_cli(*args, "--dest", str(tmp_path / "d2"))
    assert code == 0 and "x.patch: paths read with -p1 (detected" in err, err
    code, _, err = run_cli(*args, "--dest", str(tmp_path / "d3"), "-p", "0")
    assert code == 3 and "b/sglang/srt/mod.py: file does not exist" in err, err


def test_an_input_whose_every_file_is_left_out_says_why_for_each(release, capsys):
    """Input: a git diff touching only python/docs/a.md and sgl-kernel/k.cu (nothing in the
    package). Outcome: exit 3, "nothing left to import" for the input; on stderr one line per
    file with its reason, under that input's line."""
    diff = make_diff("a\n", "b\n", "python/docs/a.md") + make_diff("a\n", "b\n", "sgl-kernel/k.cu")
    with pytest.raises(SgpatchError) as e:
        importer.import_sources("mine", V, [src(diff, "out.patch")])
    assert e.value.code == 3 and e.value.message.startswith("1 hunk(s) or input(s) do not")
    assert "out.patch: nothing left to import (every file is left out" in e.value.message
    assert capsys.readouterr().err.splitlines()[1:] == [
        "      python/docs/a.md: left out (outside the SGLang package (python/sglang/))",
        "      sgl-kernel/k.cu: left out (outside the SGLang package (python/sglang/))",
    ]


# --- every kind of file a stack carries (issue 42, item 1)

KINDS = (
    "diff --git a/python/sglang/srt/cfg/E=128,N=384.json b/python/sglang/srt/cfg/E=128,N=384.json\n"
    "new file mode 100644\n--- /dev/null\n+++ b/python/sglang/srt/cfg/E=128,N=384.json\n"
    '@@ -0,0 +1,3 @@\n+{\n+  "BLOCK_SIZE_M": 64\n+}\n'
    "diff --git a/python/sglang/srt/cfg/latest.json b/python/sglang/srt/cfg/latest.json\n"
    "new file mode 120000\n--- /dev/null\n+++ b/python/sglang/srt/cfg/latest.json\n"
    "@@ -0,0 +1 @@\n+E=128,N=384.json\n\\ No newline at end of file\n"
    "diff --git a/python/sglang/srt/tune.sh b/python/sglang/srt/tune.sh\n"
    "new file mode 100755\n--- /dev/null\n+++ b/python/sglang/srt/tune.sh\n"
    "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo tune_the_moe_kernels_now\n"
    "diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py\nold mode 100644\n"
    "new mode 100755\n"
    "diff --git a/python/sglang/srt/b.py b/python/sglang/srt/b.py\nold mode 100755\n"
    "new mode 100644\n"
)


def test_json_files_a_symlink_and_modes_are_imported_as_git_writes_them(release):
    """Input: one git diff adding a JSON tuning file, a symlink to it and an executable
    script, making srt/a.py executable and srt/b.py (executable in the release) not. Outcome:
    one patch with all five files; the JSON as text, `new file mode 120000` with the target
    as its one line, `new file mode 100755`, and `old mode`/`new mode` blocks alone (no
    hunks); the probe reads only the text files."""
    res = importer.import_sources("mine", V, [src(KINDS, "kinds.patch")])
    (p,) = res.patches
    assert p.files == ("srt/a.py", "srt/b.py", "srt/cfg/E=128,N=384.json",
                       "srt/cfg/latest.json", "srt/tune.sh")  # fmt: skip
    text = p.data.decode()
    assert (
        "new file mode 120000\n--- /dev/null\n+++ b/python/sglang/srt/cfg/latest.json\n"
        "@@ -0,0 +1 @@\n+E=128,N=384.json\n\\ No newline at end of file\n" in text
    )
    assert "new file mode 100755\n--- /dev/null\n+++ b/python/sglang/srt/tune.sh\n" in text
    assert "b/python/sglang/srt/a.py\nold mode 100644\nnew mode 100755\ndiff --git" in text
    assert "b/python/sglang/srt/b.py\nold mode 100755\nnew mode 100644\ndiff --git" in text
    assert '+  "BLOCK_SIZE_M": 64\n' in text
    assert "latest.json" not in str(p.probe)


def test_a_symlink_made_then_retargeted_by_a_later_input_is_imported_per_input(release):
    """Input: diff 1 makes srt/cfg/latest -> a.json; diff 2 retargets it to b.json (git's
    `index A..B 120000` block). Outcome: two patches: the first makes the link, the second
    retargets it (its block a 120000 change from a.json to b.json), and requires the first."""
    one = ("diff --git a/python/sglang/srt/cfg/latest b/python/sglang/srt/cfg/latest\n"
           "new file mode 120000\n--- /dev/null\n+++ b/python/sglang/srt/cfg/latest\n"
           "@@ -0,0 +1 @@\n+a.json\n\\ No newline at end of file\n")  # fmt: skip
    two = ("diff --git a/python/sglang/srt/cfg/latest b/python/sglang/srt/cfg/latest\n"
           "index 1..2 120000\n--- a/python/sglang/srt/cfg/latest\n"
           "+++ b/python/sglang/srt/cfg/latest\n@@ -1 +1 @@\n-a.json\n"
           "\\ No newline at end of file\n+b.json\n\\ No newline at end of file\n")  # fmt: skip
    res = importer.import_sources("mine", V, [src(one, "one.patch"), src(two, "two.patch")])
    assert [p.files for p in res.patches] == [("srt/cfg/latest",), ("srt/cfg/latest",)]
    assert res.patches[1].requires == (res.patches[0].id,)
    second = parse_patch(res.patches[1].data).files[0]
    assert second.symlink and [ln.kind + ln.text for h in second.hunks for ln in h.lines] == [
        "-a.json", "+b.json"]  # fmt: skip


def test_files_a_set_cannot_carry_stop_the_import_unless_allowed(tmp_path, cached_release):
    """Input: a git diff with a text change to srt/mod.py, a `GIT binary patch` for
    srt/kernel.so and a symlink srt/etc -> ../../../etc. Outcome: exit 3, nothing written,
    each of the two named on stderr and in `--json` `left_out` (kind `uncarried`, with why);
    with --allow-left-out: exit 0, the set carries the text change and its patch header
    names both as `Left-out:`."""
    import json

    binary = (
        "diff --git a/python/sglang/srt/kernel.so b/python/sglang/srt/kernel.so\n"
        "new file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 3\n"
        "KcmZ?wbN~PV0RR91\n\nliteral 0\nHcmV?d00001\n\n"
    )
    link = (
        "diff --git a/python/sglang/srt/etc b/python/sglang/srt/etc\nnew file mode 120000\n"
        "--- /dev/null\n+++ b/python/sglang/srt/etc\n@@ -0,0 +1 @@\n+../../../etc\n"
        "\\ No newline at end of file\n"
    )
    (tmp_path / "x.patch").write_text(cached_release + binary + link)
    args = ("import", "--name", "s", "--sglang-version", "1.0", str(tmp_path / "x.patch"))
    code, out, err = run_cli(*args, "--dest", str(tmp_path / "d1"), "--json")
    assert code == 3 and not (tmp_path / "d1").exists()
    doc = json.loads(out)
    assert doc["exit_code"] == 3 and "cannot be carried by a patch set" in doc["error"]
    assert [(e["path"], e["kind"]) for e in doc["left_out"]] == [
        ("python/sglang/srt/kernel.so", "uncarried"),
        ("python/sglang/srt/etc", "uncarried"),
    ]
    assert "srt/kernel.so: cannot be carried by a patch set: binary" in err
    assert "srt/etc: cannot be carried by a patch set: a symlink to '../../../etc'" in err
    code, _, err = run_cli(*args, "--dest", str(tmp_path / "d2"), "--allow-left-out")
    assert code == 0, err
    (patch,) = (tmp_path / "d2" / "s" / "patches" / "1.0").iterdir()
    text = patch.read_text()
    assert "Left-out: python/sglang/srt/kernel.so (binary" in text
    assert "Left-out: python/sglang/srt/etc (a symlink" in text
    assert "a_distinctive_change_here" in text and "GIT binary" not in text


def test_a_hunk_that_changes_nothing_imports_as_git_applies_it(release):
    """Input: a diff whose first hunk removes a line and adds it back unchanged (a no-op, as
    hand-edited stacks have) and whose second hunk adds a line. Outcome: imported (not
    "already there"); the patch holds only the real change."""
    lines = ORIG.splitlines(keepends=True)
    noop = "@@ -2,3 +2,3 @@\n " + lines[1] + "-" + lines[2] + "+" + lines[2] + " " + lines[3]
    real = "@@ -30,2 +30,3 @@\n " + lines[29] + "+    really_added_line = True_and_long()\n "
    diff = ("--- a/python/sglang/srt/a.py\n+++ b/python/sglang/srt/a.py\n" + noop + real
            + lines[30])  # fmt: skip
    res = importer.import_sources("mine", V, [src(diff, "noop.patch")])
    text = res.patches[0].data.decode()
    assert res.patches[0].hunks == 1 and "+    really_added_line" in text


def test_a_file_turned_into_a_symlink_imports_as_gits_two_blocks(release):
    """Input: git's diff of srt/b.py (executable in the release) turned into a symlink to
    a.py: a `deleted file mode 100755` block, then a `new file mode 120000` block. Outcome:
    one patch whose file srt/b.py is written the same way (deletion with the mode it had,
    then the link), which reads back as two blocks for one path."""
    old = "".join("-" + ln for ln in ORIG.splitlines(keepends=True))
    diff = (
        "diff --git a/python/sglang/srt/b.py b/python/sglang/srt/b.py\n"
        "deleted file mode 100755\n--- a/python/sglang/srt/b.py\n+++ /dev/null\n"
        f"@@ -1,40 +0,0 @@\n{old}"
        "diff --git a/python/sglang/srt/b.py b/python/sglang/srt/b.py\n"
        "new file mode 120000\n--- /dev/null\n+++ b/python/sglang/srt/b.py\n"
        "@@ -0,0 +1 @@\n+a.py\n\\ No newline at end of file\n"
    )
    (p,) = importer.import_sources("mine", V, [src(diff, "type.patch")]).patches
    blocks = parse_patch(p.data).files
    assert p.files == ("srt/b.py",) and len(blocks) == 2
    assert (blocks[0].is_delete, blocks[0].old_mode, blocks[1].is_new, blocks[1].symlink) == (
        True, 0o755, True, True)  # fmt: skip
