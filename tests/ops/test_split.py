"""split.py: what `--by`/`--take`/`--into` accept, refused before anything is computed."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import sgpatch
from sgpatch.errors import SgpatchError
from sgpatch.ops.split import parse_take, split_patch
from sgpatch.patchset.manifest import load_manifest

PATCH = (
    "Subject: x\n\n--- a/python/sglang/srt/x.py\n+++ b/python/sglang/srt/x.py\n"
    "@@ -1 +1 @@\n-a\n+b\n"
)


def _set(tmp_path: Path, variants: int = 1) -> Path:
    d = tmp_path / "s"
    (d / "patches").mkdir(parents=True)
    (d / "patches" / "p.patch").write_text(PATCH)
    lines = "\n".join(
        f'      - {{sglang: "=={v}", patch: patches/p.patch}}'
        for v in ("0.5.9", "0.5.10")[:variants]
    )
    (d / "patchset.yaml").write_text(
        'schema: 1\nname: s\nsummary: s\nsglang: ">=0.5.9,<0.5.11"\npatches:\n'
        "  - id: p\n    summary: p\n    type: bugfix\n    upstream: {status: pending}\n"
        f"    variants:\n{lines}\n"
        "  - id: q\n    summary: q\n    type: bugfix\n    upstream: {status: pending}\n"
        '    variants:\n      - {sglang: "==0.5.9", patch: patches/p.patch}\n'
    )
    return d / "patchset.yaml"


@pytest.mark.parametrize(
    ("by", "take", "words"),
    [
        ("line", ["srt/x.py"], "--by 'line'"),
        ("file", [], "--take"),
        ("hunk", ["srt/x.py"], "FILE:N"),
        ("hunk", ["srt/x.py:0"], "FILE:N"),
        ("file", ["docs/index.md"], "outside the SGLang package"),
    ],
)
def test_take_is_checked(by, take, words):
    """Input: an unknown --by, no --take, a hunk without a number or numbered 0, a file outside
    the package. Outcome: exit 2 naming the problem."""
    with pytest.raises(SgpatchError) as e:
        parse_take(by, take)
    assert e.value.code == 2 and words in e.value.message


def test_into_an_existing_id_or_a_bad_id_is_refused(tmp_path):
    """Input: --into q (taken) and --into 'Bad Id'. Outcome: exit 2 each."""
    m = load_manifest(_set(tmp_path))
    for new in ("q", "Bad Id"):
        with pytest.raises(SgpatchError) as e:
            split_patch(m, "p", "file", ["srt/x.py"], new)
        assert e.value.code == 2


def test_by_hunk_over_several_variants_is_refused(tmp_path):
    """Input: a patch with two variants, split by hunk. Outcome: exit 2 (hunk numbers differ
    between variants), suggesting a split by file."""
    m = load_manifest(_set(tmp_path, variants=2))
    with pytest.raises(SgpatchError) as e:
        split_patch(m, "p", "hunk", ["srt/x.py:1"], "new")
    assert e.value.code == 2 and "split by file" in e.value.message


def test_cli_bad_input_leaves_the_set_as_it_was(tmp_path, capsys):
    """Input: `sgpatch split` on an unknown patch id. Outcome: exit 2, one error line, the
    manifest byte-for-byte unchanged."""
    path = _set(tmp_path)
    before = path.read_bytes()
    args = ("--set", "s", "--patchsets", str(tmp_path), "--patch", "nope", "--by", "file")
    assert sgpatch("split", *args, "--take", "srt/x.py", "--into", "n") == 2
    assert capsys.readouterr().err.startswith("sgpatch: error: ")
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("old", "position", "new"),
    [("0001-p.patch", 2, "0002-n.patch"), ("0005-p.patch", 6, "0006-n.patch"),
     ("01-p.patch", 3, "03-n.patch"), ("p.patch", 2, "split-n.patch")],
)  # fmt: skip
def test_the_new_patch_file_is_numbered_by_its_place_in_the_set(tmp_path, old, position, new):
    """Input: the split patch's file name and the new patch's place in the set (the split
    one's + 1). Outcome: the new file beside it, numbered by that place in the old file's
    width (was the split file's own number: `0001-...` for the second patch)."""
    from sgpatch.ops.split import _new_file

    path = _set(tmp_path)
    (path.parent / "patches" / old).write_text(PATCH)
    path.write_text(path.read_text().replace("patches/p.patch", f"patches/{old}"))
    variant = load_manifest(path).patch("p").variants[0]
    assert _new_file(variant, "n", position) == path.parent / "patches" / new


@pytest.mark.parametrize(
    "block",
    [
        "diff --git a/python/sglang/srt/l b/python/sglang/srt/l\nnew file mode 120000\n"
        "--- /dev/null\n+++ b/python/sglang/srt/l\n@@ -0,0 +1 @@\n+x.py\n"
        "\\ No newline at end of file\n",
        "diff --git a/python/sglang/srt/y.py b/python/sglang/srt/y.py\nold mode 100644\n"
        "new mode 100755\n",
    ],
)
def test_a_patch_with_a_symlink_or_a_mode_is_refused_not_split_without_it(tmp_path, block):
    """Input: a patch that also makes a symlink, or also makes srt/y.py executable (which the
    halves, written from bytes alone, would lose). Outcome: exit 2 naming the file, before
    anything is planned or written."""
    path = _set(tmp_path)
    (path.parent / "patches" / "p.patch").write_text(PATCH + block)
    with pytest.raises(SgpatchError) as e:
        split_patch(load_manifest(path), "p", "file", ["srt/x.py"], "new")
    assert e.value.code == 2 and "symlink or changes a file mode" in e.value.message
