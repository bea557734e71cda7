"""fileplan on real releases: the repository-only folders never name a folder of the package."""

from __future__ import annotations

from sgpatch.diff.paths import REPO_ONLY
from sgpatch.releases import cache as releases

from .intent import RELEASES


def test_repository_only_folders_are_not_in_any_release_package() -> None:
    """Input: the RECORD of every release the shipped set is tested on (fetched if missing).
    Outcome: no top-level folder of the package is one `package_mapper` refuses as outside it
    (else a real package path would be refused)."""
    tops = {
        name.split("/")[1]
        for v in RELEASES
        for name in releases.record(v)
        if name.startswith("sglang/") and name.count("/") >= 2
    }
    assert "srt" in tops
    assert not tops & (REPO_ONLY | {"python"}), sorted(tops & REPO_ONLY)
