"""Getting a release's wheel: from the cache, else from the package index with pip.

Only `sys.executable -m pip` talks to the network, and only when a wheel is missing. A wheel
found in the cache is verified once per (size, mtime) (`wheels.verify_wheel`); one that fails
is removed and downloaded again. Versions are PEP 440 strings; a local label (`0.5.10+cu130`)
names a build of the same source release, so it is dropped when looking for the wheel.

Downloads are reported on stderr: off a terminal (a build log) one line per wheel with its size,
and for a batch (`fetch`, `matrix`, `lint`) a final line; on a terminal a rich progress bar
(rich is imported only then).
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import parse_wheel_filename
from packaging.version import Version

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.fs import atomic
from sgpatch.pyrun import module_command
from sgpatch.releases import folder, wheels

PACKAGE = "sglang"
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


def release(version: str | Version) -> Version:
    """The release a version string names: PEP 440, local label dropped."""
    try:
        v = version if isinstance(version, Version) else Version(str(version).strip())
    except ValueError:  # InvalidVersion, or digits past int()'s limit
        raise SgpatchError(f"not a PEP 440 version: {version!r}", ExitCode.BAD_INPUT) from None
    return Version(v.public)


def cached_wheels() -> dict[Version, Path]:
    """Cached sglang wheels by release; pure-python wheels win over binary ones (same sources).
    A link, FIFO or folder named like a wheel is one line (never opened). The listing is kept
    while the folder's mtime stays (an entry added or removed changes it)."""
    where = folder.wheels_dir()
    folder.drop_old_trees()
    if not folder.folder(where, make=False):
        return {}
    return dict(_listing(where, where.stat().st_mtime_ns))


@functools.lru_cache(maxsize=4)
def _listing(where: Path, _mtime_ns: int) -> dict[Version, Path]:
    found: dict[Version, Path] = {}
    for p in sorted(
        where.glob(f"{PACKAGE}-*.whl"), key=lambda p: ("none-any" not in p.name, p.name)
    ):
        try:
            name, ver, _build, _tags = parse_wheel_filename(p.name)
        except ValueError:  # a bad name or version (InvalidWheelFilename, InvalidVersion)
            continue
        if name == PACKAGE and ver not in found and folder.regular_file(p) is not None:
            found[ver] = p
    return found


def cached_versions() -> list[Version]:
    """Releases whose wheel is already in the cache, ascending."""
    return sorted(cached_wheels())


def cached_snapshots() -> dict[Version, Path]:
    """The snapshots `port --to-tree` kept (sgpatch.releases.snapshot), by public version:
    read like wheels, never listed as releases."""
    from sgpatch.releases.snapshot import snapshots_dir

    where = snapshots_dir(folder.cache_dir())
    if not folder.folder(where, make=False):
        return {}
    found: dict[Version, Path] = {}
    for p in sorted(where.glob(f"{PACKAGE}-*.whl")):
        try:
            name, ver, _build, _tags = parse_wheel_filename(p.name)
        except ValueError:  # a bad name or version (InvalidWheelFilename, InvalidVersion)
            continue
        if name == PACKAGE and ver.is_prerelease and folder.regular_file(p) is not None:
            found[ver] = p
    return found


def _cached(rel: Version) -> Path | None:
    """The cached wheel of a release, or the kept snapshot of a pre-release version."""
    path = cached_wheels().get(rel)
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
    rels = list(dict.fromkeys(release(v) for v in versions))
    cached = {**cached_snapshots(), **cached_wheels()}
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
        f"{time.monotonic() - start:.1f} s, into {folder.wheels_dir()}"
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
# downloads


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
    """The verified cached wheel for `version`, downloading it first if it is missing (or if
    the cached one fails its check: it is removed and fetched again)."""
    rel = release(version)
    path = _cached(rel)
    if path is not None:
        why = _verify_cached(path)
        if why is None:
            return path
        if path.parent != folder.wheels_dir():  # a snapshot: nothing to download it again from
            raise SgpatchError(f"{why}; port --to-tree of its tree keeps it anew")
        wheels.discard(path)
        if _OFFLINE[0]:
            raise SgpatchError(f"{why}; removed it from the cache (--offline: `sgpatch fetch "
                               f"{rel}` downloads it again)")  # fmt: skip
        _say(f"sgpatch: {why}; removed it from the cache")
    if _OFFLINE[0]:
        raise SgpatchError(f"sglang {rel} is not in the release cache (--offline); "
                           f"`sgpatch fetch {rel}` first")  # fmt: skip
    return _download(rel)


