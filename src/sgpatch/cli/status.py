"""`sgpatch status`: what is applied, pending, upstream or edited, per set, without writing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch import console
from sgpatch.cli.common import open_target
from sgpatch.errors import ExitCode
from sgpatch.ops import report
from sgpatch.ops import status as op
from sgpatch.state import drift
from sgpatch.state.consistent import stable_read


@dataclass(frozen=True)
class StatusOptions:
    """`sgpatch status`'s options, as parsed."""

    set_name: str | None
    sglang_dir: Path | None
    sglang_version: str | None
    patchsets: tuple[Path, ...] = ()
    with_ids: tuple[str, ...] = ()
    check: bool = False
    as_json: bool = False
    verbose: bool = False


def run(opts: StatusOptions) -> int:
    """Read (ops.status, over a tree no writer touches meanwhile), render, and the exit code."""
    target = open_target(opts.sglang_dir, opts.sglang_version, reader=True)
    reading = stable_read(
        target.root, lambda: op.read(target, opts.set_name, opts.patchsets, opts.with_ids)
    )
    reconciled, unknown, found_drift = reading.reconciled, reading.unknown, reading.drift
    as_json, check, verbose = opts.as_json, opts.check, opts.verbose
    report.notes(reconciled)
    for name in unknown:
        console.err(f"sgpatch: {op.unknown_note(name)}")
    ledger = reconciled.ledger
    code = max((row.code for row in reading.rows), default=ExitCode.OK)
    if unknown:  # --check of every recorded set cannot say "done" for one it cannot judge
        code = max(code, ExitCode.BAD_INPUT)
    docs = []
    for row in reading.rows:
        manifest, plan, pre, set_code, basis = row.manifest, row.plan, row.pre, row.code, row.basis
        if not basis.checked:
            console.err(f"sgpatch: {basis.line()}")
        dirty: list[str] | None = []
        if target.layout == "checkout":  # git mode only; keeps GitPython off the common path
            from sgpatch.git import mode as gitmode

            checked = gitmode.status_check(target, manifest, ledger, quiet=as_json)
            dirty = checked.files
            if not as_json:
                console.lines(checked.notes)
        record = ledger.sets.get(manifest.name)
        if as_json:
            doc = report.set_json("status", target, plan, pre, set_code)
            docs.append(
                {
                    **doc,
                    "applied_untested": record.untested_json() if record else None,
                    "uncommitted": dirty,
                }
            )
        else:
            report.applied_untested(record)
            report.show_set(target, plan, pre, verbose, to_stdout=True)
            if verbose:
                from sgpatch.ops.fold import standing

                for line in standing(manifest, plan, target.root):
                    report.err(f"warning: {line}")
            report.status_verdict(plan, set_code)
    if found_drift and not as_json:
        console.err(drift.summary(found_drift))
    if as_json:
        console.emit_json(
            {
                "command": "status",
                "exit_code": int(code if check else ExitCode.OK),
                "target": target.to_json(),
                "sets": docs,
                "unknown_sets": unknown,
                "drift": None if found_drift is None else [d.to_json() for d in found_drift],
            }
        )
    return int(code) if check else 0
