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


def _modes_split(tmp_path: Path, monkeypatch, by: str, take: list[str], *flags: str):
    """modes_set's `first` (a symlink, a new executable script, a file made executable, two
    hunks of srt/mod.py) split on release 1.0 through the CLI (`flags` added): the set folder,
    the exit code, stdout, stderr, and the set's files as they were before."""
    from helpers import fake_index, modes_set, port_cache, run_cli, snapshot

    port_cache(tmp_path, monkeypatch, ("1.0",))
    fake_index(monkeypatch)  # the cached wheels stand in for the index
    d = modes_set(tmp_path)
    before = snapshot(d)
    takes = [a for t in take for a in ("--take", t)]
    code, out, err = run_cli("split", "--set", "demo", "--patchsets", str(d.parent), "--patch",
                             "first", "--by", by, *takes, "--into", "tools", *flags)  # fmt: skip
    return d, code, out, err, before


def test_a_split_by_file_moves_a_symlink_and_a_script_keeping_every_link_and_mode(
    tmp_path, monkeypatch
):
    """Input: `first` split by file, taking the symlink srt/alias.py and the executable
    srt/run.sh into `tools`. Outcome: exit 0; `tools`'s file makes the link (`new file mode
    120000`) and the script (`new file mode 100755`); `first` keeps mod.py and the mode change
    of srt/__init__.py (`old mode`/`new mode`) and neither of the others; the split set applied
    to a fresh 1.0 tree leaves the same link, modes and mod.py as before the split."""
    from helpers import KINDS, PATCHED10, V10, kinds_in, port_applied, release_files

    d, code, _, err, _ = _modes_split(tmp_path, monkeypatch, "file", ["srt/alias.py", "srt/run.sh"])
    assert code == 0, err
    first = (d / "patches/1.0/0001-first.patch").read_text()
    tools = (d / "patches/1.0/0002-tools.patch").read_text()
    assert "new file mode 120000\n" in tools and "new file mode 100755\n" in tools
    assert "b/python/sglang/srt/mod.py" not in tools and "srt/__init__.py" not in tools
    assert "old mode 100644\nnew mode 100755\n" in first and "b/python/sglang/srt/mod.py" in first
    assert "120000" not in first and "srt/run.sh" not in first
    got = port_applied(tmp_path, d, "1.0", release_files(V10, "1.0"), ["srt/mod.py"])
    assert got == {"srt/mod.py": PATCHED10.encode()}
    assert kinds_in(tmp_path / "applied-1.0/sglang") == KINDS


def test_split_json_names_both_halves_their_files_releases_and_probes(tmp_path, monkeypatch):
    """Input: `first` split by file into `tools` (as above) with --json. Outcome: exit 0 and
    the document, byte for byte: the patch and its new sibling, the new file as the set names
    it, the release both were checked on, no probe for either (nothing distinctive enough:
    each note says so), no lint warning."""
    from helpers import printed_json

    take = ["srt/alias.py", "srt/run.sh"]
    _, code, out, err, _ = _modes_split(tmp_path, monkeypatch, "file", take, "--json")
    assert code == 0, err
    why = "no added or removed line is distinctive enough for a probe"
    assert out == printed_json({
        "command": "split", "exit_code": 0, "set": "demo", "patch": "first", "into": "tools",
        "new_files": ["patches/1.0/0002-tools.patch"], "releases": ["1.0"],
        "probes": {"first": None, "tools": None},
        "notes": [f"first: kept its probe ({why})", f"tools: no probe ({why})"],
        "warnings": [],
    })  # fmt: skip


def test_a_split_by_hunk_leaves_links_and_mode_changes_with_the_patch_that_stays(
    tmp_path, monkeypatch
):
    """Input: `first` split by hunk, taking srt/mod.py's hunk #2 into `tools`. Outcome: exit
    0; `tools` holds that hunk alone (no mode line, no link); `first` keeps the link, the
    script and the mode change; applied in order, the same link, modes and mod.py."""
    from helpers import KINDS, PATCHED10, V10, kinds_in, port_applied, release_files

    d, code, _, err, _ = _modes_split(tmp_path, monkeypatch, "hunk", ["srt/mod.py:2"])
    assert code == 0, err
    first = (d / "patches/1.0/0001-first.patch").read_text()
    tools = (d / "patches/1.0/0002-tools.patch").read_text()
    assert "mode" not in tools.split("diff --git", 1)[1] and tools.count("@@ -") == 1
    assert all(b in first for b in ("new file mode 120000\n", "new file mode 100755\n",
                                     "old mode 100644\nnew mode 100755\n"))  # fmt: skip
    got = port_applied(tmp_path, d, "1.0", release_files(V10, "1.0"), ["srt/mod.py"])
    assert got == {"srt/mod.py": PATCHED10.encode()}
    assert kinds_in(tmp_path / "applied-1.0/sglang") == KINDS


def test_a_symlink_split_by_hunk_is_refused_split_it_by_file(tmp_path, monkeypatch):
    """Input: `first` split by hunk naming the symlink's one hunk (srt/alias.py:1). Outcome:
    exit 2, the line says to split it by file; the set is as it was."""
    from helpers import snapshot

    d, code, _, err, before = _modes_split(tmp_path, monkeypatch, "hunk", ["srt/alias.py:1"])
    assert code == 2 and "srt/alias.py" in err and "split it by file" in err, err
    assert snapshot(d) == before
