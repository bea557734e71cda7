"""`sgpatch refresh` (sgpatch.ops.refresh) on synthetic releases and sets."""

from __future__ import annotations

import pytest
from packaging.version import Version

from sgpatch.ops import refresh as rf


def test_refresh_splits_a_variant_that_serves_other_releases(tmp_path, monkeypatch):
    """Input: variant `>=1.0,<1.2` (releases 1.0 and 1.1 known) applied to a 1.0 tree, one line
    edited, refreshed. Outcome: the old file and its range stay as they were; the edit goes to
    a new file for 1.0 with a `==1.0` variant inserted first (base 1.0), the message says so;
    on 1.1 the set still selects the old file. A refresh on a variant serving only the tree's
    release rewrites it in place."""
    from packaging.version import Version

    import helpers as tp
    from helpers import make_wheel, run_cli
    from sgpatch.patchset.manifest import load_manifest, select_variant
    from sgpatch.releases import index

    monkeypatch.setenv("SGPATCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(index, "_pip_index_versions", lambda pre: (_ for _ in ()).throw(OSError))
    for v, text in (("1.0", tp.V10), ("1.1", tp.V11)):
        make_wheel(tmp_path / "cache" / "wheels", v, tp.release_files(text, v))
    d = tp.make_set(tmp_path)
    yaml_path = d / "patchset.yaml"
    yaml_path.write_text(yaml_path.read_text().replace('">=1.0,<1.1"', '">=1.0,<1.2"'))
    old = (d / "patches/1.0/0001-first.patch").read_bytes()
    tp.apply_to(tmp_path, d.parent, "1.0", tp.V10)
    pkg = tmp_path / "tree-1.0" / "sglang"
    mod = pkg / "srt/mod.py"
    mod.write_text(mod.read_text().replace("return 100", "return 101"))
    code, _out, err = run_cli("refresh", "--set", "demo", "--patchsets", str(d.parent),
                              "--patch", "first", "--sglang-dir", str(pkg))  # fmt: skip
    assert code == 0, err
    assert "also serves other releases" in err
    assert (d / "patches/1.0/0001-first.patch").read_bytes() == old
    m = load_manifest(yaml_path)
    first = m.patch("first")
    assert str(first.variants[0].sglang) == "==1.0" and str(first.variants[0].base) == "1.0"
    assert str(first.variants[1].sglang) == ">=1.0,!=1.0,<1.2"  # no longer claims 1.0
    assert b"return 101" in first.variants[0].patch.read_bytes()
    assert select_variant(first, Version("1.1")).patch.read_bytes() == old
    mod.write_text(mod.read_text().replace("return 101", "return 102"))
    assert run_cli("refresh", "--set", "demo", "--patchsets", str(d.parent), "--patch",
                   "first", "--sglang-dir", str(pkg))[0] == 0  # fmt: skip
    assert b"return 102" in load_manifest(yaml_path).patch("first").variants[0].patch.read_bytes()
    assert len(load_manifest(yaml_path).patch("first").variants) == 2


def shared_file_env(tmp_path, monkeypatch):
    """Releases 1.0 and 1.1 in a private cache (the index unreachable), the demo set with
    `first`'s one file named by two variants, `==1.0` and `==1.1` (what `port --step` used to
    write), applied to a 1.0 tree whose mod.py is then edited."""
    import helpers as tp
    from helpers import fake_index

    monkeypatch.setenv("SGPATCH_CACHE", str(tmp_path / "cache"))
    fake_index(monkeypatch)
    for v, text in (("1.0", tp.V10), ("1.1", tp.V10)):
        tp.make_wheel(tmp_path / "cache" / "wheels", v, tp.release_files(text, v))
    d = tp.make_set(tmp_path)
    y = d / "patchset.yaml"
    one = '{sglang: ">=1.0,<1.1", patch: patches/1.0/0001-first.patch}'
    two = (
        '{sglang: "==1.0", patch: patches/1.0/0001-first.patch}\n'
        '      - {sglang: "==1.1", patch: patches/1.0/0001-first.patch}'
    )
    y.write_text(
        y.read_text()
        .replace(one, two)
        .replace('sglang: ">=1.0,<1.1"\npatches', 'sglang: ">=1.0,<=1.1"\npatches')
    )
    tp.apply_to(tmp_path, d.parent, "1.0", tp.V10)
    pkg = tmp_path / "tree-1.0" / "sglang"
    mod = pkg / "srt/mod.py"
    mod.write_text(mod.read_text().replace("return 100", "return 101"))
    return d, pkg


def test_refresh_re_points_an_exact_variant_whose_file_another_names(tmp_path, monkeypatch):
    """Input: `first`'s file named by `==1.0` and `==1.1`; the 1.0 tree edited; refresh on it.
    Outcome: exit 0; the shared file is not rewritten; a new file for 1.0 (`-2`), and the
    `==1.0` variant is re-pointed at it (still two variants: nothing shadowed); 1.1 gets the
    old file as before; the line says so, naming the other variant; --json `how` repointed."""
    import json

    from helpers import run_cli
    from sgpatch.patchset.manifest import load_manifest, select_variant

    d, pkg = shared_file_env(tmp_path, monkeypatch)
    shared = d / "patches/1.0/0001-first.patch"
    old = shared.read_bytes()
    code, out, err = run_cli("refresh", "--set", "demo", "--patchsets", str(d.parent),
                             "--patch", "first", "--sglang-dir", str(pkg), "--json")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["how"] == "repointed" and doc["variant"] == "patches/1.0/0001-first-2.patch"
    assert doc["old_variant"] == "patches/1.0/0001-first.patch"
    assert doc["shared_by"] == ["first ==1.1"]
    assert shared.read_bytes() == old
    first = load_manifest(d / "patchset.yaml").patch("first")
    assert [(str(v.sglang), v.patch.name) for v in first.variants] == [
        ("==1.0", "0001-first-2.patch"),
        ("==1.1", "0001-first.patch"),
    ]
    assert b"return 101" in first.variants[0].patch.read_bytes()
    assert select_variant(first, Version("1.1")).patch.read_bytes() == old


def test_diff_json_holds_the_files_and_the_very_diff_the_text_form_prints(tmp_path, monkeypatch):
    """Input: the 1.0 tree of shared_file_env (the set applied, mod.py edited since);
    `sgpatch diff`, then `diff --json`, of the whole tree and of srt/mod.py alone. Outcome: exit
    0 each; the document, byte for byte: the release, the files that differ (in the order
    asked, or sorted), and the diff the text form prints on stdout."""
    from helpers import printed_json, run_cli

    _, pkg = shared_file_env(tmp_path, monkeypatch)
    for paths, files in (((), ["srt/mod.py", "srt/other.py"]), (("srt/mod.py",), ["srt/mod.py"])):
        code, text, err = run_cli("diff", "--sglang-dir", str(pkg), *paths)
        assert code == 0 and "return 101" in text, err
        code, out, err = run_cli("diff", "--sglang-dir", str(pkg), "--json", *paths)
        assert code == 0, err
        doc = {"command": "diff", "exit_code": 0, "version": "1.0", "files": files, "diff": text}
        assert out == printed_json(doc)


def test_refresh_says_how_the_release_gets_its_new_file(tmp_path, monkeypatch):
    """Input: as above, without --json. Outcome: one line naming the new file, that its
    variant now points at it, and that the old file (also named by `first ==1.1`) stays."""
    from helpers import run_cli

    d, pkg = shared_file_env(tmp_path, monkeypatch)
    code, _out, err = run_cli("refresh", "--set", "demo", "--patchsets", str(d.parent),
                              "--patch", "first", "--sglang-dir", str(pkg))  # fmt: skip
    assert code == 0, err
    (line,) = err.splitlines()
    assert line == (
        "sgpatch refresh: demo/first: patches/1.0/0001-first-2.patch written for 1.0: its "
        "variant '==1.0' now points at it; patches/1.0/0001-first.patch, which first ==1.1 "
        "also names, stays as it was"
    )


def test_diff_tree_lists_the_changed_files_and_refuses_a_typo(tmp_path, monkeypatch):
    """Input: a 1.0 tree (synthetic release) with srt/mod.py edited; `diff` of every file, of
    other.py and mod.py named in that order, and of a file in neither tree nor release.
    Outcome: the changed file alone, in the order asked, its one canonical block; the typo is
    an error naming it (a typo would otherwise be an empty diff and exit 0)."""
    from helpers import V10, port_cache, release_files
    from sgpatch.errors import SgpatchError

    port_cache(tmp_path, monkeypatch, versions=("1.0",))
    pkg = tmp_path / "tree" / "sglang"
    for name, data in release_files(V10, "1.0").items():
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / name).write_bytes(data)
    (pkg / "srt/mod.py").write_text(V10.replace("return 1\n", "return 7\n"))
    every = rf.diff_tree(pkg, Version("1.0"), [])
    named = rf.diff_tree(pkg, Version("1.0"), ["srt/other.py", "srt/mod.py"])
    assert every.files == named.files == ("srt/mod.py",)
    assert every.text == named.text and every.text.count("diff --git ") == 1
    assert "-        return 1\n+        return 7\n" in every.text
    with pytest.raises(SgpatchError, match=r"FILE srt/nope\.py: neither in the tree nor in sglang"):
        rf.diff_tree(pkg, Version("1.0"), ["srt/nope.py"])


