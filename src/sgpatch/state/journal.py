"""The journal of a run that writes: what each file was before, one fact per line.

Before a commit replaces anything, the bytes of every file it will touch go into the
content-addressed store (`.sgpatch/originals/<sha256>`, where the ledger keeps its originals),
and then this journal is written, as quilt keeps `.pc/<patch>/` and git `.git/rebase-merge/`:
small text a person can follow with `cat` and `cp`. `.sgpatch/journal` of a killed run reads

    sgpatch-journal 3
    pid 4242
    file 644 3f2a...e1 srt/layers/communicator.py   (was these bytes, mode 644: copy it back)
    owner 1000 1000 srt/layers/communicator.py      (and belonged to uid 1000, gid 1000)
    file - - srt/extra/new.py                        (did not exist: delete it)
    link 9c1d...07 srt/alias.py                      (was a symlink; its target text is stored)
    dir srt/extra                                    (made by the run: remove it if empty)

The path is the rest of the line (it may hold spaces; a path with a newline is refused).
`journal.json` is the form sgpatch wrote before (originals inline, base64): still read, so a
journal an older sgpatch left is rolled back, never written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import SgpatchError, unsafe
from sgpatch.state.folder import parse_json

SCHEMA = 3  # 1: journal.json (base64 originals inline); 2: this line form over the store;
# 3: `owner UID GID PATH` after a file's line (the owner a rollback gives it back)
HEADER = f"sgpatch-journal {SCHEMA}"


@dataclass(frozen=True)
class Entry:
    """One journalled path: the sha256 of its bytes before (None: it did not exist), its mode,
    or, for a symlink, the sha256 of its target text (`link`)."""

    path: str
    digest: str | None
    mode: int | None = None
    link: bool = False
    owner: tuple[int, int] | None = None  # (uid, gid) of the file before, where it existed


@dataclass(frozen=True)
class Journal:
    """An interrupted run's journal: its entries (in write order), the folders it made, and,
    for the old JSON form only, the original bytes it carried inline (by digest)."""

    pid: int
    entries: tuple[Entry, ...]
    dirs: tuple[str, ...] = ()
    inline: tuple[tuple[str, bytes], ...] = ()


def render(journal: Journal) -> bytes:
    """The journal's text; refuses a path or folder that a line cannot hold."""
    lines = [HEADER, f"pid {journal.pid}"]
    for e in journal.entries:
        _check_path(e.path)
        if e.link:
            lines.append(f"link {e.digest} {e.path}")
        else:
            mode = "-" if e.mode is None else f"{e.mode:o}"
            lines.append(f"file {mode} {e.digest or '-'} {e.path}")
            if e.owner is not None:
                lines.append(f"owner {e.owner[0]} {e.owner[1]} {e.path}")
    for d in journal.dirs:
        _check_path(d)
        lines.append(f"dir {d}")
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


def parse(path: Path, data: bytes) -> Journal:
    """A journal read back, every field checked: it is replayed only when every line is one
    this sgpatch writes; one from a newer sgpatch is refused, not guessed at (exit 4)."""
    try:
        if path.name.endswith(".json"):
            return _parse_json(path, data)
        return _parse_lines(path, data.decode("utf-8", "surrogateescape"))
    except SgpatchError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise unsafe(
            f"{path}: unreadable journal of an interrupted run ({exc}); "
            "inspect the tree, then delete the journal"
        ) from None


def _check_path(rel: str) -> None:
    if not rel or "\n" in rel or "\r" in rel:
        raise unsafe(f"cannot journal the path {rel!r}: it holds a line break")


def _newer(path: Path, schema: int) -> SgpatchError:
    return unsafe(
        f"{path}: journal schema {schema} is from a newer sgpatch; roll it back with that "
        "sgpatch (`sgpatch recover`), nothing was touched"
    )


