#!/usr/bin/env python3
"""Placement accuracy of patch tools on real SGLang diffs with known drift ("make bench").

Cases come from real changes between consecutive SGLang releases (read from the cached wheels via
`sgpatch.releases.cache`). For each changed file we take a few hunks (difflib grouping, 3 lines of
context), and make drifted copies of the OLD file whose correct outcome is known exactly: the
expected bytes, or "must refuse". Every tool runs on its own fresh copy, and each run is scored:

    correct     exit 0 and exactly the expected bytes; or, where refusing is right (conflict,
                ambiguous duplicate), nonzero exit with the file untouched
    refused     nonzero exit, file untouched, although a correct application existed (safe miss)
    misapplied  anything else: exit 0 with wrong bytes (including "success" that changed nothing),
                or a file left changed after a failure (partial application)

    python bench/accuracy.py                      # table on stdout
    python bench/accuracy.py --out docs/benchmarks.md --json   # also update the docs section
See bench/README.md for the case types.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from sgpatch.errors import SgpatchError  # noqa: E402
from sgpatch.placement.pydefs import parses  # noqa: E402
from sgpatch.releases import cache as releases  # noqa: E402

sys.path.insert(
    0, str(Path(__file__).resolve().parent)
)  # bench/docsection.py, also when loaded by path

BEGIN, END = "<!-- accuracy:begin -->", "<!-- accuracy:end -->"
DEFAULT_PAIRS = (
    "0.5.8:0.5.9",
    "0.5.9:0.5.10",
    "0.5.12:0.5.13",
    "0.5.13:0.5.14",
    "0.5.17:0.5.18",
    "0.5.22:0.5.23",
)
CASE_TYPES = (
    "clean",
    "offset",
    "context-1",
    "context-2",
    "whitespace",
    "duplicate",
    "already-applied",
    "conflict",
    "multi-line-header",
    "far-copy",
    "far-copy-edited",
    "equal-fuzz-decoy",
    "method-taken-upstream",
    "method-upstream-own",
    "block-taken-upstream",
    "far-context-copy",
    "far-context-shifted",
    "far-context-fuzz-1",
    "far-context-fuzz-2",
    "inner-context-decoy",
)
# refusing is a correct outcome here
REFUSE_OK = {
    "duplicate",
    "conflict",
    "equal-fuzz-decoy",
    "method-upstream-own",
    "inner-context-decoy",
}
TRAPS = 8  # cases per trap type (method-*, block-taken-upstream), from the release pairs
# The largest real modules (above MAX_SIZE), drawn once per run: their classes have multi-line
# headers (`class Scheduler(\n    Mixin,\n):`) and long methods, where fuzz matters most.
BIG_FILES = (
    "sglang/srt/managers/scheduler.py",
    "sglang/srt/server_args.py",
    "sglang/srt/model_executor/model_runner.py",
)
BIG_MAX_SIZE = 400_000
FAR = 250  # lines between a far copy and the expected line
SYNTHETIC = 3  # synthetic insert-only hunks per drawn file, for the reach cases
FAR_MIN = 30  # the reach cases' far: this many lines or more, and more than twice the hunk
MIN_SIZE, MAX_SIZE = 2_000, 80_000  # bytes of the old file: realistic modules, not giants
MAX_HUNKS = 3
CTX = 3
TIMEOUT = 60


# ---------------------------------------------------------------------------------------------
# cases


@dataclass(frozen=True)
class Hunk:
    """One difflib group on the old file: [start, end) covers context + changed lines."""

    start: int
    end: int
    removed: tuple[int, ...]  # old indices the hunk deletes or replaces
    context: tuple[int, ...]  # old indices kept as context, in order
    lead: tuple[int, ...]  # leading context, outermost first
    trail: tuple[int, ...]  # trailing context, outermost first


@dataclass(frozen=True)
class Source:
    """A real file change: old bytes, the selected hunks, the diff and its correct result."""

    pair: str
    relpath: str  # package-relative
    old: tuple[str, ...]
    new: tuple[str, ...]  # old with only the selected hunks applied
    hunks: tuple[Hunk, ...]
    tmap: tuple[int, ...]  # old boundary index -> new boundary index (valid outside changes)
    diff: str


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    source: Source
    start: str  # the drifted file the tool sees
    expected: str | None  # None: must refuse


@dataclass
class Outcome:
    case: str
    kind: str
    tool: str
    score: str  # correct | refused | misapplied
    rc: int
    seconds: float
    partial: bool = False  # failed but left the file changed
    silent: bool = False  # exit 0, file untouched, though a change or a refusal was due


def _opcode_groups(old: list[str], new: list[str]) -> list[list[tuple[str, int, int, int, int]]]:
    return list(difflib.SequenceMatcher(None, old, new).get_grouped_opcodes(CTX))


def _hunk_of(group: list[tuple[str, int, int, int, int]]) -> Hunk | None:
    """A Hunk if the group has full context on both sides (no file-edge anchoring)."""
    first, last = group[0], group[-1]
    if first[0] != "equal" or first[2] - first[1] != CTX:
        return None
    if last[0] != "equal" or last[2] - last[1] != CTX or len(group) < 3:
        return None
    removed: list[int] = []
    context: list[int] = []
    for tag, i1, i2, _j1, _j2 in group:
        (context if tag == "equal" else removed).extend(range(i1, i2))
    return Hunk(
        start=first[1],
        end=last[2],
        removed=tuple(removed),
        context=tuple(context),
        lead=tuple(range(first[1], first[2])),
        trail=tuple(range(last[2] - 1, last[1] - 1, -1)),
    )


def _build_source(
    pair: str, relpath: str, old: list[str], new: list[str], rng: random.Random
) -> Source | None:
    groups = [(g, h) for g in _opcode_groups(old, new) if (h := _hunk_of(g)) is not None]
    if not groups:
        return None
    chosen = sorted(rng.sample(range(len(groups)), min(MAX_HUNKS, len(groups))))
    return _source_of(pair, relpath, old, new, [groups[i] for i in chosen])


Group = list[tuple[str, int, int, int, int]]


def _source_of(
    pair: str, relpath: str, old: list[str], new: list[str], picked: list[tuple[Group, Hunk]]
) -> Source:
    """The Source of the old file with exactly the `picked` difflib groups applied."""
    target: list[str] = []
    tmap: list[int] = []
    text: list[str] = []
    pos = 0
    for group, _h in picked:
        for i in range(pos, group[0][1]):
            tmap.append(len(target))
            target.append(old[i])
        hunk_lines: list[str] = []
        o_start, n_start = group[0][1], len(target)
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for i in range(i1, i2):
                    tmap.append(len(target))
                    target.append(old[i])
                    hunk_lines.append(" " + old[i])
            else:
                for i in range(i1, i2):
                    tmap.append(-1)
                    hunk_lines.append("-" + old[i])
                for j in range(j1, j2):
                    target.append(new[j])
                    hunk_lines.append("+" + new[j])
        o_len = group[-1][2] - o_start
        n_len = len(target) - n_start
        func = _funcname(old, o_start)
        text.append(f"@@ -{o_start + 1},{o_len} +{n_start + 1},{n_len} @@{func}\n")
        text.extend(hunk_lines)
        pos = group[-1][2]
    for i in range(pos, len(old)):
        tmap.append(len(target))
        target.append(old[i])
    tmap.append(len(target))
    path = f"python/sglang/{relpath}"
    diff = f"--- a/{path}\n+++ b/{path}\n" + "".join(text)
    return Source(
        pair, relpath, tuple(old), tuple(target), tuple(h for _g, h in picked), tuple(tmap), diff
    )


def _funcname(lines: Sequence[str], start: int) -> str:
    """What `git diff` writes after the second @@ (its default funcname, no diff driver): the
    nearest line above the hunk starting with a letter, `_` or `$`, cut to 80 bytes."""
    for j in range(start - 1, -1, -1):
        line = lines[j]
        if line[:1].isalpha() or line[:1] in ("_", "$"):
            return " " + line.rstrip()[:80]
    return ""


def _in_class_with_multiline_header(src: Source, h: Hunk) -> bool:
    """The hunk sits in a class (or def) whose header spans several lines (`class X(`)."""
    func = _funcname(src.old, h.start).strip()
    return func.startswith(("class ", "def ", "async def ")) and func.endswith("(")


def _edit(lines: Sequence[str], edits: list[tuple[str, int, list[str]]]) -> list[str]:
    """Apply ("replace", i, [line]) / ("insert", i, lines) edits, highest index first."""
    out = list(lines)
    for op, i, payload in sorted(edits, key=lambda e: (e[1], e[0] == "insert"), reverse=True):
        if op == "replace":
            out[i] = payload[0]
        else:
            out[i:i] = payload
    return out


def _drifted(src: Source, edits: list[tuple[str, int, list[str]]]) -> tuple[str, str]:
    """The drifted old file and its correct result (same edits mapped onto the new file)."""
    mapped = []
    for op, i, payload in edits:
        j = src.tmap[i]
        assert j >= 0, "drift must not touch lines the hunk changes"
        mapped.append((op, j, payload))
    return "".join(_edit(src.old, edits)), "".join(_edit(src.new, mapped))


def _unrelated_block(rng: random.Random, n: int) -> list[str]:
    k = rng.randrange(1000)
    body = [
        f"    value_{i} = value_{i - 1} * {k + i} if value_{i - 1} else {i}\n" for i in range(1, n)
    ]
    return [
        "\n",
        f"def _unrelated_upstream_helper_{k}(value_0):\n",
        '    """Added upstream; unrelated to the patch."""\n',
        *body,
        f"    return value_{n - 1}\n",
        "\n",
    ]


def _touch(line: str) -> str:
    """A small non-whitespace upstream edit of one line."""
    return "# upstream edit\n" if not line.strip() else line.rstrip("\n") + "  # upstream edit\n"


def _outside_hunks(src: Source, i: int) -> bool:
    """True if inserting before old line i does not split any selected hunk."""
    return all(not (h.start < i < h.end) for h in src.hunks)


def make_cases(src: Source, rng: random.Random, tag: str) -> list[Case]:
    cases: list[Case] = []

    def add(kind: str, start: str, expected: str | None) -> None:
        cases.append(Case(f"{tag}-{kind}", kind, src, start, expected))

    old = "".join(src.old)
    new = "".join(src.new)
    add("clean", old, new)

    first = src.hunks[0]
    at = rng.randint(0, max(0, first.start - 10))
    add("offset", *_drifted(src, [("insert", at, _unrelated_block(rng, rng.randint(12, 50)))]))

    h = rng.choice(src.hunks)
    side = rng.choice((h.lead, h.trail))
    add("context-1", *_drifted(src, [("replace", side[0], [_touch(src.old[side[0]])])]))
    h = rng.choice(src.hunks)
    side = rng.choice((h.lead, h.trail))
    add(
        "context-2",
        *_drifted(src, [("replace", i, [_touch(src.old[i])]) for i in side[:2]]),
    )

    h = rng.choice(src.hunks)
    outer = set(h.lead[:2] + h.trail[:2])
    inner = [i for i in h.context if i not in outer and src.old[i].strip()]
    ws_edits: list[tuple[str, int, list[str]]] = []
    for i in rng.sample(inner, min(2, len(inner))):
        line = src.old[i]
        body = line.rstrip("\n")
        indent = len(body) - len(body.lstrip())
        gap = body.find(" ", indent)
        if gap > indent and not ws_edits:
            changed = body[:gap] + " " + body[gap:] + "\n"  # doubled inner space
        else:
            changed = body + "   \n"  # trailing spaces
        ws_edits.append(("replace", i, [changed]))
    if ws_edits:
        add("whitespace", *_drifted(src, ws_edits))

    idx = rng.randrange(len(src.hunks))
    h = src.hunks[idx]
    region = list(src.old[h.start : h.end])
    lo = src.hunks[idx - 1].end if idx else 0
    hi = src.hunks[idx + 1].start if idx + 1 < len(src.hunks) else len(src.old)
    gap = rng.randint(3, 40)
    where = h.start - gap if h.start - gap >= lo else (h.end + gap if h.end + gap <= hi else None)
    if where is None:
        where = lo if lo < h.start else hi
    if _outside_hunks(src, where):
        add("duplicate", *_drifted(src, [("insert", where, [*region, "\n"])]))

    add("already-applied", new, new)

    cases += _scope_cases(src, rng, tag)

    with_removal = [h for h in src.hunks if h.removed]
    if with_removal:
        h = rng.choice(with_removal)
        r = rng.choice(h.removed)
        changed = list(src.old)
        changed[r] = _touch(changed[r])
        add("conflict", "".join(changed), None)
    return cases


def _scope_cases(src: Source, rng: random.Random, tag: str) -> list[Case]:
    """The reach cases: edge drift under a multi-line header, one exact copy far away, and a
    decoy as good as the original at equal fuzz."""
    out: list[Case] = []
    first = src.hunks[0]
    multi = [h for h in src.hunks if _in_class_with_multiline_header(src, h)]
    if multi:
        h = rng.choice(multi)
        above = rng.randint(0, max(0, first.start - 10))
        edits = [("insert", above, _unrelated_block(rng, rng.randint(12, 50)))]
        edits += [("replace", h.lead[0], [_touch(src.old[h.lead[0]])])]
        edits += [("replace", h.trail[0], [_touch(src.old[h.trail[0]])])]
        out.append(
            Case(f"{tag}-multi-line-header", "multi-line-header", src, *_drifted(src, edits))
        )
    idx = rng.randrange(len(src.hunks))
    h = src.hunks[idx]
    region = [*src.old[h.start : h.end], "\n"]
    n = len(src.old)
    for where in (n, 0):  # at the end of the file, else at its start
        if abs(where - h.start) >= FAR and _outside_hunks(src, where):
            start, expected = _drifted(src, [("insert", where, region)])
            out.append(Case(f"{tag}-far-copy", "far-copy", src, start, expected))
            # the original's outermost context line edited upstream: the exact far copy must
            # not beat it (GNU patch and git take the far copy)
            touched = _touch(src.old[h.lead[0]])
            edits = [("insert", where, region), ("replace", h.lead[0], [touched])]
            start, expected = _drifted(src, edits)
            out.append(Case(f"{tag}-far-copy-edited", "far-copy-edited", src, start, expected))
            break
    lo = src.hunks[idx - 1].end if idx else 0
    where = h.start - rng.randint(3, 40)
    if where >= lo and _outside_hunks(src, where):
        decoy = list(region)
        decoy[0] = _touch(decoy[0])  # the decoy matches without its top context line,
        # the original without its bottom one: both need fuzz 1, neither is better
        edits = [("insert", where, decoy), ("replace", h.trail[0], [_touch(src.old[h.trail[0]])])]
        start, expected = _drifted(src, edits)
        out.append(Case(f"{tag}-equal-fuzz-decoy", "equal-fuzz-decoy", src, start, expected))
    return out


# ---------------------------------------------------------------------------------------------
# reach cases (issue 46): copies of a hunk's whole context far away, and decoys of its inner
# context lines at equal fuzz


def reach_cases(sources: Sequence[Source], seed: int) -> list[Case]:
    """Every hunk of every drawn file, as the issue's families: a copy of its whole context
    far away (clean, shifted, fuzz 1, fuzz 2), and, for insert-only hunks, a decoy of its inner
    context lines nearer the stated line at equal fuzz. A random stream of their own, so the
    other case types stay the same cases."""
    rng = random.Random(seed + 3)
    out: list[Case] = []
    for i, src in enumerate(sources):
        for k in range(len(src.hunks)):
            tag = f"f{i:02d}h{k}"
            out += _far_context_cases(src, k, rng, tag)
            out += _inner_decoy_cases(src, k, rng, tag)
        for j, ins in enumerate(_insertions(src, rng, SYNTHETIC)):
            tag = f"f{i:02d}s{j}"
            out += _far_context_cases(ins, 0, rng, tag)
            out += _inner_decoy_cases(ins, 0, rng, tag)
    return out


def _insertions(src: Source, rng: random.Random, n: int) -> list[Source]:
    """Up to n one-hunk insert-only changes of the file's old lines, as a patch adds a line
    to a body (`patched_N = True`, indented as the line after it): between two non-blank
    lines of one def/class, so its context is real code."""
    from sgpatch.placement import scope

    found = scope.blocks(src.old)
    spots = [
        p
        for p in range(CTX + 1, len(src.old) - CTX - 1)
        if src.old[p - 1].strip() and src.old[p].strip() and src.old[p].startswith("    ")
        and scope.enclosing(found, p - CTX)[:1] == scope.enclosing(found, p + CTX)[:1]
    ]  # fmt: skip
    out: list[Source] = []
    for p in sorted(rng.sample(spots, min(n, len(spots)))):
        indent = src.old[p][: len(src.old[p]) - len(src.old[p].lstrip())]
        old = list(src.old)
        new = [*old[:p], f"{indent}patched_{rng.randrange(1000)} = True\n", *old[p:]]
        picked = [(g, h) for g in _opcode_groups(old, new) if (h := _hunk_of(g)) is not None]
        if len(picked) == 1:
            out.append(_source_of(src.pair, src.relpath, old, new, picked))
    return out


def _regen(src: Source, edits: list[tuple[str, int, list[str]]]) -> Source | None:
    """The same change, its diff made on the old file with `edits` applied: the stated lines
    point at the hunks as that file has them. None when difflib groups it otherwise."""
    old = _edit(src.old, edits)
    new = _edit(src.new, [(op, src.tmap[i], lines) for op, i, lines in edits])
    picked = [(g, h) for g in _opcode_groups(old, new) if (h := _hunk_of(g)) is not None]
    if len(picked) != len(src.hunks):
        return None
    return _source_of(src.pair, src.relpath, old, new, picked)


def _far_spot(src: Source, k: int, rng: random.Random) -> int | None:
    """Where a copy of hunk k's context goes: far from it (FAR_MIN lines or more, and more than
    twice the hunk), above or below, never inside a hunk; near the far bound more often."""
    h = src.hunks[k]
    gap = max(FAR_MIN, 2 * (h.end - h.start) + 1)
    below = [w for w in range(h.end + gap, len(src.old) + 1) if _outside_hunks(src, w)]
    above = [w for w in range(0, h.start - gap + 1) if _outside_hunks(src, w)]
    above.reverse()  # nearest first
    spots = [s for s in (below, above) if s]
    if not spots:
        return None
    side = rng.choice(spots)
    return rng.choice(side[:150]) if rng.random() < 0.7 else rng.choice(side)


def _far_context_cases(src: Source, k: int, rng: random.Random, tag: str) -> list[Case]:
    """Hunk k's whole context (its context lines, in order, without the lines it changes: for
    an insert-only hunk its whole pre-image) copied far away; the diff states the original's
    line exactly. Clean, shifted (the hunk before it moved and the drift cancels out before
    this one), and with the original's outermost context edited (fuzz 1, fuzz 2)."""
    where = _far_spot(src, k, rng)
    if where is None:
        return []
    ctx = [src.old[i] for i in src.hunks[k].context]
    s2 = _regen(src, [("insert", where, ctx)])
    if s2 is None or [s2.old[i] for i in s2.hunks[k].context] != ctx:
        return []
    h = s2.hunks[k]
    out = [Case(f"{tag}-far-context-copy", "far-context-copy", s2, *_drifted(s2, []))]
    shifted = _shifted(s2, k, rng)
    if shifted is not None:
        out.append(Case(f"{tag}-far-context-shifted", "far-context-shifted", s2, *shifted))
    for n in (1, 2):
        side = rng.choice((h.lead, h.trail))
        edits = [("replace", i, [_touch(s2.old[i])]) for i in side[:n]]
        kind = f"far-context-fuzz-{n}"
        out.append(Case(f"{tag}-{kind}", kind, s2, *_drifted(s2, edits)))
    return out


