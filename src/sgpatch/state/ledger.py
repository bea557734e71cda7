"""What sgpatch applied to a tree: per set, per patch, per file, with the original bytes.

Lives in `<package root>/.sgpatch/ledger.json`, original bytes in `.sgpatch/originals/<sha256>`.
The ledger is written through the same transaction as the patched files, so the two can never
disagree after a crash. It is how `status` tells `applied` from `modified` and how `revert`
restores the exact original bytes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.state.digest import sha256
from sgpatch.state.folder import LEDGER, ORIGINALS, STATE_DIR, parse_json, read_state

if TYPE_CHECKING:
    from sgpatch.tree.files import FileChange

SCHEMA = 2  # 2: release per patch, file modes/link targets, git commits, stored after-bytes


@dataclass(frozen=True)
class FileRecord:
    """A file a set touched: hashes before the set and after it (None = absent), and, where the
    set changed them, its permission bits and symlink target before and after (None = not
    recorded / not a link). The bytes of both hashes are kept in the store (v2), so revert
    needs nothing but the ledger."""

    before: str | None
    after: str | None
    mode_before: int | None = None
    mode_after: int | None = None
    link_before: str | None = None
    link_after: str | None = None


@dataclass(frozen=True)
class PatchRecord:
    """An applied patch as the ledger remembers it: which file, which bytes, what it touched,
    and the release it was applied to."""

    id: str
    variant: str  # patch file, relative to the set directory
    patch_sha256: str
    files: tuple[str, ...]  # package-relative paths the patch touched (both names of a rename)
    sglang_version: str | None = None


@dataclass(frozen=True)
class GitCommit:
    """A commit git mode made for a patch (`apply --commit`)."""

    id: str
    sha: str


@dataclass(frozen=True)
class SetRecord:
    """One applied set: its patches and the original bytes of every file they changed."""

    name: str
    sglang_version: str
    sgpatch_version: str
    patches: tuple[PatchRecord, ...] = ()
    files: Mapping[str, FileRecord] = field(default_factory=dict)
    commits: tuple[GitCommit, ...] = ()  # git mode: the commits made for it, oldest first
    # applied to a version the set was not checked on (`apply --untested`): the version whose
    # variants it was planned with (None: a release or snapshot the set was checked on)
    variants_of: str | None = None

    def patch(self, pid: str) -> PatchRecord | None:
        return next((p for p in self.patches if p.id == pid), None)

    def untested_json(self) -> dict[str, str] | None:
        """`status --json`'s `applied_untested`: the version it was applied to and whose
        variants planned it (null: a version the set was checked on)."""
        if not self.variants_of:
            return None
        return {"version": self.sglang_version, "variants_of": self.variants_of}


@dataclass(frozen=True)
class Ledger:
    """Every set applied to one tree (`.sgpatch/ledger.json`); replaced whole, never mutated.
    `sets` is in the order the sets were applied (a set applied again keeps its place): a set
    may patch files an earlier one patched, on top of it (docs/safety.md, "Stacked sets")."""

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
    if state_dir(root).is_symlink():
        raise SgpatchError(
            f"refusing state folder {state_dir(root)}: it is a symlink", ExitCode.UNSAFE
        )
    try:
        data = read_state(path)  # no symlink followed, no FIFO opened for long
        if data is None:
            return Ledger()
        doc = parse_json(data)
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
        names = _order(doc.get("order"), sets)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        what = {KeyError: "missing ", ValueError: "wants "}.get(type(exc), "") + str(exc)
        raise SgpatchError(f"{path}: ledger is corrupted ({what})") from None
    return Ledger({n: sets[n] for n in names})


def _order(order: Any, sets: Mapping[str, SetRecord]) -> list[str]:
    """The stored set order; a ledger written before sets could stack has none (its sets share
    no file, so any order is right: by name)."""
    if order is None:
        return sorted(sets)
    if not isinstance(order, list) or sorted(order) != sorted(sets):
        raise ValueError("a set order naming every set once")
    return list(order)


def _opt(value: Any, kind: type) -> Any:
    """An optional field of a v2 record: None, or a value of `kind` (anything else: corrupt)."""
    if value is None or (type(value) is kind):
        return value
    raise ValueError(f"a {kind.__name__}, got {value!r}")


def _mode(value: Any) -> int | None:
    """A recorded mode: None, or permission bits 0..0o7777 (revert chmods to it; -1 would read
    as 0o7777, a setuid file)."""
    mode = _opt(value, int)
    if mode is not None and not 0 <= mode <= 0o7777:
        raise ValueError(f"a mode 0..0o7777, got {mode!r}")
    return mode


def _file_from(v: dict[str, Any]) -> FileRecord:
    return FileRecord(
        _opt(v["before"], str),
        _opt(v["after"], str),
        _mode(v.get("mode_before")),
        _mode(v.get("mode_after")),
        _opt(v.get("link_before"), str),
        _opt(v.get("link_after"), str),
    )


def _set_from(name: str, s: dict[str, Any]) -> SetRecord:
    """One set as stored; a v1 set (no per-patch release, no modes, no commits) reads as a v2
    one whose patches were applied to the set's release."""
    version = s["sglang_version"]
    return SetRecord(
        name=name,
        sglang_version=version,
        sgpatch_version=s["sgpatch_version"],
        patches=tuple(
            PatchRecord(
                p["id"],
                p["variant"],
                p["patch_sha256"],
                tuple(p["files"]),
                _opt(p.get("sglang_version"), str) or version,
            )
            for p in s["patches"]
        ),
        files={k: _file_from(v) for k, v in s["files"].items()},
        commits=tuple(GitCommit(c["id"], c["sha"]) for c in s.get("commits", [])),
        variants_of=_opt(s.get("untested_with"), str),
    )


