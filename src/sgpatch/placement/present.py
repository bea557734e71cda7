"""The one rule for "already applied in scope": a hunk whose whole post-image is already there
in a scope (a def/class body, or any span of lines) changes nothing there.

Exactly: every added line is present, each run of consecutive added lines together and the
runs in order, and every removed line is gone (a removed line the post-image keeps, as context
or re-added, may stay), blank lines and trailing whitespace aside; indentation counts. Upstream
often takes a patch's method with a blank line of difference, or a patch's block a few lines
from where the patch put it; the hunk's exact post-image is then nowhere, yet applying it would
add a second copy. One term (`already applied`) and one rule, used by the engine and by port.
Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from sgpatch.diff.unified import Hunk


def key(line: str) -> str:
    """A line as the rule compares it: trailing whitespace (and the line ending) dropped,
    indentation and inner spacing kept."""
    return line.rstrip()


def _runs(hunk: Hunk) -> list[list[str]]:
    """The hunk's runs of consecutive added lines, keyed, blank lines dropped."""
    runs: list[list[str]] = []
    prev = ""
    for ln in hunk.lines:
        if ln.kind == "+":
            if prev != "+":
                runs.append([])
            if ln.text.strip():
                runs[-1].append(key(ln.text))
        prev = ln.kind
    return [r for r in runs if r]


def _find_run(keys: Sequence[str], run: Sequence[str], lo: int) -> int | None:
    """First index >= lo in the non-blank `keys` where `run` sits, contiguous."""
    m = len(run)
    for i in range(lo, len(keys) - m + 1):
        if keys[i] == run[0] and list(keys[i : i + m]) == list(run):
            return i
    return None


def already_there(
    hunk: Hunk, lines: Sequence[str], lo: int = 0, hi: int | None = None
) -> int | None:
    """Where (0-based line of `lines`) the hunk's added lines already start inside
    `lines[lo:hi]` when its whole post-image is there by the rule above; None otherwise.

    A hunk that adds nothing (a pure deletion) is there when every removed line is gone; it is
    then reported at `lo`."""
    hi = len(lines) if hi is None else hi
    rows = [i for i in range(lo, hi) if lines[i].strip()]
    keys = [key(lines[i]) for i in rows]
    kept = {key(ln.text) for ln in hunk.lines if ln.kind != "-"}
    removed = {key(ln.text) for ln in hunk.lines if ln.kind == "-" and ln.text.strip()}
    if (removed - kept) & set(keys):
        return None  # a line the hunk removes is still in the scope
    first: int | None = None
    at = 0
    for run in _runs(hunk):
        found = _find_run(keys, run, at)
        if found is None:
            return None
        first = found if first is None else first
        at = found + len(run)
    if first is None:
        return lo if removed else None
    return rows[first]


__all__ = ["already_there", "key"]
