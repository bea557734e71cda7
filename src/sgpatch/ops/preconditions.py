"""Environment preconditions of a patch (e.g. flashinfer-python >= 0.6.17): report, never hide.

The packages are looked up beside the target when it is a site-packages install (the
environment SGLang will run in), else in the environment running sgpatch. A package that cannot
be found is "unknown", not "unmet": sgpatch may run in a build stage without it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from packaging.version import Version

from sgpatch.patchset.manifest import EnvRequirement
from sgpatch.tree.target import metadata_version

Verdict = Literal["ok", "unmet", "unknown"]


@dataclass(frozen=True)
class Precondition:
    """One package requirement checked against an environment, with the verdict."""

    package: str
    specifier: str
    why: str
    found: str | None  # installed version, if found
    where: str  # where it was looked for
    verdict: Verdict

    def to_json(self) -> dict[str, object]:
        """The precondition in --json documents: every field by name."""
        return asdict(self)


def _norm(name: str) -> str:
    """PEP 503's name normalisation (runs of -_. as one _, lower case), without a regex."""
    for sep in "-.":
        name = name.replace(sep, "_")
    while "__" in name:
        name = name.replace("__", "_")
    return name.lower()


def installed_version(package: str, paths: Iterable[str | Path]) -> str | None:
    """The version of `package` installed on `paths` (like sys.path), first match wins.

    This is what importlib.metadata's path finder does for *.dist-info and *.egg-info, minus
    its 40 ms import (email parsing etc.): a dist-info name is `{name}-{version}` by spec, an
    egg-info carries its version in PKG-INFO."""
    want = _norm(package)
    for entry in paths:
        try:
            names = [e.name for e in os.scandir(entry or ".")]
        except OSError:  # a zip, a missing folder, not a folder
            continue
        for name in names:
            stem, dot, kind = name.rpartition(".")
            if not dot or kind not in ("dist-info", "egg-info"):
                continue
            if kind == "dist-info":  # {name}-{version}, "-" escaped as "_" in both parts
                dist, _, version = stem.rpartition("-")
            else:  # name.egg-info (develop) or name-version-pyX.Y.egg-info (dir or file)
                dist, _, version = stem.partition("-")
            if _norm(dist) != want:
                continue
            found = version if kind == "dist-info" and version else None
            found = found or metadata_version(Path(entry or ".", name))
            found = found or version.partition("-")[0]
            if found:
                return found
    return None


def check(req: EnvRequirement, site_packages: Path | None) -> Precondition:
    if site_packages is not None:
        found = installed_version(req.package, [site_packages])
        where = str(site_packages)
    else:
        found = installed_version(req.package, sys.path)
        where = "the Python running sgpatch"
    verdict: Verdict = "unknown"
    if found is not None:
        try:
            verdict = "ok" if req.specifier.contains(Version(found), prereleases=True) else "unmet"
        except ValueError:  # InvalidVersion, or digits past int()'s limit
            verdict = "unknown"
    return Precondition(req.package, str(req.specifier), req.why, found, where, verdict)


LIVE = ("applied", "pending", "present")  # states in which a patch's code is, or will be, live


def for_plan(manifest, plan, site_packages: Path | None) -> list[Precondition]:
    """The preconditions of every selected patch whose code is (or is about to be) in the tree:
    a patch upstream already has, or one left out, needs nothing from the environment."""
    live = {p.id for p in plan.patches if p.selected and p.state in LIVE}
    return [
        check(req, site_packages)
        for spec in manifest.patches
        if spec.id in live
        for req in spec.environment
    ]
