"""Release cache: RECORD checks, layouts and index parsing on tiny fake wheels (one real test)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from helpers import WHEEL_FILES, _digest, _move, make_wheel, offline_cache
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.pyrun import module_command
from sgpatch.releases import cache as releases
from sgpatch.releases import download, wheels
from sgpatch.releases import index as index_mod


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache dir; downloads fail loudly unless a test provides them."""
    return offline_cache(tmp_path, monkeypatch)


def test_cache_dir_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SGPATCH_CACHE", str(tmp_path / "x"))
    assert releases.cache_dir() == tmp_path / "x"
    monkeypatch.delenv("SGPATCH_CACHE")
    assert releases.cache_dir() == Path.home() / ".cache" / "sgpatch"


def test_wheel_path_verifies_and_records(cache: Path) -> None:
    whl = make_wheel(cache / "wheels")
    assert releases.wheel_path("9.9.9") == whl
    rec = releases.record("9.9.9")
    assert rec["sglang/srt/models/kimi_k25.py"] == _digest(
        WHEEL_FILES["sglang/srt/models/kimi_k25.py"]
    )
    assert "sglang-9.9.9.dist-info/RECORD" not in rec  # RECORD carries no hash of itself
    assert releases.cached_versions() == [Version("9.9.9")]


def test_local_label_names_the_same_release(cache: Path) -> None:
    whl = make_wheel(cache / "wheels")
    assert releases.wheel_path("9.9.9+cu130") == whl


def test_bad_version_is_bad_input(cache: Path) -> None:
    with pytest.raises(SgpatchError, match="not a PEP 440 version") as e:
        releases.wheel_path("latest")
    assert e.value.code == ExitCode.BAD_INPUT


def test_corrupted_member_is_refused(cache: Path) -> None:
    whl = make_wheel(cache / "wheels", record_overrides={"sglang/_version.py": _digest(b"other\n")})
    with pytest.raises(SgpatchError, match=r"_version\.py does not match its RECORD hash"):
        releases.verify_wheel(whl)


def test_member_missing_from_record_is_refused(cache: Path) -> None:
    whl = make_wheel(cache / "wheels", unlisted={"sglang/sneaky.py": b"x = 1\n"})
    with pytest.raises(SgpatchError, match=r"sneaky\.py is not listed"):
        releases.verify_wheel(whl)


def test_record_entry_missing_from_zip_is_refused(cache: Path) -> None:
    whl = make_wheel(cache / "wheels", record_overrides={"sglang/gone.py": _digest(b"")})
    with pytest.raises(SgpatchError, match=r"RECORD lists sglang/gone\.py"):
        releases.verify_wheel(whl)


def test_not_a_zip_is_refused(cache: Path) -> None:
    (cache / "wheels").mkdir(parents=True)
    (cache / "wheels" / "sglang-9.9.9-py3-none-any.whl").write_bytes(b"<html>rate limited</html>")
    with pytest.raises(SgpatchError, match="not a readable wheel"):
        releases.verify_wheel(cache / "wheels" / "sglang-9.9.9-py3-none-any.whl")


def test_unsafe_member_path_is_refused(cache: Path) -> None:
    whl = make_wheel(cache / "wheels", files={**WHEEL_FILES, "../evil.py": b"x\n"})
    with pytest.raises(SgpatchError, match="unsafe member path") as e:
        releases.verify_wheel(whl)
    assert e.value.code == ExitCode.UNSAFE


