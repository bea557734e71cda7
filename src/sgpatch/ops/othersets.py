"""Upstream means the release: a probe made true by another applied set's change is not it.

A set's probe says "upstream has this change". On a tree where another set is applied, the
probe may match that set's change instead (two sets adding the same method): reading it as
upstream would call a local change the release's. So when a probe matches in files another set
recorded in the ledger, it is evaluated again on those files as they were before any set (the
ledger keeps the bytes), with the files beside them as they are; false there means the match
is that set's doing (docs/index.md, "States").
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgpatch.patchset.probe import ProbeNode, ProbeResult
    from sgpatch.state.ledger import Ledger

_NO_MATCH = ("missing", "no-match")


def touched(ledger: Ledger, own: str) -> dict[str, tuple[str, str | None]]:
    """rel -> (the first set, in the order applied, that changed it; the digest of its bytes
    before any set), over every applied set but `own`."""
    out: dict[str, tuple[str, str | None]] = {}
    for name, record in ledger.sets.items():
        if name == own:
            continue
        for rel, rec in record.files.items():
            out.setdefault(rel, (name, rec.before))
    return out


def made_by(
    ledger: Ledger, own: str, root: Path, probe: ProbeNode, result: ProbeResult
) -> tuple[str, ...]:
    """The other applied sets whose change makes `probe` true on `root` (it is false on their
    files' bytes before them); () when upstream has it, or no other set touched what it read."""
    from sgpatch.patchset.probe import evaluate

    if not result.value:
        return ()
    others = touched(ledger, own)
    read = {e.file for e in result.evidence if e.kind not in _NO_MATCH and e.file}
    involved = sorted(read & set(others))
    if not involved:
        return ()
    with tempfile.TemporaryDirectory(prefix="sgpatch-upstream-") as tmp:
        _before_sets(root, Path(tmp), read, others)
        if evaluate(probe, Path(tmp)).value:
            return ()  # true without them too: the release has it
    return tuple(dict.fromkeys(others[rel][0] for rel in involved))


def _before_sets(
    root: Path, dest: Path, read: set[str], others: dict[str, tuple[str, str | None]]
) -> None:
    """Into `dest`: every file in the folders of the files the probe read (a symbol probe
    looks up bases beside its file), as they are, but those other sets changed as they were
    before them (a file a set created left out)."""
    from sgpatch.state.ledger import read_original

    folders = {str(Path(rel).parent) for rel in read}
    for folder in folders:
        src = root / folder
        for path in sorted(src.iterdir()) if src.is_dir() else ():
            rel = (Path(folder) / path.name).as_posix()
            if not path.is_file() or path.is_symlink():
                continue
            data = read_original(root, others[rel][1]) if rel in others else path.read_bytes()
            if data is not None:
                (dest / folder).mkdir(parents=True, exist_ok=True)
                (dest / rel).write_bytes(data)
