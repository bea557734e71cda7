"""Plan one patch's files on an overlay of a tree, without writing anything.

`plan_patch` runs the engine over every file of a patch against an in-memory overlay of the tree
(so a patch that touches one file twice, or several patches in a row, see each other's results in
a dry run exactly as in a real run). `sgpatch patch`, port's carry, refresh and revert plan on it
directly; the set planner (sgpatch.ops.plan) builds its per-patch states on it. Kept apart from
that planner (one concept per module): a bare patch's plan needs none of a set's states or
evidence, and `sgpatch patch` does not load the set planner.
"""

from __future__ import annotations

import copy
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Literal

from sgpatch.diff.paths import PathMapper
from sgpatch.diff.unified import (
    DEV_NULL,
    FilePatch,
    Patch,
    decode,
    encode,
    split_lines,
    strip_eol,
    strip_path,
)
from sgpatch.errors import ExitCode, SgpatchError, bad_input, unsafe
from sgpatch.ops.placed import Placed, place
from sgpatch.placement.engine import HunkResult, apply_hunks
from sgpatch.state.folder import is_state_path
from sgpatch.tree.files import FileChange, read_bytes, safe_path, within

Action = Literal["modify", "create", "delete", "rename", "copy"]


@dataclass(frozen=True)
class FilePlan:
    """One file of one patch: where it goes, what it becomes, and how each hunk placed."""

    path: str  # tree-relative path written (target; source for a delete)
    source: str  # tree-relative path read
    action: Action
    before: bytes | None
    after: bytes | None
    hunks: tuple[HunkResult, ...]
    note: str | None = None  # file-level problem (e.g. "file does not exist")
    status: Literal["ok", "already-applied", "conflict", "ambiguous"] = "ok"
    mode: int | None = None
    link: bool = False  # `after` is a symlink's target (git mode 120000)
    was_link: bool = False  # `before` is a symlink's target (a link removed or retargeted)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "already-applied")

    def to_json(self) -> dict[str, object]:
        """The file in --json documents (docs/json.md); the bytes are not part of it."""
        return {
            "path": self.path,
            "source": self.source,
            "action": self.action,
            "status": self.status,
            "note": self.note,
            "hunks": [h.to_json() for h in self.hunks],
        }


@dataclass
class Overlay:
    """The tree as the plan sees it: real bytes, shadowed by earlier planned changes. A
    symlink reads as its target's text (as git stores one), and `is_link` tells it apart."""

    root: Path
    changed: dict[str, bytes | None] = field(default_factory=dict)
    original: dict[str, bytes | None] = field(default_factory=dict)
    link_now: dict[str, bool] = field(default_factory=dict)  # a changed path is a link now
    link_orig: set[str] = field(default_factory=set)  # paths that were links in the tree

    def read(self, rel: str) -> bytes | None:
        if is_state_path(rel):  # sgpatch's own state (ledger, journal, originals): never
            raise unsafe(f"refusing diff path {rel!r}: it is inside sgpatch's state folder")
        if rel in self.changed:
            return self.changed[rel]
        if rel not in self.original:
            link = link_at(self.root, rel)
            if link is not None:
                self.link_orig.add(rel)
            self.original[rel] = encode(link) if link is not None else read_bytes(self.root, rel)
        return self.original[rel]

    def is_link(self, rel: str) -> bool:
        """`rel` is a symlink in the overlay (read it first)."""
        return self.link_now.get(rel, rel in self.link_orig)

    def write(self, rel: str, data: bytes | None, link: bool = False) -> None:
        self.read(rel)  # remember the original first
        self.changed[rel] = data
        self.link_now[rel] = link and data is not None

    def fork(self) -> Overlay:
        """A copy to plan on without touching this one (reads already done are shared)."""
        other = copy.copy(self)
        other.changed, other.original = dict(self.changed), dict(self.original)
        other.link_now, other.link_orig = dict(self.link_now), set(self.link_orig)
        return other

    def adopt(self, other: Overlay) -> None:
        """Take over what a fork planned."""
        self.changed, self.original = other.changed, other.original
        self.link_now, self.link_orig = other.link_now, other.link_orig

    def changes(self, modes: Mapping[str, int] | None = None) -> list[FileChange]:
        """What writing the overlay changes: bytes, modes, and links made or removed."""
        modes = modes or {}
        out = []
        for rel, data in self.changed.items():
            orig, was, now = self.original.get(rel), rel in self.link_orig, self.is_link(rel)
            if data == orig and was == now and rel not in modes:
                continue
            link, before_link = (decode(data) if now and data is not None else None,
                                 decode(orig) if was and orig is not None else None)  # fmt: skip
            before, after = None if was else orig, None if now else data
            out.append(FileChange(rel, before, after, modes.get(rel), link, before_link))
        return out


