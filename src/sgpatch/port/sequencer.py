"""The port sequencer (git rebase style): start -> (fix) -> --continue | --abort.

`start` lays out the workspace (a full tree of the target release), asks every patch's probe
whether upstream has it there, and carries the patches in manifest order (`run_todo`). A patch
that needs a hand stops with its files written (markers and all); the patches after it keep
going unless they touch one of its files or require it. `resume` checks the fixed files, takes
each stopped patch's diff from the workspace, carries what was waiting, and finishes.
Everything a step knows is in the workspace's state files, so a crash leaves them meaningful.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from sgpatch.diffs import read_patch
from sgpatch.errors import SgpatchError, bad_input
from sgpatch.manifest import SetManifest
from sgpatch.port import source as src
from sgpatch.port.carry import CarriedPatch, Labels, carry_patch
from sgpatch.port.merge import marker_lines
from sgpatch.port.workspace import PKG, STATE, Workspace, claim, digest

PORTED_LINE = "Ported to {to} by sgpatch port (from {variant}, made on {base})"


@dataclass
class Outcome:
    """What happened to one patch (one line of `done` or `needs-a-hand`)."""

    id: str
    outcome: str  # carried | fixed | upstream | n/a | skipped | conflict | waiting
    variant: str = "-"  # set-relative source variant
    release: str = "-"
    base: str = "-"
    as_is: bool = False  # every hunk kept as it was (the source file serves the release)
    kept: int = 0
    merged: int = 0
    note: str = ""
    problems: list[dict] = field(default_factory=list)

    def line(self) -> str:
        how = f"kept {self.kept}, merged {self.merged}" if self.outcome != "upstream" else "-"
        fields = (self.id, self.outcome, self.variant, self.release, self.base,
                  "as-is" if self.as_is else "changed", how, self.note or "-")  # fmt: skip
        return "\t".join(fields)

    @classmethod
    def parse(cls, line: str) -> Outcome:
        pid, outcome, variant, release, base, as_is, how, note = (line.split("\t") + [""] * 8)[:8]
        kept = merged = 0
        if how.startswith("kept "):
            k, _, m = how[5:].partition(", merged ")
            kept, merged = int(k), int(m or 0)
        return cls(pid, outcome, variant, release, base, as_is == "as-is", kept, merged,
                   "" if note == "-" else note)  # fmt: skip


@dataclass
class Context:
    """One port in progress: the set, the target, the workspace, the releases it knows."""

    manifest: SetManifest
    to: Version
    ws: Workspace
    known: list[Version]
    bases: dict[Version, src.BaseTree] = field(default_factory=dict)

    def base(self, version: Version) -> src.BaseTree:
        if version not in self.bases:
            self.bases[version] = src.BaseTree(self.manifest, version, src.pristine(version))
        return self.bases[version]


# ---------------------------------------------------------------------------------------------
# start


def start(
    manifest: SetManifest, to: Version, top: Path, *, offline: bool, without: Sequence[str] = ()
) -> Context:
    """Lay out W for `to`, record the state, settle probes and skips; nothing carried yet."""
    from sgpatch import releases

    for pid in without:
        manifest.patch(pid)  # unknown ids are bad input
    known = src.known_releases(offline)
    if offline and to not in known:
        raise bad_input(f"--offline: sglang {to} is not in the release cache; `sgpatch fetch {to}`")
    ws = claim(top)
    ctx = Context(manifest, to, ws, known)
    ws.put("set", f"{manifest.path}\n")
    ws.put("set-sha256", digest(manifest.path.read_bytes()) + "\n")
    ws.put("onto", f"{to}\n")
    ws.put("offline", "yes\n" if offline else "no\n")
    releases.copy_tree(to, ws.top)
    ws.save_tree(_tree_of(ws, to))
    done = [_settled(ctx, spec, without) for spec in manifest.patches]
    ws.put_lines("done", (o.line() for o in done if o is not None))
    ws.put_lines("todo", (s.id for s, o in zip(manifest.patches, done, strict=True) if o is None))
    ws.put_lines("needs-a-hand", [])
    return ctx


def _tree_of(ws: Workspace, to: Version) -> dict[str, str]:
    """Every file the release copy put into W, with its sha256: from the wheel's verified
    RECORD, hashing only what it does not list (what --abort removes)."""
    import base64
    import os

    from sgpatch import releases

    record = {}
    for name, h in releases.record(to).items():
        alg, _, b64 = h.partition("=")
        if alg == "sha256":
            record[name] = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).hex()
    tree = {}
    for dirpath, dirs, files in os.walk(ws.top, followlinks=False):
        if Path(dirpath) == ws.top:
            dirs[:] = [d for d in dirs if d != STATE]
        for name in files:
            rel = Path(dirpath, name).relative_to(ws.top).as_posix()
            tree[rel] = record.get(rel) or digest(Path(dirpath, name).read_bytes())
    return tree


def _settled(ctx: Context, spec, without: Sequence[str]) -> Outcome | None:
    """A patch decided before any carrying (skipped, upstream, n/a), else None (to carry)."""
    from sgpatch.probe import evaluate

    if spec.id in without:
        return Outcome(spec.id, "skipped", note="left out with --without")
    if spec.probe is not None and evaluate(spec.probe, ctx.ws.root).value:
        return Outcome(spec.id, "upstream", note=f"the probe matches on pristine sglang {ctx.to}")
    if src.source_of(spec, ctx.to, ctx.known) is None:
        return Outcome(spec.id, "n/a", note="no variant with a patch file near this release")
    return None


# ---------------------------------------------------------------------------------------------
# carrying


def run_todo(ctx: Context) -> list[Outcome]:
    """Carry every patch on the todo list that does not wait for a stopped one."""
    ws = ctx.ws
    stopped = stopped_of(ws)
    blocked = {f for o in stopped for f in ws.lines(f"files/{o.id}")}
    waiting_ids = {o.id for o in stopped}
    done = [Outcome.parse(ln) for ln in ws.lines("done")]
    todo: list[str] = []
    for pid in ws.lines("todo"):
        spec = ctx.manifest.patch(pid)
        sorc = src.source_of(spec, ctx.to, ctx.known)
        assert sorc is not None and sorc.variant.patch is not None
        patch = read_patch(sorc.variant.patch, _rel(sorc.variant.patch, ctx.manifest.base_dir))
        files = _files_of(patch)
        if blocked & set(files) or waiting_ids & set(spec.requires):
            todo.append(pid)
            waiting_ids.add(pid)
            blocked |= set(files)
            continue
        out = _carry_one(ctx, spec, sorc, patch)
        ws.put_lines(f"files/{pid}", sorted(files | {f["file"] for f in out.problems}))
        if out.outcome == "conflict":
            stopped.append(out)
            waiting_ids.add(pid)
            blocked |= set(files)
        else:
            done.append(out)
        save(ws, todo + _after(ws.lines("todo"), pid), done, stopped)
    save(ws, todo, done, stopped)
    return stopped


def _after(todo: list[str], pid: str) -> list[str]:
    return todo[todo.index(pid) + 1 :] if pid in todo else []


def stopped_of(ws: Workspace) -> list[Outcome]:
    """The stopped patches, with their problems (from `problems/<id>`)."""
    out = []
    for ln in ws.lines("needs-a-hand"):
        o = Outcome.parse(ln)
        for p in ws.lines(f"problems/{o.id}"):
            file, hunks, why = ([*p.split("\t"), "", ""])[:3]
            o.problems.append({"file": file, "why": why, "markers": [],
                               "hunks": [int(h) for h in hunks.split(",") if h]})  # fmt: skip
        out.append(o)
    return out


def save(ws: Workspace, todo, done, stopped) -> None:
    for o in stopped:
        lines = (f"{p['file']}\t{','.join(map(str, p['hunks']))}\t{p['why']}" for p in o.problems)
        ws.put_lines(f"problems/{o.id}", lines)
    ws.save_tree()
    ws.put_lines("done", (o.line() for o in done))
    ws.put_lines("needs-a-hand", (o.line() for o in stopped))
    ws.put_lines("todo", todo)
    ws.put_lines("fix", fix_list(ws, stopped))


def _files_of(patch) -> set[str]:
    from sgpatch.refresh import patch_files

    return set(patch_files(patch))


def _rel(path: Path, base: Path) -> str:
    return Path(path).relative_to(base).as_posix()


def _carry_one(ctx: Context, spec, sorc: src.Source, patch) -> Outcome:
    """Carry one patch into W: its files are written whatever happens (markers and all)."""
    ws, index = ctx.ws, ctx.manifest.patches.index(spec)
    variant = _rel(sorc.variant.patch, ctx.manifest.base_dir)
    labels = Labels(f"sglang {ctx.to}", f"sglang {sorc.base}", f"{spec.id} (made on {sorc.base})")
    base = _base_reader(ctx, sorc.base, index)
    res = carry_patch(patch, spec.id, ws.read_pkg, base, labels)
    for f in res.files:
        if f.source is not None:
            ws.write_pkg(f.source, None)
        ws.write_pkg(f.path, f.after)
    kept = sum(len(f.kept) for f in res.files)
    merged = sum(len(f.merged) for f in res.files)
    out = Outcome(spec.id, "carried", variant, str(sorc.release), str(sorc.base),
                  all(not f.merged for f in res.files) and res.ok, kept, merged)  # fmt: skip
    _keep_for_hand(ws, res)  # a carried patch may still be reopened (a lint error at the end)
    if res.ok:
        ws.put_bytes(f"patches/{spec.id}.patch", _new_patch(ctx, patch, sorc, res))
        return out
    out.outcome = "conflict"
    out.problems = problems_of(res)
    return out


def _base_reader(ctx: Context, version: Version, index: int):
    try:
        return ctx.base(version).before(index)
    except SgpatchError:
        return None  # the base release cannot be read: merges become conflicts, said so


def _new_patch(ctx: Context, patch, sorc: src.Source, res: CarriedPatch) -> bytes:
    befores = {f.path: f.before for f in res.files}
    for f in res.files:
        if f.source is not None:
            befores.setdefault(f.source, None)
    afters = {f.path: f.after for f in res.files}
    for f in res.files:
        if f.source is not None:
            afters[f.source] = None
    return render_patch(ctx, patch.header, sorc, befores, afters)


def render_patch(ctx: Context, header: str, sorc, befores: dict, afters: dict) -> bytes:
    """The new patch file: the old header + one line saying where it came from, canonical diff
    of each file from what the workspace held before the patch to what it holds after."""
    from sgpatch import refresh as rf

    diff = rf.canonical_diff(rf.FileDiff(p, befores.get(p), afters[p]) for p in sorted(afters))
    variant = _rel(sorc.variant.patch, ctx.manifest.base_dir)
    line = PORTED_LINE.format(to=ctx.to, variant=variant, base=sorc.base)
    return rf.render(rf.add_header_line(header, line), diff)


def _keep_for_hand(ws: Workspace, res: CarriedPatch) -> None:
    """What --continue needs to take a stopped patch's diff (its files before it), and the
    merge inputs to look at."""
    absent = []
    for f in res.files:
        if f.before is None:
            absent.append(f.path)
        else:
            ws.put_bytes(f"before/{res.id}/{f.path}", f.before)
        if f.base is not None:
            ws.put_bytes(f"merge/{res.id}/{f.path}.base", f.base)
        if f.theirs is not None:
            ws.put_bytes(f"merge/{res.id}/{f.path}.theirs", f.theirs)
    ws.put_lines(f"before/{res.id}.absent", absent)


def problems_of(res: CarriedPatch) -> list[dict]:
    return [
        {"file": f.path, "why": f.problem, "hunks": list(f.hunks), "markers": list(f.markers)}
        for f in res.files
        if f.problem is not None
    ]


def fix_list(ws: Workspace, stopped: list[Outcome]) -> list[str]:
    """One line per file to fix: where, which patch and hunks, why."""
    out = []
    for o in stopped:
        for p in o.problems:
            marks = p.get("markers") or marker_lines(ws.read_pkg(p["file"]))
            where = f" (markers at lines {', '.join(map(str, marks))})" if marks else ""
            hunks = ", ".join(f"#{h}" for h in p.get("hunks") or ()) or "-"
            out.append(f"{PKG}/{p['file']}{where}: {o.id} hunk(s) {hunks}: {p['why']}")
    return out


def reopen_for_lint(ws: Workspace, errors: dict[str, list[str]]) -> None:
    """Patches lint finds wrong on the release go back to needs-a-hand: their files (and files
    no patch owns) can be edited, and --continue takes their diff again and lints again."""
    done = [Outcome.parse(ln) for ln in ws.lines("done")]
    stopped = stopped_of(ws)
    for o in [o for o in done if o.id in errors]:
        files = ws.lines(f"files/{o.id}") or ["-"]
        o.outcome, o.as_is = "conflict", False
        o.problems = [{"file": files[0], "why": f"lint: {m}", "hunks": [], "markers": []}
                      for m in errors[o.id]]  # fmt: skip
        stopped.append(o)
    save(ws, ws.lines("todo"), [o for o in done if o.id not in errors], stopped)
