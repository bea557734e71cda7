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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sgpatch.diff.unified import Hunk

if TYPE_CHECKING:
    from sgpatch.placement.statements import Index, Stmt


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
    found = there_rows(hunk, lines, lo, hi)
    if found is None:
        return None
    return found[0] if found else lo


def there_rows(
    hunk: Hunk, lines: Sequence[str], lo: int = 0, hi: int | None = None
) -> list[int] | None:
    """The 0-based lines of `lines[lo:hi]` holding the hunk's non-blank added lines, in order,
    when its whole post-image is there by the rule above ([] for a pure deletion whose lines
    are gone); None otherwise."""
    hi = len(lines) if hi is None else hi
    rows = [i for i in range(lo, hi) if lines[i].strip()]
    keys = [key(lines[i]) for i in rows]
    kept = {key(ln.text) for ln in hunk.lines if ln.kind != "-"}
    removed = {key(ln.text) for ln in hunk.lines if ln.kind == "-" and ln.text.strip()}
    if (removed - kept) & set(keys):
        return None  # a line the hunk removes is still in the scope
    out: list[int] = []
    at = 0
    for run in _runs(hunk):
        found = _find_run(keys, run, at)
        if found is None:
            return None
        out += [rows[found + k] for k in range(len(run))]
        at = found + len(run)
    if not out and not removed:
        return None
    return out


# ---------------------------------------------------------------------------------------------
# "Already there" judged on code (docs/engine.md): what port asks about a hunk it would drop.


@dataclass(frozen=True)
class Verdict:
    """A hunk judged against release V: there (each matched statement named), not there, or
    undecided (`there` None: the rule cannot tell; the caller does what git does)."""

    there: bool | None
    matched: tuple[str, ...] = ()
    why: str = ""
    parsed: bool = True  # False: a side is not Python that parses, so no statement was read


NOT_THERE = Verdict(False)


def _images(hunk: Hunk, base: Sequence[str], at: int):
    """The base with the hunk applied at `at` (0-based), the added rows of that result and the
    removed rows of the base (1-based), and a map of the base's kept rows to the result's."""
    pre = sum(1 for ln in hunk.lines if ln.kind != "+")
    post: list[str] = []
    added, removed, kept = set(), set(), {}
    b, a = at, at
    for ln in hunk.lines:
        if ln.kind != "+":
            b += 1
        if ln.kind != "-":
            a += 1
            post.append(ln.text.rstrip("\r\n") + "\n")
        if ln.kind == "+":
            added.add(a)
        elif ln.kind == "-":
            removed.add(b)
        else:
            kept[b] = a
    after = [*base[:at], *post, *base[at + pre :]]
    return after, added, removed, (kept, at, len(post) - pre, at + pre)


def _row_map(maps, row: int) -> int | None:
    kept, at, shift, end = maps
    if row <= at:
        return row
    if row > end:
        return row + shift
    return kept.get(row)


def _code_rows(lines: Sequence[str], s: Stmt) -> list[int]:
    return [r for r in range(s.start, s.end + 1) if lines[r - 1].strip()
            and not lines[r - 1].lstrip().startswith("#")]  # fmt: skip


def _units(lines: Sequence[str], idx: Index, rows: set[int]) -> list[tuple[Stmt, bool]]:
    """The statements `rows` change: the outermost one made of those rows alone (a statement
    added or removed whole), else the innermost holding the row (changed; only its header
    when the row is in its header)."""
    out: dict[tuple[int, bool], tuple[Stmt, bool]] = {}
    for r in sorted(rows):
        text = lines[r - 1].strip()
        if not text or text.startswith("#"):
            continue
        chain = idx.holding(r)
        if not chain:
            continue
        whole = next((s for s in chain if set(_code_rows(lines, s)) <= rows), None)
        if whole is not None:
            out[(whole.start, False)] = (whole, True)
            continue
        s = chain[-1]
        header = r < s.body_start() <= s.end
        out.setdefault((s.start, header), (s, False))
    return list(out.values())


