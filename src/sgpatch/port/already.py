"""A hunk whose whole change upstream already made, in the same scope: dropped, with evidence.

"Already applied in scope" is the shared placement rule (`sgpatch.placement.present`: every
added line there, each run of added lines together and in order, every removed line gone;
blank lines and trailing whitespace aside; indentation counts). Port asks it about the scope
the hunk changes: the innermost def/class holding its changed lines on the base (by name
path), which the release must have exactly once; at module level, the whole file. Port asks
only about hunks with a real change (added and removed lines that do not just cancel out) and
at least one changed line of 10 characters or more (too little to tell by otherwise).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from sgpatch.diff.unified import Hunk, strip_eol
from sgpatch.placement import present
from sgpatch.placement import scope as sc

_DISTINCT = 10


@dataclass(frozen=True)
class Evidence:
    """Where the release already has a hunk's change: its scope, and per added line the line
    of the release's file that holds it."""

    scope: str
    lines: tuple[tuple[int, str], ...]  # (1-based line in the release's file, the text)
    removed: int  # how many removed lines are gone

    def text(self) -> list[str]:
        out = [f"in {self.scope} of the release's file, every line the hunk adds is there:"]
        out += [f"  line {n}: {t.strip()}" for n, t in self.lines[:6]]
        if len(self.lines) > 6:
            out.append(f"  ... and {len(self.lines) - 6} more")
        if self.removed:
            out.append(f"and the {self.removed} line(s) it removes are gone")
        return out


def _key(line: str) -> str:
    return strip_eol(line).rstrip()


def _changed(hunk: Hunk) -> tuple[Counter, Counter]:
    plus = Counter(_key(ln.text) for ln in hunk.lines if ln.kind == "+" and ln.text.strip())
    minus = Counter(_key(ln.text) for ln in hunk.lines if ln.kind == "-" and ln.text.strip())
    return plus, minus


def _scope_at(found: Sequence[sc.Block], start: int, end: int) -> list[sc.Block]:
    """The chain (outermost first) of blocks whose body holds lines start..end."""
    chain = [b for b in found if b.line < start and end <= b.end]
    return sorted(chain, key=lambda b: b.depth)


def _chain_of(found: Sequence[sc.Block], b: sc.Block) -> tuple[str, ...]:
    outer = sorted((x for x in found if x.start <= b.line < x.end and x.depth < b.depth),
                   key=lambda x: x.depth)  # fmt: skip
    return (*(x.name for x in outer), b.name)


class Files:
    """The base's and the release's lines of one file, with their def/class blocks read once
    (tokenizing a 5,000-line file takes tens of milliseconds; a file has many hunks)."""

    def __init__(self, base: Sequence[str], release: Sequence[str]) -> None:
        self.base, self.release = base, release
        self._blocks: dict[str, tuple[sc.Block, ...]] = {}

    def counts(self) -> Counter:
        """Every line of the release's file (as the rule compares them), counted."""
        if not hasattr(self, "_counts"):
            self._counts = Counter(_key(x) for x in self.release)
        return self._counts

    def blocks(self, side: str) -> tuple[sc.Block, ...]:
        if side not in self._blocks:
            self._blocks[side] = sc.blocks(self.base if side == "base" else self.release)
        return self._blocks[side]


def already_there(
    hunk: Hunk, at: int, base: Sequence[str], release: Sequence[str], files: Files | None = None
) -> Evidence | None:
    """Evidence that `release` (lines) already holds the whole change of `hunk`, which places
    on `base` (lines) with its pre-image starting at 0-based line `at`; None if it does not.
    `files`: the same two files with their blocks, when the caller asks for many hunks."""
    files = files or Files(base, release)
    plus, minus = _changed(hunk)
    net_plus, net_minus = plus - minus, minus - plus
    if not net_plus and not net_minus:
        return None
    if not any(len(t.strip()) >= _DISTINCT for t in [*net_plus, *net_minus]):
        return None
    if net_plus:  # cheap first: each added line must be in the release's file at all
        everywhere = files.counts()
        if any(everywhere[t] < n for t, n in net_plus.items()):
            return None
    first = next(i for i, ln in enumerate(hunk.lines) if ln.kind != " ")
    pre = [ln for ln in hunk.lines[:first] if ln.kind == " "]
    start = at + len(pre)
    removed = sum(1 for ln in hunk.lines if ln.kind == "-")
    end = start + removed
    changed = [ln.text for ln in hunk.lines if ln.kind != " " and ln.text.strip()]
    indent = min(len(t) - len(t.lstrip()) for t in changed)
    found_base = files.blocks("base")
    chain = [b for b in _scope_at(found_base, start, max(end, start))
             if len(base[b.line]) - len(base[b.line].lstrip()) < indent]  # fmt: skip
    region_rel = (0, len(release))
    where = "module level"
    if chain:
        inner = chain[-1]
        names = _chain_of(found_base, inner)
        found_rel = files.blocks("release")
        same = [b for b in found_rel if b.name == inner.name and _chain_of(found_rel, b) == names]
        if len(same) != 1:
            return None
        region_rel = (same[0].start, same[0].end)
        where = ".".join(names)
    lo, hi = region_rel
    at_rel = present.already_there(hunk, release, lo, hi)
    if at_rel is None:
        return None
    found: list[tuple[int, str]] = []
    i = at_rel
    for text in (_key(ln.text) for ln in hunk.lines if ln.kind == "+" and ln.text.strip()):
        while i < hi and _key(release[i]) != text:
            i += 1
        if i < hi:
            found.append((i + 1, text))
    return Evidence(where, tuple(sorted(found)), sum(net_minus.values()))
