"""The journal of a writing run in `.sgpatch/`: the file-system layer's journal
(`sgpatch.fs.journal`: its format, its strict reading and its store), named and worded for a
tree, plus the form sgpatch wrote before it.

`.sgpatch/journal` of a killed run reads (docs/safety.md has it line by line)

    sgpatch-journal 4
    pid 4242
    file 644 5120 3f2a...e1 srt/layers/communicator.py
    owner 1000 1000 srt/layers/communicator.py
    file - - - srt/extra/new.py
    dir srt/extra

`journal.json` is the form sgpatch wrote before the line form (originals inline, base64): still
read, as strictly, so a journal an older sgpatch left is rolled back; never written.
"""

from __future__ import annotations

from pathlib import Path

from sgpatch.errors import SgpatchError, unsafe
from sgpatch.fs.journal import SCHEMA, Damaged, Entry, Journal, Newer, check_path
from sgpatch.fs.journal import parse as parse_lines
from sgpatch.fs.journal import render as render_lines
from sgpatch.state.folder import parse_json

__all__ = ["SCHEMA", "Entry", "Journal", "parse", "render", "unreadable"]


def render(journal: Journal) -> bytes:
    """The journal's text; refuses a path or folder that a line cannot hold (exit 4)."""
    try:
        return render_lines(journal)
    except Damaged:
        bad = next(
            (p for p in [*(e.path for e in journal.entries), *journal.dirs] if _unfit(p)), "?"
        )
        why = "it holds a line break" if "\n" in bad or "\r" in bad else "not a plain path"
        raise unsafe(f"cannot journal the path {bad!r}: {why}") from None


def _unfit(rel: str) -> bool:
    try:
        check_path(rel)
    except Damaged:
        return True
    return False


def unreadable(path: Path, why: object) -> SgpatchError:
    """The one line for a journal (or an original it names) that is not as sgpatch wrote it:
    never guessed at, never replayed (exit 4)."""
    return unsafe(
        f"{path}: unreadable journal of an interrupted run ({why}); inspect the tree, then "
        "delete the journal"
    )


def parse(path: Path, data: bytes) -> Journal:
    """A journal read back, every field checked: it is replayed only when every line is one
    this sgpatch writes; one from a newer sgpatch is refused, not guessed at (exit 4)."""
    try:
        if path.name.endswith(".json"):
            return _parse_json(data)
        return parse_lines(data)
    except Newer as newer:
        raise unsafe(
            f"{path}: journal schema {newer.schema} is from a newer sgpatch; roll it back with "
            "that sgpatch (`sgpatch recover`), nothing was touched"
        ) from None
    except (Damaged, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise unreadable(path, exc) from None


def _parse_json(data: bytes) -> Journal:
    """The schema-1 form: `{"schema": 1, "files": [{"path", "before": base64|null, "mode",
    "link"?}], "dirs": [...]}`, its originals carried inline."""
    import base64

    from sgpatch.state.digest import sha256

    doc = parse_json(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("schema"), int):
        raise ValueError("not an sgpatch journal")
    if doc["schema"] > 1:
        raise Newer(doc["schema"])
    entries, inline = [], []
    for e in doc["files"]:
        rel, before, mode, link = e["path"], e["before"], e.get("mode"), e.get("link")
        if not isinstance(rel, str) or not (before is None or isinstance(before, str)):
            raise ValueError(f"bad entry for {rel!r}")
        if not (link is None or (isinstance(link, str) and link and "\x00" not in link)):
            raise ValueError(f"bad link for {rel!r}")
        if mode is not None and (type(mode) is not int or not 0 <= mode <= 0o7777):
            raise ValueError(f"bad mode {mode!r} for {rel!r}")
        raw = link.encode() if link is not None else base64.b64decode(before or "", validate=True)
        digest = sha256(raw) if (before is not None or link) else None
        if digest is not None:
            inline.append((digest, raw))
        size = len(raw) if digest is not None else None
        entries.append(Entry(check_path(rel), digest, size, mode, link=link is not None))
    dirs = doc.get("dirs", [])
    if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
        raise ValueError("bad 'dirs'")
    pid = doc.get("pid") or 0
    if type(pid) is not int or pid < 0:
        raise ValueError(f"bad pid {pid!r}")
    return Journal(pid, tuple(entries), tuple(check_path(d) for d in dirs), tuple(inline))
