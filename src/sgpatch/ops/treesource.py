"""An edited SGLang tree as one input to `sgpatch import --tree`: every file that differs from
the pristine release, of whatever kind (Python, JSON, YAML, any text; a symlink; a file whose
execute bit changed; a file the release ships that is gone), and every file the tree holds
that the release does not ship.

What a patch set cannot carry is left out and named, never passed over: a binary file (a NUL
byte), a symlink whose target leaves the tree, anything that is neither a file nor a symlink
(a FIFO, a socket, a device). Python's caches (`__pycache__/`, `*.pyc`) and sgpatch's own state
(`.sgpatch/`) are not part of the tree. The tree is only read, never through a symlink.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK
from sgpatch.errors import SgpatchError, bad_input
from sgpatch.ops.importer import Step, executables, pristine
from sgpatch.ops.sources import BINARY, EXCLUDED, Section, Source, excluded

CACHES = frozenset({"__pycache__", ".sgpatch"})  # folders that are no part of the tree
CACHE_SUFFIXES = (".pyc", ".pyo")
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device",
          stat.S_IFBLK: "a device", stat.S_IFDIR: "a folder"}  # fmt: skip


@dataclass(frozen=True)
class Entry:
    """One path of the tree: its bytes (a symlink's: its target) and git mode, or why a
    patch set cannot carry it."""

    data: bytes | None
    mode: int
    lost: str = ""  # why it is no file or symlink a set can make (a binary file is carried
    # as far as comparing goes: the release may ship it unchanged)
    binary: bool = False


@dataclass(frozen=True)
class TreeInput:
    """The tree as one input: its file sections (kept and left out) and what it changes."""

    source: Source
    step: Step


def tree_source(root: Path, version: Version, name: str, exclude: Sequence[str] = ()) -> TreeInput:
    """Every path of the tree at `root` that differs from release `version`, as one input."""
    shipped = _shipped(version)
    found = _walk(root)
    changed = sorted(
        rel for rel in {*shipped, *found} if _differs(rel, shipped.get(rel), found.get(rel))
    )
    if not changed:
        raise bad_input(f"--tree {root}: no file differs from sglang {version}")
    sections, before, after, modes = [], {}, {}, {}
    for rel in changed:
        entry = found.get(rel)
        if excluded(rel, rel, exclude):
            sections.append(Section((), rel, None, None, EXCLUDED))
        elif entry is not None and (entry.lost or entry.binary):
            sections.append(Section((), rel, None, None, entry.lost or BINARY, lost=True))
        else:
            sections.append(Section((), rel, rel, rel if rel in shipped else None))
            before[rel] = pristine(version, rel)
            after[rel] = entry.data if entry is not None else None
            old = shipped[rel][1] if rel in shipped else REGULAR
            modes[rel] = (old, entry.mode if entry is not None else old)
    body = f"Every file of {root} that differs from the pristine sglang {version}."
    src = Source(label=str(root), stem=name, sections=tuple(sections), body=body)
    return TreeInput(src, Step(before, after, modes))


def _shipped(version: Version) -> dict[str, tuple[str, int]]:
    """The release's package files: RECORD digest (`sha256=...`) and git mode."""
    from sgpatch.releases import cache as releases

    pre, runs = f"{releases.PACKAGE}/", executables(version)
    return {
        name[len(pre) :]: (digest, EXECUTABLE if name[len(pre) :] in runs else REGULAR)
        for name, digest in releases.record(version).items()
        if name.startswith(pre)
    }


def _differs(rel: str, shipped: tuple[str, int] | None, entry: Entry | None) -> bool:
    """The tree's path is not the release's: another kind, other bytes or another mode."""
    from sgpatch.releases.record import digest as record_digest

    if shipped is None or entry is None:
        return shipped is not entry
    if entry.lost or entry.data is None or entry.mode != shipped[1]:
        return True
    alg, _, b64 = shipped[0].partition("=")
    return record_digest(alg, entry.data) != b64


def _walk(root: Path) -> dict[str, Entry]:
    """Every path under the package root (caches and sgpatch's state aside), never following
    a symlink: a symlinked folder is one entry, a symlink."""
    out: dict[str, Entry] = {}
    for top, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if d not in CACHES]
        base = Path(top)
        for name in [*files, *(d for d in dirs if (base / d).is_symlink())]:
            if name.endswith(CACHE_SUFFIXES):
                continue
            rel = (base / name).relative_to(root).as_posix()
            out[rel] = _entry(root, rel)
    return out


def _entry(root: Path, rel: str) -> Entry:
    from sgpatch.ops.fileplan import check_link
    from sgpatch.tree.files import read_bytes

    st = os.lstat(root / rel)
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(root / rel)
        try:
            check_link(root, rel, target)
        except SgpatchError as exc:
            why = exc.message.rsplit(": ", 1)[-1]
            return Entry(None, SYMLINK, f"a symlink to {target!r}, which a set never makes: {why}")
        return Entry(target.encode("utf-8", "surrogateescape"), SYMLINK)
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a file")
        return Entry(None, REGULAR, f"{kind}: a patch set carries files and symlinks only")
    data = read_bytes(root, rel)
    mode = EXECUTABLE if st.st_mode & 0o111 else REGULAR
    return Entry(data, mode, binary=data is not None and b"\0" in data)
