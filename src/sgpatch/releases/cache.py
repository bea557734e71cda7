"""The release cache: pristine SGLang release trees, straight from the package index.

Tests, the benchmark and porting work need the exact bytes SGLang shipped, in both layouts sgpatch
supports. Wheels are downloaded once into `$SGPATCH_CACHE` (default `~/.cache/sgpatch`), checked
against their own RECORD (every member's sha256), and read or extracted from there. Only
`sys.executable -m pip` talks to the network, and only when a wheel is missing.

Versions are PEP 440 strings; a local label (`0.5.10+cu130`) names a build of the same source
release, so it is dropped when looking for the wheel.

Downloads are reported on stderr: off a terminal (a build log) one line per wheel with its size,
and for a batch (`fetch`, `matrix`, `lint`) a final line; on a terminal a rich progress bar
(rich is imported only then).
"""

from __future__ import annotations

import base64
import contextlib
import csv
import functools
import hashlib
import io
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from sgpatch.errors import ExitCode, SgpatchError

__all__ = [
    "Download",
    "Layout",
    "cache_dir",
    "cached_versions",
    "copy_tree",
    "downloaded",
    "extract",
    "fetch",
    "index_versions",
    "pristine_tree",
    "read_member",
    "record",
    "set_reporter",
    "verify_wheel",
    "wheel_path",
]

log = logging.getLogger(__name__)

Layout = Literal["site-packages", "checkout"]
LAYOUTS: tuple[Layout, ...] = ("site-packages", "checkout")
PACKAGE = "sglang"
CACHE_ENV = "SGPATCH_CACHE"
# 0.5.11+ ship cp311 manylinux_2_34 wheels, <=0.5.10.post1 pure-python ones; pip accepts several
# --platform flags at once, so one call fetches either kind (checked on 0.5.5 and 0.5.11). The
# wheels are only read, never installed, so the Python running sgpatch does not matter: listing
# and downloading both name this target (a 3.10 pip would otherwise not list 0.5.22).
PIP_TARGET_FLAGS = (
    "--only-binary=:all:",
    "--python-version",
    "3.11",
    "--platform",
    "manylinux_2_34_x86_64",
    "--platform",
    "any",
)
PIP_DOWNLOAD_FLAGS = ("--no-deps", *PIP_TARGET_FLAGS)
_WEAK_HASHES = frozenset({"md5", "sha1"})
_SIGNATURES = ("RECORD", "RECORD.jws", "RECORD.p7s")


@dataclass(frozen=True)
class _WheelKey:
    """Identity of a wheel file on disk, so memoised results go stale when the file changes."""

    path: Path
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> _WheelKey:
        st = path.stat()
        return cls(path, st.st_size, st.st_mtime_ns)


# ---------------------------------------------------------------------------------------------
# cache locations and versions