def link_at(root: Path, rel: str) -> str | None:
    """The target of the symlink at `root/rel` (its folders checked to stay in the tree), or
    None when there is no symlink there."""
    try:
        if not stat.S_ISLNK(os.lstat(root / rel).st_mode):
            return None
    except (OSError, ValueError):
        return None
    path = safe_path(root, rel, link_ok=True)
    try:
        return os.readlink(path)
    except OSError as exc:
        raise bad_input(f"{rel}: cannot read the symlink: {exc.strerror or exc}") from None


def patch_status(files: tuple[FilePlan, ...]) -> ExitCode:
    """The exit code a patch's file plans call for (0, 3 conflict or 4 ambiguous)."""
    if any(f.status == "ambiguous" for f in files):
        return ExitCode.UNSAFE
    if any(f.status == "conflict" for f in files):
        return ExitCode.CONFLICT
    return ExitCode.OK


def default_mapper(strip: int, name: str) -> PathMapper:
    return lambda p: strip_path(p, strip, name)


def plan_patch(
    overlay: Overlay,
    patch: Patch,
    mapper: PathMapper,
    *,
    fuzz: int = 0,
    reverse: bool = False,
    remove_empty: bool = False,
    authored: bool = False,
) -> tuple[FilePlan, ...]:
    """Plan every file of `patch` against `overlay`; successful files update the overlay.
    `authored`: the overlay is the release the patch was made on (placement.engine: a def
    its hunk adds twice there, exactly as written, is applied with a warning).

    As git does, renames and copies read their source as it was before this patch, so two
    files swapping names (a->b, b->a) each get the other's old content, and a rename's source
    is removed only when no other file of the patch writes that name."""
    # -R undoes the last change first: a patch that touches one file twice is reversed in
    # reverse order (the plans are reported in the patch's order all the same)
    files = [fp.reversed() for fp in reversed(patch.files)] if reverse else list(patch.files)
    start = overlay.fork()
    moving = {mapper(fp.source) for fp in files if fp.is_rename}
    written: set[str] = set()
    plans = []
    for fp in files:
        plan = _plan_file(overlay, start, fp, mapper, (fuzz, authored), moving)
        if remove_empty and plan.ok and plan.action == "modify" and plan.after == b"":
            plan = replace(plan, action="delete", after=None)
        if plan.ok:
            if plan.action == "rename" and plan.source not in written:
                overlay.write(plan.source, None)
            overlay.write(plan.path, plan.after, plan.link)
            written.add(plan.path)
        plans.append(plan)
    return tuple(reversed(plans)) if reverse else tuple(plans)


def _status(
    hunks: Sequence[HunkResult],
) -> Literal["ok", "already-applied", "conflict", "ambiguous"]:
    if any(h.status == "ambiguous" for h in hunks):
        return "ambiguous"
    if any(h.status == "conflict" for h in hunks):
        return "conflict"
    if hunks and all(h.status == "already-applied" for h in hunks):
        return "already-applied"
    return "ok"


def _refused(path: str, source: str, action: Action, current: bytes | None, note: str) -> FilePlan:
    return FilePlan(path, source, action, current, current, (), note=note, status="conflict")


def _creates(fp: FilePatch) -> bool:
    """A new file: `--- /dev/null` (or an epoch timestamp), or one `@@ -0,0 +1,N @@` hunk."""
    if fp.is_new:
        return True
    return (
        not fp.git
        and len(fp.hunks) == 1
        and fp.hunks[0].source_start == 0
        and fp.hunks[0].source_length == 0
    )