def test_verification_is_stamped_and_redone_when_the_wheel_changes(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Input: a verified wheel, read again; then replaced by a damaged one (new mtime).
    Outcome: the stamp spares the second check; the damaged wheel fails its check, is said in
    one line and removed from the cache, and a new download is tried."""
    whl = make_wheel(cache / "wheels")
    releases.wheel_path("9.9.9")
    calls = []
    real_verify = wheels.verify_wheel
    monkeypatch.setattr(wheels, "verify_wheel", lambda p: calls.append(p) or real_verify(p))
    releases.wheel_path("9.9.9")
    assert calls == []  # stamp matches: no re-hash
    make_wheel(cache / "wheels", record_overrides={"sglang/__init__.py": _digest(b"")})
    st = whl.stat()
    os.utime(whl, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    with pytest.raises(SgpatchError, match=r"test tried to download sglang==9\.9\.9"):
        releases.wheel_path("9.9.9")
    assert calls == [whl]
    assert "__init__.py does not match its RECORD hash; removed it from the cache" in (
        capsys.readouterr().err
    )
    assert not whl.exists()


def _stamp_as_verified(whl: Path) -> None:
    """What the stamp of a wheel verified earlier says (the wheel changed behind its back)."""
    st = whl.stat()
    (whl.parent / ".verified").mkdir(exist_ok=True)
    (whl.parent / ".verified" / f"{whl.name}.ok").write_text(f"{st.st_size} {st.st_mtime_ns}\n")


def test_a_file_read_from_the_cache_is_checked_against_record_on_first_read(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Input: a wheel whose stamp says verified but whose _version.py no longer matches its
    RECORD row. Outcome: reading another file hashes only that file and works; reading
    _version.py (or laying a tree, which reads it) is one line naming the file, exit 4, the
    wheel is removed and no half tree is left."""
    from sgpatch.releases import record

    whl = make_wheel(cache / "wheels", record_overrides={"sglang/_version.py": _digest(b"x")})
    _stamp_as_verified(whl)
    hashed: list[int] = []
    real = record.digest
    monkeypatch.setattr(record, "digest", lambda alg, data: hashed.append(1) or real(alg, data))
    assert releases.read_member("9.9.9", "srt/models/kimi_k25.py").startswith(b"class Kimi")
    releases.read_member("9.9.9", "srt/models/kimi_k25.py")
    assert len(hashed) == 1  # only the file read, once per run
    with pytest.raises(SgpatchError, match=r"_version\.py does not match its RECORD hash") as e:
        releases.lay("9.9.9", tmp_path / "t", "site-packages")
    assert e.value.code == ExitCode.UNSAFE
    assert not (tmp_path / "t").exists() and not whl.exists()


def test_links_and_special_files_in_a_wheel_are_refused(cache: Path, tmp_path: Path) -> None:
    """Input: a wheel (RECORD correct) whose member says it is a symbolic link in its mode
    bits. Outcome: verification refuses it in one line (exit 4); copying the release from
    the cache (offline) says so too, drops the wheel, and writes nothing."""
    import stat
    import zipfile

    whl = make_wheel(cache / "wheels")
    with zipfile.ZipFile(whl) as zf:
        items = [(i, zf.read(i)) for i in zf.infolist()]
    with zipfile.ZipFile(whl, "w") as zf:
        for info, data in items:
            if info.filename == "sglang/bin/run.sh":
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, data)
    with pytest.raises(SgpatchError, match=r"run\.sh is not a regular file") as e:
        releases.verify_wheel(whl)
    assert e.value.code == ExitCode.UNSAFE
    with releases.cache_only(), pytest.raises(SgpatchError, match=r"run\.sh is not a regular"):
        releases.copy_tree("9.9.9", tmp_path / "t")  # the cached wheel fails its check
    assert not (tmp_path / "t").exists() and not whl.exists()


def test_read_member_accepts_wheel_and_package_relative_paths(cache: Path) -> None:
    make_wheel(cache / "wheels")
    want = WHEEL_FILES["sglang/srt/models/kimi_k25.py"]
    assert releases.read_member("9.9.9", "sglang/srt/models/kimi_k25.py") == want
    assert releases.read_member("9.9.9", "srt/models/kimi_k25.py") == want
    assert releases.read_member("9.9.9", "python/sglang/srt/models/kimi_k25.py") == want
    assert releases.read_member("9.9.9", "sglang-9.9.9.dist-info/METADATA").startswith(b"Meta")
    with pytest.raises(SgpatchError, match=r"has no file sglang/srt/nope\.py"):
        releases.read_member("9.9.9", "srt/nope.py")


def test_extract_site_packages_layout(cache: Path, tmp_path: Path) -> None:
    make_wheel(cache / "wheels")
    root = releases.extract("9.9.9", tmp_path / "sp", "site-packages")
    assert root == tmp_path / "sp" / "sglang"
    assert (root / "srt/models/kimi_k25.py").read_bytes() == WHEEL_FILES[
        "sglang/srt/models/kimi_k25.py"
    ]
    assert (tmp_path / "sp/sglang-9.9.9.dist-info/RECORD").is_file()
    assert os.access(root / "bin/run.sh", os.X_OK)
    assert not os.access(root / "_version.py", os.X_OK)


