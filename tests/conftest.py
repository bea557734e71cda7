"""Make tests/helpers.py importable from every test folder; show release downloads live."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from sgpatch.releases import cache as releases

# Downloads during the real-release tests (marked `real`; the first `make test` fetches every
# release they need) are shown as they happen, one line each past pytest's output capture, and
# summed up at the end: a build log that says nothing for minutes looks hung. Unit tests' fake
# downloads stay in their captured stderr and out of the sum.
_real_downloads: list[releases.Download] = []
_since = 0


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Route sgpatch's download lines to the terminal for a real-release test (its fixtures
    included); unit tests keep them in their captured stderr, where they assert on them."""
    global _since
    if item.get_closest_marker("real") is None:
        return
    _since = len(releases.downloaded())
    capman = item.config.pluginmanager.getplugin("capturemanager")
    terminal = item.config.pluginmanager.getplugin("terminalreporter")
    if capman is None or terminal is None:
        return

    def show(line: str) -> None:
        with capman.global_and_fixture_disabled():
            if getattr(terminal._tw, "width_of_current_line", 0):  # after progress dots
                terminal.write("\n")
            terminal.write_line(line)

    releases.set_reporter(show)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    if item.get_closest_marker("real") is not None:
        _real_downloads.extend(releases.downloaded()[_since:])
        releases.set_reporter(None)


def pytest_terminal_summary(terminalreporter) -> None:
    """The final line: how much this run downloaded, and where the cache is."""
    got = _real_downloads
    if got:
        size = sum(d.size for d in got) / 1e6
        terminalreporter.write_line(
            f"sgpatch: downloaded {len(got)} SGLang wheel(s), {size:.1f} MB, into "
            f"{releases.cache_dir()} (${releases.CACHE_ENV} moves it)"
        )
