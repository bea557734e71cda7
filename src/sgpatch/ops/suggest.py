"""Suggest a probe for a patch from its own lines, and check it on the spot.

A probe says "upstream already has this patch". The suggestion is built from the change itself:
per hunk, the most distinctive added line (code before comments, longer first) that appears
nowhere in the file before the patch and is in the file after it, at most `PER_FILE` per file,
for every file the patch adds code to; a file the patch only removes lines from gets a `not`
of a removed line that is gone afterwards. All of them together (`all`), so a patch that landed
upstream only in part still reads as "not upstream" and is applied (or conflicts, visibly).

`check` evaluates a probe for real (probe.evaluate on small trees holding the files it names):
it must be false on the pristine release and on the tree just before the patch, and true just
after it. `suggest` drops entries that fail and gives up (None, with the reason) if none is left.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch.diff.unified import decode, split_lines, strip_eol
from sgpatch.patchset.probe import AllProbe, NotProbe, ProbeNode, RegexProbe, all_of, evaluate
from sgpatch.patchset.probe import files as probe_files

PER_FILE = 3
MIN_CHARS = 12  # shorter lines (`return x`, `)`, `else:`) say little about a patch
_META = re.compile(r"([.^$*+?{}\[\]\\|()])")
_WORDY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")

Reader = Callable[[str], bytes | None]  # package-relative path -> bytes (None: absent)


@dataclass(frozen=True)
class Suggestion:
    """A checked probe, or None and why there is none."""

    probe: ProbeNode | None
    why: str = ""


def line_regex(text: str) -> str:
    """`^[ \\t]*<the stripped line, metacharacters escaped>[ \\t\\r]*$`: indentation-tolerant,
    and the `\\r` lets it match in a CRLF file too."""
    return r"^[ \t]*" + _META.sub(r"\\\1", text.strip()) + r"[ \t\r]*$"


def _lines(data: bytes | None) -> list[str]:
    return [strip_eol(ln) for ln in split_lines(decode(data))] if data else []


def _count(rx: re.Pattern[str], data: bytes | None) -> int:
    return len(rx.findall(decode(data))) if data else 0


def _score(text: str) -> tuple[int, int]:
    s = text.strip()
    return (0 if s.startswith("#") else 1, len(s))


def _candidates(lines: Sequence[str]) -> list[str]:
    good = [
        ln
        for ln in lines
        if len(ln.strip()) >= MIN_CHARS and _WORDY.search(ln) and ln.isprintable()
    ]
    return sorted(good, key=_score, reverse=True)


def _distinct(texts: Sequence[str], absent_in: Sequence[bytes | None], present_in: bytes | None):
    """The first line whose regex matches in `present_in` but in none of `absent_in`."""
    for text in texts:
        regex = line_regex(text)
        rx = re.compile(regex, re.MULTILINE)
        if _count(rx, present_in) and not any(_count(rx, d) for d in absent_in):
            return regex
    return None


Blocks = list[tuple[list[str], list[str]]]  # (added, removed) lines per changed block


def blocks_of(diff: str) -> dict[str, Blocks]:
    """Changed blocks per package-relative file of a canonical diff (diff.canonical)."""
    out: dict[str, Blocks] = {}
    for part in re.split(r"^diff --git a/python/sglang/", diff, flags=re.M)[1:]:
        rel = part.split(" ", 1)[0]
        out[rel] = _blocks(part.splitlines()[1:])
    return out


def _hunk_texts(before: bytes | None, after: bytes | None) -> Blocks:
    """(added, removed) lines per changed block between two versions of a file (git's diff,
    the canonical writer's: difflib is quadratic on SGLang's 5000-line files)."""
    from sgpatch.diff.canonical import FileDiff, file_diff

    return _blocks(file_diff(FileDiff("f", before, after)).splitlines())


def _blocks(lines: Sequence[str]) -> Blocks:
    out: Blocks = []
    for line in lines:
        kind = line[:1]
        if line.startswith(("diff ", "--- ", "+++ ", "new file", "deleted file", "\\")):
            continue
        if kind not in "+-":
            if out and (out[-1][0] or out[-1][1]):
                out.append(([], []))
            continue
        if not out:
            out.append(([], []))
        out[-1][0 if kind == "+" else 1].append(line[1:])
    return [b for b in out if b[0] or b[1]]


def file_entries(
    rel: str,
    pristine: bytes | None,
    before: bytes | None,
    after: bytes | None,
    blocks: Blocks | None = None,
):
    """Probe entries for one file's change, best first (at most PER_FILE)."""
    blocks = _hunk_texts(before, after) if blocks is None else blocks
    added: list[ProbeNode] = []
    for plus, _minus in blocks:
        regex = _distinct(_candidates(plus), (pristine, before), after)
        if regex and all(getattr(n, "regex", None) != regex for n in added):
            added.append(RegexProbe(rel, regex))
    if added:
        return added[:PER_FILE]
    removed: list[ProbeNode] = []
    for _plus, minus in blocks:
        regex = _distinct(_candidates(minus), (after,), before)
        if regex and all(
            getattr(getattr(n, "node", None), "regex", None) != regex for n in removed
        ):
            removed.append(NotProbe(RegexProbe(rel, regex)))
    return removed[:PER_FILE]


