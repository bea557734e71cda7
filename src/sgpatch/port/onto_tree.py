"""`port --to-tree DIR`: carry a set onto an SGLang tree that is not a release.

A checkout of main or a nightly image's package folder is kept in the release cache as a
snapshot (sgpatch.releases.snapshot), so the rest of port reads it as it reads a release, before
and at --continue. Each patch is carried from the variant of the nearest lower version the set
was checked on (sgpatch.patchset.nearest: what `status` plans the tree with), so the releases
port may take a variant from end there. The variants --continue writes name the snapshot alone
(`==0.5.24.dev12`, sgpatch.port.finish), never a range. docs/porting.md, "Porting to a tree".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import bad_input
from sgpatch.patchset.manifest import SetManifest
from sgpatch.patchset.nearest import nearest_lower, snapshots_named


@dataclass(frozen=True)
class TreeTarget:
    """The tree a set is ported onto, as port sees it."""

    root: Path  # the tree's package root
    version: Version  # what the tree says (`0.5.24.dev12+g1a2b3c4`)
    onto: Version  # the public version port carries to (`0.5.24.dev12`)
    variants_of: Version  # the version whose variants the patches are carried from
    archive: Path  # where the release cache keeps the snapshot
    known: tuple[Version, ...]  # the versions port may take a variant or a base from

    def to_json(self) -> dict:
        """`port --to-tree --json`'s `tree` (docs/json.md)."""
        return {"root": str(self.root), "version": str(self.version), "snapshot": str(self.onto),
                "variants_of": str(self.variants_of), "kept": str(self.archive)}  # fmt: skip


def _pristine_tree(root: Path) -> None:
    """A tree a set is applied to is not the snapshot: its files are the set's already."""
    from sgpatch.shown import command, context
    from sgpatch.state import ledger as ledger_mod
    from sgpatch.state.folder import interrupted
    from sgpatch.state.ledger import state_dir

    if interrupted(state_dir(root)):
        recover = command("recover", *context(root, ()))
        raise bad_input(f"--to-tree {root}: an interrupted sgpatch run left it half written; "
                        f"{recover} first")  # fmt: skip
    applied = list(ledger_mod.load(root).sets)
    if applied:
        revert = command("revert", "--set", applied[-1], *context(root))
        raise bad_input(
            f"--to-tree {root}: patch set(s) {', '.join(applied)} are applied there; port "
            f"needs the tree as upstream made it: {revert} first"
        )


def prepare(
    manifest: SetManifest, tree: Path, offline: bool, workspace: Path | None = None
) -> TreeTarget:
    """Find the tree and its version, keep it in the cache, and work out where the patches
    are carried from. Bad input (exit 2): no SGLang tree, no version, a release (port `--to`
    it), a tree with a set applied, a version older than every version the set was checked
    on."""
    from sgpatch.port.source import known_releases
    from sgpatch.releases import cache
    from sgpatch.releases.snapshot import keep
    from sgpatch.tree.target import find_root, find_target

    target = find_target(root=find_root(tree))
    onto = Version(target.version.public)
    if not onto.is_prerelease:
        from sgpatch.shown import command, context

        w = ("--workspace", str(workspace)) if workspace is not None else ()
        port = command("port", "--set", manifest.name, *context(), "--to", onto, *w)
        raise bad_input(
            f"--to-tree {tree}: sglang {target.version} is a release, not a snapshot: {port}"
        )
    lower = nearest_lower(manifest, onto)
    if lower is None:
        raise bad_input(
            f"patch set {manifest.name} supports sglang {manifest.sglang}; {tree} is "
            f"{target.version}, older than every version the set was checked on"
        )
    _pristine_tree(target.root)
    snapshots = snapshots_named(manifest)
    here = onto if onto in snapshots else lower  # checked on it already: its own variants
    releases = [v for v in known_releases(offline) if v <= here]
    archive = keep(cache.cache_dir(), target.root, target.version)
    known = tuple(sorted({*releases, *(v for v in snapshots if v <= here), here}))
    return TreeTarget(target.root, target.version, onto, here, archive, known)


__all__ = ["TreeTarget", "prepare"]