_checked: set[tuple[Path, int, int]] = set()  # (path, size, mtime) this process verified


def _verify_cached(path: Path) -> str | None:
    """None when the wheel checks out (once per size and mtime: its stamp says so, and this
    process remembers it), else why not."""
    st = folder.regular_file(path)
    key = (path, st.st_size, st.st_mtime_ns) if st is not None else None
    if key in _checked:
        return None
    if wheels.checked_stamp(path):
        _checked.add(key)  # type: ignore[arg-type]
        return None
    try:
        wheels.verify_wheel(path)
    except SgpatchError as e:
        return e.message
    wheels.write_stamp(path)
    if key is not None:
        _checked.add(key)
    return None


def _unwritable(where: Path, e: OSError) -> SgpatchError:
    return SgpatchError(
        f"release cache: cannot write {where}: {e.strerror or e}; set ${folder.CACHE_ENV} to a "
        "folder you can write",
        ExitCode.BAD_INPUT,
    )


def _download(rel: Version) -> Path:
    """Fetch the wheel with pip into a temp dir in the cache, verify it, move it in atomically."""
    from sgpatch.fs import lock as fslock
    from sgpatch.fs.regular import OddFile

    where = folder.wheels_dir()
    folder.folder(where, make=True)
    lock = where / f".{PACKAGE}-{rel}.lock"
    folder.regular_file(lock)  # a link there is refused at once: it would lead elsewhere
    try:
        with fslock.held(lock, 900):
            path = cached_wheels().get(rel)  # another worker may have fetched it meanwhile
            if path is None:
                path = _download_locked(rel, where)
    except fslock.Busy:
        raise SgpatchError(
            f"timed out waiting for another process downloading sglang=={rel}", ExitCode.UNSAFE
        ) from None
    except OddFile as odd:
        folder.regular_file(lock)  # planted since the check: the cache's own one line
        raise SgpatchError(f"release cache: {lock} is {odd.kind}") from None
    except OSError as e:
        raise _unwritable(where, e) from None
    except NotImplementedError:  # no kernel locks on this file system (sgpatch.fs.lock)
        raise _unwritable(where, OSError(0, "the filesystem has no file locks")) from None
    if cached_wheels().get(rel) != path:
        raise SgpatchError(f"pip downloaded a wheel that is not sglang {rel}: {path.name}")
    return path


def _download_locked(rel: Version, where: Path) -> Path:
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=where))
    try:
        got = _pip_download(str(rel), tmp)
        wheels.verify_wheel(got)
        path = where / got.name
        atomic.rename_path(got, path)
        wheels.write_stamp(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _tell_download(path, time.monotonic() - start)
    return path


def _tell_download(path: Path, seconds: float) -> None:
    size = path.stat().st_size
    _downloads.append(Download(path.name, size, seconds))
    _say(f"sgpatch: downloaded {path.name} ({_mb(size)} in {seconds:.1f} s)")


def _pip_download(version: str, dest: Path) -> Path:
    """Run `pip download` for one sglang release into `dest`; return the wheel it saved."""
    cmd = [*module_command("pip"), "download", *PIP_DOWNLOAD_FLAGS, "-d", str(dest)]
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
                from sgpatch.tree.gitread import error_reason

                raise SgpatchError(
                    f"cannot check out {ref} from {url}: {error_reason(e)}"
                ) from None

    _with_progress(f"cloning {url} at {ref}", clone)
    root = dest / "python" / PACKAGE
    if not (root / "srt").is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        raise SgpatchError(f"{url} at {ref} has no python/sglang/srt: not an SGLang repository")
    return root
