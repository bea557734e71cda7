"""What every set command does first: find the tree, roll back an interrupted run, load sets."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ledger import state_dir
from sgpatch.manifest import SetManifest, load_set, set_supports
from sgpatch.target import Target, find_target
from sgpatch.txn import JOURNAL, locked, recover


def open_target(sglang_dir: Path | None, sglang_version: str | None) -> Target:
    """Find the tree; if an interrupted run left a journal, roll it back and stop (exit 4)."""
    target = find_target(sglang_dir, sglang_version)
    state = state_dir(target.root)
    if (state / JOURNAL).exists():
        with locked(state):
            restored = recover(target.root, state)
        if restored is not None:
            raise SgpatchError(
                f"an interrupted sgpatch run was rolled back in {target.root} "
                f"({len(restored)} file(s) restored: {', '.join(restored) or 'none changed'}); "
                "run the command again",
                ExitCode.UNSAFE,
            )
    return target


def supported_set(name: str, target: Target, extra: Sequence[Path]) -> SetManifest:
    manifest = load_set(name, tuple(extra))
    if not set_supports(manifest, target.version):
        raise SgpatchError(
            f"patch set {name} supports sglang {manifest.sglang}; this tree is "
            f"{target.version} ({target.root})"
        )
    return manifest


def site_packages(target: Target) -> Path | None:
    return target.root.parent if target.layout == "site-packages" else None
