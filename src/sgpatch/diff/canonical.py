"""The canonical diff writer: one deterministic form for every patch file sgpatch writes.

The diff of two byte strings per file; `ops.refresh` reads the trees and releases they come from.

`refresh`, `diff`, `port` and `export` all write patches through `canonical_diff`, so the same
pair of trees always gives the same bytes (docs/porting.md, "canonical form"):

- the patch's free-text header is kept verbatim; no timestamps, no `index` lines (but for a
  retargeted symlink, which git marks as one only there: `index A..B 120000`);
- one `diff --git a/python/sglang/P b/python/sglang/P` block per file, files sorted by path,
  `new file mode M` / `deleted file mode M` and `/dev/null` for creations/deletions, `old mode`
  / `new mode` for a mode change (M: 100644, 100755, or 120000 for a symlink, whose content is
  its target);
- 3 lines of context; hunks computed by git's own diff (Myers with the indent heuristic, via
  `git diff --no-index` with user configuration ignored), or by difflib when git is missing;
- hunk section headers computed like git's `python` funcname driver: the nearest line above the
  hunk's first line matching `^[ \\t]*((class|(async[ \\t]+)?def)[ \\t].*)$`, capped at 80 bytes,
  trailing blanks dropped.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch.diff.unified import decode, encode, split_lines
from sgpatch.errors import SgpatchError

CONTEXT = 3
UPSTREAM_PREFIX = "python/sglang/"
_FUNCNAME = re.compile(rb"^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$")
_FUNC_MAX = 80  # git's func_line buffer
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_EOL = "\\ No newline at end of file\n"


REGULAR, EXECUTABLE, SYMLINK = 0o100644, 0o100755, 0o120000  # the file kinds git records


@dataclass(frozen=True)
class FileDiff:
    """One file's change: package-relative path, its bytes before/after (None: absent) and
    its git mode on each side (100644, 100755, or 120000: the bytes are a symlink's target)."""

    path: str
    old: bytes | None
    new: bytes | None
    old_mode: int = REGULAR
    new_mode: int = REGULAR


def upstream_path(rel: str) -> str:
    """Package-relative `srt/x.py` -> the path upstream's repository uses, `python/sglang/...`."""
    rel = rel.lstrip("/")
    return rel if rel.startswith(UPSTREAM_PREFIX) else UPSTREAM_PREFIX + rel


def funcname(old_lines: Sequence[str], start: int) -> str:
    """git's python funcname for a hunk whose first old line is `old_lines[start]` (0-based):
    the nearest matching line strictly above it, or ""."""
    for j in range(min(start, len(old_lines)) - 1, -1, -1):
        raw = encode(old_lines[j])
        if raw.endswith(b"\n"):
            raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
        m = _FUNCNAME.match(raw)
        if m:
            return decode(m.group(1)[:_FUNC_MAX].rstrip(b" \t\r\n\v\f"))
    return ""


# ---------------------------------------------------------------------------------------------
# hunks


def _git() -> str | None:
    return shutil.which("git")


def _git_hunks(old: bytes, new: bytes, context: int) -> list[str]:
    """The hunk lines (from the first `@@`) of `git diff --no-index` between two byte strings."""
    with tempfile.TemporaryDirectory(prefix="sgpatch-diff-") as tmp:
        a, b = Path(tmp, "a"), Path(tmp, "b")
        a.write_bytes(old)
        b.write_bytes(new)
        env = {
            **os.environ,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "HOME": tmp,
            "LC_ALL": "C",
            "GIT_CEILING_DIRECTORIES": os.path.dirname(tmp),  # no repository's config, ever
        }
        cmd = [
            _git() or "git",
            "diff",
            "--no-index",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--text",
            "--diff-algorithm=myers",
            "--indent-heuristic",
            f"-U{context}",
            "a",
            "b",
        ]
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, check=False)
    if proc.returncode not in (0, 1):
        raise SgpatchError(f"git diff failed: {decode(proc.stderr).strip()}")
    lines = split_lines(decode(proc.stdout))
    first = next((i for i, ln in enumerate(lines) if ln.startswith("@@ ")), len(lines))
    return lines[first:]


