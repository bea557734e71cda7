"""The specifier arithmetic port needs (bounded ranges: a variant serves the releases it was
checked on). The text edits that write the results live in sgpatch.patchset.manifest_text.
"""

from __future__ import annotations

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import Version

_LOWER = (">=", ">", "==", "~=", "===")


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
