"""Where a patch's files come from on the new release (port/source.py): renames followed,
files merged into one not followed, merge bases never downloaded offline."""

from __future__ import annotations

import pytest

from helpers import (
    V10,
    by_id,
    make_set,
    make_wheel,
    port_applied,
    port_diff,
    release_files,
    run_cli,
    sgport,
)
from sgpatch.patchset.manifest import load_manifest


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
    got = port_applied(tmp_path, d, "1.6", files, ["srt/renamed.py"])
    assert got == {"srt/renamed.py": renamed}
    assert not (tmp_path / "applied-1.6/sglang/srt/other.py").exists()


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
    got = port_applied(tmp_path, d, "1.7", files, ["srt/big_impl.py"])
    assert got == {"srt/big_impl.py": (w / "sglang/srt/big_impl.py").read_bytes()}


A_FILE = "".join(f"def a_function_{i}():\n    return {i}\n\n\n" for i in range(5))


B_FILE = "".join(f"def b_function_{i}():\n    return {i}\n\n\n" for i in range(5))


@pytest.mark.parametrize("both", [False, True])
def test_files_merged_into_one_are_no_rename_but_their_defs_are_followed(cache, tmp_path, both):
    """Input: 1.9 merged srt/a.py and srt/b.py into srt/ab.py (each is half of it); `second`
    patches a_function_1 in a.py (and, with `both`, b_function_3 in b.py too). Outcome: no
    file is followed as a rename (a move into a bigger file is no rename), but each hunk's
    def is in ab.py once, the same code: carried there (port.moved), exit 0, a `moved` row
    per hunk naming the old file and def and the line in ab.py; the new patch file names
    srt/ab.py only, and the set applied to 1.9 gives W's ab.py."""
    extra = {"sglang/srt/a.py": A_FILE.encode(), "sglang/srt/b.py": B_FILE.encode()}
    make_wheel(cache / "wheels", "1.0", release_files(V10, "1.0", extra))
    ab = (A_FILE + B_FILE).encode()
    files = release_files(V10, "1.9", {"sglang/srt/ab.py": ab})
    make_wheel(cache / "wheels", "1.9", files)
    second = port_diff(A_FILE, A_FILE.replace("return 1\n", "return 111\n"), "srt/a.py")
    if both:
        second += port_diff(B_FILE, B_FILE.replace("return 3\n", "return 333\n"), "srt/b.py")
    d = make_set(tmp_path, second=second)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.9",
                       "--workspace", str(w))  # fmt: skip
    assert code == 0, doc
    out = by_id(doc)["second"]
    assert "rename" not in out["note"] and out["problems"] == []
    want = [{"file": "srt/a.py", "hunk": 1, "scope": "a_function_1", "to": "srt/ab.py",
             "line": 6}]  # fmt: skip
    if both:
        want.append({"file": "srt/b.py", "hunk": 1, "scope": "b_function_3", "to": "srt/ab.py",
                     "line": 34})  # fmt: skip
    keys = ("file", "hunk", "scope", "to", "line")
    assert [{k: m[k] for k in keys} for m in out["moved"]] == want
    ab_now = (w / "sglang/srt/ab.py").read_text()
    assert "return 111\n" in ab_now and ("return 333\n" in ab_now) == both
    (variant,) = [v for v in load_manifest(d / "patchset.yaml").patch("second").variants
                  if str(v.sglang) == "==1.9"]  # fmt: skip
    text = variant.patch.read_text()
    assert "srt/ab.py" in text and "srt/a.py" not in text and "srt/b.py" not in text
    got = port_applied(tmp_path, d, "1.9", files, ["srt/ab.py"])
    assert got == {"srt/ab.py": ab_now.encode()}


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
