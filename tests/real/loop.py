"""The scripted person: port a real project's stack from release A to B as the project did.

Used by tests/real/test_port_loop_real.py and bench/port.py. The person imports the project's
stack for A (`sgpatch import`, so every probe is the suggested one), runs `port --to B`, and
at each stop writes the project's own published file for B into W (for a stopped patch's
file: the project's B stack applied up to the same patch; for any other file the project's
port changed beyond what port carried: its whole B stack), then `--continue`, until the set
is written. Where the project's own file defines a name twice in one body (the fuzz trap in
a hand port: the later copy wins silently), the person takes the fold a port stop suggests
(the definition Python runs takes the earlier copy's place, the dead one goes), so the code
runs as the project's does and nothing of its change is dropped.

Counted per step: stops, the files the person wrote (and of them, the files port left in
conflict), against a plain per-file `git merge-file` of the same stack: the files it leaves
in conflict, and the files it resolves into something other than the project's own bytes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

STACKS = Path(__file__).resolve().parents[1] / "data" / "stacks"
# the projects' own chains of hand ports (tests/data/stacks/*/README.md)
CHAINS = {
    "slime": ["0.5.5.post1", "0.5.9", "0.5.10.post1", "0.5.12.post1", "0.5.13", "0.5.15.post1"],
    "areal": ["0.5.1.post3", "0.5.2"],
}
STEPS = [(p, c[i], c[i + 1]) for p, c in CHAINS.items() for i in range(len(c) - 1)]
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def series(project: str, version: str) -> list[Path]:
    d = STACKS / project / version
    return [d / n for n in (d / "series").read_text().split()]


def pid_of(f: Path) -> str:
    """The id `sgpatch import` gives a stack file (its stem, slugged)."""
    return re.sub(r"[^a-z0-9]+", "-", f.stem.lower()).strip("-")


def touched(patch: Path) -> list[str]:
    from sgpatch.diff.paths import package_mapper
    from sgpatch.diff.unified import read_patch

    p = read_patch(patch)
    mapper = package_mapper(p.name)
    return sorted({mapper(x) for f in p.files for x in (f.source, f.target) if x != "/dev/null"})


def release_file(version: str, rel: str) -> bytes | None:
    from sgpatch.releases import cache as releases

    if f"sglang/{rel}" not in releases.record(version):
        return None
    return releases.read_member(version, rel)


def git_apply(files: dict[str, bytes | None], patch: Path, tmp: Path) -> dict[str, bytes | None]:
    """The files after `git apply` of `patch` (outside any repository)."""
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for rel, data in files.items():
        if data is not None:
            (tmp / "python/sglang" / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "python/sglang" / rel).write_bytes(data)
    only = [f"--include=python/sglang/{rel}" for rel in files]
    subprocess.run(["git", "apply", *only, str(patch)], cwd=tmp, check=True, capture_output=True)
    out = {}
    for rel in files:
        p = tmp / "python/sglang" / rel
        out[rel] = p.read_bytes() if p.is_file() else None
    return out


def project_tree(project: str, version: str, upto: str | None = None) -> dict[str, bytes | None]:
    """The project's own files on `version`: its stack applied with `git apply`, up to and
    including the stack file named `upto` (all of it: None). Every file it touches."""
    state: dict[str, bytes | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for f in series(project, version):
            rels = touched(f)
            now = {r: state[r] if r in state else release_file(version, r) for r in rels}
            state.update(git_apply(now, f, Path(tmp) / "a"))
            if f.name == upto:
                break
    return state


# ---------------------------------------------------------------------------------------------
# a name defined twice: the fold the port stop suggests


def folded(rel: str, data: bytes | None, release: bytes | None) -> tuple[bytes | None, str]:
    """`data`, or, when it defines a def/class twice in one body where the release did not
    (port's check), `data` folded as a port stop suggests (sgpatch.port.folds, the code
    `port --fold` and `sgpatch fold` run): the definition Python runs takes the earlier copy's
    place and the dead copy goes, so the code runs as the project's does. (bytes, what was
    folded: "" when nothing)."""
    from sgpatch.port import folds

    got = folds.suggest(rel, data, release)
    if got is None:
        return data, ""
    return got.data, "; ".join(got.folds)


# ---------------------------------------------------------------------------------------------
# the loop


def cli(*args: str) -> tuple[int, str]:
    """Run the sgpatch CLI in-process; (exit code, stdout)."""
    from sgpatch.cli.app import main

    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue()


@dataclass
class Loop:
    """One step of a chain, as the scripted person ran it."""

    project: str
    a: str
    b: str
    set_dir: Path
    workspace: Path
    exit_code: int = 0
    stops: int = 0
    conflicts: set[str] = field(default_factory=set)  # files port left in conflict (any stop)
    hand: set[str] = field(default_factory=set)  # every file the person wrote into W
    folds: dict[str, str] = field(default_factory=dict)  # file -> what the person folded
    docs: list[dict] = field(default_factory=list)  # every port --json step document
    want: dict[str, bytes | None] = field(default_factory=dict)  # the project's own B files


def run(project: str, a: str, b: str, tmp: Path, rounds: int = 8) -> Loop:
    """Import A's stack, port it to B, fix each stop as the project did, until it is written."""
    from sgpatch.releases import cache as releases

    releases.wheel_path(a), releases.wheel_path(b)
    sets = tmp / "sets"
    (tmp / "stack").mkdir(parents=True)
    stack = [Path(shutil.copy(f, tmp / "stack" / f.name)) for f in series(project, a)]
    code, out = cli("import", "--name", project, "--sglang-version", a, "--dest", str(sets),
                    *map(str, stack), "--json")  # fmt: skip
    assert code == 0, out
    w = tmp / "w"
    loop = Loop(project, a, b, sets / project, w)
    full = project_tree(project, b)
    union = sorted({r for f in series(project, a) for r in touched(f)} | set(full))
    for r in union:
        loop.want[r], what = folded(r, full.get(r, release_file(b, r)), release_file(b, r))
        if what:
            loop.folds[r] = what
    code, doc = _port("port", "--set", project, "--patchsets", str(sets), "--to", b,
                      "--offline", "--workspace", str(w), "--no-finish")  # fmt: skip
    loop.docs.append(doc)
    for _ in range(rounds):
        planned = code == 0 and doc["steps"][-1]["state"] == "planned"
        if code != 3 and not planned:
            break
        loop.stops += 0 if planned else 1
        _fix(loop, doc["steps"][-1], union)
        code, doc = _port("port", "--continue", "--workspace", str(w))
        loop.docs.append(doc)
    loop.exit_code = code
    return loop