def cache_dir() -> Path:
    """`$SGPATCH_CACHE`, else `~/.cache/sgpatch` (read on every call so tests can redirect it)."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "sgpatch"


def _wheels_dir() -> Path:
    return cache_dir() / "wheels"


def _release(version: str | Version) -> Version:
    """The release a version string names: PEP 440, local label dropped."""
    try:
        v = version if isinstance(version, Version) else Version(str(version).strip())
    except InvalidVersion:
        raise SgpatchError(f"not a PEP 440 version: {version!r}", ExitCode.BAD_INPUT) from None
    return Version(v.public)


def _cached_wheels() -> dict[Version, Path]:
    """Cached sglang wheels by release; pure-python wheels win over binary ones (same sources)."""
    found: dict[Version, Path] = {}
    wheels = _wheels_dir()
    if not wheels.is_dir():
        return found
    for p in sorted(
        wheels.glob(f"{PACKAGE}-*.whl"), key=lambda p: ("none-any" not in p.name, p.name)
    ):
        try:
            name, ver, _build, _tags = parse_wheel_filename(p.name)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if name == PACKAGE:
            found.setdefault(ver, p)
    return found


def cached_versions() -> list[Version]:
    """Releases whose wheel is already in the cache, ascending."""
    return sorted(_cached_wheels())


def cached_snapshots() -> dict[Version, Path]:
    """The snapshots `port --to-tree` kept (sgpatch.releases.snapshot), by public version:
    read like wheels, never listed as releases."""
    from sgpatch.releases.snapshot import snapshots_dir

    found: dict[Version, Path] = {}
    folder = snapshots_dir(cache_dir())
    if not folder.is_dir():
        return found
    for p in sorted(folder.glob(f"{PACKAGE}-*.whl")):
        try:
            name, ver, _build, _tags = parse_wheel_filename(p.name)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if name == PACKAGE and ver.is_prerelease:
            found[ver] = p
    return found


def _cached(rel: Version) -> Path | None:
    """The cached wheel of a release, or the kept snapshot of a pre-release version."""
    path = _cached_wheels().get(rel)
    if path is None and rel.is_prerelease:
        path = cached_snapshots().get(rel)
    return path


# ---------------------------------------------------------------------------------------------
# telling people about downloads


@dataclass(frozen=True)
class Download:
    """One wheel this process fetched from the package index."""

    name: str  # the wheel's file name
    size: int  # bytes
    seconds: float


_downloads: list[Download] = []
_reporter: Callable[[str], None] | None = None
_live = None  # the rich Progress of a batch on a terminal, while it runs


def set_reporter(reporter: Callable[[str], None] | None) -> None:
    """Send download lines to `reporter` instead of stderr (None: stderr again). The real-release
    tests use it to show the first run's downloads past pytest's output capture."""
    global _reporter
    _reporter = reporter


def downloaded() -> list[Download]:
    """The wheels this process has downloaded so far, oldest first."""
    return list(_downloads)


def _say(line: str) -> None:
    """A line for people: above the progress bar while one runs, else on stderr."""
    if _reporter is not None:
        _reporter(line)
    elif _live is not None:
        _live.console.print(line, markup=False, highlight=False, soft_wrap=True)
    else:
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (OSError, AttributeError):  # closed or no stderr: the download goes on
            pass


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def fetch(versions, *, keep_going: bool = False) -> dict[Version, Path]:
    """The verified wheels of `versions`, downloading the missing ones as one batch: a line per
    download and a final line off a terminal, a progress bar on one. With `keep_going`, a
    release that cannot be downloaded is said and left out instead of stopping the batch
    (`matrix` then reports it as that release's error)."""
    rels = list(dict.fromkeys(_release(v) for v in versions))
    cached = {**cached_snapshots(), **_cached_wheels()}
    missing = [r for r in rels if r not in cached]
    failed = _fetch_missing(missing, keep_going) if missing else set()
    return {r: wheel_path(r) for r in rels if r not in failed}


def _fetch_missing(missing: list[Version], keep_going: bool) -> set[Version]:
    """Download `missing` in order; return the releases that failed (keep_going only)."""
    start, before = time.monotonic(), len(_downloads)
    failed: set[Version] = set()
    with _batch_progress(len(missing)) as step:
        for rel in missing:
            step(f"sglang=={rel}")
            try:
                wheel_path(rel)
            except SgpatchError as e:
                if not keep_going:
                    raise
                failed.add(rel)
                _say(f"sgpatch: {e.message}")  # names the release: "cannot download sglang==V"
    got = _downloads[before:]
    line = (
        f"sgpatch: downloaded {len(got)} wheel(s), {_mb(sum(d.size for d in got))} in "
        f"{time.monotonic() - start:.1f} s, into {_wheels_dir()}"
    )
    _say(line + (f"; {len(failed)} could not be downloaded" if failed else ""))
    return failed


@contextlib.contextmanager
def _batch_progress(total: int):
    """Yields `step(label)`, called before each download. On a terminal: a transient rich bar
    (n of total, elapsed time) with the download lines printed above it; elsewhere nothing."""
    global _live
    if not sys.stderr.isatty() or _reporter is not None:
        yield lambda label: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        SpinnerColumn(),
        TextColumn("downloading {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=True, console=Console(stderr=True)) as progress:
        task = progress.add_task("", total=total)
        started = False

        def step(label: str) -> None:
            nonlocal started
            if started:
                progress.advance(task)
            started = True
            progress.update(task, description=label)

        _live = progress
        try:
            yield step
        finally:
            _live = None


# ---------------------------------------------------------------------------------------------
# wheels: download and verification


_OFFLINE: list[bool] = [False]  # inside `cache_only()`: nothing is downloaded


@contextlib.contextmanager
def cache_only(on: bool = True) -> Iterator[None]:
    """Within: a release missing from the cache is an error, never a download (--offline)."""
    was, _OFFLINE[0] = _OFFLINE[0], on or _OFFLINE[0]
    try:
        yield
    finally:
        _OFFLINE[0] = was


def wheel_path(version: str | Version) -> Path:
    """The verified cached wheel for `version`, downloading it first if it is missing."""
    rel = _release(version)
    path = _cached(rel)
    if path is None and _OFFLINE[0]:
        raise SgpatchError(f"sglang {rel} is not in the release cache (--offline); "
                           f"`sgpatch fetch {rel}` first")  # fmt: skip
    if path is None:
        path = _download(rel)
    _verify_cached(path)
    return path


def _download(rel: Version) -> Path:
    """Fetch the wheel with pip into a temp dir in the cache, verify it, move it in atomically."""
    from filelock import FileLock, Timeout

    wheels = _wheels_dir()
    wheels.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(wheels / f".{PACKAGE}-{rel}.lock"), timeout=900):
            path = _cached_wheels().get(rel)  # another worker may have fetched it meanwhile
            if path is None:
                start = time.monotonic()
                tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=wheels))
                try:
                    got = _pip_download(str(rel), tmp)
                    verify_wheel(got)
                    path = wheels / got.name
                    os.replace(got, path)
                    _write_stamp(path)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
                _tell_download(path, time.monotonic() - start)
    except Timeout:
        raise SgpatchError(
            f"timed out waiting for another process downloading sglang=={rel}", ExitCode.UNSAFE
        ) from None
    if _cached_wheels().get(rel) != path:
        raise SgpatchError(f"pip downloaded a wheel that is not sglang {rel}: {path.name}")
    return path


