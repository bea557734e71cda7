"""Read unified diffs byte-exactly, on top of unidiff.

unidiff does the parsing; this module feeds it lines split on LF only (so CR, form feeds and other
characters `str.splitlines` would split on survive), decodes with `surrogateescape` (so non-UTF-8
bytes round-trip), turns its `UnidiffParseError`s into one-line errors that name the patch file and
line, refuses binary patches, and freezes the result into small immutable views (`Patch`,
`FilePatch`, `Hunk`, `HunkLine`) that mirror unidiff's `PatchSet`, `PatchedFile`, `Hunk` and
`Line` but carry exactly what the placement engine needs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal, NamedTuple

from sgpatch.errors import bad_input, unsafe
from sgpatch.startup import collector_paused
from sgpatch.tree.files import read_input

DEV_NULL = "/dev/null"
SYMLINK_MODE = 0o120000
# Patterns compiled where they are first needed (re caches them), not on import: most runs
# read git diffs, which never need the timestamp ones.
_GIT_INFO_WORDS = (
    "new file mode|deleted file mode|old mode|new mode|copy from|copy to|rename from|rename to"
)
_GIT_INFO = rf"^({_GIT_INFO_WORDS}) (.+?)\r?$"
_GIT_INFO_KEYS = tuple(f"{k} " for k in _GIT_INFO_WORDS.split("|"))  # what can start a match
# A traditional `diff -N` writes the missing side with the epoch as its timestamp, in the zone of
# the machine that made it: `1970-01-01 00:00:00 +0000`, `1969-12-31 18:00:00 -0600`, ...
_ISO_TIME = r"^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.\d+)?\s*(?:([+-])(\d\d):?(\d\d))?"
_CTIME_EPOCH = r"^\w{3} \w{3} +1 00:00:00(?:\.0+)? 1970"

_BINARY_STARTS = ("GIT binary patch", "Binary files ")  # a cheap test first, per line


def _is_binary_line(line: str) -> bool:
    """`GIT binary patch` or `Binary files ... differ`, alone on its line (one CR allowed
    before the LF): what `^(GIT binary patch|Binary files .* differ)\\r?$` matched."""
    text = line[:-1] if line.endswith("\n") else line
    text = text[:-1] if text.endswith("\r") else text
    if text == "GIT binary patch":
        return True
    if len(text) < 20 or "\n" in text:  # prefix and suffix must not overlap; `.` is no LF
        return False
    return text.startswith("Binary files ") and text.endswith(" differ")


def _drive(path: str) -> bool:
    """`path` starts with a drive letter and its colon (`C:`), as `^[A-Za-z]:` matches."""
    return path[1:2] == ":" and path[:1].isascii() and path[:1].isalpha()


def decode(data: bytes) -> str:
    """Bytes -> str that encodes back to the very same bytes (non-UTF-8 survives)."""
    return data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


# What `str.splitlines` splits on besides LF (a CR alone, VT, FF, FS, GS, RS, NEL, LS, PS)
_OTHER_BREAKS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def split_lines(text: str) -> list[str]:
    """Split on LF only, keeping line endings; the last line may lack one. Text with no other
    character `str.splitlines` splits on (most text: a CR is checked for too, since a lone one
    would split) is split by it, at C speed; the rest part by part."""
    if not text:
        return []
    if not any(c in text for c in _OTHER_BREAKS):  # one C-speed scan per character
        return text.splitlines(keepends=True)
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def strip_eol(line: str) -> str:
    """`line` without its one line ending (LF or CRLF); string methods, not a regex: this
    runs once per line of every file the engine indexes."""
    if line.endswith("\n"):
        return line[:-2] if line.endswith("\r\n") else line[:-1]
    return line


class HunkLine(NamedTuple):
    """One body line of a hunk: kind is ' ' (context), '-' (removed) or '+' (added). A named
    tuple rather than a frozen dataclass: a diff has one per body line, and a tuple subclass
    can be made at C speed (`tuple.__new__`, as `_source` makes them), a dataclass only
    through its Python `__init__`."""

    kind: str
    text: str  # without its line ending


_Pair = tuple[tuple[str, ...], tuple[str, ...]]  # (pre-image, post-image)


def _sides_of(lines: Sequence[HunkLine]) -> tuple[_Pair, tuple[int, int]]:
    """Both sides' texts and the context edges, with string methods where they do (every hunk
    of a many-hunk diff needs them once)."""
    kinds = "".join([kind for kind, _ in lines])
    n = len(kinds)
    return (
        (
            tuple([text for kind, text in lines if kind != "+"]),
            tuple([text for kind, text in lines if kind != "-"]),
        ),
        (n - len(kinds.lstrip(" ")), n - len(kinds.rstrip(" "))),
    )


class _HunkFields(NamedTuple):
    index: int  # type: ignore[assignment]  # 1-based position within its file (not tuple.index)
    source_start: int
    source_length: int
    target_start: int
    target_length: int
    section_header: str
    lines: tuple[HunkLine, ...]
    old_no_eol: bool = False  # the pre-image's last line has no newline
    new_no_eol: bool = False  # the post-image's last line has no newline
    patch_line: int = 0  # line of the @@ header in the patch file
    anchored: bool = True  # may be tied to the start/end of the file (False in -U0 diffs)
    # Derived from `lines` as the hunk is made (the engine asks for them several times while
    # placing and reporting it: plain fields, not properties): the texts of the pre-image's
    # lines and of the post-image's, and the leading and trailing context line counts (what
    # fuzz may drop).
    side_texts: _Pair = ((), ())
    edges: tuple[int, int] = (0, 0)


_MADE = _HunkFields._fields[:-2]  # the fields a hunk is made of; the others derive from them


class Hunk(_HunkFields):
    """A hunk as the engine sees it (unidiff's Hunk, frozen, line endings stripped). A named
    tuple, as HunkLine is: a diff of 100,000 hunks holds 100,000 of them, and a frozen
    dataclass is made through one `object.__setattr__` per field (about half of making one).
    Made with the fields of `_MADE`; `side_texts` and `edges` are computed from `lines`, also
    by `_replace` (use it where `dataclasses.replace` would be)."""

    __slots__ = ()

    def __new__(
        cls,
        index: int,
        source_start: int,
        source_length: int,
        target_start: int,
        target_length: int,
        section_header: str,
        lines: tuple[HunkLine, ...],
        old_no_eol: bool = False,
        new_no_eol: bool = False,
        patch_line: int = 0,
        anchored: bool = True,
    ) -> Hunk:
        texts, edges = _sides_of(lines)
        made = (source_start, source_length, target_start, target_length, section_header, lines)
        flags = (old_no_eol, new_no_eol, patch_line, anchored)
        return tuple.__new__(cls, (index, *made, *flags, texts, edges))

    def __getnewargs__(self) -> tuple[Any, ...]:  # pickle and copy make it as `__new__` does
        return tuple(self)[: len(_MADE)]

    def _replace(self, **changes: Any) -> Hunk:
        """A copy with `changes`, its derived fields computed again."""
        return Hunk(**{**dict(zip(_MADE, self, strict=False)), **changes})

    @property
    def side_kinds(self) -> _Pair:
        """The kinds of the pre-image's lines and of the post-image's (only fuzz asks)."""
        kinds = "".join([ln.kind for ln in self.lines])
        return tuple(kinds.replace("+", "")), tuple(kinds.replace("-", ""))

    @property
    def before(self) -> tuple[str, ...]:
        return self.side_texts[0]

    @property
    def after(self) -> tuple[str, ...]:
        return self.side_texts[1]

    def reversed(self) -> Hunk:
        """The same hunk read backwards (for -R): added and removed swap sides."""
        swap = {"+": "-", "-": "+", " ": " "}
        return self._replace(
            source_start=self.target_start,
            source_length=self.target_length,
            target_start=self.source_start,
            target_length=self.source_length,
            lines=tuple(HunkLine(swap[ln.kind], ln.text) for ln in self.lines),
            old_no_eol=self.new_no_eol,
            new_no_eol=self.old_no_eol,
        )


@dataclass(frozen=True)
class FilePatch:
    """The changes to one file (unidiff's PatchedFile, frozen)."""

    source: str  # path as written in the patch ('a/...'), or /dev/null
    target: str  # path as written ('b/...'), or /dev/null
    hunks: tuple[Hunk, ...]
    new_mode: int | None = None  # git 'new file mode' / 'new mode' (permission bits)
    patch_line: int = 0
    old_mode: int | None = None  # git 'old mode' / 'deleted file mode' (permission bits)
    git_op: Literal["rename", "copy", "uncopy"] | None = None  # from the git extended header
    symlink: bool = False  # a git mode 120000 on either side
    git: bool = False  # has a `diff --git` header (names are exact, not to be guessed)

    @property
    def is_new(self) -> bool:
        return self.source == DEV_NULL

    @property
    def is_delete(self) -> bool:
        return self.target == DEV_NULL

    @property
    def is_rename(self) -> bool:
        """Only a git `rename from/to` renames: a plain diff whose names differ
        (`diff -u a.py.orig a.py`) patches one existing file."""
        return self.git_op == "rename" and not (self.is_new or self.is_delete)

    @property
    def is_copy(self) -> bool:
        return self.git_op == "copy"

    @property
    def mode_change(self) -> bool:
        """An existing file's permission bits change (git `old mode` / `new mode`)."""
        return (
            not (self.is_new or self.is_delete)
            and self.new_mode is not None
            and self.old_mode is not None
            and self.new_mode != self.old_mode
        )

    @property
    def path(self) -> str:
        """The path the change is about (the target, or the source for a deletion)."""
        return self.source if self.is_delete else self.target

    def reversed(self) -> FilePatch:
        """-R: sides swap, modes swap; a copy read backwards removes the copy again."""
        op = {"copy": "uncopy", "uncopy": "copy"}.get(self.git_op or "", self.git_op)
        return replace(
            self,
            source=self.target,
            target=self.source,
            hunks=tuple(h.reversed() for h in self.hunks),
            new_mode=self.old_mode,
            old_mode=self.new_mode,
            git_op=op,  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class Patch:
    """A patch file: its free-text header (what and why) and the file changes it holds."""

    name: str  # how to refer to it in messages (usually its path)
    header: str
    files: tuple[FilePatch, ...]

    def reversed(self) -> Patch:
        return replace(self, files=tuple(f.reversed() for f in self.files))


def is_epoch(stamp: str | None) -> bool:
    """Is a `---`/`+++` timestamp the Unix epoch in any zone (the side `diff -N` made up)?"""
    if not stamp:
        return False
    stamp = stamp.strip()
    if re.match(_CTIME_EPOCH, stamp):
        return True
    m = re.match(_ISO_TIME, stamp)
    if not m:
        return False
    import calendar

    y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
    try:
        local = calendar.timegm((y, mo, d, h, mi, sec, 0, 0, 0))
    except (ValueError, OverflowError):
        return False
    sign, zh, zm = m.group(7), m.group(8), m.group(9)
    offset = 0 if not sign else (1 if sign == "+" else -1) * (int(zh) * 3600 + int(zm) * 60)
    return local - offset == 0


def strip_path(path: str, strip: int, patch_name: str = "patch") -> str:
    """Apply `-p strip` to a patch path; refuse absolute paths and `..` (exit 4)."""
    if path.startswith("/") or (_drive(path) and path[2:3] in ("\\", "/")):
        raise unsafe(f"{patch_name}: refusing absolute path {path!r}")
    if strip < 0:
        raise bad_input(f"{patch_name}: -p must be 0 or more (got {strip})")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if strip >= len(parts):
        if ".." in parts:
            raise unsafe(f"{patch_name}: refusing path with '..': {path!r}")
        raise bad_input(f"{patch_name}: -p{strip} strips all of {path!r}; wrong -p level?")
    if ".." in parts[strip:]:  # as GNU patch: what -p strips away is never used
        raise unsafe(f"{patch_name}: refusing path with '..': {path!r}")
    return "/".join(parts[strip:])


class _Counter:
    """Iterates lines while remembering the number of the last one handed out."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self.n = 0

    def __iter__(self) -> Iterator[str]:
        for line in self.lines:
            self.n += 1
            yield line


def parse_patch(data: bytes | str, name: str = "patch") -> Patch:
    """Parse a unified diff (plain, git, or format-patch style) into a `Patch`.

    Raises SgpatchError (exit 2) with `name:line: problem` for malformed or binary input.
    """
    with collector_paused():
        return _parse_patch(data, name)


def _parse_patch(data: bytes | str, name: str) -> Patch:
    text = decode(data) if isinstance(data, bytes) else data
    lines = split_lines(text)
    if not any(ln.strip() for ln in lines):
        raise bad_input(f"{name}: empty patch file")
    return _read_quickly(lines, name) or _read_with_unidiff(lines, name)


def _read_with_unidiff(lines: list[str], name: str) -> Patch:
    """Every line through unidiff, after the checks it does not make: the reference reading,
    and the one that words the error when the input is malformed."""
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    for no, line in enumerate(lines, 1):
        if line.startswith(_BINARY_STARTS) and _is_binary_line(line):
            raise bad_input(f"{name}:{no}: binary patches are not supported ({strip_eol(line)})")
        if line.startswith("@@") and not _HUNK_HEADER.match(line):
            raise bad_input(f"{name}:{no}: malformed hunk header {strip_eol(line)[:60]!r}")
    _check_hunk_lengths(lines, name)
    counter = _Counter(_align_git_names(lines))
    try:
        patchset = PatchSet(counter)
    except UnidiffParseError as exc:
        msg = str(exc).strip().rstrip(":")
        raise bad_input(f"{name}:{counter.n}: malformed diff: {msg}") from None
    if len(patchset) == 0:
        raise bad_input(f"{name}: no diff found (expected '--- a/...' / '+++ b/...' and hunks)")
    files = tuple(
        _freeze_file(pf, _freeze_hunks(pf), pf.diff_line_no or 0, name) for pf in patchset
    )
    return _patch_of(lines, files, name)


def _patch_of(lines: Sequence[str], files: tuple[FilePatch, ...], name: str) -> Patch:
    for f in files:
        if not f.hunks and not (f.is_new or f.is_delete or f.git_op or f.new_mode is not None):
            raise bad_input(f"{name}:{f.patch_line}: no hunks for {f.path} (truncated diff?)")
    header_end = next(
        (i for i, ln in enumerate(lines) if ln.startswith(("diff --git ", "--- "))), 0
    )
    return Patch(name=name, header="".join(lines[:header_end]), files=files)


# unidiff's hunk header (its RE_HUNK_HEADER, spelled here so that reading it costs no import)
_UNIDIFF_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))?\ @@[ ]?(.*)")
_NO_NEWLINE = "\\ No newline at end of file"  # unidiff's RE_NO_NEWLINE_MARKER, a prefix
_STUB = ("@@ -1 +1 @@\n", " \n")  # what unidiff reads in place of a run of hunks read here


def _read_quickly(lines: list[str], name: str) -> Patch | None:
    """The common case without unidiff's line-by-line walk through every hunk body: runs of
    hunks are read here (`_read_run`), and unidiff reads the rest, the file headers, with a
    one-line stub hunk in place of each run. None when anything is out of the ordinary (a
    malformed or binary patch, a hunk or marker unidiff might read otherwise): the full
    reading decides, and words the error."""
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    fed: list[str] = []
    numbers: list[int] = []  # 1-based line in `lines` of each fed line
    runs: list[list[Hunk]] = []
    src = _source(lines)
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("@@"):
            run = _read_run(src, i)
            if run is None:
                return None
            runs.append(run[0])
            fed += _STUB
            numbers += (i + 1, i + 1)
            i = run[1]
            continue
        if line.startswith(("\\", *_BINARY_STARTS)):
            return None
        fed.append(line)
        numbers.append(i + 1)
        i += 1
    try:
        patchset = PatchSet(_align_git_names(fed))
    except UnidiffParseError:
        return None
    if len(patchset) == 0 or sum(len(pf) for pf in patchset) != len(runs):
        return None
    files = []
    k = 0
    for pf in patchset:
        hunks = [h for run in runs[k : k + len(pf)] for h in run]
        k += len(pf)
        if len(pf) > 1:  # several runs in one file: number its hunks through
            hunks = [h._replace(index=j) for j, h in enumerate(hunks, 1)]
        line_no = numbers[pf.diff_line_no - 1] if pf.diff_line_no else 0
        files.append(_freeze_file(pf, hunks, line_no, name))
    return _patch_of(lines, tuple(files), name)


class _Source(NamedTuple):
    """A patch's lines with what the quick reader asks of each, made for all of them at once
    at C speed: its first character, and (when no line holds a CR and each ends in LF) its
    text (without kind and LF) and the line as a body line, sliced out per hunk
    (`_sliced_hunk`) instead of made per hunk."""

    lines: list[str]
    heads: str
    texts: list[str] | None
    body: tuple[HunkLine, ...] | None


def _source(lines: list[str]) -> _Source:
    heads = "".join(map(itemgetter(0), lines))  # split_lines makes no empty line
    if not lines or not lines[-1].endswith("\n") or any(map(str.__contains__, lines, repeat("\r"))):
        return _Source(lines, heads, None, None)
    texts = [ln[1:-1] for ln in lines]
    body = tuple(map(tuple.__new__, repeat(HunkLine), zip(heads, texts, strict=True)))
    return _Source(lines, heads, texts, body)


def _read_run(src: _Source, i: int) -> tuple[list[Hunk], int] | None:
    """The hunks from the `@@` line at `i` on, with the `\\ No newline` markers and blank
    lines unidiff keeps with them, and where the run ends; None if one is out of the ordinary."""
    hunks: list[Hunk] = []
    lines = src.lines
    n = len(lines)
    while i < n and lines[i].startswith("@@"):
        read = _read_hunk(src, i, len(hunks) + 1)
        if read is None:
            return None
        hunks.append(read[0])
        i = read[1]
        while i < n and lines[i] == "\n":  # unidiff: a blank line after a hunk, kept as nothing
            i += 1
    return hunks, i


def _read_hunk(src: _Source, i: int, index: int) -> tuple[Hunk, int] | None:
    """One hunk, as unidiff reads it and `_freeze_hunks` freezes it, and the line after it (its
    markers included); None where unidiff (or `_check_hunk_lengths`) would object, or might
    read it otherwise: a body line of another kind, counts that do not add up, `-0,0 +0,0`."""
    lines, heads = src.lines, src.heads
    m = _UNIDIFF_HUNK.match(lines[i])
    if m is None:
        return None
    old_start, old_len, new_start, new_len, section = m.groups()
    old = 1 if old_len is None else int(old_len)
    new = 1 if new_len is None else int(new_len)
    if old == new == 0:
        return None
    start, target, section = int(old_start), int(new_start), section.strip()
    k = _plain_end(src, i + 1, old, new)
    if k:  # the next line is the next hunk's header (or there is none): all the hunk is read
        return _sliced_hunk(src, (index, start, old, target, new, section), i + 1, k), k
    read = _counted_body(lines, i + 1, old, new) or _any_body(lines, i + 1, old, new)
    if read is None:
        return None
    body, flags, j = read
    n = len(lines)
    while j < n and heads[j] == "\\":
        if not lines[j].startswith(_NO_NEWLINE):
            return None
        _mark_no_eol(body, flags)
        j += 1
    if j < n and heads[j] in "+- " and body_like(lines[j]):
        return None  # longer than its header says: `_check_hunk_lengths` words it
    # positional: keywords cost a microsecond a hunk
    hunk = Hunk(index, start, old, target, new, section, body, flags[0], flags[1], i + 1)
    return hunk, j


_Body = tuple[tuple["HunkLine", ...], list[bool], int]  # lines, (old, new) no-EOL, next line


def _plain_end(src: _Source, j: int, old: int, new: int) -> int:
    """Where a body from line `j` ends when it is ' ', '-' and '+' lines only, runs up to the
    next hunk's header (or the end) and `src` has its lines sliceable; else 0. Its kinds are
    counted at C speed: the run is the body when the counts come out right (each line counts
    on one side at least, so no shorter run would)."""
    heads = src.heads
    k = heads.find("@", j)
    k = len(heads) if k < 0 else k
    plus, minus = heads.count("+", j, k), heads.count("-", j, k)
    span = k - j
    if (
        src.body is not None
        and (span - plus, span - minus) == (old, new)
        and heads.count(" ", j, k) + plus + minus == span
    ):
        return k
    return 0


def _sliced_hunk(src: _Source, head: tuple[int, int, int, int, int, str], j: int, k: int) -> Hunk:
    """The hunk whose header fields are `head` and whose body is lines `j`..`k` of `src`, as
    `Hunk` makes it, but its lines sliced out of `src` and its sides from the texts there: in
    the usual body (context, removed lines, added lines, context) by slicing, at C speed."""
    assert src.texts is not None and src.body is not None  # as `_plain_end` checked
    kinds, texts = src.heads[j:k], src.texts[j:k]
    n = len(kinds)
    lead, trail = n - len(kinds.lstrip(" ")), n - len(kinds.rstrip(" "))
    middle = kinds[lead : n - trail]
    cut = middle.count("-")
    if middle.lstrip("-").strip("+"):  # a context line inside, or a '-' after a '+'
        pre = tuple([t for c, t in zip(kinds, texts, strict=True) if c != "+"])
        post = tuple([t for c, t in zip(kinds, texts, strict=True) if c != "-"])
    else:
        added = len(middle) - cut
        pre = tuple(texts[: lead + cut] + texts[lead + cut + added :])
        post = tuple(texts[:lead] + texts[lead + cut :])
    sides = ((pre, post), (lead, trail))
    # j, the body's first line (0-based), is the header's line number (1-based)
    return tuple.__new__(Hunk, (*head, src.body[j:k], False, False, j, True, *sides))


def _counted_body(lines: list[str], j: int, old: int, new: int) -> _Body | None:
    """A body of ' ', '-' and '+' lines only, from line `j`, counted line by line (the ones
    `_plain_end` leaves), its lines made at C speed. None for anything else (`_any_body`
    reads it)."""
    first, n = j, len(lines)
    while old > 0 or new > 0:
        if j >= n:
            return None
        kind = lines[j][0]
        if kind == " ":
            old -= 1
            new -= 1
        elif kind == "-":
            old -= 1
        elif kind == "+":
            new -= 1
        else:
            return None
        j += 1
    if old or new:  # went below zero: longer than its header says
        return None
    chunk = lines[first:j]
    if chunk[-1][-1] == "\n" and "\r" not in "".join(chunk):
        texts = [ln[1:-1] for ln in chunk]
    else:
        texts = [strip_eol(ln[1:]) for ln in chunk]
    kinds = [ln[0] for ln in chunk]
    return (
        tuple(map(tuple.__new__, repeat(HunkLine), zip(kinds, texts, strict=True))),
        [False, False],
        j,
    )


def _any_body(lines: list[str], j: int, old: int, new: int) -> _Body | None:
    """A body as unidiff reads it: empty lines are empty context, and a `\\` line marks the
    line before it; None where unidiff would object, or might read a line otherwise."""
    body: list[HunkLine] = []
    flags = [False, False]  # old_no_eol, new_no_eol
    n = len(lines)
    while old > 0 or new > 0:
        if j >= n:
            return None
        line = lines[j]
        kind = line[0]
        j += 1
        if kind == "\\":
            _mark_no_eol(body, flags)
            continue
        if kind == " " or line in ("\n", "\r\n"):  # an empty line is empty context
            old -= 1
            new -= 1
            kind = " "
        elif kind == "-":
            old -= 1
        elif kind == "+":
            new -= 1
        else:
            return None
        if old < 0 or new < 0:
            return None
        body.append(HunkLine(kind, strip_eol(line[1:])))
    return tuple(body), flags, j


def _mark_no_eol(body: Sequence[HunkLine], flags: list[bool]) -> None:
    """A `\\` line: the line before it (a context line counts for both sides) has no newline."""
    prev = body[-1].kind if body else " "
    flags[0] |= prev != "+"
    flags[1] |= prev != "-"


def body_like(line: str) -> bool:
    """A line that reads as one more body line of the hunk before it."""
    return (
        line[:1] in ("+", "-", " ")
        and strip_eol(line) != "--"
        and not line.startswith(("--- ", "+++ ", "-- "))
    )


_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_GIT_HEADER = re.compile(r"^diff --git (\S+) (\S+)\r?$")


def _align_git_names(lines: Sequence[str]) -> list[str]:
    """A git block whose `---`/`+++` names differ from its `diff --git` names only in the first
    folder (`+++ a/f` under `diff --git a/f b/f`, as hand-made diffs have) names one file; unidiff
    rejects it, so give the `---`/`+++` lines the header's spelling."""
    out = list(lines)
    names: tuple[str, str] | None = None
    for i, line in enumerate(out):
        m = _GIT_HEADER.match(line)
        if m:
            names = (m.group(1), m.group(2))
            continue
        if line.startswith("@@"):
            names = None
        if names is None or not line.startswith(("--- ", "+++ ")):
            continue
        want = names[0] if line.startswith("---") else names[1]
        have = strip_eol(line)[4:].split("\t")[0]
        if have != want and have != DEV_NULL and have.split("/", 1)[-1] == want.split("/", 1)[-1]:
            out[i] = line[:4] + want + line[4 + len(have) :]
    return out


def _check_hunk_lengths(lines: Sequence[str], name: str) -> None:
    """unidiff stops a hunk when its header's counts are used up and skips what follows as
    prose; a body line right after that means the counts are wrong, so say so."""
    i = 0
    while i < len(lines):
        m = _HUNK_HEADER.match(lines[i])
        i += 1
        if not m:
            continue
        old = int(m.group(1) if m.group(1) is not None else 1)
        new = int(m.group(2) if m.group(2) is not None else 1)
        while i < len(lines) and (old > 0 or new > 0):
            kind = lines[i][:1]
            if kind == "\\":
                pass
            elif kind == "-":
                old -= 1
            elif kind == "+":
                new -= 1
            elif kind in (" ", "\n", "\r"):
                old -= 1
                new -= 1
            else:
                break
            i += 1
        while i < len(lines) and lines[i].startswith("\\"):
            i += 1
        if i < len(lines) and old <= 0 and new <= 0 and body_like(lines[i]):
            raise bad_input(
                f"{name}:{i + 1}: malformed diff: hunk at line {i} is longer than its "
                "@@ header says"
            )


def read_patch(path: Path, name: str | None = None) -> Patch:
    """Read and parse a patch file; unreadable files are bad input (exit 2)."""
    label = name or str(path)
    try:
        data = read_input(Path(path))
    except OSError as exc:
        raise bad_input(f"{label}: cannot read patch file: {exc.strerror or exc}") from None
    return parse_patch(data, label)


def _freeze_hunks(pf) -> list[Hunk]:  # pf: unidiff PatchedFile
    hunks = []
    for idx, h in enumerate(pf, 1):
        body: list[HunkLine] = []
        old_no_eol = new_no_eol = False
        for line in h:
            if line.line_type == "\\":
                prev = body[-1].kind if body else " "
                old_no_eol |= prev in (" ", "-")
                new_no_eol |= prev in (" ", "+")
                continue
            if line.line_type not in (" ", "-", "+"):
                continue  # unidiff keeps blank lines after a finished hunk: not hunk lines
            body.append(HunkLine(line.line_type, strip_eol(line.value)))
        first = _first_body_line(h)
        hunks.append(
            Hunk(
                index=idx,
                source_start=h.source_start,
                source_length=h.source_length,
                target_start=h.target_start,
                target_length=h.target_length,
                section_header=(h.section_header or "").strip(),
                lines=tuple(body),
                old_no_eol=old_no_eol,
                new_no_eol=new_no_eol,
                patch_line=first - 1 if first else 0,
            )
        )
    return hunks


def _freeze_file(pf, hunks: Sequence[Hunk], line_no: int, name: str) -> FilePatch:
    """One file of unidiff's PatchSet, frozen, with its hunks (`line_no`: its first line)."""
    info = _git_info(pf.patch_info or (), name)
    git = any(str(ln).startswith("diff --git ") for ln in pf.patch_info or ())
    source, target = _clean_path(pf.source_file), _clean_path(pf.target_file)
    old_stamp, new_stamp = pf.source_timestamp, pf.target_timestamp
    if not git:  # a traditional `diff -N`: the missing side carries the epoch
        source, old_stamp = _split_stamp(source, old_stamp)
        target, new_stamp = _split_stamp(target, new_stamp)
        if source != DEV_NULL and is_epoch(old_stamp):
            source = DEV_NULL
        elif target != DEV_NULL and is_epoch(new_stamp):
            target = DEV_NULL
    op: Literal["rename", "copy"] | None = (
        "copy" if "copy from" in info else ("rename" if "rename from" in info else None)
    )
    if op and f"{op} to" in info:  # the extended header names both sides exactly
        source, target = f"a/{info[op + ' from']}", f"b/{info[op + ' to']}"
    modes = {k: v for k, v in info.items() if k.endswith("mode")}
    new_mode = modes.get("new file mode", modes.get("new mode"))
    old_mode = modes.get("deleted file mode", modes.get("old mode"))
    return FilePatch(
        source=source,
        target=target,
        hunks=tuple(hunks),
        new_mode=None if new_mode is None else new_mode & 0o7777,
        old_mode=None if old_mode is None else old_mode & 0o7777,
        patch_line=line_no,
        git_op=op,
        symlink=any(m & 0o170000 == SYMLINK_MODE for m in modes.values())
        or _index_mode(pf.patch_info or ()) == SYMLINK_MODE,
        git=git,
    )


_DAMAGED_STAMP = (  # the name, then the spaces that replaced the tab (any number), then the stamp
    r"^(.*?\S) +(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? ?(?:[+-]\d\d:?\d\d)?"
    r"|\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? \d{4})$"
)


def _split_stamp(path: str, stamp: str | None) -> tuple[str, str | None]:
    """A name whose timestamp lost its tab (a whitespace-damaged traditional diff: mail,
    copy and paste) keeps only the name, without the spaces that stood for the tab (git's
    t4135: `+++ b/postimage.txt     2010-08-18 ...` names `postimage.txt`); the timestamp
    (ISO, or ctime as `diff -c` writes it) still counts for `diff -N`."""
    if stamp or path == DEV_NULL:
        return path, stamp
    m = re.match(_DAMAGED_STAMP, path)
    return (m.group(1), m.group(2)) if m else (path, stamp)


def _index_mode(lines) -> int | None:
    """The mode on git's `index A..B MODE` line (a symlink retargeted says 120000 only there)."""
    for line in lines:
        text = str(line)
        if text.startswith("index "):
            parts = text.split()
            try:
                return int(parts[2], 8) if len(parts) == 3 else None
            except ValueError:
                return None
    return None


def _git_info(lines, name: str) -> dict[str, Any]:
    """The git extended header lines of one file: modes as ints, copy/rename names as text."""
    out: dict[str, Any] = {}
    for line in lines:
        text = str(line)
        m = re.match(_GIT_INFO, text) if text.startswith(_GIT_INFO_KEYS) else None
        if not m:
            continue
        key, value = m.group(1), m.group(2)
        if key.endswith("mode"):
            try:
                out[key] = int(value, 8)
            except ValueError:
                raise bad_input(f"{name}: bad file mode {value!r}") from None
        else:
            out[key] = _clean_path(value)
    return out


def _first_body_line(h) -> int:
    for line in h:
        if line.diff_line_no:
            return int(line.diff_line_no)
    return 0


def _clean_path(path: str | None) -> str:
    if not path:
        return DEV_NULL
    path = strip_eol(path).split("\t")[0].strip()
    if path.startswith('"') and path.endswith('"') and len(path) >= 2:
        try:
            raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
            path = raw.encode("latin-1").decode("utf-8", "surrogateescape")
        except (UnicodeDecodeError, UnicodeEncodeError):
            raise bad_input(f"bad quoted path {path[:60]!r} in patch") from None
    if any(c in path for c in "\n\r\x00"):
        raise bad_input(f"path {path[:60]!r} in patch contains a newline or NUL byte")
    return path
