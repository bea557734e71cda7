"""ops/fold.py and `sgpatch fold`: a patch whose author defined a name twice, imported as
written (a warning), reported by lint and status -v until folded; the fold keeps what runs."""

from __future__ import annotations

import ast

import pytest

import helpers as tp
from helpers import fake_index, hint_commands, make_diff, make_wheel, run_cli

# class A of helpers.V10 gets a second `f` at its end: the copy Python runs, different code
DUP = tp.V10.replace(
    "        return 2\n",
    "        return 2\n\n    def f(self):\n        self.ready = True\n        return 1\n",
    1,
)
SAME = tp.V10.replace(
    "        return 2\n", "        return 2\n\n    def f(self):\n        return 1\n", 1
)


@pytest.fixture
def release_10(tmp_path, monkeypatch):
    """Release 1.0 (helpers.V10) in an offline cache (no index, no download)."""
    from sgpatch.ops import importer

    importer.pristine.cache_clear()
    importer.executables.cache_clear()
    monkeypatch.setenv("SGPATCH_CACHE", str(tmp_path / "cache"))
    fake_index(monkeypatch)
    make_wheel(tmp_path / "cache" / "wheels", "1.0", tp.release_files(tp.V10, "1.0"))


def _import(tmp_path, new: str) -> tuple[int, str]:
    (tmp_path / "dup.patch").write_text(make_diff(tp.V10, new, "python/sglang/srt/mod.py"))
    code, _, err = run_cli("import", "--name", "s", "--sglang-version", "1.0", "--dest",
                           str(tmp_path / "sets"), str(tmp_path / "dup.patch"))  # fmt: skip
    return code, err


def _tree(tmp_path, name: str):
    for rel, data in tp.release_files(tp.V10, "1.0").items():
        (tmp_path / name / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name / rel).write_bytes(data)
    return tmp_path / name / "sglang"


def _defs_of_a(text: str) -> list[str]:
    cls = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == "A")
    return [ast.unparse(n) for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "f"]


def test_an_authors_duplicate_imports_warns_until_folded_and_the_fold_keeps_what_runs(
    tmp_path, release_10
):
    """Input: a diff adding a second `f` to class A (different code: it also sets
    self.ready), imported onto its own release 1.0; then lint, apply, status -v, fold, lint,
    apply again. Outcome: import exit 0 with one warning naming both places, the copy Python
    runs (the added one) and 'different code', no advice to delete; lint and status -v warn
    until the fold; `sgpatch fold` prints the fold as a diff and rewrites the patch so A
    defines f once, in the first copy's place, with the code that ran (self.ready set);
    lint is then clean and the folded set applies to 1.0."""
    code, err = _import(tmp_path, DUP)
    assert code == 0, err
    assert "f is defined twice in class A" in err and "different code" in err, err
    assert "Python runs line 11 (the added copy)" in err and "delete" not in err
    sets = str(tmp_path / "sets")
    code, out, err = run_cli("lint", "--set", "s", "--patchsets", sets, "--offline")
    assert code == 0 and "f is defined twice in class A" in out and "sgpatch fold" in out, err
    pkg = _tree(tmp_path, "t")
    assert run_cli("apply", "--set", "s", "--patchsets", sets, "--sglang-dir", str(pkg))[0] == 0
    assert (pkg / "srt/mod.py").read_text() == DUP
    code, _, err = run_cli("status", "-v", "--set", "s", "--patchsets", sets, "--sglang-dir",
                           str(pkg))  # fmt: skip
    assert "warning: dup: srt/mod.py: f is defined twice in class A: lines 5 and 11" in err, err
    code, out, err = run_cli("fold", "--set", "s", "--patchsets", sets)
    assert code == 0, err
    assert "+        self.ready = True" in out and "-    def f(self):" in out
    assert "the definition Python runs (line 11) replaces the one at line 5" in err
    code, _, err = run_cli("lint", "--set", "s", "--patchsets", sets, "--offline")
    assert code == 0 and "0 warning(s)" in err, err
    pkg2 = _tree(tmp_path, "t2")
    assert run_cli("apply", "--set", "s", "--patchsets", sets, "--sglang-dir", str(pkg2))[0] == 0
    got = (pkg2 / "srt/mod.py").read_text()
    assert _defs_of_a(got) == _defs_of_a(DUP)[1:]  # one f, the code that ran
    assert got.index("def f(") < got.index("def g(")  # in the first copy's place


