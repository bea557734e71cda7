"""Fixtures for tests on real SGLang release trees (all tests here are marked `real`).

Wheels come from the release cache (`$SGPATCH_CACHE`, downloaded on first use); every tree a test
gets is its own writable copy, so tests may patch it freely.

    def test_x(release_tree, record_sha):
        root = release_tree("0.5.9", "checkout")            # full copy, ~0.3 s (0.5.23: ~1.5 s)
        root = release_tree("0.5.9", members=lambda n: "/models/" in n)   # a few files: ~10 ms
        assert record_sha("0.5.9")["srt/models/kimi_k25.py"] == sha256_of(root / "srt/models/...")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sgpatch.releases import cache as releases
from sgpatch.releases.record import hex_sha256

ReleaseTree = Callable[..., Path]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark everything under tests/real as `real`, so `-m "not real"` skips it."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.real)


@pytest.fixture
def release_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReleaseTree]:
    """Factory: `release_tree(version, layout="site-packages", members=None) -> package root`.

    Returns a fresh writable copy (site-packages: `<tmp>/sglang` beside the dist-info; checkout:
    `<tmp>/python/sglang`). `members(wheel_relative_path) -> bool` extracts only what the test
    needs straight from the wheel instead of copying the whole pristine tree.
    """

    def make(
        version: str,
        layout: releases.Layout = "site-packages",
        members: Callable[[str], bool] | None = None,
    ) -> Path:
        dest = tmp_path_factory.mktemp(f"sglang-{version}-{layout}")
        return releases.copy_tree(version, dest, layout, members)

    yield make


def _hex(record_hash: str) -> str:
    digest = hex_sha256(record_hash)
    assert digest is not None, f"unexpected RECORD hash {record_hash!r}"
    return digest


@pytest.fixture
def record_sha() -> Callable[[str], dict[str, str]]:
    """`record_sha(version)`: package-relative path (`srt/models/kimi_k25.py`) -> hex sha256.

    Straight from the wheel's RECORD, in the same form as `hashlib.sha256(data).hexdigest()`, so a
    test can tell pristine files from patched ones. dist-info entries are left out.
    """

    def get(version: str) -> dict[str, str]:
        prefix = f"{releases.PACKAGE}/"
        return {
            name[len(prefix) :]: _hex(h)
            for name, h in releases.record(version).items()
            if name.startswith(prefix)
        }

    return get
