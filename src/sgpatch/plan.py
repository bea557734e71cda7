"""Decide what a patch would do to a tree, without writing anything.

`plan_patch` runs the engine over every file of a patch against an in-memory overlay of the tree
(so a patch that touches one file twice, or several patches in a row, see each other's results in
a dry run exactly as in a real run). The set-level planner (states per patch) builds on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sgpatch.diffs import FilePatch, Patch, decode, encode, split_lines, strip_path
from sgpatch.engine import FileResult, HunkResult, apply_hunks, dominant_eol
from sgpatch.errors import ExitCode
from sgpatch.txn import FileChange, read_bytes

Action = Literal["modify", "create", "delete", "rename"]
PathMapper = Callable[[str], str]


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

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "already-applied")


@dataclass
class Overlay:
    """The tree as the plan sees it: real bytes, shadowed by earlier planned changes."""

    root: Path
    changed: dict[str, bytes | None] = field(default_factory=dict)
    original: dict[str, bytes | None] = field(default_factory=dict)

    def read(self, rel: str) -> bytes | None:
        if rel in self.changed:
            return self.changed[rel]
        if rel not in self.original:
            self.original[rel] = read_bytes(self.root, rel)
        return self.original[rel]

    def write(self, rel: str, data: bytes | None) -> None:
        self.read(rel)  # remember the original first
        self.changed[rel] = data

    def changes(self, modes: Mapping[str, int] | None = None) -> list[FileChange]:
        modes = modes or {}
        return [
            FileChange(rel, self.original.get(rel), data, modes.get(rel))
            for rel, data in self.changed.items()
            if data != self.original.get(rel) or rel in modes
        ]


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
) -> tuple[FilePlan, ...]:
    """Plan every file of `patch` against `overlay`; successful files update the overlay."""
    plans = []
    for fp in patch.files:
        fp = fp.reversed() if reverse else fp
        plan = _plan_file(overlay, fp, mapper, fuzz)
        if plan.ok:
            if plan.action == "rename":
                overlay.write(plan.source, None)
            overlay.write(plan.path, plan.after)
        plans.append(plan)
    return tuple(plans)


def _status(result: FileResult) -> Literal["ok", "already-applied", "conflict", "ambiguous"]:
    if any(h.status == "ambiguous" for h in result.hunks):
        return "ambiguous"
    if any(h.status == "conflict" for h in result.hunks):
        return "conflict"
    if result.hunks and all(h.status == "already-applied" for h in result.hunks):
        return "already-applied"
    return "ok"


def _plan_file(overlay: Overlay, fp: FilePatch, mapper: PathMapper, fuzz: int) -> FilePlan:
    if fp.is_new:
        path = mapper(fp.target)
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
        return FilePlan(
            path,
            path,
            "create",
            current,
            current,
            (),
            note="file to create already exists",
            status="conflict",
        )
    source = mapper(fp.source)
    path = source if fp.is_delete else mapper(fp.target)
    action: Action = "delete" if fp.is_delete else ("rename" if source != path else "modify")
    current = overlay.read(source)
    if current is None:
        if fp.is_delete:
            return FilePlan(path, source, action, None, None, (), status="already-applied")
        if action == "rename" and overlay.read(path) is not None:
            source, current = path, overlay.read(path)  # renamed already: check its hunks there
            action = "modify"
        else:
            return FilePlan(
                path,
                source,
                action,
                None,
                None,
                (),
                note="file does not exist",
                status="conflict",
            )
    lines = split_lines(decode(current))
    result = apply_hunks(lines, fp.hunks, fuzz=fuzz)
    status = _status(result)
    after: bytes | None = encode("".join(result.lines))
    if fp.is_delete and status in ("ok", "already-applied"):
        if result.lines:
            return FilePlan(
                path,
                source,
                action,
                current,
                current,
                result.hunks,
                note="file to delete has content the patch does not remove",
                status="conflict",
            )
        after = None
    if not fp.hunks and action in ("rename", "modify"):
        after = current
    return FilePlan(
        path, source, action, current, after, result.hunks, status=status, mode=fp.new_mode
    )


def _new_file_lines(fp: FilePatch) -> list[str]:
    out: list[str] = []
    for h in fp.hunks:
        out.extend(ln.text for ln in h.lines if ln.kind != "-")
    return out


__all__ = [
    "FilePlan",
    "Overlay",
    "default_mapper",
    "dominant_eol",
    "patch_status",
    "plan_patch",
]
