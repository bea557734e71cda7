"""What every set command does first: find the tree, roll back an interrupted run, load sets."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from sgpatch import report
from sgpatch.errors import SgpatchError
from sgpatch.ledger import state_dir
from sgpatch.manifest import SetManifest, load_set, set_supports
from sgpatch.target import Target, discover, find_target
from sgpatch.treefs import interrupted


def locate_tree(sglang_dir: Path | None) -> Path:
    """The tree's package root. One stderr line when it was found from the current directory
    (as git finds its repository), and a warning when it is not the `sglang` this Python would
    import: the server may run other files than the ones patched."""
    found = discover(sglang_dir)
    if found.how == "current directory":
        report.err(
            f"sgpatch: using the SGLang tree around the current directory: {found.root} "
            "(--sglang-dir to choose another)"
        )
        if found.imported is None:
            report.err(
                f"sgpatch: warning: {sys.executable} imports no sglang; this tree may not be "
                "the one that runs"
            )
        elif found.imported != found.root:
            report.err(
                f"sgpatch: warning: {sys.executable} imports sglang from {found.imported}, "
                "not from this tree"
            )
    return found.root


def open_target(sglang_dir: Path | None, sglang_version: str | None) -> Target:
    """Find the tree; if an interrupted run left a journal, roll it back and stop (exit 4),
    before the version is read (nothing about an interrupted run depends on it)."""
    root = locate_tree(sglang_dir)
    if interrupted(state_dir(root)):  # the writer (txn) is imported only when there is work
        from sgpatch.txn import stop_if_rolled_back

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