def test_extract_checkout_layout_has_no_dist_info(cache: Path, tmp_path: Path) -> None:
    make_wheel(cache / "wheels")
    root = releases.extract("9.9.9", tmp_path / "repo", "checkout")
    assert root == tmp_path / "repo" / "python" / "sglang"
    assert (root / "_version.py").is_file()
    assert sorted(p.name for p in (tmp_path / "repo").iterdir()) == ["python"]
    assert sorted(p.name for p in (tmp_path / "repo/python").iterdir()) == ["sglang"]


def test_extract_members_filter(cache: Path, tmp_path: Path) -> None:
    make_wheel(cache / "wheels")
    seen: list[str] = []

    def only_py(name: str) -> bool:
        seen.append(name)
        return name.endswith(".py")

    root = releases.extract("9.9.9", tmp_path / "sp", "site-packages", members=only_py)
    got = sorted(str(p.relative_to(tmp_path / "sp")) for p in (tmp_path / "sp").rglob("*.py"))
    assert got == sorted(n for n in WHEEL_FILES if n.endswith(".py"))
    assert not (root / "srt/data/table.json").exists()
    assert "sglang/srt/models/kimi_k25.py" in seen  # the filter sees wheel-relative paths


def test_extract_unknown_layout(cache: Path, tmp_path: Path) -> None:
    make_wheel(cache / "wheels")
    with pytest.raises(SgpatchError, match="unknown layout"):
        releases.extract("9.9.9", tmp_path, "venv")  # type: ignore[arg-type]


@pytest.mark.parametrize("layout", ["site-packages", "checkout"])
def test_copy_tree_writes_a_writable_tree_and_the_cache_keeps_only_wheels(
    cache: Path, tmp_path: Path, layout: releases.Layout
) -> None:
    """Input: a cached wheel, copy_tree in either layout, twice. Outcome: each copy holds the
    wheel's bytes, is writable (files and folders), and the cache holds nothing but wheels/
    (no unpacked tree: deleting it is a plain rm -rf)."""
    make_wheel(cache / "wheels")
    copy = releases.copy_tree("9.9.9", tmp_path / "work", layout)
    again = releases.copy_tree("9.9.9", tmp_path / "again", layout)
    assert copy.name == "sglang" and again.name == "sglang"
    (copy / "_version.py").write_bytes(b"edited\n")  # writable
    (copy / "srt" / "new.py").write_bytes(b"")  # directories writable too
    assert (again / "_version.py").read_bytes() == WHEEL_FILES["sglang/_version.py"]
    assert (copy.parent / "sglang-9.9.9.dist-info").is_dir() == (layout == "site-packages")
    assert sorted(os.listdir(cache)) == ["wheels"]


def test_lay_reports_every_file_with_its_record_sha256(cache: Path, tmp_path: Path) -> None:
    """Input: lay of the fake release (site-packages). Outcome: every file written is listed,
    relative to the folder, with the sha256 hashlib gives for its bytes."""
    import hashlib

    make_wheel(cache / "wheels")
    laid = releases.lay("9.9.9", tmp_path / "t", "site-packages")
    on_disk = {p.relative_to(tmp_path / "t").as_posix() for p in (tmp_path / "t").rglob("*")
               if p.is_file()}  # fmt: skip
    assert set(laid.files) == on_disk
    for rel, sha in laid.files.items():
        assert hashlib.sha256((tmp_path / "t" / rel).read_bytes()).hexdigest() == sha


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_lay_never_writes_through_a_link_and_leaves_no_writer_behind(
    cache: Path, tmp_path: Path
) -> None:
    """Input: lay into a folder whose sglang/srt is a symlink to a folder outside; then into
    one where a file stands in the place of the folder sglang/bin.
    Outcome: both refused in one line (nothing written outside, what lay made removed); no
    thread or descriptor of lay's writer left (a fork pool may start after it)."""
    import threading

    make_wheel(cache / "wheels")
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "t/sglang").mkdir(parents=True)
    (tmp_path / "t/sglang/srt").symlink_to(outside)
    releases.record("9.9.9")  # the wheel opened (and kept open) before the count
    fds = set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()
    with pytest.raises(SgpatchError, match="cannot write the release tree"):
        releases.lay("9.9.9", tmp_path / "t", "site-packages")
    assert not any(outside.iterdir())
    (tmp_path / "u/sglang").mkdir(parents=True)
    (tmp_path / "u/sglang/bin").write_bytes(b"in the way\n")
    with pytest.raises(SgpatchError, match="cannot write the release tree"):
        releases.lay("9.9.9", tmp_path / "u", "site-packages")
    assert (tmp_path / "u/sglang/bin").read_bytes() == b"in the way\n"
    assert [t.name for t in threading.enumerate() if t.name == "sgpatch-lay"] == []
    # none opened and left (one another part of the process closed meanwhile is not lay's)
    assert (set(os.listdir("/proc/self/fd")) if fds else set()) - fds == set()


