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

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import SgpatchError
from sgpatch.state.ledger import Ledger, sha256
from sgpatch.tree.files import read_bytes, read_regular


@dataclass(frozen=True)
class Drift:
    """One file whose pre-sgpatch bytes differ from the wheel's RECORD."""

    path: str  # package-relative, e.g. srt/layers/communicator.py
    record_sha256: str  # hex, from RECORD
    sha256: str | None  # hex of the bytes before sgpatch (ledger) or now (tree); None: missing
    seen_in: str  # "ledger" (hash from before sgpatch's first write) or "tree" (current bytes)

    def to_json(self) -> dict[str, str | None]:
        """The file in `status --json`'s `drift` (docs/json.md)."""
        return {"path": self.path, "record_sha256": self.record_sha256, "sha256": self.sha256,
                "seen_in": self.seen_in}  # fmt: skip


_MAX_RECORD = 1 << 26  # sglang's RECORD is ~400 KB; a bigger one is not a wheel's


def record_hashes(
    dist_info: Path, package: str = "sglang", wanted: Iterable[str] | None = None
) -> dict[str, str] | None:
    """Package-relative path -> hex sha256 from `dist_info/RECORD` (only the `wanted` paths, if
    given: decoding all ~1,900 hashes costs more than the rest of a status); None if there is
    no usable RECORD (a checkout, or a broken install). Rows are read by the one RECORD reader
    (sgpatch.releases.record), the same that checks the cached wheels."""
    from sgpatch.releases import record

    data = read_regular(dist_info / "RECORD", _MAX_RECORD)
    if data is None:
        return None
    prefix = f"{package}/"
    names = None if wanted is None else {prefix + p for p in wanted}
    out: dict[str, str] = {}
    for row in record.rows(data.decode("utf-8", errors="replace")):
        if len(row) < 2 or not row[0].startswith(prefix):
            continue
        if names is not None and row[0] not in names:
            continue
        digest = record.hex_sha256(row[1])
        if digest is not None:
            out[row[0][len(prefix) :]] = digest
    return out


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
