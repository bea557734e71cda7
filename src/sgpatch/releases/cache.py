"""The release cache: pristine SGLang releases, straight from the package index.

Tests, the benchmark and porting work need the exact bytes SGLang shipped, in both layouts sgpatch
supports. Wheels are downloaded once into `$SGPATCH_CACHE` (default `~/.cache/sgpatch`), checked
against their own RECORD (every member's sha256), and read in place from there: no unpacked tree
is kept, and each file a run reads is hashed against RECORD again the first time it is read.
Deleting the cache is a plain `rm -rf`.

This module is the one door the rest of sgpatch uses; the concepts live beside it: folder (where
the cache is, what an odd layout says), record (the one RECORD reader), wheels (verifying and
reading one wheel), download (cache or pip), trees (a release written out from its wheel), index
(which releases exist).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import SgpatchError
from sgpatch.releases.download import (
    PACKAGE,
    PIP_DOWNLOAD_FLAGS,
    PIP_TARGET_FLAGS,
    Download,
    cache_only,
    cached_snapshots,
    cached_versions,
    cached_wheels,
    downloaded,
    fetch,
    git_tree,
    release,
    set_reporter,
    wheel_path,
)
from sgpatch.releases.folder import CACHE_ENV, cache_dir
from sgpatch.releases.index import index_versions
from sgpatch.releases.trees import LAYOUTS, Laid, Layout, copy_tree, extract, lay, relay
from sgpatch.releases.wheels import Wheel, verify_wheel

__all__ = [
    "CACHE_ENV",
    "LAYOUTS",
    "PACKAGE",
    "PIP_DOWNLOAD_FLAGS",
    "PIP_TARGET_FLAGS",
    "Download",
    "Fetched",
    "Laid",
    "Layout",
    "cache_dir",
    "cache_only",
    "cached_snapshots",
    "cached_versions",
    "cached_wheels",
    "copy_tree",
    "downloaded",
    "executables",
    "extract",
    "fetch",
    "git_tree",
    "has_member",
    "index_versions",
    "lay",
    "member_name",
    "read_member",
    "read_members",
    "record",
    "relay",
    "release",
    "set_reporter",
    "sizes",
    "verify_wheel",
    "wheel_path",
]


@dataclass(frozen=True)
class Fetched:
    """A release `fetch` made sure of: from the index, its checked wheel (and the tree written
    from it, if --dest asked for one); with --git, the checkout of `ref` at `root`."""

    version: str
    root: Path | None
    wheel: Path | None = None
    ref: str | None = None  # --git: the ref checked out (then there is no wheel)

    def to_json(self) -> dict[str, object]:
        """The release in `fetch --json`'s `releases`, or with --git its `checkouts`
        (docs/json.md)."""
        root = None if self.root is None else str(self.root)
        if self.ref is not None:
            return {"ref": self.ref, "root": root, "version": self.version}
        return {"version": self.version, "wheel": str(self.wheel), "root": root}


def _wheel(version: str | Version) -> Wheel:
    return Wheel.of(wheel_path(version))


def record(version: str | Version) -> dict[str, str]:
    """RECORD of the release: wheel-relative path -> "sha256=<urlsafe b64>" (checked)."""
    return dict(_wheel(version).record)


def sizes(version: str | Version) -> dict[str, int]:
    """Wheel-relative path -> size in bytes, of every file the release's wheel holds."""
    return {name: info.file_size for name, info in _wheel(version).infos.items()}


def executables(version: str | Version) -> frozenset[str]:
    """Wheel-relative paths of the release's files whose zip mode has an execute bit (laid
    out 0755, as `trees` does; every other file 0644)."""
    return frozenset(
        name for name, info in _wheel(version).infos.items() if (info.external_attr >> 16) & 0o111
    )


def member_name(relpath: str) -> str:
    """Accept wheel-relative (`sglang/srt/x.py`) and package-relative (`srt/x.py`) paths."""
    rel = relpath.replace("\\", "/").lstrip("/")
    if rel.startswith("python/sglang/"):
        rel = rel[len("python/") :]
    if rel.startswith(f"{PACKAGE}/") or ".dist-info/" in rel:
        return rel
    return f"{PACKAGE}/{rel}"


def has_member(version: str | Version, relpath: str) -> bool:
    """Whether the release ships this file (package- or wheel-relative path)."""
    return member_name(relpath) in _wheel(version).infos


def read_members(version: str | Version, relpaths: Iterable[str]) -> dict[str, bytes]:
    """`read_member` of many files at once (relpath -> bytes): the wheel found and read into
    memory once, each member checked against RECORD as one read is (port reads every Python
    file of a release to find where upstream moved code: 3,700 single reads took 5.8 s)."""
    wheel = _wheel(version)
    out = {}
    with wheel.loaded():
        for rel in relpaths:
            name = member_name(rel)
            try:
                out[rel] = wheel.read(name)
            except KeyError:
                raise SgpatchError(f"sglang {release(version)} has no file {name}") from None
    return out


def read_member(version: str | Version, relpath: str) -> bytes:
    """The exact bytes of one file of the release, read straight from the wheel (hashed
    against RECORD the first time this process reads it)."""
    wheel = _wheel(version)
    name = member_name(relpath)
    try:
        return wheel.read(name)
    except KeyError:
        raise SgpatchError(f"sglang {release(version)} has no file {name}") from None
