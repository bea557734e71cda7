"""Which SGLang releases exist: `pip index versions sglang`, or the cache when offline."""

from __future__ import annotations

import logging
import re
import subprocess

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sgpatch.errors import SgpatchError
from sgpatch.pyrun import module_command
from sgpatch.releases import folder
from sgpatch.releases.download import PACKAGE, PIP_TARGET_FLAGS, cached_versions
from sgpatch.versions import checked

log = logging.getLogger("sgpatch.releases.cache")


def _pip_index_versions(prereleases: bool) -> str:
    """Raw `pip index versions sglang` output (stdout); raises OSError/CalledProcessError."""
    cmd = [*module_command("pip"), "index", "versions", *PIP_TARGET_FLAGS, PACKAGE]
    if prereleases:
        cmd.append("--pre")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    return proc.stdout


def _parse_index_output(text: str) -> list[Version]:
    m = re.search(r"^Available versions:(.*)$", text, re.MULTILINE)
    if m is None:
        raise ValueError("no 'Available versions:' line")
    out = []
    for tok in m.group(1).split(","):
        try:
            out.append(Version(tok.strip()))
        except ValueError:  # InvalidVersion, or digits past int()'s limit
            continue
    return out


_answers: dict[tuple[object, bool], list[Version] | Exception] = {}


def _asked(prereleases: bool) -> list[Version]:
    """The index's releases, asked once per process (`pip index versions` takes seconds; a
    process that lists releases several times, as the tests running sgpatch in-process do,
    gets the same answer). A failure is remembered too: the cache stands in each time."""
    key = (_pip_index_versions, prereleases)  # a test that swaps the function asks anew
    if key not in _answers:
        try:
            _answers[key] = _parse_index_output(_pip_index_versions(prereleases))
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            _answers[key] = e
    got = _answers[key]
    if isinstance(got, Exception):
        raise got
    return list(got)


def index_versions(spec: str = ">=0.5.5,<0.6", *, prereleases: bool = False) -> list[Version]:
    """Releases on the package index matching `spec`, ascending; rc/dev only if asked.

    If the index cannot be reached, the cached wheels stand in (with a logged warning), so offline
    runs still know which releases they can test.
    """
    try:
        spec_set = checked(SpecifierSet(spec))
    except ValueError:  # InvalidSpecifier, or a version past int()'s digit limit
        raise SgpatchError(f"not a PEP 440 version specifier: {spec!r}") from None
    try:
        found = _asked(prereleases)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        found = cached_versions()
        log.warning("package index unreachable (%s); using %d cached wheels", e, len(found))
        if not found:
            raise SgpatchError(
                f"cannot list sglang releases: the index is unreachable and {folder.wheels_dir()} "
                "holds no wheels"
            ) from None
    return sorted({v for v in found if spec_set.contains(v, prereleases=prereleases)})