def judge(hunk: Hunk, base: Sequence[str], at: int, release: Sequence[str]) -> Verdict:
    """Is the change of `hunk` (placed on `base` at 0-based line `at`) on `release` at the
    place it belongs? Python: every statement it changes has on the release its counterpart
    (same enclosing def/class, kind and identity) reading as the hunk's result; a statement it
    removes whole is gone there. Evidence comes from `release` alone."""
    from sgpatch.placement import statements as st

    after, added, removed, maps = _images(hunk, base, at)
    ib, ia, iv = (st.index("".join(x)) for x in (base, after, release))
    if ib is None or ia is None or iv is None:
        why = "the file is not Python on every side (it does not parse)"
        return Verdict(None, why=why, parsed=False)
    checks: list[tuple[Stmt, str]] = []  # (after-side statement | base-side gone one, mode)
    for s, whole in _units(after, ia, added):
        checks.append((s, "whole" if whole else ("header" if _is_header(s, added) else "full")))
    for s, whole in _units(base, ib, removed):
        if whole and not any(x.key() == s.key() for x, m in checks if m != "gone"):
            checks.append((s, "gone"))
        elif not whole:
            row = _row_map(maps, s.start)
            twin = [x for x in ia.holding(row) if x.key() == s.key()] if row else []
            if row is None or not twin:
                return Verdict(None, why=f"{s.describe()}: its result is not one statement")
            checks.append((twin[-1], "header" if row < twin[-1].body_start() else "full"))
    if not checks:
        return Verdict(None, why="it changes no statement")
    matched: list[str] = []
    for s, mode in checks:
        said = _check(s, mode, ib if mode == "gone" else ia, iv)
        if said.there is not True:
            return said
        matched += said.matched
    return Verdict(True, tuple(dict.fromkeys(matched)))


def _is_header(s: Stmt, rows: set[int]) -> bool:
    return all(r < s.body_start() for r in rows if s.start <= r <= s.end) and (
        s.body_start() <= s.end
    )


def _check(s: Stmt, mode: str, mine: Index, iv: Index) -> Verdict:
    """One statement against its counterpart on the release."""
    if s.scope and iv.scopes.get(s.scope, 0) != 1:
        if iv.scopes.get(s.scope, 0) == 0:
            return NOT_THERE
        return Verdict(None, why=f"{s.where} is defined more than once on the release")
    ours, theirs = mine.counterparts(s), iv.counterparts(s)
    if mode == "gone":
        code = s.code()
        left = [c for c in theirs if c.code() == code]
        if not left:
            return Verdict(True, (f"{s.describe()} is gone from the release's file",))
        return (
            NOT_THERE
            if len(left) >= len([c for c in ours if c.code() == code])
            else (Verdict(None, why=f"{s.describe()}: some of its copies are gone"))
        )
    if not theirs:
        return NOT_THERE
    if len(theirs) != len(ours):
        return Verdict(None, why=f"{s.describe()}: {len(theirs)} on the release, "
                       f"{len(ours)} in the patch's result")  # fmt: skip
    c = theirs[ours.index(s)]
    header = mode == "header"
    if c.code(header) != s.code(header):
        return NOT_THERE
    return Verdict(True, (f"{s.describe()}: line {c.start} of the release's file",))


def block_there(hunk: Hunk, release: Sequence[str]) -> int | None:
    """Files that are not Python: the 0-based line of `release` where the hunk's added lines
    stand as one block next to at least one of its own context lines (a removed line is not
    within the hunk's reach of it); None otherwise."""
    post = [(ln.kind, key(ln.text)) for ln in hunk.lines if ln.kind != "-"]
    plus = [i for i, (k, _t) in enumerate(post) if k == "+"]
    if not plus:
        return None
    block = [t for _k, t in post[plus[0] : plus[-1] + 1]]
    before = post[plus[0] - 1][1] if plus[0] > 0 else None
    after = post[plus[-1] + 1][1] if plus[-1] + 1 < len(post) else None
    keys = [key(x) for x in release]
    gone = {key(ln.text) for ln in hunk.lines if ln.kind == "-"} - {t for _k, t in post}
    n, reach = len(block), len(hunk.lines)
    for p in range(len(keys) - n + 1):
        if keys[p : p + n] != block:
            continue
        near = (before is not None and p > 0 and keys[p - 1] == before) or (
            after is not None and p + n < len(keys) and keys[p + n] == after
        )
        if near and not gone & set(keys[max(0, p - reach) : p + n + reach]):
            return p
    return None


__all__ = ["Verdict", "already_there", "block_there", "judge", "key", "there_rows"]
