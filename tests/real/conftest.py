"""Fixtures for tests on real SGLang release trees (all tests here are marked `real`).

Wheels come from the release cache (`$SGPATCH_CACHE`, downloaded on first use); every tree a test
gets is its own writable copy, so tests may patch it freely.

    def test_x(release_tree, record_sha):
        root = release_tree("0.5.9", "checkout")            # full copy, ~0.3 s (0.5.23: ~1.5 s)
        root = release_tree("0.5.9", members=lambda n: "/models/" in n)   # a few files: ~10 ms
        assert record_sha("0.5.9")["srt/models/kimi_k25.py"] == sha256_of(root / "srt/models/...")
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sgpatch import releases

ReleaseTree = Callable[..., Path]


# Downloads during the real-release tests (the first `make test` fetches every release it needs,
# ~600 MB) are shown as they happen, one line each past pytest's output capture, and summed up
# at the end: a build log that says nothing for minutes looks hung.


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Route sgpatch's download lines to the terminal for this item (fixtures included)."""
    capman = item.config.pluginmanager.getplugin("capturemanager")
    terminal = item.config.pluginmanager.getplugin("terminalreporter")
    if capman is None or terminal is None:
        return

    def show(line: str) -> None:
        with capman.global_and_fixture_disabled():
            terminal.write_line(line)

    releases.set_reporter(show)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    releases.set_reporter(None)


def pytest_terminal_summary(terminalreporter) -> None:
    """The final line: how much this run downloaded, and where the cache is."""
    got = releases.downloaded()
    if got:
        size = sum(d.size for d in got) / 1e6
        terminalreporter.write_line(
            f"sgpatch: downloaded {len(got)} SGLang wheel(s), {size:.1f} MB, into "
            f"{releases.cache_dir()} (${releases.CACHE_ENV} moves it)"
        )


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
    alg, _, b64 = record_hash.partition("=")
    assert alg == "sha256", f"unexpected RECORD hash {record_hash!r}"
    return base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).hex()


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
