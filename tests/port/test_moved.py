"""Code upstream moved to another file (sgpatch.port.moved), on synthetic releases: a hunk
carried where its def or its lines went when that place is certain, a stop listing the
candidates when it is not, a file upstream deleted or rewrote, moved code an earlier stopped
patch holds; and the scope a hunk is labelled by."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import (
    by_id,
    make_wheel,
    one_patch_set,
    port_applied,
    port_cache,
    port_diff,
    release_files,
    sgport,
)
from sgpatch.diff.unified import parse_patch as read_patch_text
from sgpatch.patchset.manifest import load_manifest
from sgpatch.port import merge
from sgpatch.port.moved import hunk_scope

PREPARE = (
    "    def prepare(self, batch):\n"
    '        """Make the batch ready for the model\'s forward pass."""\n'
    "        tokens = batch.input_ids\n"
    "        positions = compute_positions_for(tokens)\n"
    "        batch.positions = positions\n"
    "        return batch\n"
)
RUN = "    def run(self, batch):\n        output = self.model.forward(batch.positions)\n" + (
    "        return output\n"
)
HELPER = "def helper_function():\n    value = compute_the_helper_value()\n    return value\n"
ENGINE = f"import os\n\n\nclass Engine:\n{PREPARE}\n{RUN}\n\n{HELPER}\n\nLIMIT = 10\n"
INIT = "    def __init__(self, engine):\n        self.engine = engine\n"
PREP = f"class BatchPreparer:\n{INIT}\n{PREPARE}"
UTIL = f"import sys\n\n\n{HELPER}\n\nLIMIT = 10\n"
SLIM = f"import os\n\n\nclass Engine:\n{RUN}\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """1.0 with srt/engine.py (class Engine: prepare, run; helper_function)."""
    c = port_cache(tmp_path, monkeypatch, versions=())
    make_wheel(
        c / "wheels", "1.0", release_files("", "1.0", {"sglang/srt/engine.py": ENGINE.encode()})
    )
    return c


def release(cache: Path, version: str, files: dict[str, str]) -> dict[str, bytes]:
    """A release `version` holding `files` (package-relative path -> text) besides the rest."""
    got = release_files("", version, {f"sglang/{k}": v.encode() for k, v in files.items()})
    make_wheel(cache / "wheels", version, got)
    return got


def mover_set(tmp_path: Path, new_engine: str) -> Path:
    return one_patch_set(tmp_path, port_diff(ENGINE, new_engine, "srt/engine.py"))


OFFSET = ENGINE.replace("compute_positions_for(tokens)", "compute_positions_for(tokens, offset=0)")
STRICT = ENGINE.replace("compute_the_helper_value()", "compute_the_helper_value(strict=True)")


def _paths(patch: Path) -> list[str]:
    """The package files a patch file changes."""
    return [f.path.split("/sglang/", 1)[1] for f in read_patch_text(patch.read_text()).files]


def port_to(tmp_path: Path, d: Path, to: str) -> tuple[int, dict, Path]:
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", to,
                       "--workspace", str(w))  # fmt: skip
    return code, doc, w


def test_a_def_moved_into_a_renamed_class_elsewhere_is_carried_there(cache, tmp_path):
    """Input: 1.7 moved Engine.prepare into class BatchPreparer of srt/parts/prep.py (the
    same code; the only `prepare` of the release); the patch changes a line of prepare.
    Outcome: exit 0, the hunk merged into prep.py's prepare (`moved` names engine.py,
    Engine.prepare, prep.py and the changed line, the evidence the same def), engine.py as
    the release has it; the set's new file names prep.py only, and applied to 1.7 gives W's
    prep.py byte for byte."""
    files = release(cache, "1.7", {"srt/engine.py": SLIM, "srt/parts/prep.py": PREP})
    d = mover_set(tmp_path, OFFSET)
    code, doc, w = port_to(tmp_path, d, "1.7")
    assert code == 0, doc
    (m,) = by_id(doc)["mover"]["moved"]
    assert (m["file"], m["scope"], m["to"], m["line"]) == (
        "srt/engine.py",
        "Engine.prepare",
        "srt/parts/prep.py",
        8,
    )
    assert m["how"].startswith("the same def BatchPreparer.prepare, 100% of its lines")
    prep = (w / "sglang/srt/parts/prep.py").read_text()
    assert prep == PREP.replace("(tokens)", "(tokens, offset=0)")
    assert (w / "sglang/srt/engine.py").read_text() == SLIM
    (variant,) = [v for v in load_manifest(d / "patchset.yaml").patch("mover").variants
                  if str(v.sglang) == "==1.7"]  # fmt: skip
    assert _paths(variant.patch) == ["srt/parts/prep.py"]
    assert port_applied(tmp_path, d, "1.7", files, ["srt/parts/prep.py"]) == {
        "srt/parts/prep.py": prep.encode()
    }


def test_lines_moved_verbatim_are_carried_where_the_engine_places_them(cache, tmp_path):
    """Input: 1.7 moved helper_function (and the lines around it) to srt/util.py, verbatim;
    the patch changes its middle line. Outcome: exit 0; the hunk's whole pre-image is at one
    place of the release, so the engine places it there (`how`: its lines, found at this one
    place), line 5 of util.py."""
    release(cache, "1.7", {"srt/engine.py": SLIM, "srt/util.py": UTIL})
    code, doc, w = port_to(tmp_path, mover_set(tmp_path, STRICT), "1.7")
    assert code == 0, doc
    (m,) = by_id(doc)["mover"]["moved"]
    assert (m["scope"], m["to"], m["line"]) == ("helper_function", "srt/util.py", 5)
    assert m["how"] == "its lines, found at this one place"
    assert (w / "sglang/srt/util.py").read_text() == UTIL.replace("value()", "value(strict=True)")


def test_two_places_for_the_moved_def_is_a_stop_listing_both(cache, tmp_path):
    """Input: 1.7 has `prepare` in two files (prep.py and prep2.py, both the same code).
    Outcome: exit 3, nothing carried anywhere: engine.py holds one small conflict block (four
    marker lines, the hunk's own lines), and the detail lists both candidates with their
    evidence; neither prep file is touched."""
    release(cache, "1.7", {"srt/engine.py": SLIM, "srt/parts/prep.py": PREP,
                           "srt/parts/prep2.py": PREP})  # fmt: skip
    code, doc, w = port_to(tmp_path, mover_set(tmp_path, OFFSET), "1.7")
    assert code == 3
    (problem,) = by_id(doc)["mover"]["problems"]
    assert problem["file"] == "srt/engine.py" and len(problem["markers"]) == 4
    (detail,) = problem["details"]
    assert detail["status"] == "its code is no longer in this file"
    assert detail["where"] == "def Engine.prepare"
    maybe = [e for e in detail["evidence"] if e.startswith("maybe ")]
    assert maybe == [
        "maybe srt/parts/prep.py:5 (def BatchPreparer.prepare, 100% of its lines the same)",
        "maybe srt/parts/prep2.py:5 (def BatchPreparer.prepare, 100% of its lines the same)",
    ]
    for rel in ("srt/parts/prep.py", "srt/parts/prep2.py"):
        assert (w / "sglang" / rel).read_text() == PREP


def test_a_deleted_file_whose_code_all_went_elsewhere_needs_no_hand(cache, tmp_path):
    """Input: 1.8 deleted srt/engine.py; prepare went to prep.py (its class renamed),
    helper_function to util.py; the patch changes both. Outcome: exit 0, no file at the old
    path, each hunk carried where its code went, two `moved` rows; the new patch file names
    the two new files."""
    release(cache, "1.8", {"srt/parts/prep.py": PREP, "srt/util.py": UTIL})
    both = OFFSET.replace("compute_the_helper_value()", "compute_the_helper_value(strict=True)")
    d = mover_set(tmp_path, both)
    code, doc, w = port_to(tmp_path, d, "1.8")
    assert code == 0, doc
    assert [(m["hunk"], m["to"]) for m in by_id(doc)["mover"]["moved"]] == [
        (1, "srt/parts/prep.py"),
        (2, "srt/util.py"),
    ]
    assert not (w / "sglang/srt/engine.py").exists()
    (variant,) = [v for v in load_manifest(d / "patchset.yaml").patch("mover").variants
                  if str(v.sglang) == "==1.8"]  # fmt: skip
    assert _paths(variant.patch) == ["srt/parts/prep.py", "srt/util.py"]


REWRITTEN = "".join(f"def new_function_{i}(argument):\n    return argument + {i}\n\n\n"
                    for i in range(20)) + "class Engine:\n    pass\n"  # fmt: skip


def test_a_rewritten_file_is_said_in_one_line_with_a_small_block(cache, tmp_path):
    """Input: 1.9 rewrote engine.py (of its old lines only `class Engine:` is left; prepare
    is nowhere, its helper went to util.py). The patch changes prepare. Outcome: exit 3; the
    problem says `rewritten upstream (N lines on sglang 1.0 -> M on sglang 1.9, 7% of its
    lines still there); its code went to srt/util.py (4 lines)`; the file holds one conflict
    block of the hunk's own lines (4 markers), never one spanning the file."""
    release(cache, "1.9", {"srt/engine.py": REWRITTEN, "srt/util.py": UTIL})
    code, doc, w = port_to(tmp_path, mover_set(tmp_path, OFFSET), "1.9")
    assert code == 3
    (problem,) = by_id(doc)["mover"]["problems"]
    n_old, n_new = len(ENGINE.splitlines()), len(REWRITTEN.splitlines())
    assert problem["why"].startswith(
        f"rewritten upstream ({n_old} lines on sglang 1.0 -> {n_new} on sglang 1.9, 7% of its "
        "lines still there); its code went to srt/util.py (4 lines); hunk(s) #1: the code is no "
        "longer here"
    )
    data = (w / "sglang/srt/engine.py").read_bytes()
    assert len(merge.marker_lines(data)) == 4
    assert data.decode().count("compute_positions_for") == 2  # the base's line and the patch's


def test_code_moved_into_a_file_a_stopped_patch_holds_waits_for_it(cache, tmp_path):
    """Input: two patches: `first` changes util.py's LIMIT (conflicts on 1.7, whose util.py
    has another LIMIT), `mover` changes helper_function, whose lines went to util.py in 1.7.
    Outcome: exit 3; `first` stops on util.py, `mover` waits on engine.py (its moved code's
    place is held), nothing of it written into util.py; once util.py is fixed, --continue
    carries `mover` into util.py (exit 0, one `moved` row)."""
    util10 = UTIL.replace("import sys", "import json")
    c = cache
    make_wheel(
        c / "wheels",
        "1.0",
        release_files(
            "",
            "1.0",
            {"sglang/srt/engine.py": ENGINE.encode(), "sglang/srt/util.py": util10.encode()},
        ),
    )
    release(cache, "1.7", {"srt/engine.py": SLIM,
                           "srt/util.py": UTIL.replace("LIMIT = 10", "LIMIT = 12")})  # fmt: skip
    d = mover_set(tmp_path, STRICT)
    first = port_diff(util10, util10.replace("LIMIT = 10", "LIMIT = 20"), "srt/util.py")
    (d / "patches/1.0/0000-first.patch").write_text("Subject: first\n\n" + first)
    y = d / "patchset.yaml"
    y.write_text(
        y.read_text().replace(
            "patches:\n",
            (
                "patches:\n  - id: first\n    summary: first\n    type: bugfix\n"
                "    upstream: {status: pending}\n    variants:\n"
                '      - {sglang: "==1.0", patch: patches/1.0/0000-first.patch}\n'
            ),
        )
    )
    code, doc, w = port_to(tmp_path, d, "1.7")
    assert code == 3, doc
    out = by_id(doc)
    assert out["first"]["outcome"] == "conflict"
    assert out["mover"]["outcome"] == "waiting" and out["mover"]["files_waiting"] == [
        "srt/engine.py"
    ]
    util = w / "sglang/srt/util.py"
    assert "strict=True" not in util.read_text()
    util.write_text(UTIL.replace("LIMIT = 10", "LIMIT = 20"))
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    (m,) = by_id(doc)["mover"]["moved"]
    assert m["to"] == "srt/util.py" and "strict=True" in util.read_text()


def test_a_hunk_is_labelled_by_the_def_it_is_in_not_the_one_above(tmp_path):
    """Input: a hunk whose context begins in `_handle_kv4_compatibility` (so git's `@@`
    header names it) and whose changed line is in `_handle_page_size`. Outcome: hunk_scope
    names `def Args._handle_page_size` (issue 44, dead end 4); a line added at class level
    between two methods is in `class Args`, one at column 0 at module level."""
    from sgpatch.diff.unified import split_lines

    text = ("class Args:\n    def _handle_kv4_compatibility(self):\n        self.kv4 = True\n\n"
            "    def _handle_page_size(self):\n        self.page_size = 16\n")  # fmt: skip
    new = text.replace("page_size = 16", "page_size = 32")
    diff = port_diff(text, new, "srt/args.py")
    diff = diff.replace("@@ -3,4 +3,4 @@", "@@ -3,4 +3,4 @@ def _handle_kv4_compatibility(self):")
    (hunk,) = read_patch_text(diff).files[0].hunks
    assert "_handle_kv4_compatibility" in hunk.section_header  # git's funcname: the def above
    lines = split_lines(text)
    assert hunk_scope(lines, hunk, hunk.source_start - 1).label == "def Args._handle_page_size"
    added = text.replace(
        "\n    def _handle_page_size", "\n    LIMIT = 3\n\n    def _handle_page_size"
    )
    (hunk,) = read_patch_text(port_diff(text, added, "srt/args.py")).files[0].hunks
    assert hunk_scope(lines, hunk, hunk.source_start - 1).label == "class Args"
    top = text + "\nLIMIT = 3\n"
    (hunk,) = read_patch_text(port_diff(text, top, "srt/args.py")).files[0].hunks
    assert hunk_scope(lines, hunk, hunk.source_start - 1).label == "module level"


def test_a_rewrite_names_the_folder_its_code_went_to():
    """Input: a file rewritten upstream whose code went to three files shown and 85 more: all
    in one folder; then 31 in that folder and its subfolder and the rest spread one or two a
    folder (as server_args.py's went on 0.5.20); then one file. Outcome: the folder is named
    (`85 more files in srt/arg_groups/`, `(31 in srt/arg_groups/)`), never the top
    folder, and a bare count only when no folder holds many."""
    from sgpatch.port.moved import Rewrite

    went = (("srt/arg_groups/core.py", 400), ("srt/arg_groups/a.py", 90), ("srt/b.py", 50))
    rest = tuple(f"srt/arg_groups/g{i}.py" for i in range(85))
    line = Rewrite(3000, 200, 0.07, went, rest).text("sglang 0.5.19", "sglang 0.5.20")
    assert line.endswith("srt/b.py (50 lines) and 85 more files in srt/arg_groups/")
    spread = tuple(f"srt/f{i // 2}/m{i}.py" for i in range(54))
    mixed = rest[:20] + tuple(f"srt/arg_groups/fields/f{i}.py" for i in range(11)) + spread
    line = Rewrite(3000, 200, 0.07, went, mixed).text("a", "b")
    assert line.endswith("and 85 more files (31 in srt/arg_groups/)")
    assert (
        Rewrite(3000, 200, 0.07, went, ("srt/x.py",)).text("a", "b").endswith("and 1 more file(s)")
    )
