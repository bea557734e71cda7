"""What sgpatch applied to a tree: per set, per patch, per file, with the original bytes.

Lives in `<package root>/.sgpatch/ledger.json`, original bytes in `.sgpatch/originals/<sha256>`.
The ledger is written through the same transaction as the patched files, so the two can never
disagree after a crash. It is how `status` tells `applied` from `modified` and how `revert`
restores the exact original bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from sgpatch.errors import ExitCode, SgpatchError

STATE_DIR = ".sgpatch"
LEDGER = "ledger.json"
ORIGINALS = "originals"
SCHEMA = 1


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class FileRecord:
    """A file a set touched: hashes before the set and after it (None = absent)."""

    before: str | None
    after: str | None


@dataclass(frozen=True)
class PatchRecord:
    """An applied patch as the ledger remembers it: which file, which bytes, what it touched."""

    id: str
    variant: str  # patch file, relative to the set directory
    patch_sha256: str
    files: tuple[str, ...]  # package-relative paths the patch touched


@dataclass(frozen=True)
class SetRecord:
    """One applied set: its patches and the original bytes of every file they changed."""

    name: str
    sglang_version: str
    sgpatch_version: str
    patches: tuple[PatchRecord, ...] = ()
    files: Mapping[str, FileRecord] = field(default_factory=dict)

    def patch(self, pid: str) -> PatchRecord | None:
        return next((p for p in self.patches if p.id == pid), None)


@dataclass(frozen=True)
class Ledger:
    """Every set applied to one tree (`.sgpatch/ledger.json`); replaced whole, never mutated."""

    sets: Mapping[str, SetRecord] = field(default_factory=dict)

    def with_set(self, record: SetRecord) -> Ledger:
        return replace(self, sets={**self.sets, record.name: record})

    def without_set(self, name: str) -> Ledger:
        return replace(self, sets={k: v for k, v in self.sets.items() if k != name})


def state_dir(root: Path) -> Path:
    return root / STATE_DIR


def ledger_rel() -> str:
    return f"{STATE_DIR}/{LEDGER}"


def original_rel(digest: str) -> str:
    return f"{STATE_DIR}/{ORIGINALS}/{digest}"


def load(root: Path) -> Ledger:
    """Read the ledger; a missing one is empty, a broken or newer one is a clear error."""
    path = state_dir(root) / LEDGER
    try:
        text = path.read_text()
        import json  # only when there is a ledger: status on a pending tree needs no json

        doc = json.loads(text)
    except FileNotFoundError:
        return Ledger()
    except (OSError, ValueError) as exc:
        raise SgpatchError(f"{path}: ledger is unreadable ({exc}); restore or remove it") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("schema"), int):
        raise SgpatchError(f"{path}: ledger is not an sgpatch ledger")
    if doc["schema"] > SCHEMA:
        raise SgpatchError(
            f"{path}: ledger schema {doc['schema']} is from a newer sgpatch; upgrade sgpatch"
        )
    try:
        sets = {name: _set_from(name, s) for name, s in doc.get("sets", {}).items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise SgpatchError(f"{path}: ledger is corrupted (missing {exc})") from None
    return Ledger(sets)


def _set_from(name: str, s: dict[str, Any]) -> SetRecord:
    return SetRecord(
        name=name,
        sglang_version=s["sglang_version"],
        sgpatch_version=s["sgpatch_version"],
        patches=tuple(
            PatchRecord(p["id"], p["variant"], p["patch_sha256"], tuple(p["files"]))
            for p in s["patches"]
        ),
        files={k: FileRecord(v["before"], v["after"]) for k, v in s["files"].items()},
    )


def dump(ledger: Ledger) -> bytes:
    doc = {
        "schema": SCHEMA,
        "sets": {
            name: {
                "sglang_version": s.sglang_version,
                "sgpatch_version": s.sgpatch_version,
                "patches": [{**asdict(p), "files": list(p.files)} for p in s.patches],
                "files": {k: asdict(v) for k, v in sorted(s.files.items())},
            }
            for name, s in sorted(ledger.sets.items())
        },
    }
    import json

    return (json.dumps(doc, indent=2, sort_keys=False) + "\n").encode()


def unreferenced(old: Ledger, new: Ledger) -> list[str]:
    """Digests of stored originals that `old` needed and `new` no longer does (to delete)."""

    def digests(ledger: Ledger) -> set[str]:
        return {r.before for s in ledger.sets.values() for r in s.files.values() if r.before}

    return sorted(digests(old) - digests(new))


def read_original(root: Path, digest: str | None) -> bytes | None:
    """The original bytes with this sha256 (None for 'the file did not exist')."""
    if digest is None:
        return None
    path = root / original_rel(digest)
    try:
        data = path.read_bytes()
    except OSError:
        raise SgpatchError(
            f"{path}: original bytes are missing from the ledger store", ExitCode.UNSAFE
        ) from None
    if sha256(data) != digest:
        raise SgpatchError(f"{path}: stored original is corrupted", ExitCode.UNSAFE)
    return data


def record_apply(
    ledger: Ledger,
    name: str,
    sglang_version: str,
    sgpatch_version: str,
    patches: list[PatchRecord],
    changes: Mapping[str, tuple[bytes | None, bytes | None]],
) -> Ledger:
    """The ledger after applying `patches` whose files went from `changes[path][0]` to [1].

    A file the set already touched keeps its first 'before'. Another set that recorded the same
    file has its 'after' moved on, since sgpatch itself made the new bytes.
    """
    old = ledger.sets.get(name)
    files = dict(old.files) if old else {}
    for path, (before, after) in changes.items():
        first = files[path].before if path in files else sha256(before)
        files[path] = FileRecord(first, sha256(after))
    others = {
        k: replace(
            s,
            files={
                p: (FileRecord(r.before, sha256(changes[p][1])) if p in changes else r)
                for p, r in s.files.items()
            },
        )
        for k, s in ledger.sets.items()
        if k != name
    }
    record = SetRecord(
        name=name,
        sglang_version=sglang_version,
        sgpatch_version=sgpatch_version,
        patches=(*(old.patches if old else ()), *patches),
        files=files,
    )
    return Ledger({**others, name: record})
