"""Revert a set: put back the exact original bytes of every file it touched.

Everything comes from the ledger and its store (the bytes before and after of every file), not
from today's patch files: a set or an sgpatch upgraded since cannot stop a revert. A file
edited since sgpatch wrote it is refused unless `force`, which merges the user's edit with the
revert (sgpatch.ops.merge3). The run that writes holds the lock from its first read of the
ledger, and writes the files, the ledger and its store in one transaction.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sgpatch import console
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops import merge3, report
from sgpatch.patchset.manifest import load_set
from sgpatch.state import ledger as ledger_mod
from sgpatch.state.ledger import Ledger, SetRecord, has_bytes, read_original, sha256, state_dir
from sgpatch.state.lock import locked
from sgpatch.state.txn import FileChange, commit, read_bytes
from sgpatch.state.upgrade import for_target

if TYPE_CHECKING:
    from sgpatch.git.mode import Made
    from sgpatch.tree.target import Target


@dataclass(frozen=True)
class Request:
    """How to revert: merge edited files (`force`), only say what would happen (`dry_run`),
    and make git mode's revert commits (`git_commit`)."""

    force: bool = False
    dry_run: bool = False
    git_commit: bool = False


@dataclass(frozen=True)
class Outcome:
    """What a revert did: whether the set was applied at all, the files it restored (or would),
    those merged with an edit, and git mode's commits."""

    applied: bool
    restored: tuple[str, ...] = ()
    edited: tuple[str, ...] = ()
    commits: tuple[Made, ...] = ()
    blocked: tuple[str, ...] = ()  # a dry run without force: edited files a revert refuses

    @property
    def exit_code(self) -> int:
        """A dry run a real revert would refuse ends as that revert would (1); else 0."""
        return int(ExitCode.NOT_DONE) if self.blocked else 0

    def to_json(self, dry_run: bool) -> dict[str, object]:
        """The outcome in `revert --json` (docs/json.md): a set not applied names no files
        restored or edited; a blocked dry run also names the edited files that stop it."""
        if not self.applied:
            return {"restored": [], "edited": []}
        doc: dict[str, object] = {
            "dry_run": dry_run,
            "restored": list(self.restored),
            "edited": list(self.edited),
        }
        if self.blocked:
            doc["blocked"] = list(self.blocked)
        return {**doc, "commits": [m.to_json() for m in self.commits]}


def revert_set(
    target: Target, set_name: str, patchsets: Sequence[Path], request: Request
) -> Outcome:
    """Revert `set_name` in `target` (under the lock unless it is a dry run)."""
    if request.git_commit:
        from sgpatch.git import mode as gitmode

        gitmode.require_repo(target)
    root = target.root
    if request.dry_run:  # writes nothing: no lock
        return _revert(target, set_name, patchsets, request)
    if not request.git_commit and not ledger_mod.load(root).sets:
        # Nothing recorded: the answer is "not applied" whatever the lock would say (a run
        # that applies meanwhile comes after this one), and a read-only tree stays untouched.
        load_set(set_name, tuple(patchsets))  # an unknown name is a typo: exit 2
        return Outcome(applied=False)
    with locked(state_dir(root)):  # held before the ledger it acts on is read
        return _revert(target, set_name, patchsets, request)


def _revert(target: Target, set_name: str, patchsets: Sequence[Path], request: Request) -> Outcome:
    root = target.root
    reconciled = for_target(target)
    if request.dry_run:
        report.notes(reconciled)
    ledger = reconciled.ledger
    record = ledger.sets.get(set_name)
    if record is None:
        _not_recorded(target, set_name, patchsets, request, reconciled)
        return Outcome(applied=False)
    _refuse_shared(ledger, set_name, record)
    blocked = _blocked(root, record) if request.dry_run and not request.force else []
    if blocked:  # show what a revert would do and what stops it (the real one refuses)
        restorable = [p for p in sorted(record.files) if p not in blocked]
        return Outcome(True, tuple(restorable), blocked=tuple(blocked))
    changes, edited = _restore(root, record, request.force, set_name, patchsets)
    restored = tuple(c.path for c in changes)
    changes += ledger_mod.store_changes(root, reconciled.stored, ledger.without_set(set_name))
    made: list[Made] = []
    if not request.dry_run:
        plan = None
        if request.git_commit:
            from sgpatch.git import mode as gitmode

            plan = gitmode.revert_plan(target, set_name, record, changes)
        console.warnings(commit(root, state_dir(root), changes))  # last set: no .sgpatch/ left
        report.notes(reconciled, dropped=True)  # the ledger written holds none of the stale sets
        if plan is not None:
            made = gitmode.finish(target, plan, undo=changes)
            console.lines([m.line() for m in made])
    return Outcome(True, restored, tuple(edited), tuple(made))


def _not_recorded(target, set_name, patchsets, request, reconciled) -> None:
    """The set is not (or no longer) recorded: a typo is exit 2; stale sets' records are
    dropped; git mode finishes a revert whose commits were made but HEAD not moved."""
    root = target.root
    if set_name not in reconciled.stored.sets:
        load_set(set_name, tuple(patchsets))  # an unknown name is a typo: exit 2
    if reconciled.stale and not request.dry_run:  # store the ledger without the stale sets
        forget = ledger_mod.store_changes(root, reconciled.stored, reconciled.ledger)
        console.warnings(commit(root, state_dir(root), forget))
        report.notes(reconciled, dropped=True)
    if request.git_commit:
        from sgpatch.git import mode as gitmode

        console.lines([m.line() for m in gitmode.finish_revert(target, set_name)])


