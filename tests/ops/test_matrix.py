"""matrix: the member filter that picks what a minimal pristine tree holds (the planning itself
is covered on real releases in tests/real/test_matrix_lint.py); `--tree` rows on synthetic
releases and trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import (
    V10,
    V11,
    V12,
    make_set,
    make_wheel,
    offline_cache,
    one_line_error,
    release_files,
    run_cli,
)
from sgpatch.ops.matrix import member_filter


def test_member_filter_keeps_exactly_the_files_some_pattern_names():
    """Input: wheel member names and patterns (a file, a glob, a ** glob). Outcome: a member is
    kept when any pattern matches its whole package-relative path, and dist-info keeps only
    METADATA and RECORD; no pattern keeps nothing."""
    keep = member_filter(["srt/a.py", "srt/models/*.py", "**/conf.py"])
    names = {
        "sglang/srt/a.py": True,
        "sglang/srt/a.pyc": False,
        "sglang/srt/models/x.py": True,
        "sglang/srt/models/sub/x.py": False,
        "sglang/srt/deep/er/conf.py": True,
        "sglang/conf.py": True,
        "sglang-0.5.9.dist-info/RECORD": True,
        "sglang-0.5.9.dist-info/WHEEL": False,
    }
    assert {n: keep(n) for n in names} == names
    assert not member_filter([])("sglang/srt/a.py")


# ---------------------------------------------------------------------------------------------
# `matrix --tree` / `lint --tree`, on synthetic releases and trees


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Set `demo` (checked on 1.0) and a private cache holding 1.0 and 1.1."""
    c = offline_cache(tmp_path, monkeypatch)
    for v, text in (("1.0", V10), ("1.1", V11)):
        make_wheel(c / "wheels", v, release_files(text, v))
    return make_set(tmp_path)


def tree_of(where: Path, text: str, version: str) -> Path:
    for name, data in release_files(text, version).items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_bytes(data)
    return where / "sglang"


def test_matrix_tree_adds_a_row_beside_the_releases(demo, tmp_path):
    """Input: `matrix --offline --json --tree A --tree B`: A is 1.0's files labelled
    1.1.dev4+gabc (every hunk exact), B 1.2's labelled 1.2.dev1 (`first` drifted). Outcome:
    exit 0; the release row 1.0, then A and B in that order, each with its tree, version and
    the 1.0 variants it was planned with; A's cells clean, B's `first` a conflict; the trees
    are only read."""
    a = tree_of(tmp_path / "a", V10, "1.1.dev4+gabc")
    b = tree_of(tmp_path / "b", V12, "1.2.dev1")
    before = {p: p.read_bytes() for p in (a / "srt").rglob("*.py")}
    code, out, err = run_cli("matrix", "--set", "demo", "--patchsets", str(demo.parent),
                             "--offline", "--json", "--tree", str(a), "--tree", str(b))  # fmt: skip
    assert code == 0, err
    rows = json.loads(out)["releases"]
    assert [(r["release"], r["tree"], r["variants_of"]) for r in rows] == [
        ("1.0", None, None),
        ("1.1.dev4+gabc", str(a.resolve()), "1.0"),
        ("1.2.dev1", str(b.resolve()), "1.0"),
    ]
    assert {k: c["how"] for k, c in rows[1]["cells"].items()} == {
        "first": "clean",
        "second": "clean",
    }
    assert rows[2]["cells"]["first"]["state"] == "conflict"
    assert {p: p.read_bytes() for p in (a / "srt").rglob("*.py")} == before
    code, out, err = run_cli("matrix", "--set", "demo", "--patchsets", str(demo.parent),
                             "--offline", "--tree", str(b), "--fail-on", "conflict")  # fmt: skip
    assert code == 3
    assert "1.2.dev1 (tree)" in out
    assert f"sgpatch: tree {b.resolve()}: sglang 1.2.dev1, not a release demo was checked on" in err


@pytest.mark.parametrize("command", ["matrix", "lint"])
def test_a_bad_tree_is_one_line_exit_2(demo, tmp_path, command):
    """Input: `--tree` naming a tree with no version, and one older than every version the set
    was checked on (0.9.dev1). Outcome: exit 2, one line each, before any release is planned."""
    nover = tree_of(tmp_path / "n", V10, "1.1.dev1")
    (nover / "_version.py").unlink()
    old = tree_of(tmp_path / "o", V10, "0.9.dev1")
    for tree, why in ((nover, "cannot tell the SGLang version"), (old, "older than every")):
        code, _out, err = run_cli(command, "--set", "demo", "--patchsets", str(demo.parent),
                                  "--offline", "--tree", str(tree))  # fmt: skip
        assert code == 2 and why in one_line_error(err)


def test_lint_tree_reports_what_does_not_apply_there(demo, tmp_path):
    """Input: `lint --tree` on 1.2's files labelled 1.2.dev1. Outcome: exit 3, an error naming
    `first` on 1.2.dev1; the release 1.0 itself is clean."""
    b = tree_of(tmp_path / "b", V12, "1.2.dev1")
    code, out, err = run_cli("lint", "--set", "demo", "--patchsets", str(demo.parent),
                             "--offline", "--tree", str(b))  # fmt: skip
    assert code == 3
    assert "error: demo/first on sglang 1.2.dev1: does not apply" in out
    assert "1 release(s), 1 tree(s)" in err


