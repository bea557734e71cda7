"""The fold at a port stop: a file a merge or a hand fix left defining a name twice.

A clean three-way merge can add a patch's method a second time to a class upstream extended
with the same method, and a person's fix can do the same (slime's own 0.5.15.post1 decode.py
does). Port stops on it (`merge.python_problem`), and the resolution it suggests is the fold
(placement.foldtext, the one `sgpatch fold` uses on a set): the definition Python runs today
(the later copy) takes the earlier one's place and the dead copy goes, so the code runs as it
did. Only the names the file defines more often than the file the patch was carried onto
(its `before` snapshot, what --continue checks against) are folded.

The suggestion is read off W when a stop is shown, as its markers are (the person may have
edited the file since), and shown as a diff with the command that makes it:
`sgpatch port --fold sglang/FILE --workspace W` (port.resume.fold) writes it into W, as the
person's own edit; then `--continue` takes the file like any fixed one.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from sgpatch.diff.canonical import SYMLINK
from sgpatch.port.statefiles import BEFORE
from sgpatch.port.workspace import PKG, Workspace

SCREEN_DIFF = 40  # diff lines a stop prints per fold (the whole diff: `fix`, --json, --show)


@dataclass(frozen=True)
class Suggested:
    """The fold of one file of W: what is folded (`Fold.describe()` each), the change as a
    unified diff (W's file now -> folded; lines without their newline), the folded bytes."""

    file: str  # package-relative
    folds: tuple[str, ...]
    diff: tuple[str, ...]
    data: bytes

    def to_json(self) -> dict:
        """`port --fold --json`'s document body (docs/json.md); a problem's `fold` is the
        same without `file`."""
        return {"file": f"{PKG}/{self.file}", "folds": list(self.folds), "diff": list(self.diff)}

    def command(self, top: Path | str) -> str:
        """What makes the fold, as typed."""
        return (
            f"sgpatch port --fold {shlex.quote(f'{PKG}/{self.file}')} "
            f"--workspace {shlex.quote(str(top))}"
        )

    def lines(self, top: Path | str, limit: int | None = None) -> list[str]:
        """The suggestion as shown: what is folded, the command, then the diff (its first
        `limit` lines, the cut said)."""
        head = [f"fold: {f}" for f in self.folds]
        head.append(f"to fold it (the code Python runs stays): `{self.command(top)}`")
        diff = list(self.diff)
        if limit is not None and len(diff) > limit:
            cut = len(diff) - limit
            diff = [*diff[:limit], f"... {cut} more lines of the diff (in {top}/.sgpatch-port/fix)"]
        return head + diff


def suggest(rel: str, data: bytes | None, before: bytes | None) -> Suggested | None:
    """The fold of `data` (W's file `rel`) for every name it defines twice in one body where
    `before` did not (the defined-twice rule, placement.pydefs); None when there is none, or
    the file is not Python that parses (markers left, say)."""
    import difflib

    from sgpatch.diff.unified import decode, encode
    from sgpatch.placement.foldtext import fold
    from sgpatch.placement.pydefs import defined_twice

    if data is None or not rel.endswith(".py"):
        return None
    try:
        twice = defined_twice(data, before)
    except (SyntaxError, ValueError):
        return None
    if not twice:
        return None
    text = decode(data)
    got = fold(text, {(t.scope, t.name) for t in twice})
    if not got.folds:
        return None
    diff = difflib.unified_diff(
        text.splitlines(keepends=True), got.text.splitlines(keepends=True),
        f"a/{PKG}/{rel}", f"b/{PKG}/{rel} (folded)", n=2,
    )  # fmt: skip
    shown = tuple(ln.rstrip("\r\n") for ln in diff)
    return Suggested(rel, tuple(f.describe() for f in got.folds), shown, encode(got.text))


def at_stop(ws: Workspace, pid: str, rel: str) -> Suggested | None:
    """The fold of W's file `rel`, a file stopped patch `pid` holds, as W has it now: the
    names it defines twice where the file the patch was carried onto did not."""
    from sgpatch.port import snapshots
    from sgpatch.port.merge import marker_lines

    if not rel.endswith(".py") or ws.mode_pkg(rel) == SYMLINK:
        return None
    data = ws.read_pkg(rel)
    if data is None or marker_lines(data):
        return None  # markers first: a file with them does not parse
    return suggest(rel, data, snapshots.one(ws, BEFORE, pid, rel))


__all__ = ["SCREEN_DIFF", "Suggested", "at_stop", "suggest"]
