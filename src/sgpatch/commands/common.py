"""What every set command does first: find the tree, roll back an interrupted run, load sets."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sgpatch.errors import SgpatchError
from sgpatch.ledger import state_dir
from sgpatch.manifest import SetManifest, load_set, set_supports
from sgpatch.target import Target, find_target, locate
from sgpatch.txn import stop_if_rolled_back


def open_target(sglang_dir: Path | None, sglang_version: str | None) -> Target:
    """Find the tree; if an interrupted run left a journal, roll it back and stop (exit 4),
    before the version is read (nothing about an interrupted run depends on it)."""
    root = locate(sglang_dir)
    stop_if_rolled_back(root, state_dir(root))
    return find_target(sglang_dir, sglang_version, root=root)


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