MEMO_SET = """\
schema: 1
name: memo
summary: one patch on every release
sglang: ">=1.0"
patches:
  - id: first
    summary: first
    type: bugfix
    upstream: {status: pending}
    variants:
      - {sglang: ">=1.0", patch: patches/first.patch}
"""


@pytest.fixture
def same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Releases 1.0 and 1.1 with the same srt/mod.py bytes, 1.2 with one byte of it changed
    where the patch edits; set `memo`, its patch made on 1.0, variant for every release."""
    from helpers import PATCHED10, port_diff

    c = offline_cache(tmp_path, monkeypatch)
    off = V10.replace("    y = 2\n", "    y = 3\n")
    for v, text in (("1.0", V10), ("1.1", V10), ("1.2", off)):
        make_wheel(c / "wheels", v, release_files(text, v))
    d = tmp_path / "sets" / "memo"
    (d / "patches").mkdir(parents=True)
    (d / "patches/first.patch").write_text(port_diff(V10, PATCHED10))
    (d / "patchset.yaml").write_text(MEMO_SET)
    return d


@pytest.mark.parametrize("workers", [1, 2])
def test_releases_with_the_same_bytes_give_the_same_row_and_a_byte_its_own(
    same_bytes, monkeypatch, workers
):
    """Input: matrix of `memo` over 1.0, 1.1 (same bytes) and 1.2 (one byte off), on one worker
    (counting placements) and on two. Outcome: 1.1's cells are 1.0's (clean), 1.2 gets its own
    (a conflict naming the changed line); on one worker srt/mod.py of 1.1 is not placed again
    (2 placements, not 3); the rows are the ones planned release by release without the memo."""
    from packaging.version import Version

    from sgpatch.ops import matrix, placed
    from sgpatch.patchset.manifest import load_manifest

    manifest = load_manifest(same_bytes / "patchset.yaml")
    versions = [Version(v) for v in ("1.0", "1.1", "1.2")]
    members = matrix.needed_files(manifest)
    alone = [matrix.plan_release(str(same_bytes), str(v), members) for v in versions]
    calls = []
    engine = placed._place
    monkeypatch.setattr(placed, "_place", lambda *a: calls.append(a) or engine(*a))
    rows = matrix.compute(manifest, versions, workers=workers)
    assert rows == alone
    assert [r.cells["first"].state for r in rows] == ["pending", "pending", "conflict"]
    assert rows[1].cells == rows[0].cells != rows[2].cells
    assert "y = 3" in rows[2].cells["first"].failures[0].reason
    if workers == 1:
        assert len(calls) == 2  # 1.0 and 1.2; 1.1 repeats 1.0


def test_the_gate_fails_on_a_state_a_how_any_fuzz_or_an_unplanned_release():
    """Input: rows with an applied-at-fuzz-2 cell, an offset cell, a pending cell and a release
    not planned; --fail-on kinds. Outcome: exit 3 exactly when one asked-for kind is there
    ("fuzz" matches every fuzz level, "error" the unplanned release), else 0; no CLI, no disk."""
    from sgpatch.errors import ExitCode
    from sgpatch.ops.matrix import Cell, Row, gate

    rows = [
        Row("0.5.9", {"a": Cell("applied", "fuzz 2"), "b": Cell("applied", "offset")}),
        Row("0.5.10", {"a": Cell("pending", "clean")}),
        Row("0.5.11", {}, error="no variant for 0.5.11"),
    ]
    cases = {(): 0, ("fuzz",): 3, ("offset",): 3, ("pending",): 3, ("error",): 3,
             ("conflict",): 0, ("whitespace", "upstream"): 0}  # fmt: skip
    assert {k: int(gate(rows, k)) for k in cases} == cases
    assert gate(rows[1:2], ("error",)) is ExitCode.OK


def test_a_set_that_only_creates_a_file_plans_on_a_release(tmp_path, monkeypatch):
    """Input: a set whose one patch only creates srt/brand_new.py (so the scratch tree laid for
    a release holds no file under srt/), `matrix --json` on release 1.0. Outcome: exit 0, the
    cell `pending` and `clean`, no row error ("not an SGLang tree")."""
    c = offline_cache(tmp_path, monkeypatch)
    make_wheel(c / "wheels", "1.0", release_files(V10, "1.0"))
    d = make_set(tmp_path)
    create = (
        "diff --git a/python/sglang/srt/brand_new.py b/python/sglang/srt/brand_new.py\n"
        "new file mode 100644\n--- /dev/null\n+++ b/python/sglang/srt/brand_new.py\n"
        "@@ -0,0 +1 @@\n+x = 1\n"
    )
    (d / "patches/1.0/0001-first.patch").write_text("Subject: first\n\n" + create)
    (d / "patches/1.0/0002-second.patch").write_text("Subject: second\n\n" + create.replace(
        "brand_new", "second_new"))  # fmt: skip
    code, out, err = run_cli("matrix", "--set", "demo", "--patchsets", str(d.parent),
                             "--offline", "--json")  # fmt: skip
    assert code == 0, err
    (row,) = json.loads(out)["releases"]
    assert row.get("error") is None, row
    assert {k: (c["state"], c["how"]) for k, c in row["cells"].items()} == {
        "first": ("pending", "clean"),
        "second": ("pending", "clean"),
    }