def _shifted(src: Source, k: int, rng: random.Random) -> tuple[str, str] | None:
    """Lines inserted above hunk k-1 and as many removed between it and hunk k: hunk k-1 is
    found moved, hunk k is back at its stated line (the expected line carried from k-1 is
    off). The start file and its correct result; None for the first hunk or a short gap."""
    if k == 0:
        return None
    prev, h = src.hunks[k - 1], src.hunks[k]
    gap = list(range(prev.end + 1, h.start - 1))
    if len(gap) < 6:
        return None
    b = rng.randint(2, min(20, len(gap) - 4))
    first = gap[rng.randrange(len(gap) - b)]
    at = rng.randint(0, prev.start)
    block = [f"    shifted_{rng.randrange(1000)}_{i} = {i}\n" for i in range(b)]
    old, new = list(src.old), list(src.new)
    del old[first : first + b]
    del new[src.tmap[first] : src.tmap[first] + b]
    old[at:at] = block
    new[src.tmap[at] : src.tmap[at]] = block
    return "".join(old), "".join(new)


def _inner_decoy_cases(src: Source, k: int, rng: random.Random, tag: str) -> list[Case]:
    """An insert-only hunk k whose outer context lines upstream edited (the top one, the bottom
    one, or both: fuzz 1), and a decoy: a copy of its inner context lines (its outer ones left
    out), 1-3 lines above the original, in the same scope, so nearer the stated line than the
    original it pushes down. Where an outer line is blank the decoy is put beside a blank line
    too, so it matches one more line by chance, still at fuzz 1. Placing the hunk at the
    original or refusing is correct; placing it at the decoy is a misapplication."""
    h = src.hunks[k]
    if h.removed or len(h.lead) < 2 or len(h.trail) < 2:
        return []
    lo = src.hunks[k - 1].end if k else 0
    where = h.start - rng.randint(1, 3)
    if where < lo or not _same_scope(src, where, h.start + len(h.lead)):
        return []
    first, last = src.old[h.lead[0]], src.old[h.trail[0]]
    inner = [src.old[i] for i in sorted(h.context) if i not in (h.lead[0], h.trail[0])]
    decoy = list(inner)
    if not first.strip():
        decoy = [first, *decoy]
    elif not last.strip():
        decoy = [*decoy, last]
    edits: list[tuple[str, int, list[str]]] = [("insert", where, decoy)]
    if decoy == inner:
        outer = rng.choice(((h.lead[0],), (h.trail[0],), (h.lead[0], h.trail[0])))
    else:  # the decoy matches one outer line: the original is edited on both ends
        outer = (h.lead[0], h.trail[0])
    edits += [("replace", i, [_touch(src.old[i])]) for i in outer]
    start, expected = _drifted(src, edits)
    return [Case(f"{tag}-inner-decoy", "inner-context-decoy", src, start, expected)]


