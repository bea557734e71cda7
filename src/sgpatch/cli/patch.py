"""`sgpatch patch`: a GNU-patch-like front end on the engine, all-or-nothing."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from sgpatch import console
from sgpatch.diff.unified import Patch, parse_patch, read_patch
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops import report
from sgpatch.ops.fileplan import (
    FilePlan,
    Overlay,
    default_mapper,
    file_modes,
    patch_status,
    plan_patch,
)
from sgpatch.state.folder import STATE_DIR
from sgpatch.state.lock import locked
from sgpatch.state.recovery import stop_if_rolled_back
from sgpatch.state.txn import commit

STDIN = "-"
MISSING = "file does not exist"


@dataclass(frozen=True)
class Options:
    """The GNU-patch-like flags `sgpatch patch` takes."""

    strip: int = 1
    directory: Path = Path(".")
    fuzz: int = 0
    dry_run: bool = False
    reverse: bool = False
    as_json: bool = False
    remove_empty: bool = False  # -E: delete files the patch leaves empty


def _read(source: Path) -> Patch:
    """A patch from a file, or from stdin for '-' (read once, as GNU patch does)."""
    if str(source) == STDIN:
        from sgpatch.tree.files import MAX_INPUT

        data = sys.stdin.buffer.read(MAX_INPUT + 1)  # `< /dev/zero` must end, and soon
        if len(data) > MAX_INPUT:
            raise SgpatchError(f"<stdin>: more than {MAX_INPUT >> 20} MiB, not a patch")
        return parse_patch(data, "<stdin>")
    return read_patch(source)


def run(sources: list[Path], opts: Options) -> int:
    """Plan every file of every patch in memory; write only if every hunk found its place."""
    if not 0 <= opts.fuzz <= 2:
        raise SgpatchError(f"--fuzz must be 0, 1 or 2 (got {opts.fuzz})")
    if sum(1 for s in sources if str(s) == STDIN) > 1:
        raise SgpatchError("stdin ('-') can be read only once")
    root = opts.directory.resolve()
    if not root.is_dir():
        raise SgpatchError(f"-d {opts.directory}: not a directory")
    state = root / STATE_DIR
    stop_if_rolled_back(root, state)
    patches = [_read(p) for p in sources]
    overlay = Overlay(root)
    results = []
    code = ExitCode.OK
    for patch in patches:
        mapper = default_mapper(opts.strip, patch.name)
        files = plan_patch(
            overlay,
            patch,
            mapper,
            fuzz=opts.fuzz,
            reverse=opts.reverse,
            remove_empty=opts.remove_empty,
        )
        results.append((patch, files))
        code = max(code, patch_status(files))
    modes = file_modes([f for _, files in results for f in files])
    written = code == ExitCode.OK and not opts.dry_run and bool(overlay.changes(modes))
    if written:
        with locked(state):  # and leaves no .sgpatch/ behind, unless a set's ledger is in it
            console.warnings(commit(root, state, overlay.changes(modes)))
    _report(results, opts, code)
    return int(code)


def _strip_hint(files: list[FilePlan], strip: int) -> str | None:
    """When no file of the patch exists, the -p level is the usual mistake: say so."""
    if not files or any(f.note != MISSING for f in files):
        return None
    other = "-p0" if strip else "-p1"
    return (
        f"sgpatch: no file to patch for any hunk (looked for {files[0].path} with -p{strip}); "
        f"wrong -p level? try {other}, or -d DIR"
    )


def _report(results: list[tuple[Patch, tuple[FilePlan, ...]]], opts: Options, code: int) -> None:
    if opts.as_json:
        console.emit_json(
            {
                "command": "patch",
                "ok": code == ExitCode.OK,
                "exit_code": int(code),
                "dry_run": opts.dry_run,
                "reverse": opts.reverse,
                "written": code == ExitCode.OK and not opts.dry_run,
                "patches": [
                    {"patch": p.name, "files": [f.to_json() for f in files]} for p, files in results
                ],
            }
        )
        return
    every = [f for _, files in results for f in files]
    # one line per hunk, as GNU patch prints, written at once: a 100,000-hunk diff is not
    # 100,000 writes
    lines = [ln for f in every for ln in report.file_lines(f, opts.dry_run, opts.reverse)]
    hint = _strip_hint(every, opts.strip)
    if hint:
        lines.append(hint)
    lines.append(_verdict(code, opts.dry_run, opts.reverse, every))
    console.err("\n".join(lines))


def _verdict(code: int, dry_run: bool, reverse: bool, files: list[FilePlan]) -> str:
    """The last line on stderr, as `apply`'s: what happened, in one greppable line."""
    if code != ExitCode.OK:
        return "sgpatch: nothing was written (a hunk was refused)"
    verb = "reversed" if reverse else "patched"
    done = sum(1 for f in files if f.status == "already-applied")
    changed = len(files) - done
    said = ("nothing to reverse in" if reverse else "already patched:") + f" {done} file(s)"
    if not changed:  # every file as the patch leaves it already (46.16: was "1 file(s) patched")
        return f"sgpatch: nothing to do ({said}); nothing was written"
    also = f"; {said}" if done else ""
    if dry_run:
        return f"sgpatch: dry run: {changed} file(s) would be {verb}{also}; nothing was written"
    return f"sgpatch: {changed} file(s) {verb}{also}"