def _modes_tree(tmp_path, monkeypatch):
    """modes_set applied to a fresh 1.0 tree (the link srt/alias.py -> ../srt/mod.py, the
    executable srt/run.sh, srt/__init__.py made executable), then edited by hand: the link
    pointed at other.py, run.sh no longer executable, mod.py's `return 100` made 101. The set
    folder and the package root."""
    import os

    from helpers import V10, fake_index, modes_set, port_applied, port_cache, release_files

    port_cache(tmp_path, monkeypatch, versions=("1.0",))
    fake_index(monkeypatch)
    d = modes_set(tmp_path)
    port_applied(tmp_path, d, "1.0", release_files(V10, "1.0"), [])
    pkg = tmp_path / "applied-1.0" / "sglang"
    (pkg / "srt/alias.py").unlink()
    (pkg / "srt/alias.py").symlink_to("other.py")
    os.chmod(pkg / "srt/run.sh", 0o644)
    mod = pkg / "srt/mod.py"
    mod.write_text(mod.read_text().replace("return 100", "return 101"))
    return d, pkg


def test_diff_shows_a_retargeted_symlink_and_execute_bits_as_git_does(tmp_path, monkeypatch):
    """Input: the edited tree of `_modes_tree`; `diff` of the link, the script and the file
    made executable, then of every file. Outcome: the link is `new file mode 120000` whose one
    line is `other.py` (its target, never the bytes it points at), run.sh is `new file mode
    100644`, srt/__init__.py is `old mode 100644`/`new mode 100755`; without paths the
    shipped files that differ, srt/__init__.py by its mode alone (the link and the script are
    no files of the release: named, not listed)."""
    _d, pkg = _modes_tree(tmp_path, monkeypatch)
    named = rf.diff_tree(pkg, Version("1.0"), ["srt/alias.py", "srt/run.sh", "srt/__init__.py"])
    assert named.files == ("srt/alias.py", "srt/run.sh", "srt/__init__.py")
    text = named.text
    assert "new file mode 120000\n--- /dev/null\n+++ b/python/sglang/srt/alias.py\n" in text
    assert "+other.py\n\\ No newline at end of file\n" in text and "def other" not in text
    assert "new file mode 100644\n--- /dev/null\n+++ b/python/sglang/srt/run.sh\n" in text
    assert "srt/__init__.py\nold mode 100644\nnew mode 100755\n" in text
    every = rf.diff_tree(pkg, Version("1.0"), []).files  # other.py: the set's `second`
    assert every == ("srt/__init__.py", "srt/mod.py", "srt/other.py")