def _same_scope(src: Source, a: int, b: int) -> bool:
    """Old lines a and b are in the same innermost def/class (or both at module level)."""
    from sgpatch.placement import scope

    found = scope.blocks(src.old)
    inner = [scope.enclosing(found, p)[:1] for p in (a, b)]
    return inner[0] == inner[1]


# ---------------------------------------------------------------------------------------------
# trap cases: upstream already took the patch's method or block (the fuzz trap, issue 22)

_DEF = re.compile(r"^(\s+)(?:async\s+)?def (\w+)\(")


def _added_run(group: Group, old: list[str], new: list[str]) -> list[str] | None:
    """The lines a pure-addition group inserts (one insert between two equals), else None."""
    if len(group) != 3 or [g[0] for g in group] != ["equal", "insert", "equal"]:
        return None
    _, _, _, j1, j2 = group[1]
    return new[j1:j2]


def _method_cases(src: Source, run: list[str], tag: str) -> list[Case]:
    """The hunk adds one method to a class; upstream added it too, at the end of the class:
    with a blank line after its def line (taken: already applied), or with its own body
    (upstream's own: adding the patch's is a second definition, refuse)."""
    from sgpatch.placement import scope

    body = _strip_blank(run)
    m = _DEF.match(body[0]) if body else None
    if m is None or sum(1 for ln in body if (d := _DEF.match(ln)) and d[1] == m[1]) != 1:
        return []
    h = src.hunks[0]
    at = h.start + len(h.lead)
    cls = [b for b in scope.enclosing(scope.blocks(src.old), at) if b.kind == "class"]
    if not cls or any(re.match(rf"\s+(?:async\s+)?def {m[2]}\(", ln) for ln in src.old):
        return []
    end = cls[0].end
    if not _outside_hunks(src, end) or h.start <= end <= h.end:
        return []
    sig = next((k + 1 for k, ln in enumerate(body) if ln.rstrip().endswith(":")), None)
    if sig is None:
        return []
    taken = [*body[:1], "\n", *body[1:]]
    own = [*body[:sig], f"{m[1]}    raise NotImplementedError('upstream')\n"]
    out = []
    for kind, method, expected in (
        ("method-taken-upstream", taken, True),
        ("method-upstream-own", own, False),
    ):
        start = "".join(_edit(src.old, [("insert", end, [*method, "\n", "\n"])]))
        if not parses(start):  # the run is not one whole method (difflib cut it elsewhere)
            return []
        out.append(Case(f"{tag}-{kind}", kind, src, start, start if expected else None))
    return out