def _difflib_hunks(old: bytes, new: bytes, context: int) -> list[str]:
    a, b = split_lines(decode(old)), split_lines(decode(new))
    out: list[str] = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2 - i1)} +{_range(j1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += _body(" ", a[a1:a2])
                continue
            out += _body("-", a[a1:a2])
            out += _body("+", b[b1:b2])
    return out


def _range(start: int, length: int) -> str:
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _body(kind: str, lines: Sequence[str]) -> list[str]:
    out = []
    for ln in lines:
        out.append(kind + ln if ln.endswith("\n") else kind + ln + "\n" + NO_EOL)
    return out


def _hunks(old: bytes, new: bytes, context: int) -> list[str]:
    if _git() is not None:
        return _git_hunks(old, new, context)
    return _difflib_hunks(old, new, context)


def _with_funcnames(hunk_lines: list[str], old: bytes) -> list[str]:
    """Replace each `@@` line's section header with git's python funcname."""
    old_lines = split_lines(decode(old))
    out = []
    for line in hunk_lines:
        m = _HUNK.match(line)
        if m is None:
            out.append(line)
            continue
        start, count = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
        first = start if count == 0 else start - 1
        func = funcname(old_lines, first)
        out.append(m.group(0) + (f" {func}" if func else "") + "\n")
    return out


def file_diff(fd: FileDiff, context: int = CONTEXT) -> str:
    """The canonical block for one file ("" when nothing changed). As git writes them: a
    file turned into a symlink (or back) is its deletion then its creation; a mode change is
    `old mode`/`new mode`, alone when the bytes stay."""
    both = fd.old is not None and fd.new is not None
    if fd.old == fd.new and (not both or fd.old_mode == fd.new_mode):
        return ""
    if both and (fd.old_mode == SYMLINK) != (fd.new_mode == SYMLINK):
        gone = FileDiff(fd.path, fd.old, None, old_mode=fd.old_mode)
        made = FileDiff(fd.path, None, fd.new, new_mode=fd.new_mode)
        return file_diff(gone, context) + file_diff(made, context)
    up = upstream_path(fd.path)
    head = [f"diff --git a/{up} b/{up}\n"]
    if fd.old is None:
        head += [f"new file mode {fd.new_mode:o}\n", "--- /dev/null\n", f"+++ b/{up}\n"]
    elif fd.new is None:
        head += [f"deleted file mode {fd.old_mode:o}\n", f"--- a/{up}\n", "+++ /dev/null\n"]
    else:
        if fd.old_mode != fd.new_mode:
            head += [f"old mode {fd.old_mode:o}\n", f"new mode {fd.new_mode:o}\n"]
        if fd.old == fd.new:
            return "".join(head)
        if fd.new_mode == SYMLINK:  # a retargeted link says 120000 only on git's index line
            head.append(f"index {_blob(fd.old)}..{_blob(fd.new)} {SYMLINK:o}\n")
        head += [f"--- a/{up}\n", f"+++ b/{up}\n"]
    old, new = fd.old or b"", fd.new or b""
    return "".join(head + _with_funcnames(_hunks(old, new, context), old))


def _blob(data: bytes | None) -> str:
    """git's abbreviated blob id of `data` (what its `index` line names)."""
    import hashlib

    data = data or b""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()[:7]


def canonical_diff(files: Iterable[FileDiff], context: int = CONTEXT) -> str:
    """Every changed file, sorted by path, in canonical form."""
    return "".join(file_diff(fd, context) for fd in sorted(files, key=lambda f: f.path))


def render(header: str, diff: str) -> bytes:
    """A patch file: header (kept verbatim, but ending in a newline) + the canonical diff."""
    if header and not header.endswith("\n"):
        header += "\n"
    return encode(header + diff)


def add_header_line(header: str, line: str) -> str:
    """Append `line` as the header's last text line, keeping the blank line(s) that follow it."""
    body = header.rstrip("\n")
    trailing = header[len(body) :]
    if not body:
        return f"{line}\n\n"
    return f"{body}\n{line}{trailing if trailing.count(chr(10)) >= 2 else chr(10) * 2}"