def test_refresh_keeps_a_retargeted_link_and_a_mode_and_revert_gives_the_release_back(
    tmp_path, monkeypatch
):
    """Input: the edited tree of `_modes_tree`; `refresh --patch first`, then `status`, then
    `revert`. Outcome: the patch file makes the link to other.py (120000), run.sh as 100644,
    keeps srt/__init__.py's mode change and mod.py's 101; status says applied; revert exits
    0 and leaves the release's tree: no link, no run.sh, srt/__init__.py 0644 again."""
    import os

    from helpers import V10, run_cli

    d, pkg = _modes_tree(tmp_path, monkeypatch)
    args = ("--set", "demo", "--patchsets", str(d.parent), "--sglang-dir", str(pkg))
    code, _out, err = run_cli("refresh", *args, "--patch", "first")
    assert code == 0, err
    text = (d / "patches/1.0/0001-first.patch").read_text()
    assert "new file mode 120000\n" in text and "+other.py\n" in text
    assert "srt/run.sh\nnew file mode 100644\n" in text and "return 101" in text
    assert "srt/__init__.py\nold mode 100644\nnew mode 100755\n" in text
    code, out, err = run_cli("status", "--json", *args)
    assert code == 0 and '"applied"' in out, err
    code, _out, err = run_cli("revert", *args)
    assert code == 0, err
    assert not os.path.lexists(pkg / "srt/alias.py") and not (pkg / "srt/run.sh").exists()
    assert (pkg / "srt/__init__.py").stat().st_mode & 0o777 == 0o644
    assert (pkg / "srt/mod.py").read_text() == V10
