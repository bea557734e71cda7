"""plan on real releases: the repository-only folders never name a folder of the package."""

from __future__ import annotations

from sgpatch import releases
from sgpatch.plan import REPO_ONLY


def test_repository_only_folders_are_not_in_any_release_package() -> None:
    """Input: every cached 0.5.x release's RECORD. Outcome: no top-level folder of the package
    is one `package_mapper` refuses as outside it (else a real package path would be refused)."""
    versions = releases.cached_versions()
    assert versions, "no release in the cache"
    tops = {
        name.split("/")[1]
        for v in versions
        for name in releases.record(str(v))
        if name.startswith("sglang/") and name.count("/") >= 2
    }
    assert "srt" in tops
    assert not tops & (REPO_ONLY | {"python"}), sorted(tops & REPO_ONLY)
