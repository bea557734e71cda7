"""A small line-based three-way merge, for `revert --force`: no patch file, no git needed.

`revert --force` on a file edited since sgpatch patched it merges two edits of the bytes
sgpatch wrote (`base`): the user's (`ours`, the file now) and the revert (`theirs`, the stored
original). Both are turned into line ranges of `base` with difflib; ranges that do not overlap
are combined, so the user's edit stays and sgpatch's change goes. Unlike `git merge-file`, an
insertion that only touches the other side's range (a line appended right after a change at the
end of the file) is not a conflict: it goes before or after, where it was. Overlapping edits are
a conflict (None): the caller refuses rather than guess.
"""

from __future__ import annotations

from collections.abc import Sequence

Change = tuple[int, int, tuple[bytes, ...]]  # base[i1:i2] becomes the lines


def split(data: bytes) -> list[bytes]:
    """Lines with their endings kept ("\n" only: a CR stays part of its line), byte-exact."""
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    return [*out, parts[-1]] if parts[-1] else out


def _changes(base: Sequence[bytes], other: Sequence[bytes]) -> list[Change]:
    from difflib import SequenceMatcher

    ops = SequenceMatcher(None, base, other, autojunk=False).get_opcodes()
    return [(i1, i2, tuple(other[j1:j2])) for tag, i1, i2, j1, j2 in ops if tag != "equal"]


def _clash(a: Change, b: Change) -> bool:
    (a1, a2, _), (b1, b2, _) = a, b
    if a1 == a2 and b1 == b2:
        return a1 == b1  # two insertions at one place: which goes first is a guess
    if a1 == a2:
        return b1 < a1 < b2
    if b1 == b2:
        return a1 < b1 < a2
    return a1 < b2 and b1 < a2


def merge(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes | None, int]:
    """(merged bytes, 0), or (None, the 1-based line of `base` where the two edits clash)."""
    b, o, t = split(base), split(ours), split(theirs)
    mine, other = _changes(b, o), _changes(b, t)
    merged: list[Change] = list(mine)
    for c in other:
        if c in mine:
            continue  # the user already made the same change
        clash = next((m for m in mine if _clash(m, c)), None)
        if clash is not None:
            return None, min(clash[0], c[0]) + 1
        merged.append(c)
    merged.sort(key=lambda c: (c[0], c[1]))
    out: list[bytes] = []
    pos = 0
    for i1, i2, lines in merged:
        if i1 < pos:
            return None, i1 + 1
        out.extend(b[pos:i1])
        out.extend(lines)
        pos = i2
    out.extend(b[pos:])
    return b"".join(out), 0