def _block_case(src: Source, run: list[str], tag: str) -> list[Case]:
    """The hunk adds a block after a blank line; upstream took it with a comment line above
    it. Fuzz 2 fits the pre-image right after upstream's copy (its last context lines are the
    block's blank line and what follows): adding it again recomputes its variables."""
    h = src.hunks[0]
    body = [ln for ln in run if ln.strip()]
    if len(body) < 2 or src.old[h.start + len(h.lead) - 1].strip() or run[-1].strip():
        return []
    at = src.tmap[h.start] + len(h.lead)  # where the run starts in the patched file
    at += next(k for k, ln in enumerate(run) if ln.strip())
    indent = body[0][: len(body[0]) - len(body[0].lstrip())]
    start = [*src.new[:at], f"{indent}# added upstream\n", *src.new[at:]]
    text = "".join(start)
    return [Case(f"{tag}-block-taken-upstream", "block-taken-upstream", src, text, text)]


def _strip_blank(run: list[str]) -> list[str]:
    lo, hi = 0, len(run)
    while lo < hi and not run[lo].strip():
        lo += 1
    while hi > lo and not run[hi - 1].strip():
        hi -= 1
    return run[lo:hi]


def trap_cases(pairs: Sequence[str], seed: int) -> list[Case]:
    """Up to TRAPS cases of each trap type, one hunk each, from real release diffs: a hunk
    that adds a method to a class, or a block after a blank line, drifted as upstream would
    have drifted it by taking the patch."""
    rng = random.Random(seed + 2)
    want = {"method": TRAPS, "block": TRAPS}
    cases: list[Case] = []
    for pair in pairs:
        a, b = pair.split(":")
        ra, rb = releases.record(a), releases.record(b)
        names = sorted(n for n, h in ra.items() if n.endswith(".py") and n in rb and rb[n] != h)
        rng.shuffle(names)
        for name in names:
            if not any(want.values()):
                return cases
            old_b = releases.read_member(a, name)
            if not MIN_SIZE <= len(old_b) <= MAX_SIZE:
                continue
            old, new = _decode(old_b), _decode(releases.read_member(b, name))
            if old is None or new is None:
                continue
            cases += _traps_of(pair, name.removeprefix("sglang/"), old, new, want, len(cases))
    return cases


