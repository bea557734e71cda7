"""A release's Python files, read once per port, to find where upstream moved code.

Port asks this only when a hunk's code is no longer in its file (port.moved): which other
files of the release define a name (`def NAME`, `class NAME`), hold a line, and where the
lines of a rewritten file went. The files are read from the verified wheel the first time a
question comes (each checked against RECORD, as every read of a release is); a step whose
hunks all stay in their files never reads them. Names are found by their bytes first and
then read with Python's own parser (placement.scope), only in the files that hold them.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.version import Version

from sgpatch.diff.unified import decode, split_lines
from sgpatch.placement import scope as sc


@dataclass(frozen=True)
class Def:
    """One def or class of a release's file: the file, its name path (`ServerArgs.f`), the
    block (0-based lines) and its kind."""

    file: str
    names: tuple[str, ...]
    block: sc.Block

    @property
    def qualified(self) -> str:
        return ".".join(self.names)


class ReleaseIndex:
    """The Python files of one release (package-relative path -> bytes), and what port asks
    of them. One per release and process (`index_of`)."""

    def __init__(self, version: Version) -> None:
        self.version = version
        self._files: dict[str, bytes] | None = None
        self._lines: dict[str, list[str]] = {}

    @property
    def files(self) -> dict[str, bytes]:
        """Every `.py` file of the release, read on the first question."""
        if self._files is None:
            from sgpatch.releases import cache as releases

            names = sorted(n for n in releases.record(self.version) if n.endswith(".py"))
            pkg = [n.split("/", 1)[1] for n in names if n.startswith("sglang/")]
            self._files = releases.read_members(self.version, pkg)
        return self._files

    def lines(self, rel: str) -> list[str]:
        if rel not in self._lines:
            self._lines[rel] = split_lines(decode(self.files.get(rel, b"")))
        return self._lines[rel]

    def holding(self, text: str) -> list[str]:
        """Files whose bytes hold `text` anywhere (a superset of those with it as a line)."""
        needle = text.encode("utf-8", "surrogateescape")
        return [rel for rel, data in self.files.items() if needle in data]

    def defs_named(self, name: str, kind: str) -> list[Def]:
        """Every def/class called `name` (of `kind`: def or class) in the release."""
        out: list[Def] = []
        for rel in self.holding(f"{kind} {name}"):
            out += [d for d in defs_of(rel, self.lines(rel)) if d.block.name == name
                    and d.block.kind == kind]  # fmt: skip
        return out

    def where_lines_went(self, lines: Iterable[str], skip: str) -> Counter:
        """Per file (but `skip`), how many of `lines` (stripped) it holds: where the lines
        of a rewritten file went."""
        wanted = {ln.strip().encode("utf-8", "surrogateescape") for ln in lines}
        out: Counter = Counter()  # a set of each file's lines: C speed, ~0.3 s for 0.5.23
        for rel, data in self.files.items():
            if rel != skip:
                n = len(wanted.intersection(map(bytes.strip, data.split(b"\n"))))
                if n:
                    out[rel] = n
        return out


def defs_of(rel: str, lines: Sequence[str]) -> list[Def]:
    """Every def/class of a file's lines with its name path."""
    found = sc.blocks(lines)
    return [Def(rel, chain_of(found, b), b) for b in found]


def chain_of(found: Sequence[sc.Block], b: sc.Block) -> tuple[str, ...]:
    """The name path of block `b` (outermost first): `ServerArgs.__post_init__`."""
    outer = sorted((x for x in found if x.start <= b.line < x.end and x.depth < b.depth),
                   key=lambda x: x.depth)  # fmt: skip
    return (*(x.name for x in outer), b.name)


def index_of(version: Version) -> ReleaseIndex:
    """The one index of a release in this process (a port asks about one release), by the
    wheel it is read from: another cache (or the wheel fetched again) is another index."""
    from sgpatch.releases import cache as releases

    path = releases.wheel_path(version)
    st = path.stat()
    return _index(version, str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _index(version: Version, _path: str, _size: int, _mtime: int) -> ReleaseIndex:
    return ReleaseIndex(version)


__all__ = ["Def", "ReleaseIndex", "chain_of", "defs_of", "index_of"]
