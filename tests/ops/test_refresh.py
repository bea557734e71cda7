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
