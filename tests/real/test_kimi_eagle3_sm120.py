"""The shipped kimi-eagle3-sm120 set on every real SGLang release it supports (issue #4).

Every tree is extracted straight from the cached release wheel with a `members` filter: only the
files the set's patches touch or its probes read, `version.py`/`_version.py` and the dist-info, so
a tree costs milliseconds. The CLI runs in-process (`sgpatch.cli.app.main`); `--json` documents are
read from captured stdout, human messages from captured stderr.

Layouts: "site-packages" (`<tmp>/sglang` + `<tmp>/sglang-V.dist-info`) and "checkout"
(`<tmp>/python/sglang`, no dist-info; the version comes from `_version.py`/`version.py`, which
the wheel ships, so `--sglang-version` is passed only if the tree cannot tell).
"""

from __future__ import annotations

import ast
import hashlib
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.version import Version

from sgpatch.errors import SgpatchError
from sgpatch.patchset.manifest import load_set
from sgpatch.releases import cache as releases
from sgpatch.tree.target import detect_version

from .intent import CHECKS, COMM, EXPECTED, KIMI, KIMI_CLASS, KIMI_HOOKS, RELEASES
from .kimi import SET, SET_DIR, Cli, members, states

OPTIONAL = "sm120-symm-mem-two-shot-no-multicast"
SIZES = "sm120-symm-mem-sizes"
FUSION = "sm120-flashinfer-allreduce-fusion"
KIMI_ID = "kimi-k25-eagle3-hooks"
KIMI_059 = SET_DIR / "patches" / "0.5.9" / "0001-kimi-k25-eagle3-hooks.patch"
ALL_REDUCE_UTILS = "srt/distributed/device_communicators/all_reduce_utils.py"
STATE = ".sgpatch"
LAYOUTS = ("site-packages", "checkout")

MANIFEST = load_set(SET, ())
REQUIRED = tuple(p.id for p in MANIFEST.patches if not p.optional)
GNU_PATCH = shutil.which("patch")
needs_gnu_patch = pytest.mark.skipif(GNU_PATCH is None, reason="GNU patch is not installed")


FROM_0510 = [v for v in RELEASES if Version(v) >= Version("0.5.10")]
BOTH = [pytest.param(v, lay, id=f"{v}-{lay}") for v in RELEASES for lay in LAYOUTS]
# every release once, the layout alternating (both layouts are covered in every era)
ALTERNATING = [
    pytest.param(v, LAYOUTS[i % 2], id=f"{v}-{LAYOUTS[i % 2]}") for i, v in enumerate(RELEASES)
]
# the same, where the optional patch has something to patch (symmetric memory: 0.5.3+)
WITH_OPTIONAL = [p for p in ALTERNATING if EXPECTED[p.values[0]][OPTIONAL] == "pending"]
NO_SYMM_MEM = [v for v in RELEASES if EXPECTED[v][OPTIONAL] == "n/a"]
# the first release of every variant range of every patch (each variant file is exercised)
VARIANT_FIRSTS = sorted(
    {
        min((v for v in RELEASES if var.sglang.contains(v)), key=Version)
        for p in MANIFEST.patches
        for var in p.variants
        if any(var.sglang.contains(v) for v in RELEASES)
    },
    key=Version,
)
# one release per era of the set with the sizes patch (symm_mem.py / no Kimi / Kimi needs hooks /
# upstream hooks / moved gate)
SAMPLE = ["0.5.3", "0.5.5", "0.5.9", "0.5.14", "0.5.23"]


# ------------------------------------------------------------------------------------- helpers
@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.delenv("SGPATCH_PATH", raising=False)
    monkeypatch.delenv("SGLANG_DIR", raising=False)
    return Cli(capsys)


def make(release_tree: Callable[..., Path], version: str, layout: str) -> tuple[Path, Path, list]:
    """(package root, tree top, the target arguments for the CLI) of a fresh pristine tree."""
    root = release_tree(version, layout, members=members)
    top = root.parent if layout == "site-packages" else root.parent.parent
    args = ["--sglang-dir", str(root)]
    try:
        detect_version(root)
    except SgpatchError:  # no release wheel needs this (version.py or _version.py is there)
        args += ["--sglang-version", version]
    return root, top, args