def _tell_download(path: Path, seconds: float) -> None:
    size = path.stat().st_size
    _downloads.append(Download(path.name, size, seconds))
    _say(f"sgpatch: downloaded {path.name} ({_mb(size)} in {seconds:.1f} s)")


def _pip_download(version: str, dest: Path) -> Path:
    """Run `pip download` for one sglang release into `dest`; return the wheel it saved."""
    cmd = [sys.executable, "-m", "pip", "download", *PIP_DOWNLOAD_FLAGS, "-d", str(dest)]
    cmd += ["--quiet", f"{PACKAGE}=={version}"]
    try:
        proc = _with_progress(
            f"downloading sglang=={version} from the package index",
            lambda: subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False),
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SgpatchError(f"cannot run pip to download sglang=={version}: {e}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip().startswith("ERROR")]
        why = lines[-1] if lines else (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SgpatchError(f"cannot download sglang=={version}: {why}")
    got = sorted(dest.glob("*.whl"))
    if len(got) != 1:
        raise SgpatchError(f"pip download of sglang=={version} left {len(got)} wheels, expected 1")
    return got[0]


def _with_progress(label: str, work):
    """Run `work()` under a rich spinner with elapsed time on a terminal; silent otherwise (no
    animation in logs: a download says what it fetched when done). Inside a batch, the batch's
    bar already shows it."""
    if not sys.stderr.isatty() or _live is not None or _reporter is not None:
        return work()
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, transient=True, console=Console(stderr=True)) as progress:
        progress.add_task(label, total=None)
        return work()


def git_tree(url: str, ref: str, dest: Path) -> Path:
    """A git checkout of SGLang at `ref` (tag, branch or commit) under `dest`, for releases not
    on the package index or for `main`; returns the package root (dest/python/sglang).
    Tags come along, so `git describe` gives the version."""
    import git

    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise SgpatchError(f"--dest {dest} is not empty; give a new or empty folder")

    def clone() -> None:
        try:
            git.Repo.clone_from(url, dest, branch=ref, depth=1)
        except git.GitCommandError:  # a commit sha cannot be cloned by name: full clone
            shutil.rmtree(dest, ignore_errors=True)
            try:
                repo = git.Repo.clone_from(url, dest)
                repo.git.checkout(ref)
            except git.GitCommandError as e:
                shutil.rmtree(dest, ignore_errors=True)  # no half clone left in --dest
                raise SgpatchError(f"cannot check out {ref} from {url}: {_git_reason(e)}") from None

    _with_progress(f"cloning {url} at {ref}", clone)
    root = dest / "python" / PACKAGE
    if not (root / "srt").is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        raise SgpatchError(f"{url} at {ref} has no python/sglang/srt: not an SGLang repository")
    return root


def _git_reason(e) -> str:
    """git's own words: its `fatal:`/`error:` line, not the quoting GitPython wraps around it."""
    raw = (e.stderr or str(e)).splitlines()
    lines = [ln.strip().removeprefix("stderr:").strip().strip("'").strip() for ln in raw]
    lines = [ln for ln in lines if ln]
    said = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
    return (said or lines or ["git failed"])[-1]


def _urlsafe_digest(alg: str, data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.new(alg, data).digest()).rstrip(b"=").decode("ascii")


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise SgpatchError(f"{path.name} is not a readable wheel: {e}") from None


def _record_name(zf: zipfile.ZipFile, path: Path) -> str:
    names = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/RECORD", n) is not None]
    if len(names) != 1:
        raise SgpatchError(f"{path.name}: expected one *.dist-info/RECORD, found {len(names)}")
    return names[0]


def _parse_record(text: str, path: Path) -> dict[str, tuple[str, str]]:
    """RECORD rows as path -> (hash "alg=digest" or "", size or "")."""
    rows: dict[str, tuple[str, str]] = {}
    for n, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row:
            continue
        if len(row) != 3:
            raise SgpatchError(f"{path.name}: RECORD line {n} has {len(row)} fields, expected 3")
        rows[row[0]] = (row[1], row[2])
    return rows


def verify_wheel(path: Path) -> dict[str, str]:
    """Check that `path` is a zip whose every file matches its RECORD hash and size; return RECORD.

    The return value maps wheel-relative paths to "sha256=<urlsafe b64>" (RECORD itself, which
    has no hash, is left out). Any mismatch, missing or unlisted member is an error.
    """
    with _open_zip(path) as zf:
        rec_name = _record_name(zf, path)
        try:
            rows = _parse_record(zf.read(rec_name).decode("utf-8"), path)
        except (UnicodeDecodeError, zipfile.BadZipFile) as e:
            raise SgpatchError(f"{path.name}: unreadable RECORD: {e}") from None
        dist_info = rec_name.rsplit("/", 1)[0]
        unsigned = {f"{dist_info}/{s}" for s in _SIGNATURES}
        hashes: dict[str, str] = {}
        seen: set[str] = set()
        for info in zf.infolist():
            name = info.filename
            if info.is_dir() or name in unsigned:
                continue
            _check_member_name(name, path)
            if name not in rows or not rows[name][0]:
                raise SgpatchError(f"{path.name}: {name} is not listed with a hash in RECORD")
            want, size = rows[name]
            alg, _, digest = want.partition("=")
            if alg in _WEAK_HASHES or alg not in hashlib.algorithms_available:
                raise SgpatchError(f"{path.name}: {name} uses unsupported RECORD hash {alg!r}")
            try:
                data = zf.read(info)
            except (zipfile.BadZipFile, OSError, EOFError) as e:
                raise SgpatchError(f"{path.name}: {name} is corrupt: {e}") from None
            if _urlsafe_digest(alg, data) != digest:
                raise SgpatchError(f"{path.name}: {name} does not match its RECORD hash")
            if size and size != str(len(data)):
                raise SgpatchError(f"{path.name}: {name} is {len(data)} bytes, RECORD says {size}")
            hashes[name] = want
            seen.add(name)
        missing = sorted(n for n, (h, _) in rows.items() if n not in seen and n not in unsigned)
        if missing:
            raise SgpatchError(f"{path.name}: RECORD lists {missing[0]} but the wheel lacks it")
    return hashes


def _check_member_name(name: str, path: Path) -> None:
    p = PurePosixPath(name)
    if p.is_absolute() or ".." in p.parts or "\\" in name:
        raise SgpatchError(f"{path.name}: unsafe member path {name!r}", ExitCode.UNSAFE)


def _stamp(path: Path) -> Path:
    return path.parent / ".verified" / f"{path.name}.ok"


def _stamp_text(key: _WheelKey) -> str:
    return f"{key.size} {key.mtime_ns}\n"


def _verify_cached(path: Path) -> None:
    """Verify a cached wheel once per (size, mtime); a stamp spares other processes the work."""
    try:
        if _stamp(path).read_text() == _stamp_text(_WheelKey.of(path)):
            return
    except OSError:
        pass
    verify_wheel(path)
    _write_stamp(path)


def _write_stamp(path: Path) -> None:
    stamp = _stamp(path)
    stamp.parent.mkdir(exist_ok=True)
    tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}")
    tmp.write_text(_stamp_text(_WheelKey.of(path)))
    os.replace(tmp, stamp)


