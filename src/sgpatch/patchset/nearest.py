"""Which variants a set plans a version with: its own, or those of the nearest lower version.

A set is *checked* on the releases its `sglang:` range names, and on the snapshots a variant
names exactly (`==0.5.24.dev12`, written by `sgpatch port --to-tree`). Anything else is
*untested*: a checkout of SGLang main or a nightly image (`0.5.24.dev12+g1a2b3c4`), a pre-release,
a checkout some commits past a tag (`0.5.9.post1.dev3+gabc`, from `git describe`), or a release
above or between the set's ranges. An untested version is planned with the variants of the
nearest lower version the set was checked on, named by the manifest itself (a bound of a
variant's or the set's range), so the answer does not depend on the network or the cache.
docs/manifest.md, "Versions a set was not checked on".
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sgpatch.errors import bad_input
from sgpatch.patchset.manifest import SetManifest

_NAMING = ("==", "===", ">=", "<=", ">", "<", "~=")  # operators whose version is a named version


@dataclass(frozen=True)
class Basis:
    """How a set plans one version: `variants_of` is the version whose variants it uses (the
    version itself when the set was checked on it)."""

    set: str
    version: Version  # the tree's version, as found
    variants_of: Version
    checked: bool

    def to_json(self) -> dict[str, object]:
        """An untested version as `probe --json`'s `untested` says it (docs/json.md)."""
        return {"version": str(self.version), "variants_of": str(self.variants_of)}

    def line(self) -> str:
        """The one line that says an untested version is planned with other variants."""
        return (
            f"{self.version} is not a release {self.set} was checked on; planning with the "
            f"{self.variants_of} variants"
        )


def _public(version: Version) -> Version:
    return Version(version.public)


def _clause_versions(spec: SpecifierSet) -> list[Version]:
    """The versions a specifier's clauses name (wildcards and `!=` name none)."""
    out = []
    for clause in spec:
        if clause.operator not in _NAMING or clause.version.endswith(".*"):
            continue
        try:
            out.append(_public(Version(clause.version)))
        except ValueError:  # `===` takes any string; InvalidVersion, or digits past int()'s limit
            continue
    return out


def named_versions(manifest: SetManifest) -> list[Version]:
    """Every version the manifest's ranges name (the set's and every variant's), ascending."""
    found = set(_clause_versions(manifest.sglang))
    for spec in manifest.patches:
        for variant in spec.variants:
            found.update(_clause_versions(variant.sglang))
    return sorted(found)


def snapshots_named(manifest: SetManifest) -> list[Version]:
    """The pre-release versions some variant names exactly (`==0.5.24.dev12`): the snapshots
    the set was checked on."""
    out = set()
    for spec in manifest.patches:
        for variant in spec.variants:
            for clause in variant.sglang:
                if clause.operator in ("==", "===") and not clause.version.endswith(".*"):
                    try:
                        v = _public(Version(clause.version))
                    except ValueError:  # InvalidVersion, or digits past int()'s limit
                        continue
                    if v.is_prerelease:
                        out.add(v)
    return sorted(out)


def checked(manifest: SetManifest, version: Version) -> bool:
    """A release the set's range names (a final or post release; a local label like `+cu130`
    is the same release), or a snapshot a variant names exactly. A pre-release or development
    version inside a range (`0.5.12.dev5` in `>=0.5.11,<0.5.13`) is not checked: nobody ran
    the set on it."""
    public = _public(version)
    if public.is_prerelease:
        return public in snapshots_named(manifest)
    return manifest.sglang.contains(public, prereleases=True)


def nearest_lower(manifest: SetManifest, version: Version) -> Version | None:
    """The greatest version below `version` that the manifest names and the set was checked
    on; None when there is none (the version is older than everything the set knows)."""
    public = _public(version)
    below = [v for v in named_versions(manifest) if v < public and checked(manifest, v)]
    return below[-1] if below else None


def basis(manifest: SetManifest, version: Version) -> Basis:
    """The variants `version` is planned with; bad input (exit 2) when the version is untested
    and older than every version the set was checked on."""
    if checked(manifest, version):
        return Basis(manifest.name, version, version, True)
    lower = nearest_lower(manifest, version)
    if lower is None:
        raise bad_input(
            f"patch set {manifest.name} supports sglang {manifest.sglang}; this tree is "
            f"{version}, older than every version the set was checked on"
        )
    return Basis(manifest.name, version, lower, False)


__all__ = ["Basis", "basis", "checked", "named_versions", "nearest_lower", "snapshots_named"]
