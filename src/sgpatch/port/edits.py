"""The specifier arithmetic port needs (bounded ranges: a variant serves the releases it was
checked on). The text edits that write the results live in sgpatch.patchset.manifest_text.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    """`spec` stretched to take in `version` at one end (bounded: `<=V` or `>=V`; one release,
    `==X`, reads as `>=X,<=X`; `!=` clauses stay, but `!=V`), or None when the range has a
    form port does not stretch (~=, a wildcard, an open end)."""
    spec = _as_bounds(spec)
    if any(s.operator not in (">=", ">", "<", "<=", "!=") or "*" in s.version for s in spec):
        return None
    lowers = [s for s in spec if s.operator in (">=", ">")]
    uppers = [s for s in spec if s.operator in ("<", "<=")]
    nots = [s for s in spec if s.operator == "!=" and Version(s.version) != version]
    if not lowers or not uppers:
        return None
    if all(Version(s.version) <= version for s in lowers):  # forward
        return join([*lowers, *nots, Specifier(f"<={version}")])
    return join([Specifier(f">={version}"), *nots, *uppers])


def _as_bounds(spec: SpecifierSet) -> SpecifierSet:
    """`==X` (one release) written as `>=X,<=X`, so a bound can be moved."""
    out = []
    for s in spec:
        if s.operator in ("==", "===") and "*" not in s.version:
            out += [Specifier(f">={s.version}"), Specifier(f"<={s.version}")]
        else:
            out.append(s)
    return SpecifierSet(",".join(str(s) for s in out))


def set_widened(
    spec: SpecifierSet, version: Version, known: Sequence[Version] = ()
) -> tuple[str, list[Version]]:
    """The set's range taking in `version` (forward: `<=V` on top; backward: `>=V` below),
    and never a release port did not check: each `known` release the stretch would take in
    besides `version` gets a `!=` clause (a jump past releases: `--to` checks only V).
    Returns the range and those releases."""
    spec = _as_bounds(spec)
    nots = [s for s in spec if s.operator == "!=" and Version(s.version) == version]
    spec = SpecifierSet(",".join(str(s) for s in spec if s not in nots))
    if spec.contains(version, prereleases=True):  # only a `!=V` kept it out (a jump's hole)
        return join(spec), []
    if any(s.operator in (">=", ">") and Version(s.version) > version for s in spec):
        keep = [s for s in spec if s.operator not in (">=", ">")]
        wide = SpecifierSet(join([Specifier(f">={version}"), *keep]))
    else:
        keep = [
            s for s in spec if not (s.operator in ("<", "<=") and Version(s.version) <= version)
        ]
        if not any(s.operator in (">=", ">") for s in keep):
            keep.append(Specifier(f">={version}"))
        keep.append(Specifier(f"<={version}"))
        wide = SpecifierSet(join(keep))
    holes = [v for v in known if v != version and wide.contains(v, prereleases=True)
             and not spec.contains(v, prereleases=True)]  # fmt: skip
    return join([*wide, *(Specifier(f"!={v}") for v in holes)]), holes


def exact(version: Version) -> str:
    """The range of a variant checked on one release only."""
    return f"=={version}"
