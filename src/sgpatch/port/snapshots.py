"""What each patch found and left in each file of the workspace, file by file.

Port carries a patch file by file: a file an earlier patch still has to have fixed waits, the
patch's other files go on. So a patch's diff can no longer be read off W at the end (a later
patch may have written the same file since): each carried file's bytes before and after the
patch are kept in the state folder (`before/ID/FILE`, `after/ID/FILE`, absent files listed in
`before/ID.absent`, `after/ID.absent`), and `carried/ID` lists the files of ID that are done.
The order patches write a file in is manifest order, so the last writer of a file is the last
patch in that order that carried (or is fixing) it: only that patch may take a hand edit of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sgpatch.port.workspace import Workspace

Files = Mapping[str, "bytes | None"]


def put(ws: Workspace, side: str, pid: str, files: Files) -> None:
    """Record `files` as patch `pid`'s `side` (before | after), next to what is recorded."""
    absent = set(ws.lines(f"{side}/{pid}.absent"))
    for rel, data in files.items():
        if data is None:
            absent.add(rel)
            ws.put_bytes(f"{side}/{pid}/{rel}", None)
        else:
            absent.discard(rel)
            ws.put_bytes(f"{side}/{pid}/{rel}", data)
    ws.put_lines(f"{side}/{pid}.absent", sorted(absent))


def get(ws: Workspace, side: str, pid: str, rels: Iterable[str]) -> dict[str, bytes | None]:
    """Patch `pid`'s recorded `side` of each file (None: absent on that side)."""
    absent = set(ws.lines(f"{side}/{pid}.absent"))
    return {r: None if r in absent else ws.get_bytes(f"{side}/{pid}/{r}") for r in rels}


def one(ws: Workspace, side: str, pid: str, rel: str) -> bytes | None:
    """Patch `pid`'s recorded `side` of one file."""
    return get(ws, side, pid, [rel])[rel]


def carried(ws: Workspace, pid: str) -> set[str]:
    """The files of `pid` carried (or fixed) so far."""
    return set(ws.lines(f"carried/{pid}"))


def add_carried(ws: Workspace, pid: str, rels: Iterable[str]) -> None:
    ws.put_lines(f"carried/{pid}", sorted(carried(ws, pid) | set(rels)))


def files(ws: Workspace, pid: str) -> set[str]:
    """Every file `pid` touches (recorded when it is first carried)."""
    return set(ws.lines(f"files/{pid}"))


def unfinished(ws: Workspace, pid: str) -> set[str]:
    """Files of `pid` not carried yet: waiting, or to be fixed."""
    return files(ws, pid) - carried(ws, pid)


def check(ws: Workspace, pid: str) -> None:
    """`pid`'s path lists as sgpatch wrote them: package paths, and every file it carried, is
    fixing or has recorded as absent among its files. Else the workspace is damaged."""
    mine = files(ws, pid)
    for name in (f"files/{pid}", f"carried/{pid}", f"fixing/{pid}",
                 f"before/{pid}.absent", f"after/{pid}.absent"):  # fmt: skip
        for rel in ws.lines(name):
            parts = rel.split("/")
            if rel.startswith("/") or "" in parts or ".." in parts or "\t" in rel:
                raise ws.damaged(name, f"line {rel[:60]!r}")
            if not name.startswith("files/") and rel not in mine:
                raise ws.damaged(name, f"{rel[:60]!r} is not one of {pid}'s files")


def writers_of(ws: Workspace, order: Sequence[str], rel: str) -> list[str]:
    """The patches that carried `rel`, in manifest `order` (the order they wrote it in)."""
    return [pid for pid in order if rel in carried(ws, pid)]


def last_writers(ws: Workspace, order: Sequence[str], writing: Mapping[str, set[str]]) -> dict:
    """File -> the last patch (in manifest `order`) that wrote it: carried it, or has it to fix
    (`writing`: per stopped patch, its files to fix)."""
    out: dict[str, str] = {}
    for pid in order:
        for rel in carried(ws, pid) | writing.get(pid, set()):
            out[rel] = pid
    return out


__all__ = [
    "add_carried", "carried", "check", "files", "get", "last_writers", "one", "put", "unfinished",
    "writers_of",
]  # fmt: skip