def _drop_none(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if v is not None}


def dump(ledger: Ledger) -> bytes:
    doc = {
        "schema": SCHEMA,
        "order": list(ledger.sets),
        "sets": {
            name: {
                "sglang_version": s.sglang_version,
                "sgpatch_version": s.sgpatch_version,
                "patches": [_drop_none({**asdict(p), "files": list(p.files)}) for p in s.patches],
                "files": {
                    k: {"before": v.before, "after": v.after, **_drop_none(asdict(v))}
                    for k, v in sorted(s.files.items())
                },
                **({"commits": [asdict(c) for c in s.commits]} if s.commits else {}),
                **({"untested_with": s.variants_of} if s.variants_of else {}),
            }
            for name, s in ledger.sets.items()
        },
    }
    import json

    return (json.dumps(doc, indent=2, sort_keys=False) + "\n").encode()


def referenced(ledger: Ledger) -> set[str]:
    """Digests whose bytes the store must keep: every file's before and after."""
    return {
        d for s in ledger.sets.values() for r in s.files.values() for d in (r.before, r.after) if d
    }


def unreferenced(old: Ledger, new: Ledger) -> list[str]:
    """Digests of stored bytes that `old` needed and `new` no longer does (to delete)."""
    return sorted(referenced(old) - referenced(new))


def stored(root: Path) -> list[str]:
    """Digests present in the store (orphans included), for a revert that empties the ledger."""
    folder = state_dir(root) / ORIGINALS
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n for n in names if len(n) == 64 and all(c in "0123456789abcdef" for c in n))


def read_original(root: Path, digest: str | None) -> bytes | None:
    """The original bytes with this sha256 (None for 'the file did not exist')."""
    if digest is None:
        return None
    path = root / original_rel(digest)
    try:
        data = read_state(path)
        if data is None:
            raise FileNotFoundError(path)
    except OSError:
        raise SgpatchError(
            f"{path}: original bytes are missing from the ledger store", ExitCode.UNSAFE
        ) from None
    if sha256(data) != digest:
        raise SgpatchError(f"{path}: stored original is corrupted", ExitCode.UNSAFE)
    return data


def has_bytes(root: Path, digest: str | None) -> bool:
    """The store holds the bytes of `digest` (v1 ledgers kept only the 'before' bytes)."""
    return digest is not None and (root / original_rel(digest)).is_file()