def _plan_file(
    overlay: Overlay,
    start: Overlay,
    fp: FilePatch,
    mapper: PathMapper,
    how: tuple[int, bool],
    moving: set[str] = frozenset(),  # type: ignore[assignment]
) -> FilePlan:
    """One file of the patch; `how`: (fuzz, authored), as plan_patch takes them."""
    fuzz = how[0]
    if fp.symlink:
        return _plan_link(overlay, fp, mapper(fp.path))
    _no_link_at(overlay, fp, mapper)
    if fp.git_op == "uncopy":
        return _plan_uncopy(overlay, fp, mapper, fuzz)
    if fp.is_rename or fp.is_copy:
        return _plan_move(overlay, start, fp, mapper, how, moving)
    if _creates(fp):
        path = _pick_name(overlay, fp, mapper, creating=True)
        if fp.is_new or overlay.read(path) is None:
            return _plan_create(overlay, fp, path)
    path = mapper(fp.source) if fp.is_delete else _pick_name(overlay, fp, mapper)
    current = overlay.read(path)
    action: Action = "delete" if fp.is_delete else "modify"
    if current is None:
        if fp.is_delete:
            return FilePlan(path, path, action, None, None, (), status="already-applied")
        return _refused(path, path, action, None, "file does not exist")
    if fp.is_delete:
        return _plan_delete(fp, path, current, fuzz)
    return _plan_hunks(overlay, fp, path, path, action, current, how)


def _plan_hunks(
    overlay: Overlay,
    fp: FilePatch,
    path: str,
    source: str,
    action: Action,
    current: bytes,
    how: int | tuple[int, bool],
) -> FilePlan:
    """Place the hunks of a file that exists (modify, or the content of a rename/copy);
    `how`: the fuzz, or (fuzz, authored)."""
    fuzz, authored = how if isinstance(how, tuple) else (how, False)
    placed = place(current, fp.hunks, fuzz, authored) if fp.hunks else Placed(current, ())
    status = _status(placed.hunks)
    after = placed.after
    mode_only = not fp.hunks and action == "modify" and fp.new_mode is not None
    if mode_only and _mode(overlay.root, path) == fp.new_mode:
        status = "already-applied"  # a mode-only change that is already there
    return FilePlan(
        path, source, action, current, after, placed.hunks, status=status, mode=fp.new_mode
    )


def _no_link_at(overlay: Overlay, fp: FilePatch, mapper: PathMapper) -> None:
    """A text diff never writes through a symlink, nor turns one into a file (exit 4): only
    a git symlink block (mode 120000) changes a link."""
    for raw in {fp.source, fp.target} - {DEV_NULL}:
        try:
            rel = mapper(raw)
            is_link = overlay.read(rel) is not None and overlay.is_link(rel)
        except SgpatchError:
            continue  # an unusable name: the plan itself says so, if it is the one used
        if is_link:
            raise unsafe(f"refusing to write through symlink {rel!r}: it is a symlink in the "
                         "tree, and this diff treats it as a file")  # fmt: skip


def _plan_link(overlay: Overlay, fp: FilePatch, path: str) -> FilePlan:
    """A git symlink block (mode 120000): the link made, retargeted or removed, as a link.
    Its old and new targets are the hunk's lines; a target must stay in the tree."""
    if fp.is_rename or fp.is_copy or fp.mode_change:
        raise bad_input(f"{path}: a symlink renamed, copied or turned into a file in one git "
                        "block; sgpatch takes a symlink made, retargeted or removed")  # fmt: skip
    old = "\n".join(ln.text for h in fp.hunks for ln in h.lines if ln.kind != "+")
    new = "\n".join(ln.text for h in fp.hunks for ln in h.lines if ln.kind != "-")
    current, is_link = overlay.read(path), overlay.is_link(path)
    if not fp.is_delete:
        check_link(overlay.root, path, new)
    want = None if fp.is_delete else encode(new)
    if current == want and (want is None or is_link):
        return FilePlan(path, path, "delete" if fp.is_delete else "create", current, current, (),
                        status="already-applied", link=is_link)  # fmt: skip
    if fp.is_new and current is not None:
        return _refused(path, path, "create", current, "file to create already exists")
    if not fp.is_new and (not is_link or current != encode(old)):
        what = "a symlink to " + repr(old) if current is not None else "there"
        return _refused(path, path, "modify", current, f"not {what}, as the patch expects")
    action: Action = "create" if fp.is_new else "delete" if fp.is_delete else "modify"
    return FilePlan(path, path, action, current, want, (), link=want is not None,
                    was_link=is_link)  # fmt: skip