@functools.lru_cache(maxsize=64)
def _record_for(key: _WheelKey) -> dict[str, str]:
    """RECORD of a wheel already verified by `wheel_path` (parsing only, no re-hashing)."""
    zf = _zip_for(key)
    rows = _parse_record(zf.read(_record_name(zf, key.path)).decode("utf-8"), key.path)
    return {name: h for name, (h, _size) in rows.items() if h}


@functools.lru_cache(maxsize=8)
def _zip_for(key: _WheelKey) -> zipfile.ZipFile:
    return _open_zip(key.path)


# ---------------------------------------------------------------------------------------------
# reading and extracting


def record(version: str | Version) -> dict[str, str]:
    """RECORD of the release: wheel-relative path -> "sha256=<urlsafe b64>" (checked)."""
    return dict(_record_for(_WheelKey.of(wheel_path(version))))


def sizes(version: str | Version) -> dict[str, int]:
    """Wheel-relative path -> size in bytes, of every file the release's wheel holds."""
    zf = _zip_for(_WheelKey.of(wheel_path(version)))
    return {i.filename: i.file_size for i in zf.infolist() if not i.is_dir()}


def _member_name(relpath: str) -> str:
    """Accept wheel-relative (`sglang/srt/x.py`) and package-relative (`srt/x.py`) paths."""
    rel = relpath.replace("\\", "/").lstrip("/")
    if rel.startswith("python/sglang/"):
        rel = rel[len("python/") :]
    if rel.startswith(f"{PACKAGE}/") or ".dist-info/" in rel:
        return rel
    return f"{PACKAGE}/{rel}"