def test_copy_tree_with_members_skips_the_full_tree(cache: Path, tmp_path: Path) -> None:
    make_wheel(cache / "wheels")
    root = releases.copy_tree(
        "9.9.9", tmp_path / "w", "checkout", members=lambda n: n.endswith("kimi_k25.py")
    )
    assert [p.name for p in root.rglob("*") if p.is_file()] == ["kimi_k25.py"]
    assert not (cache / "trees").exists()


def test_missing_wheel_is_downloaded_verified_and_moved_in(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = make_wheel(tmp_path / "index", version="9.9.10")
    calls: list[str] = []

    def fake_download(version: str, dest: Path) -> Path:
        calls.append(version)
        return _move(built, dest)

    monkeypatch.setattr(download, "_pip_download", fake_download)
    path = releases.wheel_path("9.9.10")
    assert path == cache / "wheels" / "sglang-9.9.10-py3-none-any.whl"
    assert calls == ["9.9.10"]
    assert releases.wheel_path("9.9.10") == path and calls == ["9.9.10"]
    assert [p.name for p in (cache / "wheels").iterdir() if p.name.startswith(".download")] == []


def test_corrupt_download_never_enters_the_cache(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = make_wheel(
        tmp_path / "index", version="9.9.10", record_overrides={"sglang/__init__.py": _digest(b"")}
    )
    monkeypatch.setattr(
        download,
        "_pip_download",
        lambda v, dest: _move(built, dest),
    )
    with pytest.raises(SgpatchError, match="does not match"):
        releases.wheel_path("9.9.10")
    assert list((cache / "wheels").glob("*.whl")) == []


def test_pip_download_command_and_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def fake_run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        seen.append(cmd)
        return subprocess.CompletedProcess(
            cmd, 1, "", "ERROR: No matching distribution found for sglang==0.0.1\n"
        )

    monkeypatch.setattr(subprocess, "run", fake_run)
    with pytest.raises(SgpatchError, match=r"cannot download sglang==0\.0\.1: ERROR: No matching"):
        download._pip_download("0.0.1", tmp_path)
    cmd = seen[0]
    assert cmd[: len(module_command("pip")) + 1] == [*module_command("pip"), "download"]
    assert "--no-deps" in cmd and "--only-binary=:all:" in cmd and "sglang==0.0.1" in cmd
    platforms = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--platform"]
    assert platforms == ["manylinux_2_34_x86_64", "any"]


PIP_INDEX = """sglang (0.5.23)
Available versions: 0.6.0rc1, 0.5.23, 0.5.22.dev1, 0.5.10.post1, 0.5.10, 0.5.9, 0.5.4, 0.4.10
"""


def test_index_versions_parses_pip_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_mod, "_pip_index_versions", lambda pre: PIP_INDEX)
    got = releases.index_versions()
    assert got == [Version(v) for v in ["0.5.9", "0.5.10", "0.5.10.post1", "0.5.23"]]
    pre = releases.index_versions(">=0.5.20", prereleases=True)
    assert pre == [Version("0.5.22.dev1"), Version("0.5.23"), Version("0.6.0rc1")]


def test_listing_asks_the_index_for_the_same_target_as_downloading(monkeypatch) -> None:
    """Input: any Python running sgpatch (a 3.10 pip would hide the cp311-only 0.5.22). Outcome:
    `pip index versions` names the wheel target that `pip download` uses, so every release that
    can be fetched is listed."""
    seen: list[list[str]] = []

    def run(cmd, **kw):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, PIP_INDEX, "")

    monkeypatch.setattr(index_mod.subprocess, "run", run)
    index_mod._pip_index_versions(False)
    (cmd,) = seen
    n = len(module_command("pip"))
    assert cmd[: n + 2] == [*module_command("pip"), "index", "versions"] and cmd[-1] == "sglang"
    assert tuple(cmd[n + 2 : -1]) == releases.PIP_TARGET_FLAGS
    assert set(releases.PIP_TARGET_FLAGS) <= set(releases.PIP_DOWNLOAD_FLAGS)


