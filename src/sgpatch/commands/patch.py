"""`sgpatch patch`: a GNU-patch-like front end on the engine, all-or-nothing."""

from __future__ import annotations

from pathlib import Path

from sgpatch import report
from sgpatch.diffs import read_patch
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.plan import Overlay, default_mapper, file_modes, patch_status, plan_patch
from sgpatch.txn import commit, locked, stop_if_rolled_back

STATE_DIR = ".sgpatch"


def run(
    patchfiles: list[Path],
    strip: int,
    directory: Path,
    fuzz: int,
    dry_run: bool,
    reverse: bool,
    as_json: bool,
) -> int:
    """Plan every file of every patch in memory; write only if every hunk found its place."""
    if not 0 <= fuzz <= 2:
        raise SgpatchError(f"--fuzz must be 0, 1 or 2 (got {fuzz})")
    root = directory.resolve()
    if not root.is_dir():
        raise SgpatchError(f"-d {directory}: not a directory")
    state = root / STATE_DIR
    stop_if_rolled_back(root, state)
    patches = [read_patch(p) for p in patchfiles]
    overlay = Overlay(root)
    results = []
    code = ExitCode.OK
    for patch in patches:
        files = plan_patch(
            overlay, patch, default_mapper(strip, patch.name), fuzz=fuzz, reverse=reverse
        )
        results.append((patch, files))
        code = max(code, patch_status(files))
    modes = file_modes([f for _, files in results for f in files])
    if code == ExitCode.OK and not dry_run and overlay.changes(modes):
        with locked(state):  # and leaves no .sgpatch/ behind, unless a set's ledger is in it
            commit(root, state, overlay.changes(modes))
    if as_json:
        report.emit_json(
            {
                "command": "patch",
                "ok": code == ExitCode.OK,
                "exit_code": int(code),
                "dry_run": dry_run,
                "reverse": reverse,
                "written": code == ExitCode.OK and not dry_run,
                "patches": [
                    {"patch": p.name, "files": [report.file_json(f) for f in files]}
                    for p, files in results
                ],
            }
        )
    else:
        for _, files in results:
            for f in files:
                for line in report.file_lines(f, dry_run, reverse):
                    report.err(line)
        report.err(_verdict(code, dry_run, reverse, [f for _, fs in results for f in fs]))
    return int(code)


def _verdict(code: int, dry_run: bool, reverse: bool, files) -> str:
    """The last line on stderr, as `apply`'s: what happened, in one greppable line."""
    if code != ExitCode.OK:
        return "sgpatch: nothing was written (a hunk was refused)"
    verb = "reversed" if reverse else "patched"
    if dry_run:
        return f"sgpatch: dry run: {len(files)} file(s) would be {verb}; nothing was written"
    return f"sgpatch: {len(files)} file(s) {verb}"