def read_member(version: str | Version, relpath: str) -> bytes:
    """The exact bytes of one file of the release, read straight from the wheel."""
    key = _WheelKey.of(wheel_path(version))
    name = _member_name(relpath)
    zf = _zip_for(key)
    try:
        return zf.read(name)
    except KeyError:
        raise SgpatchError(f"sglang {_release(version)} has no file {name}") from None
    except (zipfile.BadZipFile, OSError) as e:
        raise SgpatchError(f"{key.path.name}: {name} is corrupt: {e}") from None


def extract(
    version: str | Version,
    dest: Path,
    layout: Layout,
    members: Callable[[str], bool] | None = None,
) -> Path:
    """Extract the release under `dest` in `layout`; return the package root.

    site-packages: `dest/sglang/` plus `dest/sglang-V.dist-info/`; checkout: `dest/python/sglang/`
    (no dist-info, as in a git clone). `members` gets each wheel-relative path
    (`sglang/srt/layers/communicator.py`) and returns whether to extract it; extracting only what a
    test needs is much faster than a full tree.
    """
    if layout not in LAYOUTS:
        raise SgpatchError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    key = _WheelKey.of(wheel_path(version))
    dest = Path(dest)
    base = dest / "python" if layout == "checkout" else dest
    root = base / PACKAGE
    root.mkdir(parents=True, exist_ok=True)
    made: set[Path] = {root}
    zf = _zip_for(key)
    for info in zf.infolist():
        name = info.filename
        if info.is_dir():
            continue
        in_pkg = name.startswith(f"{PACKAGE}/")
        if not in_pkg and (layout == "checkout" or ".dist-info/" not in name):
            continue
        if members is not None and not members(name):
            continue
        _check_member_name(name, key.path)
        target = base.joinpath(*PurePosixPath(name).parts)
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        try:
            data = zf.read(info)
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            raise SgpatchError(f"{key.path.name}: {name} is corrupt: {e}") from None
        target.write_bytes(data)
        mode = (info.external_attr >> 16) & 0o777
        if mode & 0o111:
            target.chmod(0o755)
    return root


def _package_root(tree: Path, layout: Layout) -> Path:
    return (tree / "python" / PACKAGE) if layout == "checkout" else (tree / PACKAGE)


