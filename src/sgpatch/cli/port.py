"""`sgpatch port`: carry a set to another release like a rebase (logic in sgpatch.port)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch import console


@dataclass(frozen=True)
class Args:
    set_name: str | None
    to: str | None
    workspace: Path | None
    patchsets: Sequence[Path]
    step: bool
    cont: bool
    abort: bool
    no_finish: bool
    without: Sequence[str]
    offline: bool
    as_json: bool
    to_tree: Path | None = None
    force: bool = False
    show: str | None = None
    fold: str | None = None


def run(a: Args) -> int:
    from sgpatch import interrupts

    _check(a)
    try:
        return _run(a)
    except interrupts.Interrupted as e:  # W is as its last whole step left it (port/undo.py)
        from sgpatch.port.driver import InterruptedIn

        line = _interrupted(a, e.workspace if isinstance(e, InterruptedIn) else a.workspace)
        if line is None:
            raise  # nothing of a port in W yet: the plain line
        console.err(line)
        return interrupts.EXIT


def _interrupted(a: Args, top: Path | None) -> str | None:
    """What to type after Ctrl-C: go on with --continue (W is a workspace), or run --abort
    again; None when W holds no port (interrupted before it began)."""
    from sgpatch.errors import SgpatchError
    from sgpatch.port.workspace import Workspace

    if top is None:
        return None
    ws = Workspace(top)
    try:
        ours = ws.is_ours()
    except SgpatchError:
        return None
    w = shlex.quote(str(ws.top))
    if not ours:
        return None
    if a.abort:
        return f"sgpatch port --abort: interrupted; again: `sgpatch port --abort --workspace {w}`"
    return (
        f"sgpatch port: interrupted; {ws.top} is as its last whole step left it: "
        f"`sgpatch port --continue --workspace {w}` goes on"
    )


def _run(a: Args) -> int:
    from sgpatch.port import driver, report, resume

    w = a.workspace
    if a.show is not None and w is not None:  # _check: --show has --workspace
        return _shown(a, report.show(w, a.show))
    if a.fold is not None and w is not None:  # _check: --fold has --workspace
        return _folded(a, w)
    if a.abort and w is not None:  # _check: --abort and --continue have --workspace
        return _aborted(a, resume.abort(w, a.force))
    if a.cont and w is not None:
        return _emit(a, [resume.resume(w)])
    if a.to_tree is not None:
        return _onto_tree(a)
    manifest, version = _inputs(a)
    if a.step:
        reps = driver.walk(manifest, version, a.workspace, offline=a.offline, without=a.without)
        return _emit(a, reps)
    rep = driver.port(
        manifest, version, a.workspace, offline=a.offline, without=a.without,
        finish=not a.no_finish,
    )  # fmt: skip
    return _emit(a, [rep])


def _check(a: Args) -> None:
    from sgpatch.errors import bad_input

    for flag, value in (("--show", a.show), ("--fold", a.fold)):
        if value is None:
            continue
        if a.workspace is None:
            raise bad_input(f"{flag} FILE needs --workspace W (the stopped port's workspace)")
        others = (a.cont, a.abort, a.set_name, a.to, a.step, a.to_tree, a.force)
        if any(others) or (a.show is not None and a.fold is not None):
            raise bad_input(f"{flag} FILE takes only --workspace (it works on the stop there)")
        return
    if a.cont and a.abort:
        raise bad_input("--continue and --abort: choose one")
    if (a.cont or a.abort) and a.workspace is None:
        raise bad_input(f"--{'continue' if a.cont else 'abort'} needs --workspace W")
    if (a.cont or a.abort) and (a.set_name or a.to or a.step or a.to_tree):
        raise bad_input("--continue/--abort take only --workspace (the port's state is there)")
    if a.force and not a.abort:
        raise bad_input("--force goes with --abort only (keep the hand edits aside, then abort)")
    if a.to is not None and a.to_tree is not None:
        raise bad_input("--to VERSION and --to-tree DIR: choose one")
    if a.to_tree is not None and a.step:
        raise bad_input("--step walks releases; --to-tree ports to one tree: choose one")
    if not (a.cont or a.abort) and (a.set_name is None or (a.to is None and a.to_tree is None)):
        raise bad_input(
            "sgpatch port needs --set NAME and --to VERSION or --to-tree DIR "
            "(or --continue/--abort)"
        )


def _inputs(a: Args):
    from packaging.version import Version

    from sgpatch.errors import bad_input
    from sgpatch.patchset.manifest import load_set

    try:
        version = Version(a.to or "")
    except ValueError:  # InvalidVersion, or digits past int()'s limit
        raise bad_input(f"--to {a.to!r}: not a PEP 440 version") from None
    if version.local or version.is_prerelease:
        raise bad_input(f"--to {a.to}: port carries a set to a final release (no rc, dev, +local)")
    return load_set(a.set_name or "", tuple(a.patchsets)), version


def _onto_tree(a: Args) -> int:
    """`--to-tree DIR`: keep the tree as a snapshot, carry from the nearest variants."""
    from sgpatch.patchset.manifest import load_set
    from sgpatch.port.driver import port
    from sgpatch.port.onto_tree import prepare

    assert a.to_tree is not None
    manifest = load_set(a.set_name or "", tuple(a.patchsets))
    tree = prepare(manifest, a.to_tree, a.offline, a.workspace)
    if not a.as_json:
        console.err(
            f"sgpatch port: {tree.root} is sglang {tree.version}, not a release: carrying "
            f"{manifest.name} from its {tree.variants_of} variants; the tree is kept as snapshot "
            f"{tree.onto} ({tree.archive})"
        )
    rep = port(manifest, tree.onto, a.workspace, offline=a.offline, without=a.without,
                    finish=not a.no_finish, known=tree.known, to_tree=a.to_tree)  # fmt: skip
    return _emit(a, [rep], {"tree": tree.to_json()})


def _shown(a: Args, got) -> int:
    """`--show FILE`: the file's details on stdout (the command's product)."""
    if a.as_json:
        console.emit_json({"command": "port", "exit_code": 0, **got.to_json()})
        return 0
    for ln in got.lines:
        console.out(ln)
    return 0


def _folded(a: Args, w: Path) -> int:
    """`--fold FILE`: the fold written into W; the diff on stdout, the next command after."""
    from sgpatch.port.resume import fold

    assert a.fold is not None
    got = fold(w, a.fold)
    top = shlex.quote(str(w.absolute()))
    if a.as_json:
        console.emit_json({"command": "port", "exit_code": 0, **got.to_json()})
        return 0
    for ln in got.diff:
        console.out(ln)
    console.err(
        f"sgpatch port: folded sglang/{got.file} ({'; '.join(got.folds)}); then "
        f"`sgpatch port --continue --workspace {top}`"
    )
    return 0


def _aborted(a: Args, done) -> int:
    w = a.workspace.absolute() if a.workspace is not None else None
    if a.as_json:
        head = {"command": "port", "exit_code": 0, "state": "aborted", "workspace": str(w)}
        console.emit_json({**head, **done.to_json()})
        return 0
    from sgpatch.shown import name

    aside = ""
    if done.kept_in is not None:
        what = " and ".join(w for w, have in (("edits", done.edits), ("files", done.own)) if have)
        names = ", ".join(map(name, done.edits + done.own))
        aside = f"; kept your {what} in {name(done.kept_in)}: {names}"
    console.err(f"sgpatch port --abort: {_removed(w, done)}{aside}; the set is unchanged")
    return 0


def _removed(w: Path | None, done) -> str:
    """What --abort removed, true to what is on disk: W itself, or only what sgpatch wrote
    there when W stays (a folder the person made, or one holding what others put there)."""
    from sgpatch.shown import name

    if not done.stays:
        return f"removed {name(w)}"
    if done.left_files:
        left = ", ".join(map(name, done.left_files[:5]))
        more = f" and {len(done.left_files) - 5} more" if len(done.left_files) > 5 else ""
        why = f"it holds what others put there: {left}{more}"
    else:
        why = "you made it; it is empty now"
    return f"removed what sgpatch wrote in {name(w)}; {name(w)} stays ({why})"


def _emit(a: Args, reps, extra: dict | None = None) -> int:
    code = int(reps[-1].exit_code)
    if a.as_json:
        console.emit_json(
            {"command": "port", "exit_code": code, **(extra or {}),
             "steps": [r.to_json() for r in reps]}
        )  # fmt: skip
        return code
    from sgpatch.port.screen import walk_lines

    for ln in walk_lines(reps):  # one screen, a --step walk's releases before the last included
        console.err(ln)
    return code
