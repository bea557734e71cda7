"""Text edits of patchset.yaml (every byte not edited is kept: comments, order, quoting) and the
specifier arithmetic port needs (bounded ranges: a variant serves the releases it was checked on).
"""

from __future__ import annotations

from pathlib import Path

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import Version

from sgpatch.errors import SgpatchError

_LOWER = (">=", ">", "==", "~=", "===")


def _compose(text: str, path: Path):
    import yaml

    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:  # pragma: no cover - the manifest loaded before
        raise SgpatchError(f"{path}: cannot re-read: {e}") from None


def _get(node, key: str):
    for k, v in node.value:
        if k.value == key:
            return v
    return None


def _patch_node(root, patch_id: str):
    for item in _get(root, "patches").value:
        if _get(item, "id").value == patch_id:
            return item
    raise SgpatchError(f"patch {patch_id} not found in the manifest text")  # pragma: no cover


def _replace(text: str, node, value: str) -> str:
    return text[: node.start_mark.index] + f'"{value}"' + text[node.end_mark.index :]


def set_variant_spec(text: str, path: Path, patch_id: str, index: int, spec: str) -> str:
    """Replace the `sglang:` value of the patch's variant number `index` (0-based)."""
    items = _get(_patch_node(_compose(text, path), patch_id), "variants").value
    return _replace(text, _get(items[index], "sglang"), spec)


def insert_first_variant(
    text: str, path: Path, patch_id: str, spec: str, patch_rel: str, base: str | None = None
) -> str:
    """Insert `- {sglang: SPEC, patch: FILE[, base: V]}` as the patch's first variant."""
    root = _compose(text, path)
    seq = _get(_patch_node(root, patch_id), "variants")
    if seq.flow_style or not seq.value:
        raise SgpatchError(f"{path}: variants of {patch_id} must be a block list to edit them")
    first = seq.value[0]
    col = first.start_mark.column - 2
    lines = text.splitlines(keepends=True)
    idx = first.start_mark.line
    if lines[idx][col : col + 2] != "- ":
        raise SgpatchError(f"{path}:{idx + 1}: unexpected variant layout; edit it by hand")
    eol = "\r\n" if lines[idx].endswith("\r\n") else "\n"
    extra = f', base: "{base}"' if base else ""
    new = " " * col + f'- {{sglang: "{spec}", patch: {patch_rel}{extra}}}' + eol
    return "".join([*lines[:idx], new, *lines[idx:]])


def set_set_spec(text: str, path: Path, spec: str) -> str:
    """Replace the set's own `sglang:` range."""
    return _replace(text, _get(_compose(text, path), "sglang"), spec)


def join(specs) -> str:
    """Clauses in a stable order: lower bounds first, then the rest."""
    lower = sorted((s for s in specs if s.operator in _LOWER), key=str)
    rest = sorted((s for s in specs if s.operator not in _LOWER), key=str)
    return ",".join(str(s) for s in [*lower, *rest])


def capped(spec: SpecifierSet, version: Version) -> str:
    """`spec` with every upper bound above `version` replaced by `<version`."""
    keep = [
        s
        for s in spec
        if not (s.operator in ("<", "<=") and Version(s.version) >= version)
        and not (s.operator == "==" and "*" not in s.version and Version(s.version) >= version)
    ]
    return join([*keep, Specifier(f"<{version}")])


def floored(spec: SpecifierSet, version: Version) -> str:
    """`spec` with every lower bound below `version` replaced by `>version` (a backport's cap)."""
    keep = [
        s
        for s in spec
        if not (s.operator in (">=", ">") and Version(s.version) <= version)
        and not (s.operator == "==" and "*" not in s.version and Version(s.version) <= version)
    ]
    return join([Specifier(f">{version}"), *keep])


def widened(spec: SpecifierSet, version: Version) -> str | None:
    """`spec` stretched to take in `version` at one end (bounded: `<=V` or `>=V`), or None when
    the range has a form port does not stretch (==, ~=, !=, an open end)."""
    if any(s.operator not in (">=", ">", "<", "<=") for s in spec):
        return None
    lowers = [s for s in spec if s.operator in (">=", ">")]
    uppers = [s for s in spec if s.operator in ("<", "<=")]
    if not lowers or not uppers:
        return None
    if all(Version(s.version) <= version for s in lowers):  # forward
        return join([*lowers, Specifier(f"<={version}")])
    return join([Specifier(f">={version}"), *uppers])


def _as_bounds(spec: SpecifierSet) -> SpecifierSet:
    """`==X` (one release) written as `>=X,<=X`, so a bound can be moved."""
    out = []
    for s in spec:
        if s.operator in ("==", "===") and "*" not in s.version:
            out += [Specifier(f">={s.version}"), Specifier(f"<={s.version}")]
        else:
            out.append(s)
    return SpecifierSet(",".join(str(s) for s in out))


def set_widened(spec: SpecifierSet, version: Version) -> str:
    """The set's range taking in `version` (forward: `<=V` on top; backward: `>=V` below)."""
    spec = _as_bounds(spec)
    if any(s.operator in (">=", ">") and Version(s.version) > version for s in spec):
        keep = [s for s in spec if s.operator not in (">=", ">")]
        return join([Specifier(f">={version}"), *keep])
    keep = [s for s in spec if not (s.operator in ("<", "<=") and Version(s.version) <= version)]
    if not any(s.operator in (">=", ">") for s in keep):
        keep.append(Specifier(f">={version}"))
    keep.append(Specifier(f"<={version}"))
    return join(keep)


def exact(version: Version) -> str:
    """The range of a variant checked on one release only."""
    return f"=={version}"