def pristine_tree(version: str | Version, layout: Layout = "site-packages") -> Path:
    """A full read-only tree under `<cache>/trees/<V>-<layout>/`; returns its package root.

    Built once (under a file lock, renamed into place atomically) and shared: never write to it,
    copy it (`copy_tree`) instead.
    """
    from filelock import FileLock

    rel = _release(version)
    if layout not in LAYOUTS:
        raise SgpatchError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    trees = cache_dir() / "trees"
    final = trees / f"{rel}-{layout}"
    if final.is_dir():
        return _package_root(final, layout)
    trees.mkdir(parents=True, exist_ok=True)
    with FileLock(str(trees / f".{rel}-{layout}.lock"), timeout=900):
        if not final.is_dir():
            tmp = Path(tempfile.mkdtemp(prefix=f".{rel}-{layout}-", dir=trees))
            try:
                extract(rel, tmp, layout)
                _make_read_only(tmp)
                os.replace(tmp, final)
            except BaseException:
                _make_writable(tmp)
                shutil.rmtree(tmp, ignore_errors=True)
                raise
    return _package_root(final, layout)


def copy_tree(
    version: str | Version,
    dest: Path,
    layout: Layout = "site-packages",
    members: Callable[[str], bool] | None = None,
) -> Path:
    """A fresh writable copy of the release under `dest`; returns its package root.

    Without `members` the shared pristine tree is copied (about a second for 0.5.23); with it, only
    the chosen members are extracted from the wheel, which is far faster for a handful of files.
    """
    if members is not None:
        return extract(version, dest, layout, members)
    src_root = pristine_tree(version, layout)
    src = src_root.parent.parent if layout == "checkout" else src_root.parent
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for child in src.iterdir():
        if child.is_dir():
            shutil.copytree(child, dest / child.name, copy_function=shutil.copyfile)
        else:
            shutil.copyfile(child, dest / child.name)
    _make_writable(dest)
    return _package_root(dest, layout)


def _make_read_only(top: Path) -> None:
    """Drop write bits bottom-up so a stray test write to the shared tree fails loudly."""
    for dirpath, _dirs, files in os.walk(top, topdown=False):
        for f in files:
            p = os.path.join(dirpath, f)
            os.chmod(p, stat.S_IMODE(os.lstat(p).st_mode) & ~0o222)
        os.chmod(dirpath, 0o555)


def _make_writable(top: Path) -> None:
    if not top.exists():
        return
    os.chmod(top, 0o755)
    for dirpath, dirs, files in os.walk(top):
        for d in dirs:
            os.chmod(os.path.join(dirpath, d), 0o755)
        for f in files:
            p = os.path.join(dirpath, f)
            os.chmod(p, stat.S_IMODE(os.lstat(p).st_mode) | 0o200)


# ---------------------------------------------------------------------------------------------
# the package index


def _pip_index_versions(prereleases: bool) -> str:
    """Raw `pip index versions sglang` output (stdout); raises OSError/CalledProcessError."""
    cmd = [sys.executable, "-m", "pip", "index", "versions", *PIP_TARGET_FLAGS, PACKAGE]
    if prereleases:
        cmd.append("--pre")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    return proc.stdout


def _parse_index_output(text: str) -> list[Version]:
    m = re.search(r"^Available versions:(.*)$", text, re.MULTILINE)
    if m is None:
        raise ValueError("no 'Available versions:' line")
    out = []
    for tok in m.group(1).split(","):
        try:
            out.append(Version(tok.strip()))
        except InvalidVersion:
            continue
    return out


def index_versions(spec: str = ">=0.5.5,<0.6", *, prereleases: bool = False) -> list[Version]:
    """Releases on the package index matching `spec`, ascending; rc/dev only if asked.

    If the index cannot be reached, the cached wheels stand in (with a logged warning), so offline
    runs still know which releases they can test.
    """
    try:
        spec_set = SpecifierSet(spec)
    except InvalidSpecifier:
        raise SgpatchError(f"not a PEP 440 version specifier: {spec!r}") from None
    try:
        found = _parse_index_output(_pip_index_versions(prereleases))
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        found = cached_versions()
        log.warning("package index unreachable (%s); using %d cached wheels", e, len(found))
        if not found:
            raise SgpatchError(
                f"cannot list sglang releases: the index is unreachable and {_wheels_dir()} "
                "holds no wheels"
            ) from None
    return sorted({v for v in found if spec_set.contains(v, prereleases=prereleases)})