def _parse_lines(path: Path, text: str) -> Journal:
    lines = text.split("\n")
    head = lines[0].split(" ")
    if head[0] != "sgpatch-journal" or len(head) != 2 or not head[1].isdigit():
        raise ValueError("not an sgpatch journal")
    if int(head[1]) > SCHEMA:
        raise _newer(path, int(head[1]))
    if not text.endswith("\n"):
        raise ValueError("cut short (no final line break)")
    pid, entries, dirs = 0, [], []
    for line in lines[1:-1]:
        kind, _, rest = line.partition(" ")
        if kind == "pid" and rest.isdigit():
            pid = int(rest)
        elif kind == "file":
            mode, digest, rel = rest.split(" ", 2)
            entries.append(Entry(_rel(rel), _digest(digest, True), _mode(mode)))
        elif kind == "link":
            digest, rel = rest.split(" ", 1)
            entries.append(Entry(_rel(rel), _digest(digest, False), None, link=True))
        elif kind == "owner" and entries:
            entries[-1] = _owned(entries[-1], rest)
        elif kind == "dir":
            dirs.append(_rel(rest))
        else:
            raise ValueError(f"bad line {line[:60]!r}")
    return Journal(pid, tuple(entries), tuple(dirs))


def _owned(entry: Entry, rest: str) -> Entry:
    """The file entry just read, with the owner an `owner UID GID PATH` line gives it."""
    from dataclasses import replace

    uid, gid, rel = rest.split(" ", 2)
    if entry.link or entry.owner is not None or rel != entry.path:
        raise ValueError(f"an owner line for {rel[:60]!r} that follows no file line of it")
    if not (uid.isdigit() and gid.isdigit() and int(uid) < 2**32 and int(gid) < 2**32):
        raise ValueError(f"bad owner {uid[:12]!r} {gid[:12]!r}")
    return replace(entry, owner=(int(uid), int(gid)))


def _rel(text: str) -> str:
    if not text:
        raise ValueError("an empty path")
    return text


def _digest(text: str, absent_ok: bool) -> str | None:
    if text == "-" and absent_ok:
        return None
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"bad digest {text[:70]!r}")
    return text


def _mode(text: str) -> int | None:
    if text == "-":
        return None
    try:
        mode = int(text, 8)
    except ValueError:
        raise ValueError(f"bad mode {text!r}") from None
    if not 0 <= mode <= 0o7777:
        raise ValueError(f"bad mode {text!r}")
    return mode


def _parse_json(path: Path, data: bytes) -> Journal:
    """The schema-1 form: `{"schema": 1, "files": [{"path", "before": base64|null, "mode",
    "link"?}], "dirs": [...]}`, its originals carried inline."""
    import base64

    from sgpatch.state.digest import sha256

    doc = parse_json(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("schema"), int):
        raise ValueError("not an sgpatch journal")
    if doc["schema"] > 1:
        raise _newer(path, doc["schema"])
    entries, inline = [], []
    for e in doc["files"]:
        rel, before, mode, link = e["path"], e["before"], e.get("mode"), e.get("link")
        if not isinstance(rel, str) or not rel or not (before is None or isinstance(before, str)):
            raise ValueError(f"bad entry for {rel!r}")
        if not (link is None or (isinstance(link, str) and link and "\x00" not in link)):
            raise ValueError(f"bad link for {rel!r}")
        if mode is not None and (type(mode) is not int or not 0 <= mode <= 0o7777):
            raise ValueError(f"bad mode {mode!r} for {rel!r}")
        raw = link.encode() if link is not None else base64.b64decode(before or "", validate=True)
        digest = sha256(raw) if (before is not None or link) else None
        if digest is not None:
            inline.append((digest, raw))
        entries.append(Entry(rel, digest, mode, link=link is not None))
    dirs = doc.get("dirs", [])
    if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
        raise ValueError("bad 'dirs'")
    pid = doc.get("pid") or 0
    if type(pid) is not int or pid < 0:
        raise ValueError(f"bad pid {pid!r}")
    return Journal(pid, tuple(entries), tuple(dirs), tuple(inline))