def test_index_versions_falls_back_to_cached_wheels(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def offline(pre: bool) -> str:
        raise subprocess.CalledProcessError(1, "pip")

    monkeypatch.setattr(index_mod, "_pip_index_versions", offline)
    with pytest.raises(SgpatchError, match="index is unreachable"):
        releases.index_versions()
    make_wheel(cache / "wheels", version="0.5.9")
    make_wheel(cache / "wheels", version="0.5.4")
    assert releases.index_versions() == [Version("0.5.9")]


def test_index_versions_bad_spec() -> None:
    with pytest.raises(SgpatchError, match="specifier"):
        releases.index_versions("0.5.x")


@pytest.mark.real
def test_real_0_5_9_wheel() -> None:
    """The cached 0.5.9 wheel checks out and its files hash to RECORD."""
    rec = releases.record("0.5.9")
    assert releases.wheel_path("0.5.9").name == "sglang-0.5.9-py3-none-any.whl"
    data = releases.read_member("0.5.9", "srt/models/kimi_k25.py")
    assert rec["sglang/srt/models/kimi_k25.py"] == _digest(data)
    assert b"class KimiK25ForConditionalGeneration" in data
    assert b"get_embed_and_head" not in data  # upstream added it in 0.5.10
    assert b"__version__ = version = '0.5.9'" in releases.read_member("0.5.9", "_version.py")


def test_fetch_git_checks_out_a_tag_and_detects_its_version(tmp_path, capsys):
    """Input: a local git repository shaped like SGLang (python/sglang/srt, no _version.py)
    tagged v0.5.9. Outcome: `sgpatch fetch --git REPO v0.5.9 --dest D` checks it out and the
    version comes from `git describe`; a ref or repository that does not exist is a one-line
    error in git's words, exit 2, and leaves nothing in --dest."""
    import json

    from helpers import git, sgpatch

    repo = tmp_path / "sglang-repo"
    (repo / "python" / "sglang" / "srt").mkdir(parents=True)
    (repo / "python" / "sglang" / "srt" / "__init__.py").write_text("")
    (repo / "python" / "sglang" / "version.py").write_text("from sglang._version import *\n")
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "r"], ["tag", "v0.5.9"]):
        git(repo, *cmd)
    dest = tmp_path / "co"
    assert sgpatch("fetch", "--git", str(repo), "v0.5.9", "--dest", str(dest), "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["checkouts"][0]["version"] == "0.5.9"
    assert (dest / "python" / "sglang" / "srt").is_dir()
    assert sgpatch("fetch", "--git", str(repo), "v9.9.9", "--dest", str(tmp_path / "x")) == 2
    err = capsys.readouterr().err
    assert "cannot check out v9.9.9" in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()  # no half clone left behind: a retry just works
    args = ("fetch", "--git", str(repo), "v0.5.9", "--dest", str(tmp_path / "z"))
    assert sgpatch(*args, "--layout", "checkout") == 2  # a --git checkout has no other layout
    assert "--layout is for trees made from wheels" in capsys.readouterr().err
    assert (
        sgpatch("fetch", "--git", str(tmp_path / "nope"), "v0.5.9", "--dest", str(tmp_path / "y"))
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"fatal: repository '{tmp_path / 'nope'}' does not exist"), err


# --- telling people about downloads --------------------------------------------------------------


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A fake package index of tiny wheels 9.9.10 and 9.9.11 (9.9.12 is missing); returns the
    versions "downloaded", in order."""
    calls: list[str] = []

    def fake_download(version: str, dest: Path) -> Path:
        calls.append(version)
        if version == "9.9.12":
            raise SgpatchError(f"cannot download sglang=={version}: ERROR: No matching dist")
        return _move(make_wheel(tmp_path / "index" / version, version=version), dest)

    monkeypatch.setattr(download, "_pip_download", fake_download)
    return calls


def test_a_batch_off_a_terminal_says_each_download_and_a_total(cache, index, capsys) -> None:
    """Input: fetch of 9.9.10, 9.9.11 and 9.9.10 again on an empty cache, stderr not a terminal.
    Outcome: each wheel downloaded once, one line each with its size, then one final line with
    the count, total size and the cache folder; no control characters. A second fetch of the
    same releases downloads and prints nothing."""
    got = releases.fetch(["9.9.10", "9.9.11", "9.9.10"])
    assert list(got) == [Version("9.9.10"), Version("9.9.11")] and index == ["9.9.10", "9.9.11"]
    lines = capsys.readouterr().err.splitlines()
    sizes = [got[Version(v)].stat().st_size / 1e6 for v in ("9.9.10", "9.9.11")]
    assert len(lines) == 3, lines
    for line, v, mb in zip(lines, ("9.9.10", "9.9.11"), sizes, strict=False):
        assert line.startswith(f"sgpatch: downloaded sglang-{v}-py3-none-any.whl ({mb:.1f} MB in ")
    assert lines[2].startswith(f"sgpatch: downloaded 2 wheel(s), {sum(sizes):.1f} MB in ")
    assert lines[2].endswith(f", into {cache / 'wheels'}")
    assert not any(c in "".join(lines) for c in "\r\x1b")
    assert [d.name for d in releases.downloaded()[-2:]] == [p.name for p in got.values()]
    releases.fetch(["9.9.10", "9.9.11"])
    assert capsys.readouterr().err == "" and index == ["9.9.10", "9.9.11"]


def test_a_batch_that_keeps_going_names_what_failed(cache, index, capsys) -> None:
    """Input: fetch of 9.9.12 (not on the index) and 9.9.11 with keep_going, then without.
    Outcome: the first returns 9.9.11 only, with a line for the failure and the final line
    counting it, and 9.9.12 is tried once; the second stops with the download error."""
    got = releases.fetch(["9.9.12", "9.9.11"], keep_going=True)
    assert list(got) == [Version("9.9.11")]
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "sgpatch: cannot download sglang==9.9.12: ERROR: No matching dist"
    assert lines[-1].endswith("; 1 could not be downloaded")
    assert index == ["9.9.12", "9.9.11"]
    with pytest.raises(SgpatchError, match="No matching dist"):
        releases.fetch(["9.9.12"])


def test_a_single_download_is_said_too(cache, index, capsys) -> None:
    """Input: one wheel fetched on demand (as port and the tests do), stderr not a terminal.
    Outcome: its one line, no batch total."""
    releases.wheel_path("9.9.10")
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("sgpatch: downloaded sglang-9.9.10-py3-none-any.whl (")


def test_a_batch_on_a_terminal_draws_a_progress_bar(cache, index, monkeypatch, capsys) -> None:
    """Input: the same batch with stderr a terminal. Outcome: rich draws a bar naming the
    release being fetched and how many of how many, with the download lines and the final
    line printed as well."""
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
    releases.fetch(["9.9.10", "9.9.11"])
    err = capsys.readouterr().err
    assert "downloading sglang==9.9.11" in err and "1/2" in err, err
    assert "\x1b[" in err
    assert "sgpatch: downloaded sglang-9.9.10-py3-none-any.whl (" in err
    assert "sgpatch: downloaded 2 wheel(s), " in err


def test_off_a_terminal_rich_is_not_imported(tmp_path: Path) -> None:
    """Input: a batch download off a terminal in a fresh interpreter. Outcome: rich is never
    imported (start-up time is measured; a build log needs no rich)."""
    code = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).parents[1])!r})
from helpers import make_wheel, _move
from sgpatch.releases import cache as releases, download
download._pip_download = lambda v, dest: _move(make_wheel(Path({str(tmp_path)!r}) / v, v), dest)
releases.fetch(["9.9.10", "9.9.11"])
print("rich" in sys.modules)
"""
    env = {**os.environ, "SGPATCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
    assert proc.stderr.count("sgpatch: downloaded ") == 3