def _port(*args: str) -> tuple[int, dict]:
    code, out = cli(*args, "--json")
    return code, json.loads(out)


def _fix(loop: Loop, step: dict, union: list[str]) -> None:
    """One stop, as the project did it: each stopped patch's files to fix get the project's
    file (its B stack up to the same patch); any other file the project's port has other
    bytes in, that no unfinished patch still has to write and no later patch wrote since,
    gets the project's file too (the edit joins the first stopped patch; with none stopped,
    after `--no-finish`, the patch that changes the file)."""
    w, b = loop.workspace, loop.b
    ids = [p["id"] for p in step["patches"]]
    stopped = [p for p in step["patches"] if p["outcome"] == "conflict"]
    b_names = {pid_of(f): f.name for f in series(loop.project, b)}
    last = series(loop.project, b)[-1].name
    if len(series(loop.project, loop.a)) == 1:  # one patch for the whole of B's stack
        b_names = {}
    held: set[str] = set()
    for p in step["patches"]:
        held |= {pr["file"] for pr in p["problems"]} | set(p["files_waiting"])
    first = ids.index(stopped[0]["id"]) if stopped else len(ids)
    later = {f for p in step["patches"][first + 1 :] for f in p["files_carried"]}
    for p in stopped:
        files = [pr["file"] for pr in p["problems"]]
        loop.conflicts |= set(files)
        mine = project_tree(loop.project, b, b_names.get(p["id"], last))
        for rel in files:
            _write(loop, rel, mine.get(rel, release_file(b, rel)))
    for rel in union:
        if rel in held or rel in later:
            continue
        now = (w / "sglang" / rel).read_bytes() if (w / "sglang" / rel).exists() else None
        if now != loop.want[rel]:
            _write(loop, rel, loop.want[rel], folded_done=True)


def _write(loop: Loop, rel: str, data: bytes | None, folded_done: bool = False) -> None:
    if not folded_done:
        data, what = folded(rel, data, release_file(loop.b, rel))
        if what:
            loop.folds[rel] = what
    target = loop.workspace / "sglang" / rel
    now = target.read_bytes() if target.exists() else None
    if now == data:
        return
    loop.hand.add(rel)
    if data is None:
        target.unlink()
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


# ---------------------------------------------------------------------------------------------
# the same stack through plain git merge-file


@dataclass(frozen=True)
class Plain:
    """A plain per-file `git merge-file` of the stack: files in conflict; files it resolves
    into bytes other than the project's own (a person would have to fix those too)."""

    conflicts: frozenset[str]
    other_bytes: frozenset[str]
    merged: dict  # file -> (bytes, clean)


def merge_file(base: bytes, ours: bytes, theirs: bytes, tmp: Path) -> tuple[bytes, int]:
    tmp.mkdir(parents=True, exist_ok=True)
    for n, d in (("o", ours), ("b", base), ("t", theirs)):
        (tmp / n).write_bytes(d)
    p = subprocess.run(["git", "merge-file", "-p", "o", "b", "t"], cwd=tmp, env=GIT_ENV,
                       capture_output=True, check=False)  # fmt: skip
    return p.stdout, p.returncode


def plain(project: str, a: str, b: str, want: dict, tmp: Path) -> Plain:
    """Each patch of A's stack, in order, merged file by file onto B (base = A's file so far,
    ours = B's file so far, theirs = `git apply` of the patch to the base)."""
    a_side: dict[str, bytes | None] = {}
    b_side: dict[str, bytes | None] = {}
    out: dict[str, tuple[bytes, bool]] = {}
    for patch in series(project, a):
        rels = touched(patch)
        before = {r: a_side[r] if r in a_side else release_file(a, r) for r in rels}
        after = git_apply(before, patch, tmp / "apply")
        for r in rels:
            ours = b_side[r] if r in b_side else release_file(b, r)
            merged, n = merge_file(before[r] or b"", ours or b"", after[r] or b"", tmp / "m")
            out[r] = (merged, n == 0 and out.get(r, (b"", True))[1])
            a_side[r], b_side[r] = after[r], merged
    conflicts = frozenset(r for r, (_m, clean) in out.items() if not clean)
    other = set()
    for r, w in want.items():
        if r in conflicts:
            continue
        got = out[r][0] if r in out else release_file(b, r)
        if r in out and not got and w is None:
            continue  # a file the stack deletes
        if got != w:
            other.add(r)
    return Plain(conflicts, frozenset(other), out)


def written_wrong(r: Loop, p: Plain) -> set[str]:
    """Files port carried by itself (no stop) that the person had to rewrite although a plain
    `git merge-file` resolves them cleanly into the project's own bytes: port got wrong what
    the plain tool got right. The goal is none."""
    out = set()
    for rel in r.hand - r.conflicts:
        merged = p.merged.get(rel)
        if merged is not None and merged[1] and merged[0] == r.want.get(rel):
            out.add(rel)
    return out