def check_link(root: Path, path: str, target: str) -> None:
    """A symlink a set makes stays in the tree (exit 4 otherwise): a relative target that,
    read from the link's folder, never climbs above the tree's root, never names sgpatch's
    state folder, and (in a real tree) does not resolve outside it through a link there."""
    where = f"refusing symlink {path} -> {target!r}"
    if not target or any(c in target for c in "\x00\n"):
        raise unsafe(f"{where}: not a usable link target")
    if target.startswith("/"):
        raise unsafe(f"{where}: an absolute target leaves the tree")
    parts: list[str] = list(PurePosixPath(path).parent.parts)
    for part in target.split("/"):
        if part == "..":
            if not parts:
                raise unsafe(f"{where}: it climbs out of the tree")
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    if is_state_path("/".join(parts)):
        raise unsafe(f"{where}: it names sgpatch's state folder")
    if root.is_dir():
        real, top = os.path.realpath(root / "/".join(parts)), os.path.realpath(root)
        if not within(real, top):
            raise unsafe(f"{where}: it resolves outside the tree ({real})")


def _plan_create(overlay: Overlay, fp: FilePatch, path: str) -> FilePlan:
    current = overlay.read(path)
    wanted_lines = [t + "\n" for t in _new_file_lines(fp)]
    if wanted_lines and fp.hunks and fp.hunks[-1].new_no_eol:
        wanted_lines[-1] = wanted_lines[-1][:-1]
    wanted = encode("".join(wanted_lines))
    if current is None:
        return FilePlan(path, path, "create", None, wanted, (), mode=fp.new_mode)
    same = [ln.rstrip("\r\n") for ln in split_lines(decode(current))] == [
        ln.rstrip("\n") for ln in wanted_lines
    ]
    if same:
        return FilePlan(path, path, "create", current, current, (), status="already-applied")
    return _refused(path, path, "create", current, "file to create already exists")


def _plan_delete(fp: FilePatch, path: str, current: bytes, fuzz: int) -> FilePlan:
    """Delete a file only when its content is exactly what the patch removes (line endings
    aside): a file edited since, even in a way fuzz would forgive, is kept."""
    lines = split_lines(decode(current))
    result = apply_hunks(lines, fp.hunks, fuzz=0)
    removed = [ln.text for h in fp.hunks for ln in h.lines if ln.kind != "+"]
    have = [strip_eol(ln) for ln in lines]
    if have == removed:
        return FilePlan(path, path, "delete", current, None, result.hunks)
    at = next((i for i, (a, b) in enumerate(zip(have, removed, strict=False)) if a != b), None)
    if at is None:
        at = min(len(have), len(removed))
        got = have[at] if at < len(have) else "<end of file>"
        want = removed[at] if at < len(removed) else "<end of file>"
    else:
        got, want = have[at], removed[at]
    note = (
        f"content differs from the deletion: line {at + 1} is {got.strip()!r}, the patch "
        f"removes {want.strip()!r}; the file is kept"
    )
    return FilePlan(
        path, path, "delete", current, current, result.hunks, note=note, status="conflict"
    )


