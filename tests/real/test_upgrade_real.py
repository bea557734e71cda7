"""SGLang upgraded under an applied set, on real releases: kimi-eagle3-sm120 applied to a 0.5.9
site-packages tree, then 0.5.10 installed over it the way pip does it (every file the 0.5.9
RECORD lists removed, dist-info included, then 0.5.10's files and dist-info written; files
sgpatch created and `.sgpatch/` are not in RECORD, so they stay). Also `revert --force` on the
release a set was applied to, after the user appended a line at the end of a patched file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from helpers import run_cli
from sgpatch.patchset.manifest import find_sets
from sgpatch.releases import cache as releases

SET = "kimi-eagle3-sm120"
WITH = ("--with", "sm120-symm-mem-two-shot-no-multicast")


def snapshot(site: Path) -> dict[str, object]:
    """Every file (bytes, mode) and symlink under the site folder, .sgpatch/ left out."""
    out: dict[str, object] = {}
    for p in sorted(site.rglob("*")):
        rel = p.relative_to(site)
        if ".sgpatch" in rel.parts:
            continue
        if p.is_symlink():
            out[rel.as_posix()] = ("link", os.readlink(p))
        elif p.is_file():
            out[rel.as_posix()] = (p.read_bytes(), p.stat().st_mode & 0o7777)
    return out


def pip_upgrade(site: Path, old: str, new: str) -> None:
    """`pip install sglang==NEW` over OLD: uninstall OLD's RECORD, then install NEW's files."""
    for name in releases.record(old):
        path = site / name
        if path.is_file() or path.is_symlink():
            path.unlink()
    for dirpath, _dirs, _files in sorted(os.walk(site, topdown=False)):
        if Path(dirpath) != site and not os.listdir(dirpath):
            os.rmdir(dirpath)
    releases.copy_tree(new, site, "site-packages")  # writes NEW's files, as pip does


def test_upgrade_from_0_5_9_to_0_5_10_under_an_applied_set(release_tree, record_sha):
    """Input: the set (all patches) applied on 0.5.9, then 0.5.10 installed over it. Outcome:
    status says in one line that the ledger is for 0.5.9 and the tree is now 0.5.10, reports no
    patch as modified and no drift, exits 0 (and 1 with --check only if something is pending);
    apply then plans for 0.5.10 and exits 0 with a ledger for 0.5.10; every file it did not
    patch still matches 0.5.10's RECORD; revert restores the tree as 0.5.10 installed it,
    byte for byte, and leaves no .sgpatch/."""
    root = release_tree("0.5.9")
    site = root.parent
    args = ("--sglang-dir", str(root), "--set", SET)
    assert run_cli("apply", *args, *WITH)[0] == 0
    pip_upgrade(site, "0.5.9", "0.5.10")
    installed = snapshot(site)
    code, out, err = run_cli("status", *args, *WITH, "--json")
    assert code == 0, err
    assert "ledger is for 0.5.9, tree is now 0.5.10: reinstalled" in err
    assert err.count("reinstalled") == 1 and "drift" not in err
    doc = json.loads(out)
    assert doc["drift"] == []
    states = {p["id"]: p["state"] for p in doc["sets"][0]["patches"]}
    assert "modified" not in states.values()
    code, _, err = run_cli("apply", *args, *WITH)
    assert code == 0, err
    ledger = json.loads((root / ".sgpatch" / "ledger.json").read_text())
    assert ledger["schema"] == 2 and ledger["sets"][SET]["sglang_version"] == "0.5.10"
    wheel = record_sha("0.5.10")
    written = set(ledger["sets"][SET]["files"])
    for rel, (data, _mode) in snapshot(root).items():
        if rel in wheel and rel not in written:
            assert hashlib.sha256(data).hexdigest() == wheel[rel], rel
    code, _, err = run_cli("revert", *args)
    assert code == 0, err
    assert not (root / ".sgpatch").exists()
    assert snapshot(site) == installed


def test_revert_force_after_appending_a_line_at_eof_on_the_release_it_was_applied_to(
    release_tree,
):
    """Input: the set applied on 0.5.9; the user appends a line at the end of every file the
    set changed; then `revert --force` with a newer copy of the set whose patch files all
    changed (as after an sgpatch or set upgrade). Outcome: exit 0, each file is its stored
    original plus the appended line; every other file is byte-identical to pristine; no
    .sgpatch/ left."""
    root = release_tree("0.5.9")
    site = root.parent
    pristine = snapshot(site)
    args = ("--sglang-dir", str(root), "--set", SET)
    assert run_cli("apply", *args, *WITH)[0] == 0
    ledger = json.loads((root / ".sgpatch" / "ledger.json").read_text())
    changed = [
        rel
        for rel, rec in ledger["sets"][SET]["files"].items()
        if rec["before"] is not None and rec["after"] is not None
    ]
    assert changed
    for rel in changed:
        with (root / rel).open("a") as fh:
            fh.write("# appended by hand\n")
    changed_set = site.parent / "newer-sets" / SET  # the set as a later sgpatch ships it
    shutil.copytree(find_sets()[SET], changed_set)
    for patch in changed_set.rglob("*.patch"):
        patch.write_text("Subject: rewritten since\n")
    code, _, err = run_cli("revert", *args, "--force", "--patchsets", str(changed_set.parent))
    assert code == 0, err
    for rel in changed:
        key = f"sglang/{rel}"
        original, _mode = pristine[key]
        assert (root / rel).read_bytes() == original + b"# appended by hand\n", rel
    rest = {k: v for k, v in snapshot(site).items() if k[len("sglang/") :] not in changed}
    assert rest == {k: v for k, v in pristine.items() if k[len("sglang/") :] not in changed}
    assert not (root / ".sgpatch").exists()
