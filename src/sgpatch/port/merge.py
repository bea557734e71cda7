"""Three-way merges and the checks a merged file must pass before port keeps it.

A clean `git merge-file` is not proof: the classic fuzz trap (a patch's methods added a second
time inside a class upstream already extended) merges cleanly too. So a merged Python file must
compile, and must not define a def/class twice in one body where the release did not (the
rule is `placement.pydefs`, the one the engine applies to every placement).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from typing import TYPE_CHECKING

from sgpatch.diff.unified import decode
from sgpatch.errors import SgpatchError
from sgpatch.placement.pydefs import defined_twice

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    from sgpatch.placement.pyimports import Release

MARKERS = ("<<<<<<< ", "||||||| ", "=======", ">>>>>>> ")
# a marker line, as git merge-file writes them (any CRs before the newline allowed)
_MARKER_RE = re.compile(r"^(?:(?:<<<<<<<|\|{7}|>>>>>>>)(?: |\r*$)|=======\r*$)", re.MULTILINE)


def merge_file(
    base: bytes, ours: bytes, theirs: bytes, labels: tuple[str, str, str]
) -> tuple[bytes, int]:
    """`git merge-file -p --diff3 ours base theirs`: (merged bytes, number of conflicts).
    Labels are (ours, base, theirs). No repository needed; user configuration is ignored."""
    import tempfile

    from sgpatch.fs import atomic

    git = shutil.which("git")
    if git is None:
        raise SgpatchError("sgpatch port needs git (for `git merge-file`) on PATH")
    with tempfile.TemporaryDirectory(prefix="sgpatch-merge-") as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            atomic.create_path(os.path.join(tmp, name), data, 0o600)
            paths.append(os.path.join(tmp, name))
        cmd = [git, "merge-file", "-p", "--diff3"]
        for label in labels:
            cmd += ["-L", label]
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        proc = subprocess.run(cmd + paths, capture_output=True, env=env, check=False)
    if proc.returncode < 0 or proc.returncode > 127:
        raise SgpatchError(f"git merge-file failed: {decode(proc.stderr).strip()}")
    return proc.stdout, proc.returncode


def marker_lines(data: bytes | None) -> tuple[int, ...]:
    """1-based lines that are conflict markers (a file with any is not resolved)."""
    if not data or (b"=======" not in data and b"<<<<<<<" not in data and b">>>>>>>" not in data):
        return ()
    text = decode(data)
    out, line, pos = [], 1, 0
    for at in _line_starts_with(text, _MARKER_HEADS):  # str.find's C scan: a regex with ^
        if _MARKER_RE.match(text, at):  # tries every position of the text, ~3x slower
            line += text.count("\n", pos, at)
            pos = at
            out.append(line)
    return tuple(out)


_MARKER_HEADS = ("<<<<<<<", "|||||||", "=======", ">>>>>>>")


def _line_starts_with(text: str, heads: tuple[str, ...]) -> list[int]:
    """Where a line of `text` begins with one of `heads` (ascending)."""
    found = []
    for head in heads:
        at = text.find(head)
        while at != -1:
            if at == 0 or text[at - 1] == "\n":
                found.append(at)
            at = text.find(head, at + len(head))
    return sorted(found)


def python_problem(
    path: str, data: bytes | None, release: bytes | None, label: str = "the release"
) -> str | None:
    """Why a carried Python file cannot be kept as it is (None: it can). `release` is the file
    the patch was carried onto (`label` names it: "sglang 0.5.9"): a duplicate it already has
    is upstream's business. The defined-twice rule is the engine's (`placement.pydefs`), so
    port and apply agree; it names both places and which one came with the release."""
    if data is None or not path.endswith(".py"):
        return None
    try:
        dups = defined_twice(data, release)
    except (SyntaxError, ValueError) as e:
        if release is not None and _unparsable(release):
            return None  # upstream's file does not parse with this Python either
        line = getattr(e, "lineno", None)
        return f"does not compile{f' (line {line})' if line else ''}: {getattr(e, 'msg', e)}"
    if dups:
        where = "; ".join(f"{t.scope or 'module'}: {t.describe(label)}" for t in dups)
        return f"defines the same name twice in one body ({where}): the fuzz trap"
    return None


def import_problem(
    path: str, data: bytes | None, before: bytes | None, release: Release, label: str
) -> str | None:
    """Why a carried Python file that compiles would still fail at import (None: it would
    not, as far as SGLang goes): an import of SGLang it adds or keeps that `release` (W, the
    release with the set so far; `label` names it) does not have, each with where the module
    or name is now (placement.pyimports; docs/porting.md, "Imports that no longer resolve")."""
    if data is None or not path.endswith(".py"):
        return None
    from sgpatch.placement.pyimports import unresolved

    old = decode(before) if before is not None else None
    found = unresolved(path, decode(data), old, release)
    if not found:
        return None
    each = "; ".join(f"line {u.line}: {u.text}: {u.missing}, {u.where_now}" for u in found)
    return f"imports what {label} does not have ({each}): import it from where it is now"


_PARALLEL_BYTES = 200_000  # below this much Python to parse, a worker costs more than it saves
_pool: dict[int, Executor] = {}  # pid -> the one worker pool of that process, made on first need


class Checks:
    """`python_problem` of a patch's carried files, handed in one by one as the carry makes
    them and read back in order by `results`. Parsing is CPU-bound: once enough Python has
    come (and with more than one core), each file goes to the forked workers (one pool per
    process, reused by every patch and step) as soon as it is added, so they parse while the
    carry plans and merges the patch's next files; below that it is checked here at the end.
    Same inputs, same function: the same answers in any order."""

    def __init__(self, label: str = "the release") -> None:
        self.label = label
        self.items: list[tuple[str, bytes | None, bytes | None]] = []
        self.sent: dict[int, Future] = {}
        self.size = 0
        self.pool: Executor | None = None
        self.asked = False  # for the pool (once enough Python has come)

    def add(self, path: str, data: bytes | None, release: bytes | None) -> None:
        self.items.append((path, data, release))
        if data is None or not path.endswith(".py"):
            return
        self.size += len(data)
        if not self.asked and self.size >= _PARALLEL_BYTES:
            self.asked, self.pool = True, workers()
        if self.pool is not None:
            for n, item in enumerate(self.items):
                if n not in self.sent and item[1] is not None and item[0].endswith(".py"):
                    self.sent[n] = self.pool.submit(_problem_of, (*item, self.label))

    def results(self) -> list[str | None]:
        """Each added file's problem (None: it can be kept), in the order added."""
        return [
            self.sent[n].result() if n in self.sent else python_problem(*item, self.label)
            for n, item in enumerate(self.items)
        ]


def _problem_of(item: tuple[str, bytes | None, bytes | None, str]) -> str | None:
    return python_problem(*item)


def workers(make: bool = True) -> Executor | None:
    """A fork pool of one worker per core (None: one core, or threads running, where a fork
    is unsafe; or none made yet and `make` is False); shut down when the process exits. A
    process forked from one that had a pool never uses that one: its workers and the thread
    that feeds them stayed with the parent, and a job sent there would wait forever."""
    import threading

    pid = os.getpid()
    if pid in _pool:
        return _pool[pid]
    if not make:
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (cores or 1) < 2 or threading.active_count() > 1:
        return None
    import atexit
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(min(cores or 2, 4), mp_context=multiprocessing.get_context("fork"))
    atexit.register(pool.shutdown, wait=False, cancel_futures=True)
    _pool[pid] = pool
    return pool


def _unparsable(data: bytes) -> bool:
    try:
        ast.parse(data)
    except (SyntaxError, ValueError):
        return True
    return False
