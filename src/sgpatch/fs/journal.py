"""The undo journal of a run that writes: one type for apply's commit (`.sgpatch/journal`) and
for a port step (`W/.sgpatch-port/journal/index`), as quilt keeps `.pc/` and git
`.git/rebase-merge/`: small text a person can follow with `cat` and `cp`.

Before a run changes a file, the file's bytes go into the journal's store (`Store`: one
read-only file per content, named by its sha256), and a line names it:

    sgpatch-journal 4
    pid 4242
    file 644 1234 3f2a...e1 srt/layers/communicator.py  (mode 644, 1234 bytes: copy it back)
    owner 1000 1000 srt/layers/communicator.py          (and it belonged to uid 1000, gid 1000)
    file - - - srt/extra/new.py                         (did not exist: delete it)
    link 12 9c1d...07 srt/alias.py                      (a symlink; its 12-byte target stored)
    wrote 77ab...90 srt/layers/communicator.py          (a port step wrote these bytes there)
    dir srt/extra                                       (made by the run: remove it if empty)

The path is the rest of the line. A journal is parsed strictly (`parse`): one format, LF
only, every path a plain relative one, every digest 64 hex digits, every size and mode a
number; anything else is `Damaged`, and nothing is replayed. Each original is checked
against its line before anything is touched (`Store.check`: a regular file, the journal's
size, its sha256), read a chunk at a time (`Store.chunks`), never whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace

from sgpatch.fs import atomic, dirs, regular

SCHEMA = 4  # 2: the line form over the store; 3: `owner` lines; 4: sizes, `wrote` lines
READS = (2, 3, 4)
HEADER = "sgpatch-journal"
_HEX = frozenset("0123456789abcdef")


class Damaged(ValueError):
    """A journal, or an original it names, that is not as sgpatch writes it: `why`."""


class Newer(Damaged):
    """A journal from a newer sgpatch (a higher schema): `schema`."""

    def __init__(self, schema: int) -> None:
        super().__init__(f"journal schema {schema} is from a newer sgpatch")
        self.schema = schema


@dataclass(frozen=True)
class Entry:
    """One journalled path: the sha256 and size of its bytes before (None: it did not exist;
    `link`: of its symlink's target text), its mode and owner, and (a port step) the sha256
    of each write the run made there (`-`: it removed it)."""

    path: str
    digest: str | None
    size: int | None = None  # None: absent, or a journal of schema < 4
    mode: int | None = None
    link: bool = False
    owner: tuple[int, int] | None = None
    wrote: tuple[str, ...] = ()


@dataclass(frozen=True)
class Journal:
    """A journal read back: its entries in write order, the folders the run made, and, for
    the old JSON form only (state/journal.py), originals carried inline (by digest)."""

    pid: int
    entries: tuple[Entry, ...]
    dirs: tuple[str, ...] = ()
    inline: tuple[tuple[str, bytes], ...] = ()


def check_path(rel: str) -> str:
    """`rel` when it is a plain relative path a line can hold: no empty, `.` or `..` part, no
    leading slash, no line break or NUL. `Damaged` otherwise."""
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts) or any(c in rel for c in "\n\r\x00"):
        raise Damaged(f"path {rel[:80]!r} is not a plain relative path")
    return rel


def head(pid: int) -> str:
    return f"{HEADER} {SCHEMA}\npid {pid}\n"


def entry_lines(e: Entry) -> str:
    """The lines of one entry (its `wrote` lines are added as the run writes)."""
    path = check_path(e.path)
    if e.link:
        return f"link {e.size} {e.digest} {path}\n"
    if e.digest is None:
        return f"file - - - {path}\n"
    mode = "-" if e.mode is None else f"{e.mode:o}"
    owner = "" if e.owner is None else f"owner {e.owner[0]} {e.owner[1]} {path}\n"
    return f"file {mode} {e.size} {e.digest} {path}\n{owner}"


def wrote_line(path: str, digest: str | None) -> str:
    return f"wrote {digest or '-'} {check_path(path)}\n"


def render(journal: Journal) -> bytes:
    """The whole journal's text (a commit writes it at once)."""
    text = head(journal.pid) + "".join(entry_lines(e) for e in journal.entries)
    text += "".join(f"dir {check_path(d)}\n" for d in journal.dirs)
    return text.encode("utf-8", "surrogateescape")


# ---------------------------------------------------------------------------------------------
# reading


def parse(data: bytes, appended: bool = False) -> Journal:
    """A journal read back, every line checked (`Damaged` for anything sgpatch does not
    write). `appended` (a journal written a line at a time): a last line without its line
    break is a write that never began, left out; a journal written whole has none."""
    text = data.decode("utf-8", "surrogateescape")
    if "\r" in text or "\x00" in text:
        raise Damaged("a carriage return or NUL: not a journal sgpatch wrote")
    lines = text.split("\n")
    if lines[-1] and not appended:
        raise Damaged("cut short (no final line break)")
    lines = lines[:-1]
    if len(lines) < 2:
        raise Damaged("not an sgpatch journal")
    schema = _schema(lines[0])
    pid = _number(lines[1].removeprefix("pid "), "pid") if lines[1].startswith("pid ") else -1
    if pid < 0:
        raise Damaged("no pid line")
    reader = _Reader(schema)
    for line in lines[2:]:
        reader.line(line)
    return Journal(pid, tuple(reader.entries.values()), tuple(reader.dirs))


def _schema(line: str) -> int:
    head, _, number = line.partition(" ")
    if head != HEADER or not number.isdigit() or len(number) > 4:
        raise Damaged("not an sgpatch journal")
    if int(number) > SCHEMA:
        raise Newer(int(number))
    if int(number) not in READS:
        raise Damaged(f"journal schema {number} is not one sgpatch reads")
    return int(number)


def _number(text: str, what: str, limit: int = 2**63) -> int:
    if not text.isdigit() or not text.isascii() or (len(text) > 1 and text[0] == "0"):
        raise Damaged(f"bad {what} {text[:24]!r}")
    value = int(text[:20])
    if len(text) > 19 or value >= limit:
        raise Damaged(f"bad {what} {text[:24]!r}")
    return value


def _digest(text: str) -> str:
    if len(text) != 64 or not set(text) <= _HEX:
        raise Damaged(f"bad digest {text[:70]!r}")
    return text


def _mode(text: str) -> int | None:
    if text == "-":
        return None
    if not text or len(text) > 4 or not set(text) <= set("01234567"):
        raise Damaged(f"bad mode {text[:12]!r}")
    return int(text, 8)


class _Reader:
    """The entry lines of one journal, in order, each checked against what came before."""

    def __init__(self, schema: int) -> None:
        self.schema = schema
        self.entries: dict[str, Entry] = {}
        self.dirs: list[str] = []
        self.last = ""  # the path of the last file line (an owner line follows it)

    def line(self, line: str) -> None:
        kind, _, rest = line.partition(" ")
        handler = {"file": self._file, "link": self._link, "owner": self._owner,
                   "wrote": self._wrote, "dir": self._dir}.get(kind)  # fmt: skip
        if handler is None or (kind == "wrote" and self.schema < 4):
            raise Damaged(f"bad line {line[:60]!r}")
        last, self.last = self.last, ""
        handler(rest, last)

    def _add(self, e: Entry) -> None:
        if e.path in self.entries:
            raise Damaged(f"{e.path[:60]!r} journalled twice")
        self.entries[e.path] = e

    def _file(self, rest: str, _last: str) -> None:
        fields = rest.split(" ", 3 if self.schema >= 4 else 2)
        if len(fields) != (4 if self.schema >= 4 else 3):
            raise Damaged(f"bad file line {rest[:60]!r}")
        mode, digest, path = fields[0], fields[-2], check_path(fields[-1])
        size = fields[1] if self.schema >= 4 else None
        if digest == "-":
            if mode != "-" or size not in (None, "-"):
                raise Damaged(f"bad file line {rest[:60]!r}")
            self._add(Entry(path, None))
            return
        length = None if size is None else _number(size, "size")
        self._add(Entry(path, _digest(digest), length, _mode(mode)))
        self.last = path

    def _link(self, rest: str, _last: str) -> None:
        fields = rest.split(" ", 2 if self.schema >= 4 else 1)
        if len(fields) != (3 if self.schema >= 4 else 2):
            raise Damaged(f"bad link line {rest[:60]!r}")
        size = _number(fields[0], "size") if self.schema >= 4 else None
        self._add(Entry(check_path(fields[-1]), _digest(fields[-2]), size, link=True))

    def _owner(self, rest: str, last: str) -> None:
        uid, gid, path = [*rest.split(" ", 2), "", ""][:3]
        if self.schema < 3 or not last or path != last:
            raise Damaged(f"an owner line for {path[:60]!r} that follows no file line of it")
        owner = (_number(uid, "uid", 2**32), _number(gid, "gid", 2**32))
        self.entries[path] = replace(self.entries[path], owner=owner)

    def _wrote(self, rest: str, _last: str) -> None:
        digest, _, path = rest.partition(" ")
        e = self.entries.get(path)
        if e is None:
            raise Damaged(f"a write of {path[:60]!r} before its file line")
        new = "-" if digest == "-" else _digest(digest)
        self.entries[path] = replace(e, wrote=(*e.wrote, new))

    def _dir(self, rest: str, _last: str) -> None:
        self.dirs.append(check_path(rest))


# ---------------------------------------------------------------------------------------------
# the store


class Store:
    """The originals a journal names: one read-only file per content, named by its sha256, in
    one folder held open by descriptor (opened without following a link: a symlink planted at
    the store's name is refused, never followed into a folder whose files would be deleted)."""

    def __init__(self, fd: int, where: str, owner: tuple[int, int] | None = None) -> None:
        self.fd = fd
        self.where = where
        self.owner = owner  # given to what the store makes (root in another user's tree)

    @classmethod
    def open(
        cls,
        at: int,
        name: str,
        where: str,
        create: bool = False,
        owner: tuple[int, int] | None = None,
    ) -> Store | None:
        """The store `name` in the folder `at` (None: absent and not `create`d); `Damaged`
        when a symlink or a file stands at the name."""
        try:
            return cls(dirs.open_dir(at, [name], create, 0o755, owner), where, owner)
        except FileNotFoundError:
            return None
        except regular.OddFile as odd:
            raise Damaged(f"{where} is {odd.kind}, not sgpatch's folder") from None

    def close(self) -> None:
        os.close(self.fd)

    def put(self, data: bytes, durable: bool = True) -> tuple[str, int]:
        """Keep `data` (read-only) unless a file with that content is already here; its
        sha256 and size. A file here that is not those bytes is replaced."""
        digest = hashlib.sha256(data).hexdigest()
        with contextlib.suppress(Damaged):
            self.check(digest, len(data))
            return digest, len(data)
        atomic.write(self.fd, digest, data, 0o444, owner=self.owner, durable=durable, sync=False)
        return digest, len(data)

    def sync(self) -> None:
        atomic.sync_dir(self.fd)

    def _open(self, digest: str, size: int | None) -> int:
        try:
            fd = regular.open_regular(digest, self.fd)
        except regular.OddFile as odd:
            raise Damaged(f"original {digest[:12]} in {self.where} is {odd.kind}") from None
        if fd is None:
            raise Damaged(f"original {digest[:12]} is missing from {self.where}")
        if size is not None and os.fstat(fd).st_size != size:
            os.close(fd)
            raise Damaged(f"original {digest[:12]} in {self.where} is not {size} bytes")
        return fd

    def check(self, digest: str, size: int | None) -> None:
        """The original is here, a regular file of `size` bytes (the journal's own count;
        None: an older journal, any size) whose sha256 is `digest`: read a chunk at a time,
        so a huge file planted here costs memory for one chunk only."""
        fd = self._open(digest, size)
        try:
            h = hashlib.sha256()
            for chunk in regular.chunks(fd, os.fstat(fd).st_size):
                h.update(chunk)
        finally:
            os.close(fd)
        if h.hexdigest() != digest:
            raise Damaged(f"original {digest[:12]} in {self.where} does not hash to its name")

    def chunks(self, digest: str, size: int | None) -> Iterator[bytes]:
        """The original's bytes, a chunk at a time (checked first with `check`)."""
        fd = self._open(digest, size)
        try:
            yield from regular.chunks(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)

    def read(self, digest: str, size: int | None) -> bytes:
        return b"".join(self.chunks(digest, size))

    def drop(self) -> None:
        """Remove every file here (the folder itself is the caller's to remove)."""
        for entry in os.listdir(self.fd):
            with contextlib.suppress(OSError):
                os.unlink(entry, dir_fd=self.fd)


def digest_of(at: int, name: str) -> str | None:
    """sha256 of the regular file `name` in `at`, read a chunk at a time; None when absent.
    `regular.OddFile` for anything else there."""
    fd = regular.open_regular(name, at)
    if fd is None:
        return None
    try:
        h = hashlib.sha256()
        for chunk in regular.chunks(fd, os.fstat(fd).st_size):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)
