"""Drift: files of a pip-installed SGLang that differed from the wheel before sgpatch touched them.

A site-packages install has `sglang-V.dist-info/RECORD` with the sha256 of every file the wheel
installed. A file sgpatch is about to patch, or has patched, should have started out as those
bytes; if it did not, someone else patched this tree (another tool, a hand edit, a different
wheel), and the user should know before trusting `pending`/`present`/`upstream`.

- A file in the ledger is judged by the bytes it had before sgpatch first wrote it (the ledger's
  `before` hash), so sgpatch's own edits are never drift.
- Any other file is judged by its current bytes.
- Files RECORD does not list (created by a patch, or a checkout) are not judged.
By default only the files the sets touch are hashed (a few files: well under a millisecond);
`check(..., paths=None)` hashes every file of the package (0.5.23: ~1,900 files, see
docs/safety.md for the measured cost). Nothing here writes.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import SgpatchError
from sgpatch.state.ledger import Ledger, sha256
from sgpatch.tree.files import read_bytes


@dataclass(frozen=True)
class Drift:
    """One file whose pre-sgpatch bytes differ from the wheel's RECORD."""

    path: str  # package-relative, e.g. srt/layers/communicator.py
    record_sha256: str  # hex, from RECORD
    sha256: str | None  # hex of the bytes before sgpatch (ledger) or now (tree); None: missing
    seen_in: str  # "ledger" (hash from before sgpatch's first write) or "tree" (current bytes)


def _hex(record_hash: str) -> str | None:
    alg, _, b64 = record_hash.partition("=")
    if alg != "sha256" or not b64:
        return None
    try:
        return base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).hex()
    except (ValueError, TypeError):
        return None


def record_hashes(
    dist_info: Path, package: str = "sglang", wanted: Iterable[str] | None = None
) -> dict[str, str] | None:
    """Package-relative path -> hex sha256 from `dist_info/RECORD` (only the `wanted` paths, if
    given: decoding all ~1,900 hashes costs more than the rest of a status); None if there is
    no usable RECORD (a checkout, or a broken install)."""
    try:
        data = (dist_info / "RECORD").read_bytes()
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    prefix = f"{package}/"
    names = None if wanted is None else {prefix + p for p in wanted}
    # csv only for the rows that can name a wanted file
    lines = text.splitlines() if names is None else _rows_starting(text, _row_starts(names))
    out: dict[str, str] = {}
    for row in _rows(lines):
        if len(row) < 2 or not row[0].startswith(prefix):
            continue
        if names is not None and row[0] not in names:
            continue
        digest = _hex(row[1])
        if digest is not None:
            out[row[0][len(prefix) :]] = digest
    return out


def _rows(lines: list[str]):
    """The csv rows of these lines. Where no line has a quote, CR or NUL (every row SGLang's
    RECORD has for a file a set patches) a row is its line split on commas, as csv reads it;
    else csv reads them (imported then)."""
    if all('"' not in ln and "\r" not in ln and "\x00" not in ln for ln in lines):
        return [ln.split(",") for ln in lines]
    import csv

    return csv.reader(lines)


def _row_starts(names: set[str]) -> tuple[str, ...]:
    """How a RECORD row naming one of `names` begins: the name and its comma, or the name
    quoted as csv quotes it (the only spelling: doubled quotes inside), for names with a
    comma. No other row can name one of them."""
    plain = tuple(n + "," for n in sorted(names))
    return plain + tuple('"' + n.replace('"', '""') + '"' for n in sorted(names))


_OTHER_BREAKS = ("\r", "\v", "\f", "\x1c", "\x1d", "\x1e")  # str.splitlines splits on these too


def _rows_starting(text: str, starts: tuple[str, ...]) -> list[str]:
    """The lines of `text` (as str.splitlines makes them) that begin with one of `starts`, in
    order. For an ASCII text whose only line break is LF (what pip writes) each row is found
    with str.find, without splitting the ~2,000 lines of SGLang's RECORD; else line by line."""
    if not text.isascii() or any(b in text for b in _OTHER_BREAKS):
        return [ln for ln in text.splitlines() if ln.startswith(starts)]
    found: set[tuple[int, str]] = set()  # (offset, line): a line two starts match, once
    for start in starts:
        at = 0 if text.startswith(start) else _next_line_with(text, start, 0)
        while at >= 0:
            end = text.find("\n", at)
            found.add((at, text[at:end] if end >= 0 else text[at:]))
            at = _next_line_with(text, start, end) if end >= 0 else -1
    return [line for _, line in sorted(found)]


def _next_line_with(text: str, start: str, pos: int) -> int:
    """Offset of the next line (after the LF at or after `pos`) that begins with `start`."""
    at = text.find("\n" + start, pos)
    return at + 1 if at >= 0 else -1


def _origins(ledger: Ledger, path: str) -> list[str | None]:
    """The hash(es) a file had before any set wrote it: a set's `before` that is not another
    set's `after` (sets applied one after another chain their hashes)."""
    records = [s.files[path] for s in ledger.sets.values() if path in s.files]
    afters = {r.after for r in records}
    befores = [r.before for r in records]
    return [b for b in befores if b not in afters] or befores


def check(
    root: Path,
    dist_info: Path | None,
    ledger: Ledger,
    paths: Iterable[str] | None = None,
) -> list[Drift] | None:
    """Files among `paths` (None: every file RECORD lists) whose bytes before sgpatch differ
    from RECORD. None when there is no RECORD to compare with."""
    if dist_info is None:
        return None
    paths = None if paths is None else set(paths)
    record = record_hashes(dist_info, root.name, paths)
    if record is None:
        return None
    wanted = sorted(record)
    out: list[Drift] = []
    for path in wanted:
        expected = record[path]
        origins = _origins(ledger, path)
        if origins:
            if expected in origins:
                continue
            out.append(Drift(path, expected, origins[0], "ledger"))
            continue
        try:
            data = read_bytes(root, path)
        except SgpatchError:
            continue  # refused (symlink out of the tree, FIFO...) or unreadable: not ours to judge
        found = sha256(data)
        if found != expected:
            out.append(Drift(path, expected, found, "tree"))
    return out


def summary(drift: list[Drift]) -> str:
    """The one line `status` prints, e.g. 'drift: 2 file(s) differ from the wheel's RECORD:
    srt/a.py, srt/b.py (missing)'."""
    names = [d.path + (" (missing)" if d.sha256 is None else "") for d in drift]
    return f"drift: {len(drift)} file(s) differ from the wheel's RECORD: {', '.join(names)}"


def to_json(drift: list[Drift] | None) -> list[dict[str, str | None]] | None:
    if drift is None:
        return None
    return [
        {"path": d.path, "record_sha256": d.record_sha256, "sha256": d.sha256, "seen_in": d.seen_in}
        for d in drift
    ]