def _traps_of(
    pair: str, relpath: str, old: list[str], new: list[str], want: dict[str, int], n: int
) -> list[Case]:
    """At most one trap of each wanted type from one changed file."""
    out: list[Case] = []
    for group in _opcode_groups(old, new):
        h = _hunk_of(group)
        run = _added_run(group, old, new)
        if h is None or run is None:
            continue
        src = _source_of(pair, relpath, old, new, [(group, h)])
        tag = f"t{n + len(out):02d}"
        for kind, make in (("method", _method_cases), ("block", _block_case)):
            if want[kind] and (made := make(src, run, tag)):
                out += made
                want[kind] -= 1
                return out
    return out


def _decode(data: bytes) -> list[str] | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\r" in text or not text.endswith("\n"):
        return None
    return text.splitlines(keepends=True)


def build_sources(pairs: Sequence[str], n_files: int, seed: int) -> list[Source]:
    """Pick `n_files` changed .py files spread over the release pairs, deterministically."""
    rng = random.Random(seed)
    per_pair = -(-n_files // len(pairs))
    sources: list[Source] = _big_sources(pairs, rng)
    for pair in pairs:
        a, b = pair.split(":")
        ra, rb = releases.record(a), releases.record(b)
        changed = sorted(
            n
            for n, h in ra.items()
            if n.startswith("sglang/") and n.endswith(".py") and n in rb and rb[n] != h
        )
        rng.shuffle(changed)
        got = 0
        for name in changed:
            if got == per_pair or len(sources) == n_files:
                break
            old_b = releases.read_member(a, name)
            if not MIN_SIZE <= len(old_b) <= MAX_SIZE:
                continue
            old, new = _decode(old_b), _decode(releases.read_member(b, name))
            if old is None or new is None:
                continue
            src = _build_source(pair, name.removeprefix("sglang/"), old, new, rng)
            if src is not None:
                sources.append(src)
                got += 1
    return sources


def _big_sources(pairs: Sequence[str], rng: random.Random) -> list[Source]:
    """The largest real modules, from the first pair where each changed."""
    out: list[Source] = []
    for name in BIG_FILES:
        for pair in pairs:
            a, b = pair.split(":")
            ra, rb = releases.record(a), releases.record(b)
            if name not in ra or name not in rb or ra[name] == rb[name]:
                continue
            old_b = releases.read_member(a, name)
            old, new = _decode(old_b), _decode(releases.read_member(b, name))
            if old is None or new is None or len(old_b) > BIG_MAX_SIZE:
                continue
            src = _build_source(pair, name.removeprefix("sglang/"), old, new, rng)
            if src is not None:
                out.append(src)
                break
    return out


# ---------------------------------------------------------------------------------------------
# tools


@dataclass(frozen=True)
class Tool:
    name: str
    argv: tuple[str, ...]  # {dir} and {patch} are substituted
    env: tuple[tuple[str, str], ...] = ()

    def command(self, workdir: Path, patch: Path) -> list[str]:
        return [a.format(dir=workdir, patch=patch) for a in self.argv]


def all_tools() -> list[Tool]:
    py = sys.executable
    pythonpath = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p)
    return [
        Tool("patch -F0", ("patch", "-p1", "-F0", "-d", "{dir}", "-i", "{patch}")),
        Tool("patch -F2", ("patch", "-p1", "-F2", "-d", "{dir}", "-i", "{patch}")),
        Tool("git apply", ("git", "-C", "{dir}", "apply", "-p1", "{patch}")),
        Tool("git apply -C1", ("git", "-C", "{dir}", "apply", "-p1", "-C1", "{patch}")),
        Tool(
            "sgpatch --fuzz 2",
            (py, "-m", "sgpatch", "patch", "-p1", "-d", "{dir}", "--fuzz", "2", "{patch}"),
            (("PYTHONPATH", pythonpath),),
        ),
    ]


