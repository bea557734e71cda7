"""Make tests/helpers.py importable from every test folder; show release downloads live."""

import os
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import settings as _hypothesis

sys.path.insert(0, str(Path(__file__).parent))

from sgpatch.releases import cache as releases

# Property tests draw the same examples on every run and keep no example database: the suite
# passes the same from a fresh clone as from a used one, and a failure reproduces on any
# machine. HYPOTHESIS_PROFILE=explore draws new examples (and remembers failures) when hunting.
_hypothesis.register_profile("repeatable", derandomize=True, database=None)
_hypothesis.register_profile("explore", derandomize=False)
_hypothesis.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# The Ctrl-C tests send SIGINT to sgpatch as a terminal would. A shell that starts the suite in
# the background (`make test &` in a script) ignores SIGINT for it, which every forked or
# started sgpatch would inherit, and sgpatch rightly leaves an ignored Ctrl-C ignored: those
# tests would then see a port run to its end. The suite takes Python's usual handler back.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

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


_prefetch_seconds: list[float] = []


def _runs_real_tests(config: pytest.Config) -> bool:
    """Whether this run selects tests under tests/real (by path and by `-m`)."""
    if "not real" in (config.getoption("markexpr", "") or ""):
        return False
    real = Path(__file__).parent / "real"
    args = [Path(a.split("::")[0]).resolve() for a in config.args] or [real.parent]
    return any(a == real or real in a.parents or a in real.parents for a in args)


def pytest_sessionstart(session: pytest.Session) -> None:
    """With workers (`make test` runs `pytest -n 2`), the controller fills the release cache
    before any test starts: the workers' output is not shown as it happens, so a download in
    one would look like a hung suite, and the download time is reported on its own line."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    if not _runs_real_tests(config):
        return
    import time

    from real.intent import RELEASES

    terminal = config.pluginmanager.getplugin("terminalreporter")
    before = len(releases.downloaded())
    releases.set_reporter(terminal.write_line if terminal is not None else None)
    start = time.monotonic()
    try:
        releases.fetch(RELEASES)
    finally:
        releases.set_reporter(None)
    if len(releases.downloaded()) > before:
        _real_downloads.extend(releases.downloaded()[before:])
        _prefetch_seconds.append(time.monotonic() - start)


def pytest_terminal_summary(terminalreporter) -> None:
    """The final line: how much this run downloaded, in how long, and where the cache is."""
    got = _real_downloads
    if got:
        size = sum(d.size for d in got) / 1e6
        took = sum(_prefetch_seconds) or sum(d.seconds for d in got)
        terminalreporter.write_line(
            f"sgpatch: downloaded {len(got)} SGLang wheel(s), {size:.1f} MB in {took:.0f} s "
            f"(part of the time above), into {releases.cache_dir()} (${releases.CACHE_ENV} "
            "moves it)"
        )