def snapshot(top: Path, skip_state: bool = False) -> dict[str, bytes]:
    """Every file under `top` -> its bytes (optionally without sgpatch's state folder)."""
    out = {}
    for p in sorted(top.rglob("*")):
        rel = p.relative_to(top).as_posix()
        if p.is_file() and not (skip_state and f"/{STATE}/" in f"/{rel}"):
            out[rel] = p.read_bytes()
    return out


def patches_by_id(doc: dict) -> dict[str, dict]:
    sets = doc.get("sets", [doc])
    return {p["id"]: p for p in sets[0]["patches"]}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def assert_pristine(
    top: Path,
    root: Path,
    version: str,
    record: dict[str, str],
    extra: dict[str, bytes] | None = None,
) -> None:
    """Every file under `top` (sgpatch's state folder aside) hashes to the wheel's RECORD, and
    the tree holds exactly the members that were extracted. `extra` maps a package-relative path
    to the bytes expected there instead (a user's edit kept by `revert --force`)."""
    extra = extra or {}
    files = snapshot(top, skip_state=True)
    pkg_prefix = root.relative_to(top).as_posix() + "/"
    wanted = {n for n in releases.record(version) if n.startswith("sglang/") and members(n)}
    got_pkg = set()
    for rel, data in files.items():
        if rel.startswith(pkg_prefix):
            prel = rel[len(pkg_prefix) :]
            got_pkg.add(f"sglang/{prel}")
            want = sha(extra[prel]) if prel in extra else record[prel]
            assert sha(data) == want, f"{version}: {prel} differs from the release"
        else:
            assert ".dist-info/" in rel, f"{version}: stray file {rel}"
            assert data == releases.read_member(version, rel), f"{version}: {rel} changed"
    assert got_pkg == wanted, f"{version}: files added or lost: {got_pkg ^ wanted}"


def compiles(root: Path, rel: str) -> None:
    path = root / rel
    compile(path.read_bytes(), str(path), "exec", dont_inherit=True)


def run_checks(root: Path, patch_id: str) -> None:
    for check in CHECKS[patch_id]:
        check(root)


