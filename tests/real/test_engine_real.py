"""The engine on the largest real SGLang files (0.5.9: scheduler.py, server_args.py,
model_runner.py) with drift injected: scopes read from multi-line class/def headers, context
drift at a hunk's edges placed with --fuzz 2 inside its scope, and a fuzzy match in another
scope refused with both scopes named."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from helpers import make_diff, run_cli
from sgpatch.diff.unified import parse_patch, split_lines
from sgpatch.placement import scope
from sgpatch.placement.engine import apply_hunks

FILES = {
    "srt/managers/scheduler.py": "Scheduler",
    "srt/server_args.py": "ServerArgs",
    "srt/model_executor/model_runner.py": "ModelRunner",
}


@pytest.fixture(scope="module")
def texts(tmp_path_factory) -> dict[str, str]:
    from sgpatch.releases import cache as releases

    dest = tmp_path_factory.mktemp("engine-real")
    root = releases.copy_tree(
        "0.5.9", dest, "site-packages", lambda n: any(n.endswith(f) for f in FILES)
    )
    return {rel: (root / rel).read_text() for rel in FILES}


def _sites(lines: list[str], cls: scope.Block, blocks, count: int) -> list[int]:
    """Lines deep inside methods of `cls` whose 7-line window is unique in the file."""
    methods = [
        b for b in blocks if b.kind == "def" and b.depth == 1 and cls.start < b.start < cls.end
    ]
    out = []
    for m in methods[:: max(1, len(methods) // count)]:
        i = m.line + (m.end - m.line) // 2
        window = lines[i - 3 : i + 4]
        text = "".join(window)
        if (
            len(window) == 7
            and all(ln.strip() for ln in window)
            and "".join(lines).count(text) == 1
        ):
            out.append(i)
    return out[:count]


def _diff(old: str, new: str, header: str) -> str:
    return re.sub(
        r"^(@@ [^@]+ @@).*$", lambda m: f"{m.group(1)} {header}", make_diff(old, new), flags=re.M
    )


@pytest.mark.parametrize("rel", list(FILES))
def test_multi_line_class_header_is_the_scope_of_its_methods(texts, rel):
    """Every method line of the big class is enclosed by it, although the class header spans
    several lines (scheduler.py) or the methods have multi-line signatures."""
    lines = split_lines(texts[rel])
    blocks = scope.blocks(lines)
    (cls,) = [b for b in blocks if b.name == FILES[rel] and b.kind == "class"]
    assert cls.end - cls.start > 500
    methods = [b for b in blocks if b.depth == 1 and cls.start < b.start < cls.end]
    assert len(methods) > 10
    for m in methods:
        assert [b.name for b in scope.enclosing(blocks, m.end - 1)][-1] == FILES[rel]


@pytest.mark.parametrize("rel", list(FILES))
def test_context_drift_at_both_edges_is_placed_with_fuzz_2_in_scope(texts, rel):
    """A one-line change in a method, the file drifted 40 lines and both outer context lines
    edited: fuzz 2 puts it exactly where it belongs (header names the multi-line class)."""
    lines = split_lines(texts[rel])
    blocks = scope.blocks(lines)
    cls = next(b for b in blocks if b.name == FILES[rel] and b.kind == "class")
    header = lines[cls.line].strip()
    sites = _sites(lines, cls, blocks, 4)
    assert sites
    for i in sites:
        new = [*lines[:i], "        # sgpatch test change\n", *lines[i + 1 :]]
        patch = parse_patch(_diff("".join(lines), "".join(new), header), "t.patch")
        drift = lines[: cls.line + 2] + [f"    # upstream {k}\n" for k in range(40)]
        drift += lines[cls.line + 2 :]
        j = i + 40
        drift[j - 3] = drift[j - 3].rstrip("\n") + "  # edited\n"
        drift[j + 3] = drift[j + 3].rstrip("\n") + "  # edited\n"
        expected = [*drift[:j], "        # sgpatch test change\n", *drift[j + 1 :]]
        res = apply_hunks(drift, patch.files[0].hunks, fuzz=2)
        assert res.ok, res.hunks[0].reason
        assert list(res.lines) == expected


def test_fuzzy_match_in_another_scope_is_refused_naming_both(texts):
    """scheduler.py: a hunk whose header names class Scheduler but whose only (fuzzy) match is
    in a module-level function is refused, and the reason names both scopes."""
    rel = "srt/managers/scheduler.py"
    lines = split_lines(texts[rel])
    blocks = scope.blocks(lines)
    func = next(b for b in blocks if b.depth == 0 and b.kind == "def" and b.end - b.line > 12)
    i = func.line + 6
    new = [*lines[:i], "    # sgpatch test change\n", *lines[i + 1 :]]
    patch = parse_patch(_diff("".join(lines), "".join(new), "class Scheduler("), "t.patch")
    drift = list(lines)
    drift[i - 3] = drift[i - 3].rstrip("\n") + "  # edited\n"
    res = apply_hunks(drift, patch.files[0].hunks, fuzz=2)
    (h,) = res.hunks
    assert h.status == "ambiguous"
    assert "outside scope" in h.reason and f"def {func.name}" in h.reason
    assert "class Scheduler(" in h.reason


def test_rename_copy_and_backup_diffs_on_a_real_tree(release_tree, tmp_path):
    """On a real 0.5.9 tree: a git copy keeps kimi_k25.py, a rename with an edit moves it, a
    plain `diff -u kimi_k25.py.orig kimi_k25.py` patches the file and keeps the backup; -R of
    each gives the tree back byte for byte."""
    from helpers import sgpatch

    root = release_tree("0.5.9", members=lambda n: n.endswith("srt/models/kimi_k25.py"))
    models = root / "srt" / "models"
    original = (models / "kimi_k25.py").read_text()
    edited = original.replace("class KimiK25ForConditionalGeneration", "class KimiK25X", 1)
    body = make_diff(original, edited, "srt/models/kimi_k25.py").split("\n", 2)[2]
    copy = (
        "diff --git a/srt/models/kimi_k25.py b/srt/models/k2.py\ncopy from srt/models/kimi_k25.py\n"
    )
    copy += (
        "copy to srt/models/k2.py\n--- a/srt/models/kimi_k25.py\n+++ b/srt/models/k2.py\n" + body
    )
    rename = copy.replace("copy ", "rename ")
    for diff in (copy, rename):
        (tmp_path / "p.diff").write_text(diff)
        assert sgpatch("patch", "-d", str(root), str(tmp_path / "p.diff")) == 0
        assert (models / "k2.py").read_text() == edited
        assert (models / "kimi_k25.py").exists() == ("copy from" in diff)
        assert sgpatch("patch", "-R", "-d", str(root), str(tmp_path / "p.diff")) == 0
        assert (models / "kimi_k25.py").read_text() == original
        assert not (models / "k2.py").exists()
    (models / "kimi_k25.py.orig").write_text(original)
    plain = (
        make_diff(original, edited, "x")
        .replace("a/x", "kimi_k25.py.orig")
        .replace("b/x", "kimi_k25.py")
    )
    (tmp_path / "plain.diff").write_text(plain)
    assert sgpatch("patch", "-p0", "-d", str(models), str(tmp_path / "plain.diff")) == 0
    assert (models / "kimi_k25.py").read_text() == edited
    assert (models / "kimi_k25.py.orig").read_text() == original


SLIME = Path(__file__).resolve().parents[1] / "data" / "stacks" / "slime"
EAGLE = "srt/speculative/eagle_worker.py"
POOL = "srt/mem_cache/memory_pool.py"


def _one_file(patch: Path, rel: str) -> str:
    """The section of a real `git diff` that changes python/sglang/`rel`, as it is."""
    text = patch.read_text()
    parts = re.split(r"(?m)^(?=diff --git )", text)
    (section,) = [p for p in parts if p.startswith(f"diff --git a/python/sglang/{rel} ")]
    return section


def _defs_in(source: str, cls: str, name: str) -> int:
    tree = ast.parse(source)
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    return sum(1 for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name)


def test_fuzz_2_never_adds_a_method_the_class_already_has(release_tree, tmp_path):
    """Input: slime's 0.5.5.post1 patch of eagle_worker.py and a pristine 0.5.6 tree, where
    upstream took the whole change: its hunk #4 (adding `update_weights_from_tensor` to
    EAGLEWorker) is there with one blank line of difference, 26 lines further down, so only
    fuzz 2 fits it, right after upstream's own copy; `sgpatch patch -p1 --fuzz 2`. (sgpatch
    used to exit 0 there with the method defined twice.) Outcome: exit 0, every hunk
    `already-applied`, hunk #4 at upstream's method (line 1013) with its scope named; the file
    byte-identical, EAGLEWorker defining the method once."""
    diff = tmp_path / "eagle.patch"
    diff.write_text(_one_file(SLIME / "0.5.5.post1" / "sglang.patch", EAGLE))
    root = release_tree("0.5.6", "checkout", members=lambda n: n.endswith(EAGLE))
    before = (root / EAGLE).read_bytes()
    top = root.parent.parent
    code, out, err = run_cli("patch", "-p1", "--fuzz", "2", "-d", str(top), "--json", str(diff))
    assert code == 0, err
    (hunks,) = [f["hunks"] for p in json.loads(out)["patches"] for f in p["files"]]
    assert [h["status"] for h in hunks] == ["already-applied"] * 4
    assert hunks[3]["line"] == 1013 and "already in class EAGLEWorker" in hunks[3]["reason"]
    assert (root / EAGLE).read_bytes() == before
    assert _defs_in(before.decode(), "EAGLEWorker", "update_weights_from_tensor") == 1


def test_fuzz_0_refuses_a_second_definition_naming_both_lines(release_tree, tmp_path):
    """Input: slime's 0.5.10.post1 patch of memory_pool.py on a pristine 0.5.12 tree: its
    hunk #3 (adding NSATokenToKVPool.get_cpu_copy/load_cpu_copy) matches exactly 184 lines
    further down, in a class upstream gave its own get_cpu_copy. `sgpatch patch -p1` (fuzz 0).
    Outcome: exit 4, hunk #3 refused naming upstream's get_cpu_copy (line 2145) and the line
    the hunk would add it at; the file byte-identical."""
    diff = tmp_path / "pool.patch"
    diff.write_text(_one_file(SLIME / "0.5.10.post1" / "sglang.patch", POOL))
    root = release_tree("0.5.12", "checkout", members=lambda n: n.endswith(POOL))
    before = (root / POOL).read_bytes()
    code, out, err = run_cli("patch", "-p1", "-d", str(root.parent.parent), "--json", str(diff))
    assert code == 4, err
    (hunks,) = [f["hunks"] for p in json.loads(out)["patches"] for f in p["files"]]
    third = hunks[2]
    assert third["status"] == "ambiguous"
    assert third["reason"].startswith(
        "would define get_cpu_copy twice in class NSATokenToKVPool: the target already has it "
        "at line 2145, and this hunk adds it at line "
    )
    assert (root / POOL).read_bytes() == before