def _env(tool: Tool, root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(tool.env)
    env["GIT_CEILING_DIRECTORIES"] = str(root)  # never let git find an enclosing repository
    env["LC_ALL"] = "C"
    return env


def available(tool: Tool, root: Path) -> str | None:
    """None if the tool runs here, else why not (the harness then skips it)."""
    if tool.argv[0] != sys.executable:
        if shutil.which(tool.argv[0]) is None:
            return f"{tool.argv[0]} not found"
        return None
    probe = [a for a in tool.argv[:4]] + ["--help"]
    try:
        proc = subprocess.run(
            probe, capture_output=True, env=_env(tool, root), timeout=TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        return err[-1] if err else f"exit {proc.returncode}"
    return None


def run_one(tool: Tool, case: Case, root: Path, keep: bool) -> Outcome:
    work = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    target = work / "tree" / "python" / "sglang" / case.source.relpath
    target.parent.mkdir(parents=True)
    target.write_bytes(case.start.encode())
    patch = work / "change.patch"
    patch.write_bytes(case.source.diff.encode())
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            tool.command(work / "tree", patch),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=_env(tool, root),
            timeout=TIMEOUT,
            start_new_session=True,  # no controlling tty: GNU patch cannot prompt
            check=False,
        )
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        rc = -9
    seconds = time.perf_counter() - t0
    for junk in (target.with_name(target.name + ".rej"), target.with_name(target.name + ".orig")):
        junk.unlink(missing_ok=True)
    after = target.read_bytes().decode(errors="replace") if target.exists() else None
    unchanged = after == case.start
    if case.expected is None:
        ok = rc != 0 and unchanged
        score = "correct" if ok else "misapplied"
    elif rc == 0 and after == case.expected:
        score = "correct"
    elif rc != 0 and unchanged:
        score = "correct" if case.kind in REFUSE_OK else "refused"
    else:
        score = "misapplied"
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    partial = rc != 0 and not unchanged
    silent = rc == 0 and unchanged and case.expected != case.start
    return Outcome(case.id, case.kind, tool.name, score, rc, seconds, partial, silent)


# ---------------------------------------------------------------------------------------------
# reporting


@dataclass
class Report:
    seed: int
    pairs: list[str]
    files: int
    cases: int
    tools: list[str]
    skipped: dict[str, str]
    seconds: float
    table: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # kind->tool->score
    mean_ms: dict[str, float] = field(default_factory=dict)
    partial: dict[str, int] = field(default_factory=dict)
    silent: dict[str, int] = field(default_factory=dict)
    outcomes: list[dict[str, object]] = field(default_factory=list)
    reach: dict[str, list[int]] = field(default_factory=dict)  # kind -> [GNU right, sgpatch too]


GNU, OURS = "patch -F2", "sgpatch --fuzz 2"


def _reach(outcomes: list[Outcome]) -> dict[str, list[int]]:
    """Per case type: the cases GNU patch -F2 gets right, and how many of them sgpatch gets
    right too (issue 46's bar: reach at or above GNU patch -F2 where GNU is right)."""
    score = {(o.case, o.tool): o.score for o in outcomes}
    out: dict[str, list[int]] = {}
    for o in outcomes:
        if o.tool == GNU and o.score == "correct" and (o.case, OURS) in score:
            row = out.setdefault(o.kind, [0, 0])
            row[0] += 1
            row[1] += score[(o.case, OURS)] == "correct"
    return out


def summarize(report: Report, outcomes: list[Outcome]) -> None:
    table: dict[str, dict[str, dict[str, int]]] = {}
    for kind in [*CASE_TYPES, "total"]:
        table[kind] = {t: {"correct": 0, "refused": 0, "misapplied": 0} for t in report.tools}
    times: dict[str, list[float]] = defaultdict(list)
    partial: Counter[str] = Counter()
    silent: Counter[str] = Counter()
    for o in outcomes:
        table[o.kind][o.tool][o.score] += 1
        table["total"][o.tool][o.score] += 1
        times[o.tool].append(o.seconds)
        partial[o.tool] += o.partial
        silent[o.tool] += o.silent
    report.table = {k: v for k, v in table.items() if any(sum(c.values()) for c in v.values())}
    report.mean_ms = {t: round(1000 * statistics.fmean(times[t]), 1) for t in report.tools}
    report.partial = {t: partial[t] for t in report.tools}
    report.silent = {t: silent[t] for t in report.tools}
    report.outcomes = [asdict(o) for o in outcomes]
    report.reach = _reach(outcomes)


def markdown(report: Report) -> str:
    tools = report.tools
    lines = [
        "## Placement accuracy",
        "",
        f"{report.files} changed files from real SGLang release diffs ({', '.join(report.pairs)}),"
        f" {report.cases} cases, seed {report.seed}; generated by `python bench/accuracy.py`"
        f" in {report.seconds:.0f} s.",
        "Each cell: **correct / refused / misapplied**. *refused* = nonzero exit, file untouched,"
        " although a correct result existed (safe miss). *misapplied* = exit 0 with wrong bytes,"
        " or the file left changed after a failure. For "
        + ", ".join(f"`{k}`" for k in CASE_TYPES if k in REFUSE_OK)
        + ", refusing is correct.",
        "",
        "| case type | n | " + " | ".join(f"`{t}`" for t in tools) + " |",
        "|---|---:|" + "---:|" * len(tools),
    ]
    for kind, row in report.table.items():
        n = sum(row[tools[0]].values()) if tools else 0
        cells = [f"{c['correct']} / {c['refused']} / {c['misapplied']}" for c in row.values()]
        name = f"**{kind}**" if kind == "total" else kind
        lines.append(f"| {name} | {n} | " + " | ".join(cells) + " |")
    lines.append(
        "| mean wall time per file | | "
        + " | ".join(f"{report.mean_ms[t]} ms" for t in tools)
        + " |"
    )
    if report.reach:
        got = sum(r[1] for r in report.reach.values())
        gnu = sum(r[0] for r in report.reach.values())
        missed = ", ".join(f"{k} {r[0] - r[1]}" for k, r in report.reach.items() if r[1] < r[0])
        lines += [
            "",
            f"Reach where `{GNU}` is right: `{OURS}` is right in {got} of those {gnu} cases"
            + (f" (missed: {missed})." if missed else ", in every case type."),
        ]
    if any(report.partial.values()):
        lines += [
            "",
            "Partial applications (failed, but some hunks written): "
            + ", ".join(f"`{t}` {n}" for t, n in report.partial.items() if n)
            + ".",
        ]
    if any(report.silent.values()):
        lines += [
            "",
            "Silent no-ops (exit 0, file untouched, though a change or a refusal was due): "
            + ", ".join(f"`{t}` {n}" for t, n in report.silent.items() if n)
            + ".",
        ]
    if report.skipped:
        lines += [
            "",
            "Skipped (unavailable): " + "; ".join(f"`{t}`: {w}" for t, w in report.skipped.items()),
        ]
    return "\n".join(lines) + "\n"


def update_doc(path: Path, section: str) -> None:
    """Replace the text between the accuracy markers, leaving the rest of the file intact."""
    from docsection import update_section

    update_section(path, "accuracy", section)


# ---------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", nargs="+", default=list(DEFAULT_PAIRS), metavar="OLD:NEW")
    ap.add_argument("--files", type=int, default=24, help="changed files to draw (default 24)")
    ap.add_argument("--seed", type=int, default=20260)
    ap.add_argument("--tools", nargs="+", help="tool names to run (default: all available)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path, help="update the accuracy section of this Markdown file")
    ap.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    try:
        sources = build_sources(args.pairs, args.files, args.seed)
    except SgpatchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed + 1)
    cases = [c for i, s in enumerate(sources) for c in make_cases(s, rng, f"f{i:02d}")]
    cases += trap_cases(args.pairs, args.seed)
    cases += reach_cases(sources, args.seed)

    root = Path(tempfile.mkdtemp(prefix="sgpatch-bench-"))
    tools, skipped = [], {}
    for tool in all_tools():
        if args.tools and tool.name not in args.tools:
            continue
        why = available(tool, root)
        if why is None:
            tools.append(tool)
        else:
            skipped[tool.name] = why
            print(f"skipping {tool.name}: {why}", file=sys.stderr)
    jobs = [(t, c) for c in cases for t in tools]
    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        outcomes = list(pool.map(lambda tc: run_one(tc[0], tc[1], root, args.keep), jobs))
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)

    report = Report(
        seed=args.seed,
        pairs=list(args.pairs),
        files=len(sources),
        cases=len(cases),
        tools=[t.name for t in tools],
        skipped=skipped,
        seconds=round(time.perf_counter() - t0, 1),
    )
    summarize(report, outcomes)
    md = markdown(report)
    if args.out:
        update_doc(args.out, md)
    if args.json:
        print(json.dumps({"schema": 1, **asdict(report)}, indent=2))
    else:
        print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