def gnu_patch(cwd: Path, strip: int, patch: Path, *extra: str) -> subprocess.CompletedProcess:
    """GNU patch as a shell script would run it (stdin closed so it can never prompt)."""
    assert GNU_PATCH is not None
    return subprocess.run(
        [GNU_PATCH, f"-p{strip}", *extra, "-i", str(patch)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )


def kimi_hook_defs(root: Path) -> tuple[list[str], list[str]]:
    """(hooks defined directly in the Kimi class, hooks defined anywhere else in kimi_k25.py)."""
    tree = ast.parse((root / KIMI).read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == KIMI_CLASS]
    in_class = {id(n) for n in cls.body}
    inside, outside = [], []
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name in KIMI_HOOKS:
            (inside if id(n) in in_class else outside).append(n.name)
    return inside, outside


# ------------------------------------------------------------------------------------- tests
def test_expected_covers_every_supported_release() -> None:
    """Input: RELEASES. Expected: 42 final releases, ascending, all inside the set's range,
    from its lower bound (0.5.1) to 0.5.23; each has a row in intent.EXPECTED naming every
    patch of the manifest, and EXPECTED has no other row."""
    versions = [Version(v) for v in RELEASES]
    assert len(RELEASES) == 42 and versions == sorted(set(versions))
    assert all(MANIFEST.sglang.contains(v) and not v.is_prerelease for v in versions)
    assert (RELEASES[0], RELEASES[-1]) == ("0.5.1", "0.5.23")
    assert not MANIFEST.sglang.contains("0.5.0.post9") and not MANIFEST.sglang.contains("0.5.24")
    for v in RELEASES:
        assert v in EXPECTED, f"{v} is in RELEASES but has no EXPECTED row"
        assert set(EXPECTED[v]) == {p.id for p in MANIFEST.patches}
    assert set(EXPECTED) == set(RELEASES)


def test_releases_is_what_the_index_lists() -> None:
    """Input: the fixed RELEASES list and the releases the package index lists. Expected: every
    listed release in the set's range is in RELEASES (a new .postN must be added there, since
    the suite no longer follows the index by itself), and every entry of RELEASES is listed."""
    listed = [str(v) for v in releases.index_versions(">=0.5,<0.6")]
    missing = [v for v in listed if MANIFEST.sglang.contains(v) and v not in RELEASES]
    assert missing == [], f"releases in the set's range that RELEASES lacks: {missing}"
    assert [v for v in RELEASES if v not in listed] == []


@pytest.mark.parametrize(("version", "layout"), BOTH)
def test_lifecycle(release_tree, record_sha, cli, version: str, layout: str) -> None:
    """Input: a pristine tree of `version` in `layout`.
    Expected: `status --json` states equal EXPECTED (required patches pending/upstream/n/a
    only; the optional one pending, or n/a before 0.5.3); `apply` exits 0, every written file
    compiles, every pending patch (and every patch upstream already has) meets its intent check;
    `status --check` exits 0 with the pending patches `applied`; a second `apply` exits 0 and
    changes no byte; `revert` leaves every file hashing to the wheel's RECORD and no `.sgpatch/`
    folder."""
    root, top, target = make(release_tree, version, layout)
    record = record_sha(version)
    expected = EXPECTED[version]

    code, doc, _ = cli("status", "--set", SET, *target, "--json")
    assert code == 0
    assert doc["target"]["version"] == version
    assert doc["target"]["layout"] == layout
    assert doc["target"]["version_source"] in ("_version.py", "version.py", "METADATA")
    assert states(doc) == expected
    assert {expected[p] for p in REQUIRED} <= {"pending", "upstream", "n/a"}
    pending = [p for p in REQUIRED if expected[p] == "pending"]
    assert pending, "every release needs at least the fusion-gate patch"
    code, _, _ = cli("status", "--set", SET, *target, "--check")
    assert code == 1, "a pristine tree with pending patches is not done"

    code, doc, err = cli("apply", "--set", SET, *target, "--json")
    assert code == 0, err
    assert doc["exit_code"] == 0
    written = doc["written"]
    planned = {p["id"]: p for p in doc["planned"]}
    assert {p for p in REQUIRED if planned[p]["state"] == "pending"} == set(pending)
    touched = {f["path"] for p in pending for f in planned[p]["files"]}
    assert set(written) == touched
    for rel in written:
        compiles(root, rel)
        assert sha((root / rel).read_bytes()) != record[rel], f"{rel} was not changed"
    for p in pending:
        run_checks(root, p)
    for p in REQUIRED:
        if expected[p] == "upstream":
            run_checks(root, p)
    if (root / KIMI).exists():
        inside, outside = kimi_hook_defs(root)
        assert sorted(inside) == sorted(KIMI_HOOKS) and not outside

    code, doc, err = cli("status", "--set", SET, *target, "--check", "--json")
    assert code == 0, err
    after = states(doc)
    for p in REQUIRED:
        assert after[p] == ("applied" if p in pending else expected[p]), p
    assert after[OPTIONAL] == expected[OPTIONAL] and not patches_by_id(doc)[OPTIONAL]["selected"]

    before = snapshot(top)
    code, doc, err = cli("apply", "--set", SET, *target, "--json")
    assert code == 0, err
    assert doc["written"] == []
    assert snapshot(top) == before, "a second apply changed bytes"

    code, doc, err = cli("revert", "--set", SET, *target, "--json")
    assert code == 0, err
    assert sorted(doc["restored"]) == sorted(written)
    assert_pristine(top, root, version, record)
    assert not (root / STATE).exists(), "reverting the only set left sgpatch's folder behind"
    code, doc, _ = cli("status", "--set", SET, *target, "--json")
    assert states(doc) == expected


@pytest.mark.parametrize(("version", "layout"), WITH_OPTIONAL)
def test_optional_no_multicast(release_tree, record_sha, cli, version: str, layout: str) -> None:
    """Input: a pristine tree (0.5.3+); `apply --with sm120-symm-mem-two-shot-no-multicast`.
    Expected: exit 0, the optional patch is `applied` with the required ones, torch_symm_mem.py
    (symm_mem.py before 0.5.4.post3) compiles and SM12 keeps two-shot without multicast (intent
    check); `status --check --with` exits 0; `revert` gives back the release byte for byte."""
    root, top, target = make(release_tree, version, layout)
    code, doc, err = cli("apply", "--set", SET, *target, "--with", OPTIONAL, "--json")
    assert code == 0, err
    assert states(doc)[OPTIONAL] == "applied"
    for rel in doc["written"]:
        compiles(root, rel)
    run_checks(root, OPTIONAL)
    run_checks(root, SIZES)
    run_checks(root, "sm120-symm-mem-world-sizes")
    code, doc, err = cli("status", "--set", SET, *target, "--with", OPTIONAL, "--check", "--json")
    assert code == 0, err
    assert states(doc)[OPTIONAL] == "applied"
    code, _, err = cli("revert", "--set", SET, *target)
    assert code == 0, err
    assert_pristine(top, root, version, record_sha(version))


@pytest.mark.parametrize("version", NO_SYMM_MEM)
def test_optional_without_symm_mem(release_tree, record_sha, cli, version: str) -> None:
    """Input: a pristine site-packages tree of a release without symmetric-memory all-reduce
    (0.5.1-0.5.2); `apply --with sm120-symm-mem-two-shot-no-multicast`. Expected: exit 0; the
    optional patch and the two it requires are `n/a` with the manifest's reason; only the fusion
    gate is written; `status --check --with` exits 0; `revert` restores the release."""
    root, top, target = make(release_tree, version, "site-packages")
    code, doc, err = cli("apply", "--set", SET, *target, "--with", OPTIONAL, "--json")
    assert code == 0, err
    got = patches_by_id(doc)
    for pid in (OPTIONAL, SIZES, "sm120-symm-mem-world-sizes"):
        assert got[pid]["state"] == "n/a", (pid, got[pid]["state"])
        assert "before 0.5.3" in got[pid]["note"], got[pid]
    assert doc["written"] == [COMM]
    run_checks(root, FUSION)
    code, _, err = cli("status", "--set", SET, *target, "--with", OPTIONAL, "--check")
    assert code == 0, err
    code, _, err = cli("revert", "--set", SET, *target)
    assert code == 0, err
    assert_pristine(top, root, version, record_sha(version))


@pytest.mark.parametrize("version", VARIANT_FIRSTS)
def test_edited_after_apply(release_tree, record_sha, cli, version: str) -> None:
    """Input: a site-packages tree after `apply`, then a comment line prepended to
    all_reduce_utils.py (communicator.py before 0.5.3, which has no symmetric memory), away
    from the hunks. Expected: `status --check` exits 1 and names the patch of that file
    `modified`; `revert` exits 1 naming the file and changes nothing; `revert --force` exits 0,
    reverse-applies the patch there (the edit stays) and restores the rest."""
    root, top, target = make(release_tree, version, "site-packages")
    record = record_sha(version)
    rel, pid = (
        (ALL_REDUCE_UTILS, SIZES) if EXPECTED[version][SIZES] == "pending" else (COMM, FUSION)
    )
    code, _, err = cli("apply", "--set", SET, *target)
    assert code == 0, err
    path = root / rel
    edit = b"# local edit\n"
    path.write_bytes(edit + path.read_bytes())

    code, doc, _ = cli("status", "--set", SET, *target, "--check", "--json")
    assert code == 1
    assert doc["exit_code"] == 1
    assert states(doc)[pid] == "modified"
    code, _, err = cli("status", "--set", SET, *target, "--check")
    assert code == 1 and "modified" in err

    before = snapshot(top)
    code, _, err = cli("revert", "--set", SET, *target)
    assert code == 1
    assert rel in err and len(err.strip().splitlines()) == 1
    assert snapshot(top) == before, "a refused revert wrote something"

    code, doc, err = cli("revert", "--set", SET, *target, "--force", "--json")
    assert code == 0, err
    assert doc["edited"] == [rel]
    pristine = releases.read_member(version, rel)
    assert path.read_bytes() == edit + pristine
    assert_pristine(top, root, version, record, extra={rel: edit + pristine})


def test_engine_reverse_near_miss_is_not_already_applied() -> None:
    """Input (engine only): 0.5.9's all_reduce_utils.py with the sizes patch applied, then one
    line the patch added edited (a comment); the patch's hunk reversed. Expected: the hunk is
    refused (its pre-image misses at the expected line by that one line). The reversed hunk's
    post-image (4 context lines) also occurs 8 lines further on, at the end of the added block,
    but that is not evidence the patch was already reversed: taking it reports
    'already-applied', changes nothing, and `revert --force` then drops the set from the ledger
    with the patch still in the file (see test_edit_inside_a_hunk)."""
    from sgpatch.diff.unified import decode, parse_patch, split_lines
    from sgpatch.placement.engine import apply_hunks

    variant = SET_DIR / "patches" / "0.5.5" / "0002-sm120-symm-mem-sizes.patch"
    hunks = parse_patch(variant.read_bytes(), variant.name).files[0].hunks
    pristine = split_lines(decode(releases.read_member("0.5.9", ALL_REDUCE_UTILS)))
    forward = apply_hunks(pristine, hunks)
    assert forward.ok and [h.status for h in forward.hunks] == ["applied"]
    edited = [ln.replace("PCIe-only hosts.", "PCIe-only hosts (measured).") for ln in forward.lines]
    assert edited != list(forward.lines)
    back = apply_hunks(edited, hunks, reverse=True)
    assert not back.ok, f"reverse hunk taken as {back.hunks[0].status} at {back.hunks[0].line}"


@pytest.mark.parametrize("version", RELEASES)
def test_engine_round_trip_of_every_variant(version: str) -> None:
    """Input (engine only): for every patch whose variant the set picks for `version`, each file
    of that variant, pristine from the wheel. Expected: the hunks apply; applied a second time
    every hunk is `already-applied` (what makes a hand-applied tree `present` and `sgpatch
    patch` idempotent); reversed, they give back the release's exact text."""
    from sgpatch.diff.paths import package_mapper
    from sgpatch.diff.unified import decode, parse_patch, split_lines
    from sgpatch.patchset.manifest import select_variant
    from sgpatch.placement.engine import apply_hunks

    checked = 0
    for spec in MANIFEST.patches:
        variant = select_variant(spec, Version(version))
        if variant is None or variant.patch is None:
            continue
        patch = parse_patch(variant.patch.read_bytes(), variant.patch.name)
        mapper = package_mapper(patch.name)
        for fp in patch.files:
            rel = mapper(fp.path)
            if f"sglang/{rel}" not in releases.record(version):
                assert EXPECTED[version][spec.id] == "upstream", (spec.id, rel)
                continue
            text = decode(releases.read_member(version, rel))
            forward = apply_hunks(split_lines(text), fp.hunks)
            if not forward.ok:  # only where upstream has it (the probe keeps it out)
                assert EXPECTED[version][spec.id] == "upstream", (spec.id, rel, forward.hunks)
                continue
            again = apply_hunks(forward.lines, fp.hunks)
            got = [(h.index, h.status, h.reason) for h in again.hunks]
            assert all(h.status == "already-applied" for h in again.hunks), (spec.id, rel, got)
            back = apply_hunks(forward.lines, fp.hunks, reverse=True)
            assert back.ok and "".join(back.lines) == text, (spec.id, rel, back.hunks)
            checked += 1
    assert checked, f"no variant file applied on {version}"


@pytest.mark.parametrize("version", SAMPLE)
def test_edit_inside_a_hunk(release_tree, cli, version: str) -> None:
    """Input: a site-packages tree after `apply`, then a line the sizes patch added is changed.
    Expected: `apply` again exits 1 (modified) writing nothing; `revert --force` cannot
    reverse-apply that hunk: exit 3 naming the file, and the tree is left as it was."""
    root, top, target = make(release_tree, version, "site-packages")
    code, _, err = cli("apply", "--set", SET, *target)
    assert code == 0, err
    path = root / ALL_REDUCE_UTILS
    text = path.read_text()
    assert text.count("not tuned for PCIe-only hosts.") == 1
    path.write_text(text.replace("PCIe-only hosts.", "PCIe-only hosts (measured)."))
    before = snapshot(top)

    code, doc, _ = cli("apply", "--set", SET, *target, "--json")
    assert code == 1
    assert states(doc)[SIZES] == "modified" and doc["written"] == []
    assert snapshot(top) == before

    code, _, err = cli("revert", "--set", SET, *target, "--force")
    assert code == 3
    assert ALL_REDUCE_UTILS in err and len(err.strip().splitlines()) == 1
    assert snapshot(top) == before, "a failed revert --force wrote something"


@needs_gnu_patch
@pytest.mark.parametrize("version", SAMPLE)
def test_partly_hand_applied(release_tree, record_sha, cli, version: str) -> None:
    """Input: a pristine checkout on which only the sizes patch (the variant for `version`) was
    applied by hand (GNU patch, no ledger). Expected: `apply` exits 0 with the sizes patch
    `present` and every other pending patch `applied`, not touching all_reduce_utils.py;
    `revert` restores the release except the hand-applied file, which keeps the user's change."""
    from sgpatch.patchset.manifest import select_variant

    root, top, target = make(release_tree, version, "checkout")
    (spec,) = [p for p in MANIFEST.patches if p.id == SIZES]
    variant = select_variant(spec, Version(version)).patch
    assert variant is not None
    res = gnu_patch(top, 1, variant, "-F0", "--no-backup-if-mismatch")
    assert res.returncode == 0, res.stdout + res.stderr
    hand = (root / ALL_REDUCE_UTILS).read_bytes()

    code, doc, err = cli("apply", "--set", SET, *target, "--json")
    assert code == 0, err
    got = states(doc)
    assert got[SIZES] == "present"
    for p in REQUIRED:
        if p != SIZES:
            assert got[p] == ("applied" if EXPECTED[version][p] == "pending" else got[p]), p
    assert ALL_REDUCE_UTILS not in doc["written"]

    code, doc, err = cli("revert", "--set", SET, *target, "--json")
    assert code == 0, err
    assert ALL_REDUCE_UTILS not in doc["restored"]
    assert_pristine(top, root, version, record_sha(version), extra={ALL_REDUCE_UTILS: hand})


@needs_gnu_patch
@pytest.mark.parametrize(("version", "layout"), ALTERNATING)
def test_hand_applied_is_present(release_tree, cli, version: str, layout: str) -> None:
    """Input: a pristine tree on which every pending patch (the optional one too) was applied by
    GNU `patch -F0` with the variant sgpatch would pick, no ledger. Expected: `status --with`
    reports each of them `present` (not pending), `--check` exits 0, and `apply --with` exits 0
    writing nothing."""
    root, top, target = make(release_tree, version, layout)
    code, doc, _ = cli("status", "--set", SET, *target, "--with", OPTIONAL, "--json")
    assert code == 0
    pending = {i: p["variant"] for i, p in patches_by_id(doc).items() if p["state"] == "pending"}
    assert set(pending) == {p for p, s in EXPECTED[version].items() if s == "pending"}
    strip = 1 if layout == "checkout" else 2  # a/python/sglang/... -> sglang/...
    for variant in dict.fromkeys(pending.values()):
        res = gnu_patch(top, strip, SET_DIR / variant, "-F0", "--no-backup-if-mismatch")
        assert res.returncode == 0, res.stdout + res.stderr
    assert not (root / STATE).exists()

    code, doc, err = cli("status", "--set", SET, *target, "--with", OPTIONAL, "--check", "--json")
    assert code == 0, err
    got = states(doc)
    for p in pending:
        assert got[p] == "present", (p, got[p])
    before = snapshot(top, skip_state=True)
    code, doc, err = cli("apply", "--set", SET, *target, "--with", OPTIONAL, "--json")
    assert code == 0, err
    assert doc["written"] == []
    assert snapshot(top, skip_state=True) == before


@needs_gnu_patch
@pytest.mark.parametrize("version", FROM_0510)
def test_gnu_patch_fuzz_duplicates_where_sgpatch_does_not(
    release_tree, record_sha, cli, version: str
) -> None:
    """Input: the 0.5.9 Kimi hooks patch and a pristine checkout of `version` (0.5.10+, where
    upstream already has the hooks). Expected: GNU `patch -p1 -F2` exits 0 and leaves a second
    copy of the hooks: inside the class on 0.5.10-0.5.15, inside a module-level function on
    0.5.16+ (the file still compiles, so nothing flags it); `sgpatch apply` on the same pristine
    release reports the kimi patch `upstream` and leaves kimi_k25.py untouched; `sgpatch patch
    -p1 --fuzz 2` with the same file refuses (exit 3/4, file unchanged) or reports it already
    applied, never exits 0 having added a copy."""
    record = record_sha(version)

    # the shell approach
    root, top, _ = make(release_tree, version, "checkout")
    res = gnu_patch(top, 1, KIMI_059, "-F2")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "fuzz 2" in res.stdout
    compiles(root, KIMI)  # silently broken: it still compiles
    inside, outside = kimi_hook_defs(root)
    assert len(inside) + len(outside) == 2 * len(KIMI_HOOKS), (inside, outside)
    if Version(version) < Version("0.5.16"):
        assert sorted(inside) == sorted(KIMI_HOOKS * 2) and not outside
        with pytest.raises(AssertionError, match="defined 2 times"):
            run_checks(root, KIMI_ID)
    else:
        assert sorted(inside) == sorted(KIMI_HOOKS) and sorted(outside) == sorted(KIMI_HOOKS)
        with pytest.raises(AssertionError, match="outside"):
            run_checks(root, KIMI_ID)

    # sgpatch apply on the same pristine release
    root, top, target = make(release_tree, version, "checkout")
    code, doc, err = cli("apply", "--set", SET, *target, "--json")
    assert code == 0, err
    assert states(doc)[KIMI_ID] == "upstream"
    assert KIMI not in doc["written"]
    assert sha((root / KIMI).read_bytes()) == record[KIMI]

    # sgpatch's GNU-patch-like front end with the same fuzz
    root, top, _ = make(release_tree, version, "checkout")
    code, doc, err = cli("patch", "-p1", "--fuzz", "2", "-d", str(top), "--json", str(KIMI_059))
    unchanged = sha((root / KIMI).read_bytes()) == record[KIMI]
    hunks = [h["status"] for p in doc["patches"] for f in p["files"] for h in f["hunks"]]
    assert unchanged, f"sgpatch patch exit {code} changed kimi_k25.py: {hunks}"
    if code == 0:
        assert hunks and set(hunks) == {"already-applied"}, hunks
    else:
        assert code in (3, 4), (code, err)
        assert doc["written"] is False
    inside, outside = kimi_hook_defs(root)
    assert sorted(inside) == sorted(KIMI_HOOKS) and not outside


@pytest.mark.parametrize(
    ("version", "newer", "patch_id", "exit_code", "why"),
    [
        ("0.5.3.post2", "0004-sm120-flashinfer-allreduce-fusion", FUSION, 0, "does not define it"),
        ("0.5.3", "0002-sm120-symm-mem-sizes", SIZES, 0, "not this release's SM100 entry"),
        ("0.5.3", "0003-sm120-symm-mem-world-sizes", "sm120-symm-mem-world-sizes", 3, None),
    ],
)
def test_newer_variant_on_an_older_release(
    release_tree, record_sha, cli, version, newer, patch_id, exit_code, why
) -> None:
    """Input: a pristine checkout of an old release and the 0.5.5 variant of a patch, applied as
    it is with `sgpatch patch -p1` (fuzz 0). Expected, per the set's page (traps): the fusion
    gate lands at an offset on 0.5.3.post2 and compiles, yet imports an is_sm120_supported that
    release lacks; the sizes patch applies cleanly on 0.5.3 but with other sizes than its SM100
    entry; the world-sizes patch names torch_symm_mem.py, absent before 0.5.4.post3 (exit 3,
    nothing written). The intent check catches the first two. `sgpatch apply` of the set on a
    fresh tree picks the release's own variant, which meets the intent check."""
    root, top, target = make(release_tree, version, "checkout")
    variant = SET_DIR / "patches" / "0.5.5" / f"{newer}.patch"
    before = snapshot(top)
    code, _, err = cli("patch", "-p1", "-d", str(top), str(variant))
    assert code == exit_code, err
    if why is None:
        assert snapshot(top) == before and "torch_symm_mem.py" in err
    else:
        for rel in re.findall(r"^\+\+\+ b/python/sglang/(\S+)", variant.read_text(), re.M):
            compiles(root, rel)  # the file is broken only at run time
        with pytest.raises(AssertionError, match=why):
            run_checks(root, patch_id)
    root, top, target = make(release_tree, version, "checkout")
    code, doc, err = cli("apply", "--set", SET, *target, "--json")
    assert code == 0, err
    assert not patches_by_id(doc)[patch_id]["variant"].startswith("patches/0.5.5/")
    run_checks(root, patch_id)


def flashinfer_pin(version: str) -> str:
    """The flashinfer_python version the release's METADATA pins (Requires-Dist ...==X)."""
    meta = releases.read_member(version, f"sglang-{version}.dist-info/METADATA").decode()
    pins = re.findall(r"^Requires-Dist: flashinfer[-_]python(?:\[[^\]]*\])?==([^\s;]+)", meta, re.M)
    assert pins, f"{version}: no flashinfer_python pin in METADATA"
    return pins[0]


@pytest.mark.parametrize("version", RELEASES)
def test_flashinfer_precondition_with_the_pinned_flashinfer(
    release_tree, cli, version: str
) -> None:
    """Input: a pristine site-packages tree of `version` beside a minimal dist-info of the
    FlashInfer its METADATA pins (what `pip install "sglang[srt]==V"` leaves; sgpatch reads only
    the dist-info name). Expected: `status --json` reports flashinfer-python>=0.6.17 `unmet`
    with that version found wherever the pin is older (every release before 0.5.18, 0.5.1 ...
    0.5.4.post3 included), `ok` where it is not; `apply --strict` exits 1 on `unmet` and writes
    nothing."""
    _root, top, target = make(release_tree, version, "site-packages")
    pin = flashinfer_pin(version)
    (top / f"flashinfer_python-{pin}.dist-info").mkdir()
    (top / f"flashinfer_python-{pin}.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: flashinfer-python\nVersion: {pin}\n"
    )
    code, doc, _ = cli("status", "--set", SET, *target, "--json")
    assert code == 0
    (pre,) = doc["sets"][0]["preconditions"]
    assert (pre["package"], pre["specifier"], pre["found"]) == (
        "flashinfer-python",
        ">=0.6.17",
        pin,
    )
    unmet = Version(pin) < Version("0.6.17")
    assert pre["verdict"] == ("unmet" if unmet else "ok"), pre
    assert unmet == (Version(version) < Version("0.5.18")), (version, pin)
    if unmet:
        before = snapshot(top)
        code, _, err = cli("apply", "--set", SET, *target, "--strict")
        assert code == 1 and "flashinfer-python" in err, err
        assert snapshot(top) == before


@pytest.mark.parametrize(
    ("claimed", "how"),
    [
        ("0.5.0", "flag"),
        ("0.4.10.post2", "flag"),
        ("0.6.0", "flag"),
        ("0.5.24", "flag"),
        ("0.6.0", "_version.py"),
    ],
)
@pytest.mark.parametrize("command", ["apply", "status"])
def test_unsupported_release(release_tree, cli, claimed: str, how: str, command: str) -> None:
    """Input: a 0.5.9 site-packages tree claiming `claimed`, via --sglang-version ("flag") or by
    its own _version.py. Expected: `apply`/`status --set` exit 2 with one line on stderr naming
    the version (with --json: the error document of docs/json.md), and the tree (no .sgpatch
    folder either) is unchanged."""
    root, top, target = make(release_tree, "0.5.9", "site-packages")
    if how == "flag":
        target += ["--sglang-version", claimed]
    else:
        (root / "_version.py").write_text(f"__version__ = version = '{claimed}'\n")
    before = snapshot(top)
    code, _, err = cli(command, "--set", SET, *target)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and claimed in lines[0], err
    assert lines[0].startswith("sgpatch: error:")
    code, doc, err = cli(command, "--set", SET, *target, "--json")
    # docs/json.md: one small error document on stdout, no `command` key
    assert code == 2 and doc is not None and "command" not in doc, doc
    assert doc["exit_code"] == 2 and claimed in doc["error"]
    assert len(err.strip().splitlines()) == 1
    assert snapshot(top) == before
    assert not (root / STATE).exists()
