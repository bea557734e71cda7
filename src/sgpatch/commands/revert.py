"""`sgpatch revert`: put back the exact original bytes of every file a set touched."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from sgpatch import ledger as ledger_mod
from sgpatch import report
from sgpatch.commands.common import open_target
from sgpatch.diffs import decode, encode, parse_patch, split_lines
from sgpatch.engine import apply_hunks
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ledger import Ledger, read_original, sha256, state_dir
from sgpatch.manifest import load_set
from sgpatch.plan import package_mapper
from sgpatch.txn import FileChange, commit, locked, read_bytes


def run(
    set_name: str,
    sglang_dir: Path | None,
    sglang_version: str | None,
    patchsets: Sequence[Path],
    force: bool,
    dry_run: bool,
    as_json: bool,
) -> int:
    target = open_target(sglang_dir, sglang_version)
    root = target.root
    record = ledger_mod.load(root).sets.get(set_name)
    if record is None:
        load_set(set_name, tuple(patchsets))  # an unknown name is a typo: exit 2, not "done"
    with locked(state_dir(root)) if record is not None and not dry_run else nullcontext():
        ledger = ledger_mod.load(root)
        record = ledger.sets.get(set_name)
        if record is None:  # not applied (or reverted by a run we waited for)
            if not as_json:
                report.err(f"sgpatch: {set_name} is not applied in {root}; nothing to revert")
            else:
                report.emit_json(
                    {
                        "command": "revert",
                        "exit_code": 0,
                        "set": set_name,
                        "restored": [],
                        "edited": [],
                    }
                )
            return 0
        shared = {
            path: other
            for other, rec in ledger.sets.items()
            if other != set_name
            for path in rec.files
            if path in record.files
        }
        if shared:
            path, other = next(iter(shared.items()))
            raise SgpatchError(
                f"{path} is also patched by set {other}; revert {other} first",
                ExitCode.NOT_DONE,
            )
        changes: list[FileChange] = []
        edited: list[str] = []
        for path, rec in sorted(record.files.items()):
            current = read_bytes(root, path)
            if sha256(current) == rec.after:
                changes.append(FileChange(path, current, read_original(root, rec.before)))
            else:
                edited.append(path)
        if edited and not force:
            raise SgpatchError(
                "edited since sgpatch patched them, refusing to revert (use --force to "
                "reverse-apply the patches instead): " + ", ".join(edited),
                ExitCode.NOT_DONE,
            )
        if edited:
            changes += _reverse_apply(root, set_name, record, edited, patchsets)
        restored = [c.path for c in changes]
        changes += _forget(root, ledger, ledger.without_set(set_name))
        if not dry_run:
            commit(root, state_dir(root), changes)  # the last set gone: locked() drops .sgpatch/
    if as_json:
        report.emit_json(
            {
                "command": "revert",
                "exit_code": 0,
                "set": set_name,
                "dry_run": dry_run,
                "restored": restored,
                "edited": edited,
            }
        )
    else:
        verb = "would restore" if dry_run else "restored"
        for path in restored:
            report.err(f"{verb} {path}" + (" (reverse-applied, --force)" if path in edited else ""))
        done = "dry run, nothing written" if dry_run else "reverted"
        report.err(f"sgpatch: {set_name}: {done} ({len(restored)} file(s))")
    return 0


def _forget(root: Path, old: Ledger, new: Ledger) -> list[FileChange]:
    """The ledger's own changes, in the same journaled commit as the files: the new ledger (or
    none, when no set is left) and the stored originals no set needs any more."""
    rel = ledger_mod.ledger_rel()
    changes = [FileChange(rel, read_bytes(root, rel), ledger_mod.dump(new) if new.sets else None)]
    for digest in ledger_mod.unreferenced(old, new):
        path = ledger_mod.original_rel(digest)
        changes.append(FileChange(path, read_bytes(root, path), None))
    return changes


def _reverse_apply(root, set_name, record, edited, patchsets) -> list[FileChange]:
    """--force: un-apply the set's patches from edited files with the engine, newest first."""
    manifest = load_set(set_name, tuple(patchsets))
    out: list[FileChange] = []
    for path in edited:
        current = read_bytes(root, path)
        lines = split_lines(decode(current or b""))
        for prec in reversed(record.patches):
            if path not in prec.files:
                continue
            try:
                data = (manifest.base_dir / prec.variant).read_bytes()
            except OSError as exc:
                raise SgpatchError(
                    f"cannot reverse {prec.id}: patch file {prec.variant} is gone "
                    f"({exc.strerror}); reinstall the sgpatch that applied it"
                ) from None
            if sha256(data) != prec.patch_sha256:
                raise SgpatchError(
                    f"cannot reverse {prec.id}: {prec.variant} is not the file that was applied "
                    "(sha256 differs; sgpatch or the set was upgraded); nothing was written",
                    ExitCode.UNSAFE,
                )
            patch = parse_patch(data, f"{set_name}/{prec.variant}")
            mapper = package_mapper(patch.name)
            for fp in patch.files:
                if mapper(fp.path) != path:
                    continue
                res = apply_hunks(lines, fp.hunks, reverse=True)
                if not res.ok:
                    bad = next(h for h in res.hunks if not h.ok)
                    raise SgpatchError(
                        f"{path}: cannot reverse {prec.id} hunk #{bad.index}: {bad.reason}",
                        ExitCode.CONFLICT,
                    )
                lines = list(res.lines)
        out.append(FileChange(path, current, encode("".join(lines))))
    return out
