"""`sgpatch recover`: roll back an interrupted run on purpose, and say what was restored."""

from __future__ import annotations

from pathlib import Path

from sgpatch import report
from sgpatch.ledger import state_dir
from sgpatch.target import find_target
from sgpatch.txn import roll_back_interrupted


def run(sglang_dir: Path | None, sglang_version: str | None, as_json: bool) -> int:
    target = find_target(sglang_dir, sglang_version)
    restored = roll_back_interrupted(target.root, state_dir(target.root))
    if as_json:
        report.emit_json(
            {
                "command": "recover",
                "exit_code": 0,
                "target": report.target_json(target),
                "interrupted": restored is not None,
                "restored": restored or [],
            }
        )
    elif restored is None:
        report.err(f"sgpatch: no interrupted run in {target.root}; nothing to do")
    else:
        report.err(
            f"sgpatch: rolled back an interrupted run in {target.root}: "
            f"{len(restored)} file(s) restored" + (f" ({', '.join(restored)})" if restored else "")
        )
    return 0
