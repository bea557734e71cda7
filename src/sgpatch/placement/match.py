"""The matching layer under the engine: one side (pre- or post-image) of a hunk, trimmed by
fuzz and tied to the start/end of the file as git ties it, found in a file's lines through a
per-file index of line keys. Pure, no I/O; the engine (placement policy), `scope` (def/class
scopes) and `explain` (why a hunk fits nowhere) build on it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Literal, NamedTuple

from sgpatch.diff.unified import Hunk, strip_eol

Status = Literal["applied", "already-applied", "conflict", "ambiguous"]
Level = Literal["exact", "moved", "whitespace", "fuzz", "none"]


class HunkResult(NamedTuple):
    """What happened to one hunk, with enough detail to explain it to a person. A named tuple
    (immutable, compared by value): one a hunk, and a diff may have 100,000 of them; a frozen
    dataclass is made through one `object.__setattr__` per field, a tuple at C speed."""

    index: int  # type: ignore[assignment]  # (a field named as tuple.index: the field wins)
    status: Status
    level: Level = "none"
    line: int | None = None  # 1-based line where the post-image starts in the result file
    offset: int = 0  # line - stated target line
    fuzz: int = 0  # context lines dropped (max of leading/trailing)
    whitespace: bool = False  # matched only when ignoring whitespace differences
    candidates: tuple[int, ...] = ()  # 1-based lines (in the input file) considered
    reason: str | None = None
    warning: str | None = None  # applied, but said: a def/class the author's hunk adds twice

    @property
    def ok(self) -> bool:
        return self.status in ("applied", "already-applied")

    def to_json(self) -> dict[str, object]:
        """The hunk in --json documents (docs/json.md): every field by name."""
        return {**self._asdict(), "candidates": list(self.candidates)}


@dataclass(frozen=True)
class FileResult:
    """The file after placing every hunk, and one result per hunk."""

    lines: tuple[str, ...]
    hunks: tuple[HunkResult, ...]

    @property
    def ok(self) -> bool:
        return all(h.ok for h in self.hunks)

    @property
    def changed(self) -> bool:
        return any(h.status == "applied" for h in self.hunks)


def exact_key(line: str) -> str:
    return strip_eol(line)


def ws_key(line: str) -> str:
    """Whitespace-tolerant key: indentation width kept, inner runs collapsed, trailing dropped."""
    return _ws_of_exact(strip_eol(line))


def _ws_of_exact(text: str) -> str:
    """ws_key of a line already without its line ending (the index keys whole files: one call
    per line, no expandtabs where there is no tab)."""
    if "\t" in text:
        text = text.expandtabs(8)
    body = text.lstrip()
    return f"{len(text) - len(body)}|{' '.join(body.split())}"


def _exact_keys(lines: Sequence[str]) -> list[str] | None:
    """exact_key of every line at C speed, by splitting the joined text on LF; None (use the
    per-line way) when that would not give one key per line, or the text holds a CR."""
    text = "".join(lines)
    if "\r" in text:
        return None
    keys = text.split("\n")
    if text.endswith("\n") or not text:
        keys.pop()
    if len(keys) != len(lines) or not all(map(str.endswith, lines[:-1], repeat("\n"))):
        return None
    return keys


def dominant_eol(lines: Sequence[str]) -> str:
    """CRLF if more lines end in it than in a bare LF. Counted on the joined text (a line from
    split_lines holds at most one LF, at its end): C speed instead of a loop per line."""
    text = "".join(lines)
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    return "\r\n" if crlf > lf else "\n"


class LineIndex:
    """Line keys of the input file plus a first-line index, per normalisation."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self._keys: dict[str, list[str]] = {}
        self._pos: dict[str, dict[str, list[int]]] = {}
        self._plain: dict[str, list[str]] = {}  # keys alone, before anything needs positions
        self.cache: dict[str, object] = {}  # per-file facts other modules derive once

    def keys(self, mode: str) -> list[str]:
        if mode not in self._keys:
            if mode == "exact":
                keys = self._plain.get("exact") or (
                    _exact_keys(self.lines) or [exact_key(ln) for ln in self.lines]
                )
            else:  # ws_key of each line, from its exact key (usually there: exact came first)
                keys = [_ws_of_exact(k) for k in self._keys.get("exact") or self.keys("exact")]
            pos: dict[str, list[int]] = defaultdict(list)
            for i, k in enumerate(keys):
                pos[k].append(i)
            self._keys[mode], self._pos[mode] = keys, pos
        return self._keys[mode]

    def positions(self, mode: str, key: str) -> list[int]:
        """0-based lines whose key (in `mode`) is `key`."""
        self.keys(mode)
        return self._pos[mode].get(key, [])

    def find(
        self, pattern: Sequence[str], mode: str, lo: int, at_eof: bool, at_bof: bool = False
    ) -> list[int]:
        """Every position >= lo where `pattern` (already keyed) matches."""
        keys = self.keys(mode)
        n, m = len(keys), len(pattern)
        if m == 0:
            return []
        out = []
        for p in self._pos[mode].get(pattern[0], ()):
            if p < lo or p + m > n:
                continue
            if (at_eof and p + m != n) or (at_bof and p != 0):
                continue
            if keys[p : p + m] == list(pattern):
                out.append(p)
        return out

    def matches_at(
        self, pattern: Sequence[str], mode: str, p: int, at_eof: bool, at_bof: bool = False
    ) -> bool:
        n, m = len(self.lines), len(pattern)
        if p < 0 or p + m > n or (at_eof and p + m != n) or (at_bof and p):
            return False
        keys = self.exact_keys() if mode == "exact" else self.keys(mode)
        return keys[p : p + m] == list(pattern)

    def exact_keys(self) -> list[str]:
        """The exact keys, without the positions index until a search needs it: split at C
        speed once, not a key per line per hunk (each hunk of a many-hunk diff checks its
        expected line first)."""
        keys = self._keys.get("exact") or self._plain.get("exact")
        if keys is None:
            keys = self._plain["exact"] = _exact_keys(self.lines) or [
                exact_key(ln) for ln in self.lines
            ]
        return keys