def _combine(nodes: Sequence[ProbeNode]) -> ProbeNode | None:
    return all_of(nodes)


def write_tree(root: Path, read: Reader, files: Sequence[str]) -> Path:
    """A small tree under `root` holding `files` as `read` gives them (absent ones left out)."""
    for rel in set(files):
        data = read(rel)
        if data is not None:
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return root


def value_on(node: ProbeNode, read: Reader) -> bool:
    """The probe's value on a small tree made of the files it names, as `read` gives them."""
    with tempfile.TemporaryDirectory(prefix="sgpatch-probe-") as tmp:
        return evaluate(node, write_tree(Path(tmp), read, probe_files(node))).value


def values_on(nodes: Sequence[ProbeNode], read: Reader) -> list[bool]:
    """Each probe's value on one small tree (every file read once)."""
    files = [f for n in nodes for f in probe_files(n)]
    with tempfile.TemporaryDirectory(prefix="sgpatch-probe-") as tmp:
        result = evaluate(AllProbe(tuple(nodes)), write_tree(Path(tmp), read, files))
    return [c.value for c in result.children]


def check_on(node: ProbeNode, pristine: Path, before: Path, after: Path) -> str:
    """ "" when the probe is false on the pristine tree and before the patch, true after it;
    else what is wrong."""
    if evaluate(node, pristine).value:
        return "true on the pristine release already"
    if evaluate(node, before).value:
        return "true before the patch (an earlier patch makes it true)"
    if not evaluate(node, after).value:
        return "false after the patch is applied"
    return ""


def check(node: ProbeNode, pristine: Reader, before: Reader, after: Reader) -> str:
    """`check_on`, with each state given as a reader of package-relative paths."""
    files = probe_files(node)
    with tempfile.TemporaryDirectory(prefix="sgpatch-probe-") as tmp:
        p = write_tree(Path(tmp, "p"), pristine, files)
        b = write_tree(Path(tmp, "b"), before, files)
        a = write_tree(Path(tmp, "a"), after, files)
        return check_on(node, p, b, a)


def suggest(
    files: Sequence[str],
    pristine: Reader,
    before: Mapping[str, bytes | None],
    after: Mapping[str, bytes | None],
    diff: str | None = None,
) -> Suggestion:
    """A probe for the change `before` -> `after` (package-relative paths), checked; `diff`,
    the change's canonical diff when the caller has it, saves diffing the files again."""
    nodes: list[ProbeNode] = []
    known = blocks_of(diff) if diff is not None else {}
    for rel in sorted(files):
        nodes += file_entries(rel, pristine(rel), before.get(rel), after.get(rel), known.get(rel))
    if not nodes:
        return Suggestion(None, "no added or removed line is distinctive enough for a probe")
    with tempfile.TemporaryDirectory(prefix="sgpatch-probe-") as tmp:
        p = write_tree(Path(tmp, "p"), pristine, files)
        b = write_tree(Path(tmp, "b"), before.get, files)
        a = write_tree(Path(tmp, "a"), after.get, files)
        on_pristine = evaluate(AllProbe(tuple(nodes)), p).children  # one read per file
        nodes = [n for n, r in zip(nodes, on_pristine, strict=True) if not r.value]
        probe = _combine(nodes)
        if probe is None:
            return Suggestion(None, "every candidate line is already in the pristine release")
        problem = check_on(probe, p, b, a)
    if problem:
        return Suggestion(None, f"the suggested probe is {problem}")
    return Suggestion(probe)
