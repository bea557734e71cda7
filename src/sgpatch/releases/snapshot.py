"""Snapshots: SGLang trees that are not releases (a checkout of main, a nightly image's package)
kept in the release cache beside the wheels, so `port --to-tree` can treat one like a release.

`port` reads a release's files again and again (its file list, renames, the merge base of a later
port, the lint at --continue), always from the cache, never from the user's tree, which may move
on meanwhile (a checkout is pulled, an image rebuilt). So the tree is packed once, in wheel form
(`sglang/...` members, a `sglang-V.dist-info/` with METADATA and a RECORD of every file's sha256),
into `<cache>/snapshots/sglang-V-py3-none-any.whl`, V the public version (`0.5.24.dev12`: the
`+g1a2b3c4` label is dropped, as for releases, and a variant's `==0.5.24.dev12` matches it). From
there sgpatch.releases.cache reads it like any cached wheel. docs/tracking-main.md.
"""

from __future__ import annotations

import csv
import io
import os
import zipfile
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import SgpatchError, bad_input
from sgpatch.fs import atomic

PACKAGE = "sglang"
_SKIP_DIRS = frozenset({"__pycache__", ".sgpatch"})
_SKIP_SUFFIXES = (".pyc", ".pyo")


def snapshots_dir(cache: Path) -> Path:
    return cache / "snapshots"


def archive_name(version: Version) -> str:
    return f"{PACKAGE}-{Version(version.public)}-py3-none-any.whl"


def _digest(data: bytes) -> str:
    from sgpatch.releases.record import digest

    return "sha256=" + digest("sha256", data)


def tree_files(root: Path) -> dict[str, Path]:
    """Package-relative path -> file, for every regular file under the package root `root`:
    bytecode, `__pycache__/` and sgpatch's own `.sgpatch/` left out, symlinks not followed (a
    link is not a file the package ships)."""
    out: dict[str, Path] = {}
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            path = Path(dirpath, name)
            if name.endswith(_SKIP_SUFFIXES) or path.is_symlink() or not path.is_file():
                continue
            out[path.relative_to(root).as_posix()] = path
    return out


def _members(root: Path, version: Version) -> tuple[dict[str, bytes], set[str]]:
    """The archive's members (RECORD aside): the package's files and the dist-info's METADATA,
    which keeps the full version (`0.5.24.dev12+g1a2b3c4`) for a tree without `_version.py`;
    and the members that are executable."""
    members: dict[str, bytes] = {}
    executable: set[str] = set()
    try:
        for rel, path in tree_files(root).items():
            members[f"{PACKAGE}/{rel}"] = path.read_bytes()
            if path.stat().st_mode & 0o111:
                executable.add(f"{PACKAGE}/{rel}")
    except OSError as exc:
        raise SgpatchError(f"{root}: cannot read the tree: {exc.strerror or exc}") from None
    info = f"{PACKAGE}-{Version(version.public)}.dist-info"
    members[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {version}\n"
        "Summary: a snapshot of an SGLang tree kept by sgpatch (not a release)\n"
    ).encode()
    return members, executable


def _record(members: dict[str, bytes]) -> tuple[str, bytes]:
    """RECORD as a wheel has it: CSV (a file name may hold a comma), RECORD itself unhashed."""
    info = next(n for n in members if n.endswith(".dist-info/METADATA")).rsplit("/", 1)[0]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for name, data in sorted(members.items()):
        writer.writerow((name, _digest(data), len(data)))
    writer.writerow((f"{info}/RECORD", "", ""))
    return f"{info}/RECORD", out.getvalue().encode()


def _package_record(path: Path) -> dict[str, str] | None:
    """The package rows (`sglang/...` -> hash) of an archive already kept; None if unreadable."""
    try:
        with zipfile.ZipFile(path) as zf:
            name = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
            text = zf.read(name).decode("utf-8")
    except (OSError, zipfile.BadZipFile, StopIteration, UnicodeDecodeError):
        return None
    from sgpatch.releases.record import rows  # the one RECORD reader

    return {r[0]: r[1] for r in rows(text) if len(r) == 3 and r[0].startswith(f"{PACKAGE}/")}


def keep(cache: Path, root: Path, version: Version) -> Path:
    """Pack the tree at `root` as snapshot `version` into the cache; its path. Kept already
    with the same files: that one. Kept with other files under the same public version: bad
    input (exit 2), never replaced behind a workspace or a variant's `base:` that reads it."""
    if not Version(version.public).is_prerelease:
        raise bad_input(
            f"sglang {version} is a release, not a snapshot: port to it with `--to "
            f"{Version(version.public)}`"
        )
    members, executable = _members(root, version)
    folder = snapshots_dir(cache)
    final = folder / archive_name(version)
    if final.is_file():
        kept = _package_record(final)
        mine = {n: _digest(d) for n, d in members.items() if n.startswith(f"{PACKAGE}/")}
        if kept == mine:
            return final
        raise bad_input(
            f"the release cache already keeps another snapshot {Version(version.public)} "
            f"({final}); its files differ from {root}'s: remove it to keep this one"
        )
    folder.mkdir(parents=True, exist_ok=True)
    record_name, record = _record(members)
    with atomic.writing(final, 0o644) as raw, zipfile.ZipFile(raw, "w") as zf:
        for name, data in [*sorted(members.items()), (record_name, record)]:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if name in executable else 0o644) << 16
            zf.writestr(info, data, compresslevel=1)
    return final


__all__ = ["archive_name", "keep", "snapshots_dir", "tree_files"]
