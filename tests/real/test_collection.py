"""The real-release suite is the same whatever the release cache holds (issue #14).

`make demo` leaves two wheels in the cache; `make test` right after it must collect (and then
fetch and run) the same tests as on a full cache or an empty one. So no test module may derive
its parameters from the cache or the package index while pytest collects: each run below is
`pytest --collect-only` over tests/real in a fresh interpreter, and their node ids must agree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from sgpatch.releases import cache as releases

REPO = Path(__file__).resolve().parents[2]

# Collection with every way sgpatch.releases.cache could reach the cache or the index made to fail:
# a collection that needs either exits non-zero instead of quietly collecting something else.
_NO_CACHE_NO_INDEX = """
import sys
from sgpatch.releases import cache, download, index

def refuse(*args, **kwargs):
    raise RuntimeError("collection read the release cache or the package index")

for module, name in ((download, "cached_wheels"), (cache, "cached_wheels"),
                     (download, "_download"), (download, "_pip_download"),
                     (index, "_pip_index_versions")):
    setattr(module, name, refuse)

import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def _collect(cache: Path | None, guard: bool = False) -> list[str]:
    """Node ids `pytest --collect-only tests/real` prints with $SGPATCH_CACHE = `cache` (None:
    the caller's cache as it is)."""
    env = dict(os.environ)
    if cache is not None:
        env[releases.CACHE_ENV] = str(cache)
    args = ["--collect-only", "-q", "-o", "addopts=", "-p", "no:cacheprovider", "tests/real"]
    cmd = [sys.executable, "-c", _NO_CACHE_NO_INDEX, *args] if guard else [
        sys.executable, "-m", "pytest", *args,
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert ids, proc.stdout
    return ids


def _two_release_cache(dest: Path) -> Path:
    """A cache holding only the demo's two wheels (hard links to the real cache's, or copies)."""
    wheels = dest / "wheels"
    wheels.mkdir(parents=True)
    for version in ("0.5.9", "0.5.10"):
        src = releases.wheel_path(version)
        try:
            os.link(src, wheels / src.name)
        except OSError:  # another file system
            shutil.copyfile(src, wheels / src.name)
    assert len(list(wheels.glob("sglang-*.whl"))) == 2
    return dest


def test_collection_is_the_same_from_a_two_release_cache_and_the_usual_one(tmp_path):
    """Input: `pytest --collect-only tests/real` with $SGPATCH_CACHE holding only 0.5.9 and
    0.5.10 (what `make demo` leaves), and with the usual cache. Outcome: the same node ids, in
    the same order, and more than the demo's releases alone would give (every release of the
    shipped set's list is parametrized)."""
    two = _collect(_two_release_cache(tmp_path / "cache"))
    usual = _collect(None)
    assert two == usual
    lifecycle = [i for i in usual if "test_kimi_eagle3_sm120.py::test_lifecycle[" in i]
    assert any("[0.5.5-" in i for i in lifecycle) and any("[0.5.23-" in i for i in lifecycle)


def test_collection_reads_neither_the_cache_nor_the_index(tmp_path):
    """Input: the same collection from an empty cache, with sgpatch.releases.cache' cache listing,
    download and index listing replaced by functions that raise. Outcome: it succeeds with the
    node ids of the usual collection: nothing is read or fetched before a test runs."""
    assert _collect(tmp_path / "empty", guard=True) == _collect(None)
    assert not (tmp_path / "empty").exists()