def record_apply(
    ledger: Ledger,
    name: str,
    sglang_version: str,
    sgpatch_version: str,
    patches: list[PatchRecord],
    changes: Mapping[str, tuple[bytes | None, bytes | None]],
    modes: Mapping[str, tuple[int | None, int | None]] | None = None,
    variants_of: str | None = None,
    links: Mapping[str, tuple[str | None, str | None]] | None = None,
) -> Ledger:
    """The ledger after applying `patches` whose files went from `changes[path][0]` to [1]
    (and, where given, from mode `modes[path][0]` to [1], from symlink target `links[path][0]`
    to [1]; a link's bytes are its target's text).

    A file the set already touched keeps its first 'before' (and mode before). Another set
    that recorded the same file keeps its own record: this set was planned on the bytes that
    set left, so its 'before' is that set's 'after' (the chain `holds` follows). A new set
    goes on top of the order; a set applied again keeps its place. `variants_of`: applied to
    a version the set was not checked on, with that version's variants (`apply --untested`);
    once recorded it stays until the set is reverted.
    """
    modes = modes or {}
    old = ledger.sets.get(name)
    files = dict(old.files) if old else {}
    links = links or {}
    for path, (before, after) in changes.items():
        prev = files.get(path)
        mode_before, mode_after = modes.get(path, (None, None))
        link_before, link_after = links.get(path, (None, None))
        files[path] = FileRecord(
            prev.before if prev else sha256(before),
            sha256(after),
            prev.mode_before if prev else mode_before,
            mode_after,
            prev.link_before if prev else link_before,
            link_after,
        )
    record = SetRecord(
        name=name,
        sglang_version=sglang_version,
        sgpatch_version=sgpatch_version,
        patches=(
            *(old.patches if old else ()),
            *(replace(p, sglang_version=p.sglang_version or sglang_version) for p in patches),
        ),
        files=files,
        commits=old.commits if old else (),
        variants_of=variants_of or (old.variants_of if old else None),
    )
    return ledger.with_set(record)


def above(ledger: Ledger, name: str, path: str) -> list[str]:
    """Sets applied after `name` that also patched `path` (they must be reverted first)."""
    names = list(ledger.sets)
    if name not in names:
        return []
    return [n for n in names[names.index(name) + 1 :] if path in ledger.sets[n].files]


def holds(ledger: Ledger, name: str, path: str, digest: str | None) -> bool:
    """`path`, hashing to `digest` now, is as sgpatch left it for set `name`: the hash is the
    'after' of the last set that patched it, and every set above `name` on it started from
    the bytes the one below left (so a stacked set does not make a lower one `modified`,
    while an edit by hand anywhere does)."""
    chain = [ledger.sets[name].files[path]]
    chain += [ledger.sets[n].files[path] for n in above(ledger, name, path)]
    if any(low.after != high.before for low, high in pairwise(chain)):
        return False
    return digest == chain[-1].after


def store_changes(
    root: Path, old: Ledger, new: Ledger, data: Sequence[bytes | None] = ()
) -> list[FileChange]:
    """The ledger update and its store, written in the same transaction as the files: the new
    ledger (none once no set is left), the bytes before and after of every file (`data`) that
    the new ledger names and the store lacks, and the removal of what only the old one needed
    (a second apply with --with moves a file's 'after' on; a stale or reverted set's records
    go), every stored file once no set is left, orphans included."""
    from sgpatch.tree.files import FileChange, read_bytes

    rel = ledger_rel()
    out = [FileChange(rel, read_bytes(root, rel), dump(new) if new.sets else None)]
    keep = referenced(new)
    digests = {d: b for b in data if b is not None and (d := sha256(b)) in keep}
    for digest, content in sorted(digests.items()):
        if digest is not None and not has_bytes(root, digest):
            out.append(FileChange(original_rel(digest), None, content, 0o444))
    drop = set(unreferenced(old, new)) | (set(stored(root)) if not new.sets else set())
    for digest in sorted(drop):
        path = original_rel(digest)
        current = read_bytes(root, path)
        if current is not None:
            out.append(FileChange(path, current, None))
    return out