@dataclass(frozen=True)
class Image:
    """One side of a hunk (pre or post), possibly trimmed by fuzz."""

    kinds: tuple[str, ...]  # kind of each hunk line kept on this side
    texts: tuple[str, ...]
    lead: int  # context lines dropped at the start
    trail: int  # context lines dropped at the end
    at_eof: bool  # must end at the end of the file
    at_bof: bool = False  # must start at the top of the file


class Place(NamedTuple):
    """Where a hunk image matched, and how much outer context was dropped to get there. A named
    tuple (immutable, compared by value as a frozen dataclass is): every hunk of a diff gets
    one, and a frozen dataclass is made through one `object.__setattr__` per field."""

    pos: int  # 0-based start in the input file of the matched (trimmed) image
    new_side: bool  # the post-image matched: already applied
    lead: int
    trail: int
    free: bool = False  # matched with its start/end-of-file anchors lifted (fuzz)


def side(hunk: Hunk, new: bool, lead: int, trail: int, free: bool = False) -> Image:
    """One image of the hunk with `lead`/`trail` outer context lines dropped.

    Anchors as git's apply.c sets them: a hunk whose start is line 0 or 1 must match at the
    start of the file, one without trailing context at the end. Both go when fuzz drops context
    (or `free`), and for -U0 diffs (`hunk.anchored` False). A missing newline at the end of the
    side always ties it to the end of the file."""
    kinds, texts = hunk.side_kinds[new], hunk.side_texts[new]
    if lead or trail:
        kinds, texts = kinds[lead : len(kinds) - trail], texts[lead : len(texts) - trail]
    at_eof, at_bof = anchors(hunk, new, lead, trail, free)
    return Image(kinds=kinds, texts=texts, lead=lead, trail=trail, at_eof=at_eof, at_bof=at_bof)


def anchors(hunk: Hunk, new: bool, lead: int, trail: int, free: bool) -> tuple[bool, bool]:
    """(at_eof, at_bof) of one side, as `side` documents them."""
    no_eol = hunk.new_no_eol if new else hunk.old_no_eol
    anchored = hunk.anchored and not (lead or trail or free)
    start = hunk.target_start if new else hunk.source_start
    return (no_eol and trail == 0) or (anchored and hunk.edges[1] == 0), anchored and start <= 1


def whole_side_at(hunk: Hunk, idx: LineIndex, new: bool, p: int) -> bool:
    """`side(hunk, new, 0, 0)` matches exactly at `p` (an empty side matches nowhere), without
    building the image: every hunk of a diff asks it of both sides at its expected line."""
    texts = hunk.side_texts[new]
    if not texts or p < 0 or idx.exact_keys()[p : p + len(texts)] != list(texts):
        return False  # (the usual answer for the post-image: settled before the anchors)
    at_eof, at_bof = anchors(hunk, new, 0, 0, False)
    return idx.matches_at(texts, "exact", p, at_eof, at_bof)


def side_len(hunk: Hunk, new: bool, lead: int, trail: int) -> int:
    """len(side(hunk, new, lead, trail).texts) without building the image (once per hunk
    while placing and again while reporting)."""
    return max(0, len(hunk.side_texts[new]) - lead - trail)


def context_edges(hunk: Hunk) -> tuple[int, int]:
    """Leading and trailing context line counts (what fuzz may drop)."""
    return hunk.edges


def search(
    hunk: Hunk, idx: LineIndex, mode: str, lead: int, trail: int, lo: int, free: bool = False
) -> list[Place]:
    places: dict[int, tuple[int, Place]] = {}
    key = (lambda t: t) if mode == "exact" else ws_key
    for new_side in (True, False):
        img = side(hunk, new_side, lead, trail, free)
        pattern = [key(t) for t in img.texts]
        for p in idx.find(pattern, mode, lo, img.at_eof, img.at_bof):
            # both images at one spot: the longer match wins (post-image on a tie)
            if p not in places or len(pattern) > places[p][0]:
                places[p] = (len(pattern), Place(p, new_side, lead, trail, free))
    return sorted((pl for _, pl in places.values()), key=lambda pl: pl.pos)


def start(pl: Place) -> int:
    """Where the full hunk would start (before the context fuzz dropped)."""
    return pl.pos - pl.lead