def _plan_move(
    overlay: Overlay,
    start: Overlay,
    fp: FilePatch,
    mapper: PathMapper,
    how: tuple[int, bool],
    moving: set[str],
) -> FilePlan:
    """A git rename or copy: the source as it was before the patch, edited, at the new name
    (`how`: (fuzz, authored), as plan_patch takes them)."""
    source, path = mapper(fp.source), mapper(fp.target)
    action: Action = "copy" if fp.is_copy else "rename"
    current = start.read(source)
    there = overlay.read(path)
    if current is not None and (there is None or path in moving):
        plan = _plan_hunks(overlay, fp, path, source, action, current, how)
        mode = fp.new_mode if fp.new_mode is not None else _mode(overlay.root, source)
        return replace(plan, before=there, mode=mode)
    if there is not None and current is None and fp.is_rename:
        # renamed already (by hand or an earlier run): its hunks are checked, or applied, there
        return _plan_hunks(overlay, fp, path, path, "modify", there, how)
    if there is not None and fp.is_copy:
        done = _plan_hunks(overlay, fp, path, path, "modify", there, how)
        if done.status == "already-applied" or (not fp.hunks and current in (None, there)):
            return replace(done, action=action, source=source, status="already-applied")
    what = "file to rename" if fp.is_rename else "file to copy"
    if current is None:
        return _refused(path, source, action, None, f"{what} ({source}) does not exist")
    return _refused(path, source, action, there, f"{path} already exists ({what} onto it)")


def _plan_uncopy(overlay: Overlay, fp: FilePatch, mapper: PathMapper, fuzz: int) -> FilePlan:
    """-R of a git copy: the copy goes away if, un-edited, it is the original again."""
    path, original = mapper(fp.source), mapper(fp.target)
    current = overlay.read(path)
    if current is None:
        return FilePlan(path, path, "delete", None, None, (), status="already-applied")
    plan = _plan_hunks(overlay, fp, path, path, "delete", current, fuzz)
    if plan.ok and plan.after != overlay.read(original):
        return _refused(path, path, "delete", current, f"the copy differs from {original}")
    return replace(plan, after=None) if plan.ok else plan


def _pick_name(overlay: Overlay, fp: FilePatch, mapper: PathMapper, creating: bool = False) -> str:
    """Which file a diff is about. A git diff names it; a plain diff whose two names differ
    (`diff -u a.py.orig a.py`) patches the one that exists, chosen as GNU patch does (fewest
    path components, then shortest base name, then shortest name; the same choice among both
    names when neither exists); never both."""
    if fp.git or fp.source == fp.target or DEV_NULL in (fp.source, fp.target):
        return mapper(fp.target if fp.target != DEV_NULL else fp.source)
    names: list[str] = []
    error: SgpatchError | None = None
    for raw in (fp.target, fp.source):
        try:
            names.append(mapper(raw))
        except SgpatchError as exc:  # an unusable or unsafe name: the other one may do (GNU)
            if exc.code not in (ExitCode.BAD_INPUT, ExitCode.UNSAFE):
                raise
            error = error or exc
    if not names:
        raise error  # type: ignore[misc]
    exist = [n for n in names if overlay.read(n) is not None]
    pool = names if creating or not exist else exist
    return min(pool, key=lambda n: (n.count("/"), len(n.rsplit("/", 1)[-1]), len(n)))


def _mode(root: Path, rel: str) -> int | None:
    try:
        return (root / rel).stat().st_mode & 0o777
    except OSError:
        return None


def file_modes(plans: Sequence[FilePlan]) -> dict[str, int]:
    """Modes a patch sets (git 'new file mode' / 'new mode') on the files it writes."""
    return {f.path: f.mode for f in plans if f.ok and f.mode is not None and f.status == "ok"}


def _new_file_lines(fp: FilePatch) -> list[str]:
    out: list[str] = []
    for h in fp.hunks:
        out.extend(ln.text for ln in h.lines if ln.kind != "-")
    return out


def how_applied(files: Sequence[FilePlan]) -> str:
    """clean / offset / fuzz N / whitespace / partial: the words the tables and the matrix use."""
    hunks = [h for f in files for h in f.hunks]
    if any(h.status == "already-applied" for h in hunks) and any(
        h.status == "applied" for h in hunks
    ):
        return "partial"
    applied = [h for h in hunks if h.status == "applied"]
    if any(h.fuzz for h in applied):
        return f"fuzz {max(h.fuzz for h in applied)}"
    if any(h.whitespace for h in applied):
        return "whitespace"
    if any(h.offset for h in applied):
        return "offset"
    return "clean"
