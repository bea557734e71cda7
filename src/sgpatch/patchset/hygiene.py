"""Search path hygiene: a patch set is code sgpatch writes into the tree, so where it comes from
must not be writable by other users (as ssh refuses a configuration file others could edit).

A folder on the search path (`--patchsets DIR`, an entry of `$SGPATCH_PATH`, the shipped sets),
a set folder, its manifest or a patch file it names is refused (exit 4, one line) when others
may write it: `o+w` on it, or on a folder above it that has no sticky bit (there anyone may
rename it away and put their own in its place; `/tmp`'s sticky bit forbids that). Only mode
bits count, not owners: a checkout bind-mounted into a root container belongs to another uid
and is still the user's own (docs/safety.md, "Where sets come from").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sgpatch.errors import unsafe


def _writable_by_others(path: Path) -> tuple[Path, int, bool] | None:
    """(the path, its mode, whether it is the path itself) of the first of `path` and its
    folders that other users may write (the path: o+w; a folder above: o+w without sticky)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_mode & stat.S_IWOTH:
        return path, stat.S_IMODE(st.st_mode), True
    for folder in path.parents:
        try:
            mode = os.stat(folder).st_mode
        except OSError:
            continue
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            return folder, stat.S_IMODE(mode), False
    return None


def refuse_others_writable(path: Path, what: str) -> None:
    """Exit 4 in one line when other users may write `path` (`what` names it, e.g. "patch set
    folder X (from $SGPATCH_PATH)"); looked at as given and with symlinks resolved."""
    absolute = Path(os.path.abspath(path))
    for candidate in dict.fromkeys((absolute, absolute.resolve())):
        found = _writable_by_others(candidate)
        if found is None:
            continue
        where, mode, itself = found
        how = "" if itself else ", no sticky bit"
        target = "it" if itself else f"{where}, a folder above it,"
        raise unsafe(
            f"refusing {what}: {target} may be written by other users (mode {mode:04o}{how}), "
            f"so anyone could plant or replace a patch set there; `chmod o-w {where}`"
        )


def refuse_writable_inside(base: Path, rel: str, what: str) -> None:
    """Exit 4 when a file inside a set (a patch file) or a folder between the set and it may
    be written by other users (the set folder and the folders above were checked when the
    set was found)."""
    cur = base
    for part in Path(rel).parts:
        cur = cur / part
        try:
            mode = os.stat(cur).st_mode
        except OSError:
            return
        if mode & stat.S_IWOTH:
            raise unsafe(
                f"refusing {what}: {cur} may be written by other users (mode "
                f"{stat.S_IMODE(mode):04o}), so anyone could change the patch; `chmod o-w {cur}`"
            )
