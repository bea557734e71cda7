"""Environment preconditions of a patch (e.g. flashinfer-python >= 0.6.17): report, never hide.

The packages are looked up beside the target when it is a site-packages install (the
environment SGLang will run in), else in the environment running sgpatch. A package that cannot
be found is "unknown", not "unmet": sgpatch may run in a build stage without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

from packaging.version import InvalidVersion, Version

from sgpatch.manifest import EnvRequirement

Verdict = Literal["ok", "unmet", "unknown"]


@dataclass(frozen=True)
class Precondition:
    package: str
    specifier: str
    why: str
    found: str | None  # installed version, if found
    where: str  # where it was looked for
    verdict: Verdict


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _version_beside(site_packages: Path, package: str) -> str | None:
    want = _norm(package)
    for info in site_packages.glob("*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].rpartition("-")
        if _norm(name) == want:
            return version
    return None


def check(req: EnvRequirement, site_packages: Path | None) -> Precondition:
    if site_packages is not None:
        found = _version_beside(site_packages, req.package)
        where = str(site_packages)
    else:
        try:
            found = metadata.version(req.package)
        except metadata.PackageNotFoundError:
            found = None
        where = "the Python running sgpatch"
    verdict: Verdict = "unknown"
    if found is not None:
        try:
            verdict = "ok" if req.specifier.contains(Version(found), prereleases=True) else "unmet"
        except InvalidVersion:
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