def test_a_fold_of_the_same_code_drops_the_patchs_copy(tmp_path, release_10):
    """Input: a diff adding to class A a second `f` that is the same code as A's, plus an
    unrelated change to g, imported onto 1.0; `sgpatch fold --dry-run`, then `sgpatch fold`.
    Outcome: import warns 'the same code'; the dry run prints the fold and writes nothing;
    the fold leaves a patch that only changes g (the copy dropped, A's f untouched)."""
    new = SAME.replace("        return 2\n", "        return 22\n")
    code, err = _import(tmp_path, new)
    assert code == 0 and "the copies are the same code" in err, err
    sets = tmp_path / "sets"
    patch = next((sets / "s" / "patches").rglob("*.patch"))
    before = patch.read_bytes()
    code, out, err = run_cli("fold", "--set", "s", "--patchsets", str(sets), "--dry-run")
    assert code == 0 and "would rewrite" in err and "-    def f(self):" in out, err
    assert patch.read_bytes() == before
    assert run_cli("fold", "--set", "s", "--patchsets", str(sets))[0] == 0
    text = patch.read_text()
    assert "+    def f(" not in text and "+        return 22" in text


def test_fold_json_names_each_patch_its_folds_and_the_very_diff_the_text_prints(
    tmp_path, release_10
):
    """Input: DUP imported onto 1.0; `sgpatch fold --dry-run`, then `fold --dry-run --json`.
    Outcome: exit 0 each; the document, byte for byte: the patch, its file as the set names
    it, the release it was folded on, and per file the fold made and the diff the text form
    prints on stdout; no warnings; nothing written."""
    from helpers import printed_json

    assert _import(tmp_path, DUP)[0] == 0
    args = ("fold", "--set", "s", "--patchsets", str(tmp_path / "sets"), "--dry-run")
    code, text, err = run_cli(*args)
    assert code == 0 and text.startswith("--- a/srt/mod.py (as the patch leaves it)\n"), err
    code, out, err = run_cli(*args, "--json")
    assert code == 0, err
    fold = (
        "f in A: the definition Python runs (line 11) replaces the one at line 5, in its "
        "place; the dead copy removed"
    )
    folded = {"patch": "dup", "file": "patches/1.0/0001-dup.patch", "release": "1.0",
              "files": [{"path": "srt/mod.py", "folds": [fold], "diff": text}]}  # fmt: skip
    assert out == printed_json({"command": "fold", "exit_code": 0, "set": "s", "dry_run": True,
                                "folded": [folded], "warnings": []})  # fmt: skip


def test_a_fold_that_leaves_nothing_says_the_release_has_the_patch(tmp_path, release_10):
    """Input: a diff that only adds a copy of A's own `f` (same code), imported onto 1.0, then
    `sgpatch fold`. Outcome: exit 3, one line saying the folded patch changes nothing on 1.0
    (the release has it), and the patch file unchanged."""
    assert _import(tmp_path, SAME)[0] == 0
    sets = tmp_path / "sets"
    patch = next((sets / "s" / "patches").rglob("*.patch"))
    before = patch.read_bytes()
    code, _, err = run_cli("fold", "--set", "s", "--patchsets", str(sets))
    assert code == 3 and "changes nothing on sglang 1.0" in err, err
    assert patch.read_bytes() == before


def test_lint_s_fold_advice_runs_as_typed(tmp_path, release_10, monkeypatch):
    """Input: an author's duplicate imported onto 1.0, `sgpatch lint`, then the command its
    warning advises, run as typed (cwd tmp_path). Outcome: the advice exits 0 and lint is then
    clean (the advice is never the same warning again)."""
    monkeypatch.chdir(tmp_path)
    assert _import(tmp_path, DUP)[0] == 0
    sets = str(tmp_path / "sets")
    code, out, _ = run_cli("lint", "--set", "s", "--patchsets", sets, "--offline")
    (advice,) = {tuple(c) for c in hint_commands(out)}
    assert advice[0] == "fold" and run_cli(*advice)[0] == 0
    code, out, err = run_cli("lint", "--set", "s", "--patchsets", sets, "--offline")
    assert code == 0 and "defined twice" not in out and "0 warning(s)" in err, err


def test_status_s_fold_advice_runs_as_typed(tmp_path, release_10, monkeypatch):
    """Input: an author's duplicate imported and applied to a 1.0 tree, `status -v`, then the
    command it advises, run as typed (cwd tmp_path). Outcome: the advice exits 0 and rewrites
    the patch: it no longer adds a second `f`."""
    monkeypatch.chdir(tmp_path)
    assert _import(tmp_path, DUP)[0] == 0
    sets = str(tmp_path / "sets")
    pkg = _tree(tmp_path, "t")
    assert run_cli("apply", "--set", "s", "--patchsets", sets, "--sglang-dir", str(pkg))[0] == 0
    _, out, err = run_cli("status", "-v", "--set", "s", "--patchsets", sets, "--sglang-dir",
                          str(pkg))  # fmt: skip
    (advice,) = hint_commands(out + err)
    assert advice[0] == "fold" and run_cli(*advice)[0] == 0
    patch = next((tmp_path / "sets" / "s" / "patches").rglob("*.patch")).read_text()
    assert patch.count("def f(") == 1