def _refuse_shared(ledger: Ledger, set_name: str, record: SetRecord) -> None:
    """Sets come off in reverse order: a set applied on top of this one on a shared file
    holds this set's change in its own original bytes, so it must be reverted first."""
    for path in sorted(record.files):
        higher = ledger_mod.above(ledger, set_name, path)
        if higher:
            raise SgpatchError(
                f"{path} is also patched by set {higher[-1]}, applied on top of {set_name}; "
                f"revert {higher[-1]} first",
                ExitCode.UNSAFE,
            )


def _restore(root: Path, record: SetRecord, force: bool, set_name, patchsets):
    """Per file: the stored original (and mode), or for an edited file with --force the merge
    of the edit and the revert. ([changes], [edited paths])."""
    changes: list[FileChange] = []
    edited: list[str] = []
    for path, rec in sorted(record.files.items()):
        if rec.link_before is not None or rec.link_after is not None:
            link_change = _restore_link(root, path, rec)
            if link_change is None:
                edited.append(path)
            else:
                changes.append(link_change)
            continue
        current = read_bytes(root, path)
        if sha256(current) != rec.after:
            edited.append(path)
            continue
        original = read_original(root, rec.before)
        mode = rec.mode_before if original is not None else None
        if mode is not None and original == current and _mode_now(root, path) == mode:
            mode = None
        changes.append(FileChange(path, current, original, mode))
    if edited and not force:
        from sgpatch.shown import command, context

        again = command("revert", "--set", set_name, *context(root), "--force")
        raise SgpatchError(
            f"edited since sgpatch patched them, refusing to revert ({again} keeps the edits "
            "and takes the set's changes out): " + ", ".join(edited),
            ExitCode.NOT_DONE,
        )
    links = [p for p in edited if record.files[p].link_before or record.files[p].link_after]
    if links:
        raise SgpatchError(
            f"{links[0]}: cannot revert with --force: a symlink the set changed was changed "
            "since; restore it by hand (nothing was written)",
            ExitCode.CONFLICT,
        )
    legacy = [p for p in edited if not _has_after(root, record, p)]
    changes += [_merge(root, path, record) for path in edited if path not in legacy]
    if legacy:  # a v1 ledger kept no after-bytes: reverse-apply today's patch files
        changes += _reverse_apply(root, set_name, record, legacy, patchsets)
    return changes, edited


def _blocked(root: Path, record: SetRecord) -> list[str]:
    """The files a revert without --force refuses: changed since sgpatch wrote them."""
    out = []
    for path, rec in sorted(record.files.items()):
        if rec.link_before is not None or rec.link_after is not None:
            if _restore_link(root, path, rec) is None:
                out.append(path)
        elif sha256(read_bytes(root, path)) != rec.after:
            out.append(path)
    return out


def _restore_link(root: Path, path: str, rec) -> FileChange | None:
    """A file whose symlink target the set changed (or that it turned into or out of a link):
    the change back to the link target or bytes it had, None when it changed since."""
    from sgpatch.state.txn import safe_path

    where = safe_path(root, path, link_ok=True)
    now_link = os.readlink(where) if where.is_symlink() else None
    current = None if now_link is not None else read_bytes(root, path)
    if rec.link_after is not None:
        unchanged = now_link == rec.link_after
    else:
        unchanged = now_link is None and sha256(current) == rec.after
    if not unchanged:
        return None
    original = None if rec.link_before is not None else read_original(root, rec.before)
    mode = rec.mode_before if original is not None else None
    return FileChange(path, current, original, mode, rec.link_before, now_link)


def _mode_now(root: Path, rel: str) -> int | None:
    import stat

    try:
        return stat.S_IMODE((root / rel).lstat().st_mode)
    except OSError:
        return None


def _has_after(root: Path, record: SetRecord, path: str) -> bool:
    rec = record.files[path]
    return rec.after is None or has_bytes(root, rec.after)


def _merge(root: Path, path: str, record: SetRecord) -> FileChange:
    """--force on an edited file: keep the edit, take the set's change out (3-way merge of
    what sgpatch wrote, the file now and the stored original)."""
    rec = record.files[path]
    current = read_bytes(root, path)
    after = read_original(root, rec.after)
    original = read_original(root, rec.before)
    if after is None or current is None or original is None:
        why = (
            "the set deleted it and it exists again"
            if after is None
            else "it was deleted since"
            if current is None
            else "the set created it and it was edited since"
        )
        raise SgpatchError(
            f"{path}: cannot revert with --force: {why}; restore or remove it by hand "
            "(nothing was written)",
            ExitCode.CONFLICT,
        )
    merged, line = merge3.merge(after, current, original)
    if merged is None:
        raise SgpatchError(
            f"{path}: cannot revert with --force: your edit overlaps the set's change near "
            f"line {line}; undo that part of the edit, then revert (nothing was written)",
            ExitCode.CONFLICT,
        )
    return FileChange(path, current, merged)


def _reverse_apply(root, set_name, record, edited, patchsets) -> list[FileChange]:
    """--force on a ledger from before schema 2 (no after-bytes stored): un-apply the set's
    patches from edited files with the engine, newest first, from the patch files."""
    from sgpatch.diff.paths import package_mapper
    from sgpatch.diff.unified import decode, encode, parse_patch, split_lines
    from sgpatch.placement.engine import apply_hunks

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
