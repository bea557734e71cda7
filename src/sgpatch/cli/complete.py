"""Shell completion of names (`--set <Tab>`, `--with <Tab>`, `show <Tab>`): the sets sgpatch
knows and a set's patch ids. Runs only when Tab is pressed (typer calls these with
_SGPATCH_COMPLETE set); a set that cannot be read completes to nothing, never to an error."""

from __future__ import annotations

from pathlib import Path

import typer


def _patchsets(ctx: typer.Context) -> tuple[Path, ...]:
    """The --patchsets folders typed so far on the command line."""
    return tuple(Path(p) for p in (ctx.params.get("patchsets") or ()))


def set_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """Every known set whose name starts with what is typed (--patchsets and $SGPATCH_PATH
    included, as the command itself will look)."""
    from sgpatch.errors import SgpatchError
    from sgpatch.patchset.manifest import find_sets

    try:
        names = find_sets(_patchsets(ctx))
    except (SgpatchError, OSError):
        return []
    return sorted(n for n in names if n.startswith(incomplete))


def _ids(ctx: typer.Context, incomplete: str, optional_only: bool) -> list[str]:
    from sgpatch.errors import SgpatchError
    from sgpatch.patchset.manifest import load_set

    name = ctx.params.get("set_name")
    if not name:
        return []
    try:
        manifest = load_set(name, _patchsets(ctx))
    except (SgpatchError, OSError):
        return []
    return [
        p.id
        for p in manifest.patches
        if p.id.startswith(incomplete) and (p.optional or not optional_only)
    ]


def optional_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    """--with: the optional patches of the set named with --set."""
    return _ids(ctx, incomplete, optional_only=True)


def patch_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    """--without, --patch: every patch of the set named with --set."""
    return _ids(ctx, incomplete, optional_only=False)
