"""`sgpatch recover`: roll back an interrupted run on purpose, and say what was restored."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch import console
from sgpatch.cli.common import locate_tree
from sgpatch.errors import SgpatchError
from sgpatch.state.ledger import state_dir
from sgpatch.state.recovery import roll_back_interrupted
from sgpatch.tree.target import find_target


@dataclass(frozen=True)
class RecoverOptions:
    """`sgpatch recover`'s options, as parsed."""

    sglang_dir: Path | None
    sglang_version: str | None
    as_json: bool


def run(opts: RecoverOptions) -> int:
    root = locate_tree(opts.sglang_dir)  # no version needed to roll back, and it may be unreadable
    restored = roll_back_interrupted(root, state_dir(root), tidy=True)
    if opts.as_json:
        try:
            where = find_target(opts.sglang_dir, opts.sglang_version, root=root).to_json()
        except SgpatchError:  # e.g. a version that cannot be read: the root is what matters
            where = {"root": str(root)}
        console.emit_json(
            {
                "command": "recover",
                "exit_code": 0,
                "target": where,
                "interrupted": restored is not None,
                "restored": restored or [],
            }
        )
    elif restored is None:
        console.err(f"sgpatch: no interrupted run in {root}; nothing to do")
    else:
        console.err(
            f"sgpatch: rolled back an interrupted run in {root}: "
            f"{len(restored)} file(s) restored" + (f" ({', '.join(restored)})" if restored else "")
        )
    return 0
