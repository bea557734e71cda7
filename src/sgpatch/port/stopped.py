"""--continue and --abort: pick a stopped port up again from its workspace.

`reopen` checks that W is a live workspace and that the set has not changed since the port
began; `unresolved` lists what still has markers or fails the Python checks; `take_fixed`
turns each stopped patch's files, as the person left them, into its diff (a hand edit of a
file no patch owns joins the first stopped patch: a change moved to another file); `abort`
removes what sgpatch wrote.
"""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from sgpatch.diffs import read_patch
from sgpatch.errors import ExitCode, SgpatchError, bad_input
from sgpatch.manifest import load_manifest
from sgpatch.port import source as src
from sgpatch.port.merge import marker_lines, python_problem
from sgpatch.port.sequencer import Context, Outcome, render_patch, save, stopped_of
from sgpatch.port.workspace import PKG, Workspace, digest, existing, remove


def reopen(top: Path) -> Context:
    """The live workspace's context; the set must not have changed since the port began."""
    ws = existing(top)
    if not ws.is_live():
        raise bad_input(f"--workspace {top}: that port already finished; nothing to continue")
    path = Path((ws.get("set") or "").strip())
    if not path.is_file() or digest(path.read_bytes()) != (ws.get("set-sha256") or "").strip():
        raise bad_input(
            f"{path}: the set changed since the port began; `sgpatch port --abort` and port again"
        )
    to = Version((ws.get("onto") or "").strip())
    offline = (ws.get("offline") or "").strip() == "yes"
    return Context(load_manifest(path), to, ws, src.known_releases(offline))


def unresolved(ctx: Context) -> list[str]:
    """Files of stopped patches that still have markers or fail the Python checks."""
    ws, out = ctx.ws, []
    for o in stopped_of(ws):
        absent = set(ws.lines(f"before/{o.id}.absent"))
        for rel in ws.lines(f"files/{o.id}"):
            data = ws.read_pkg(rel)
            marks = marker_lines(data)
            before = None if rel in absent else ws.get_bytes(f"before/{o.id}/{rel}")
            why = python_problem(rel, data, before) if not marks else None
            if marks:
                out.append(f"{PKG}/{rel}: conflict markers at lines {', '.join(map(str, marks))}")
            elif why:
                out.append(f"{PKG}/{rel}: {why}")
    return out


def take_fixed(ctx: Context) -> None:
    """Each stopped patch becomes `fixed`: its diff is what its files now hold in W."""
    ws = ctx.ws
    stopped = stopped_of(ws)
    extra = _edited_elsewhere(ctx, stopped)
    done = [Outcome.parse(ln) for ln in ws.lines("done")]
    for n, o in enumerate(stopped):
        files = set(ws.lines(f"files/{o.id}")) | (set(extra) if n == 0 else set())
        absent = set(ws.lines(f"before/{o.id}.absent"))
        befores = {f: _before(ws, o.id, f, extra, absent) for f in files}
        afters = {f: ws.read_pkg(f) for f in files}
        spec = ctx.manifest.patch(o.id)
        sorc = src.source_of(spec, ctx.to, ctx.known)
        assert sorc is not None and sorc.variant.patch is not None
        header = read_patch(sorc.variant.patch).header
        ws.put_bytes(f"patches/{o.id}.patch", render_patch(ctx, header, sorc, befores, afters))
        ws.put_lines(f"files/{o.id}", sorted(files))
        o.outcome, o.as_is, o.problems = "fixed", False, []
        done.append(o)
        for f, data in afters.items():
            if data is None:
                ws.tree().pop(f"{PKG}/{f}", None)
            else:
                ws.tree()[f"{PKG}/{f}"] = digest(data)
    order = {s.id: i for i, s in enumerate(ctx.manifest.patches)}
    save(ws, ws.lines("todo"), sorted(done, key=lambda o: order[o.id]), [])


def _before(ws: Workspace, pid: str, rel: str, extra: dict, absent: set) -> bytes | None:
    if rel in extra:
        return extra[rel]
    return None if rel in absent else ws.get_bytes(f"before/{pid}/{rel}")


def _edited_elsewhere(ctx: Context, stopped: list[Outcome]) -> dict[str, bytes | None]:
    """Files changed in W by hand that no stopped patch names (a change moved to another file):
    they go to the first stopped patch, diffed against what sgpatch wrote there. A hand edit of
    a file an already carried patch owns is refused: it would silently go nowhere."""
    ws = ctx.ws
    named = {f for o in stopped for f in ws.lines(f"files/{o.id}")}
    carried = {f: o for o in ws.lines("done") for f in ws.lines(f"files/{o.split(chr(9))[0]}")}
    out: dict[str, bytes | None] = {}
    pristine = src.pristine(ctx.to)
    for rel in changed_by_hand(ws):
        if rel in named:
            continue
        if rel in carried:
            raise SgpatchError(
                f"{PKG}/{rel} was edited, but it belongs to {carried[rel].split(chr(9))[0]}, "
                "which was already carried; undo the edit (or --abort and port again)",
                ExitCode.CONFLICT,
            )
        out[rel] = pristine(rel)
    return out


def changed_by_hand(ws: Workspace) -> list[str]:
    """Package-relative files in W that differ from what sgpatch wrote, or that it did not."""
    import os

    tree, out = ws.tree(), []
    for dirpath, _dirs, files in os.walk(ws.root, followlinks=False):
        for name in files:
            full = Path(dirpath, name)
            rel = full.relative_to(ws.top).as_posix()
            if full.is_symlink() or "/__pycache__/" in f"/{rel}" or name.endswith(".pyc"):
                continue
            if tree.get(rel) != digest(full.read_bytes()):
                out.append(rel[len(PKG) + 1 :])
    for rel in tree:
        if rel.startswith(f"{PKG}/") and not (ws.top / rel).exists():
            out.append(rel[len(PKG) + 1 :])
    return sorted(set(out))


def abort(top: Path) -> list[str]:
    """Remove the workspace (what sgpatch wrote); return what was left there by others."""
    return remove(existing(top))
