"""A hunk whose whole change the pristine release already has, at its place: dropped, with
evidence naming what it matched.

The rule is placement.present's (docs/engine.md, "Already there"): in Python, every statement
the hunk changes has on the release its counterpart (same enclosing def/class, kind and
identity) that already reads as the hunk's result; a line found elsewhere in the scope is no
evidence. Other files: the added lines stand as one block beside the hunk's own context. The
evidence is read from the pristine release only, never from the workspace or from another
hunk of the set. Port asks only about hunks with a real change (added and removed lines that
do not just cancel out) and at least one changed line of 10 characters or more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from sgpatch.diff.unified import Hunk, strip_eol
from sgpatch.placement import present

_DISTINCT = 10


@dataclass(frozen=True)
class Evidence:
    """Where the pristine release already has a hunk's change: each statement it matched (in
    Python), or the block of lines beside the hunk's own context (other files)."""

    matched: tuple[str, ...]

    def text(self) -> list[str]:
        return ["already there on the pristine release:", *(f"  {m}" for m in self.matched)]


def _key(line: str) -> str:
    return strip_eol(line).rstrip()


def _changed(hunk: Hunk) -> tuple[Counter, Counter]:
    plus = Counter(_key(ln.text) for ln in hunk.lines if ln.kind == "+" and ln.text.strip())
    minus = Counter(_key(ln.text) for ln in hunk.lines if ln.kind == "-" and ln.text.strip())
    return plus, minus


class Files:
    """The base's and the release's lines of one file, with the release's lines counted once
    (a file has many hunks)."""

    def __init__(self, base: Sequence[str], release: Sequence[str]) -> None:
        self.base, self.release = base, release

    def counts(self) -> Counter:
        """Every line of the release's file (as the rule compares them), counted."""
        if not hasattr(self, "_counts"):
            self._counts = Counter(_key(x) for x in self.release)
        return self._counts


def already_there(
    hunk: Hunk,
    at: int,
    base: Sequence[str],
    release: Sequence[str],
    files: Files | None = None,
    python: bool = True,
) -> Evidence | None:
    """Evidence that `release` (lines) already holds the whole change of `hunk`, which places
    on `base` (lines) with its pre-image starting at 0-based line `at`; None if it does not.
    `files`: the same two files, counted once, when the caller asks for many hunks.
    `release` is the pristine release's file: never the workspace, never another hunk's
    result. Python files are judged on code (`present.judge`), others by `present.block_there`;
    where the rule cannot decide, None (the hunk is merged, as git would)."""
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
    if not python:
        at_rel = present.block_there(hunk, release)
        if at_rel is None:
            return None
        return Evidence((f"its added lines, as one block beside its context, at line {at_rel + 1} "
                         "of the release's file",))  # fmt: skip
    verdict = present.judge(hunk, base, at, release)
    return Evidence(verdict.matched) if verdict.there else None
