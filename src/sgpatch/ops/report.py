"""Human and JSON renderings of plans and patch sets: tables, verdict lines, hunk lines.

What goes on which stream, and how a table looks on a terminal or in a log, is
`sgpatch.console`'s; this module says what the lines are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sgpatch import shown
from sgpatch.console import err, stream, table

if TYPE_CHECKING:  # type hints only: rendering a plan needs neither module loaded
    from sgpatch.ops.fileplan import FilePlan
    from sgpatch.placement.engine import HunkResult


def hunk_line(h: HunkResult, reverse: bool = False, dry_run: bool = False) -> str:
    """One GNU-patch-like line per hunk, e.g. 'Hunk #2 applied at 120 (offset 12, fuzz 1).'
    A dry run says what would happen: 'Hunk #2 would apply at 120.'"""
    if h.warning is not None:
        plain = h._replace(warning=None)
        return f"{hunk_line(plain, reverse, dry_run)[:-1]}; warning: {h.warning}"
    if h.status == "applied" and not (h.offset or h.fuzz or h.whitespace or reverse or dry_run):
        return f"Hunk #{h.index} applied at {h.line}."  # the usual line, once per hunk
    extras = []
    if h.offset:
        extras.append(f"offset {h.offset}")
    if h.fuzz:
        extras.append(f"fuzz {h.fuzz}")
    if h.whitespace:
        extras.append("whitespace ignored")
    tail = f" ({', '.join(extras)})" if extras else ""
    if h.status == "applied":
        verb = "reversed" if reverse else "applied"
        if dry_run:
            verb = "would reverse" if reverse else "would apply"
        return f"Hunk #{h.index} {verb} at {h.line}{tail}."
    if h.status == "already-applied":
        what = "not applied (nothing to reverse)" if reverse else "already applied"
        why = f": {h.reason}" if h.reason else "."  # already applied elsewhere in its scope
        return f"Hunk #{h.index} {what} at {h.line}{tail}{why}"
    if h.status == "ambiguous":
        return f"Hunk #{h.index} REFUSED (ambiguous): {h.reason}"
    return f"Hunk #{h.index} FAILED: {h.reason}"


def file_lines(f: FilePlan, dry_run: bool, reverse: bool = False) -> Iterable[str]:
    if f.link or f.was_link:
        yield _link_line(f, dry_run)
    elif dry_run:
        how = {
            "create": " (new)",
            "delete": " (deleted)",
            "rename": f" (renamed from {shown.name(f.source)})",
            "copy": f" (copied from {shown.name(f.source)})",
        }
        yield f"checking file {shown.name(f.path)}{how.get(f.action, '')}"
    else:
        verb = {"create": "creating", "delete": "deleting", "rename": "renaming", "copy": "copying"}
        src = f" (from {shown.name(f.source)})" if f.action in ("rename", "copy") else ""
        yield f"{verb.get(f.action, 'patching')} file {shown.name(f.path)}{src}{_mode_tail(f)}"
    if f.note:
        yield f"  {f.note}"
    elif f.status == "already-applied" and not f.hunks:
        yield "  already done"
    for h in f.hunks:
        yield "  " + hunk_line(h, reverse, dry_run)


def _link_line(f: FilePlan, dry_run: bool) -> str:
    """What a symlink block does, said of a symlink (as GNU patch says `creating symbolic
    link`): made, retargeted or removed, with the target it points at after."""
    from sgpatch.diff.unified import decode

    to = f" -> {shown.name(decode(f.after))}" if f.after is not None else ""
    if dry_run:
        how = {"create": " (new)", "delete": " (removed)"}.get(f.action, " (retargeted)")
        return f"checking symlink {shown.name(f.path)}{to}{how}"
    verb = {"create": "creating", "delete": "removing"}.get(f.action, "retargeting")
    return f"{verb} symlink {shown.name(f.path)}{to}"


def _mode_tail(f: FilePlan) -> str:
    """The git mode a file is given, when the patch sets one (a new file only when it is
    executable: 100644 is what a new file is anyway)."""
    if f.mode is None or f.status != "ok" or (f.action == "create" and not f.mode & 0o111):
        return ""
    return f" (mode {0o100000 | f.mode:o})"


# ---------------------------------------------------------------------------- patch sets

STATE_STYLE = {
    "applied": "green",
    "present": "green",
    "upstream": "cyan",
    "n/a": "dim",
    "pending": "yellow",
    "modified": "red",
    "conflict": "bold red",
}


def set_json(command, target, plan, pre, code, *, dry_run=False, written=(), before=None):
    """apply's and status's document for one set (docs/json.md), made of its records' own
    `to_json`; console.emit_json adds the schema."""
    doc: dict[str, Any] = {
        "command": command,
        "exit_code": int(code),
        "target": target.to_json(),
        "set": plan.name,
        "done": plan.done,
        "untested": plan.untested_json(),
        "patches": [p.to_json() for p in plan.patches],
        "preconditions": [x.to_json() for x in pre],
    }
    if command == "apply":
        doc["dry_run"] = dry_run
        doc["written"] = list(written)
        if before is not None:
            doc["planned"] = [p.to_json() for p in before.patches]
    return doc


def untested_tail(plan) -> str:
    """What a verdict line adds for an untested version ('' for a checked one)."""
    if plan.variants_of is None:
        return ""
    return f"; untested: sglang {plan.version}, planned with the {plan.variants_of} variants"


def _short(text: str, width: int = 200) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def show_set(target, plan, pre, verbose: bool, *, to_stdout: bool = False) -> None:
    """A table per set: patch, state, how it applied, note. Readable without colour. `status`
    prints it on stdout (its product); `apply` on stderr (a report of what it did)."""
    say = stream(to_stdout)
    say(
        f"sglang {target.version} ({target.layout}, version from {target.version_source}) "
        f"at {target.root}"
    )
    detected = target.detected_version
    if detected is not None and detected != target.version:
        err(
            f"warning: the tree says sglang {detected} ({target.detected_source}); using "
            f"{target.version} as given"
        )
    say(f"patch set {plan.name}")
    rows = [
        (p.id + (" (optional)" if p.optional else ""), p.state, p.how, _short(p.note))
        for p in plan.patches
    ]
    table(("patch", "state", "how", "note"), rows, _state_style, to_stdout=to_stdout)
    for x in pre:
        mark = {"ok": "ok", "unmet": "UNMET", "unknown": "unknown"}[x.verdict]
        found = x.found or "not found"
        # one line each, so a build log can be grepped for "precondition .*: UNMET"
        say(f"precondition {x.package}{x.specifier}: {mark} ({found} in {x.where}); {x.why}")
    if verbose:
        for p in plan.patches:
            show_patch_detail(p, say)


def _state_style(column: str, text: str) -> str:
    return STATE_STYLE.get(text, "") if column == "state" else ""


def show_patch_detail(p, say: Callable[[str], None] = err) -> None:
    say(f"{p.id}: {p.state} ({p.how})" + (f" — variant {p.variant}" if p.variant else ""))
    for f in p.files:
        for line in file_lines(f, dry_run=True):
            say("  " + line)
    if p.probe is not None:
        say(f"  probe: {'true' if p.probe.value else 'false'}")
        for line in evidence_lines(p.probe.evidence):
            say(line)


def evidence_lines(evidence: Iterable) -> list[str]:
    """A probe's evidence, a line each, each line once: the clauses of an `all` that name
    methods of one class each find that class (the same line three times for three methods);
    --json keeps every entry."""
    out: dict[str, None] = {}
    for e in evidence:
        where = f"{e.file}:{e.line}" if e.line else e.file
        text = f" {e.text!r}" if e.text else ""
        out.setdefault(f"    {e.kind} {where}{text} {e.note}".rstrip())
    return list(out)


RECORDED = ("applied", "modified")  # in the tree whatever this run selects


def state_counts(plan) -> str:
    """'5 pending, 1 upstream; 1 optional not chosen': the chosen patches counted by state, as
    the table shows them. A patch already applied counts as applied even when this run leaves
    it out (--without, an optional one not chosen again): leaving out does not revert it."""
    counts: dict[str, int] = {}
    counted = [p for p in plan.patches if p.selected or p.state in RECORDED]
    for p in counted:
        counts[p.state] = counts.get(p.state, 0) + 1
    rest = [p for p in plan.patches if p not in counted]
    optional = sum(1 for p in rest if p.optional)
    left_out = sum(1 for p in rest if not p.optional)
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no patches"
    if optional:
        parts += f"; {optional} optional not chosen"
    if left_out:
        parts += f"; {left_out} left out (--without)"
    return parts


def _next(plan, where: Sequence[str] = ()) -> str:
    """What to do when apply stopped on a patch edited since sgpatch applied it (`where`: the
    options naming the tree and the sets, so the command works as typed)."""
    edited = [p.id for p in plan.patches if p.selected and p.state == "modified"]
    if not edited:
        return ""
    force = shown.command("revert", "--set", plan.name, *where, "--force")
    return (
        f": {', '.join(edited)} was edited since sgpatch applied it; {force} takes the set out "
        "and keeps the edit, then apply again"
    )


def status_verdict(plan, code) -> None:
    """The last line of `status` for a set, on stderr: counts and done / not done / conflict."""
    if any(p.selected and p.state == "conflict" for p in plan.patches):
        word = "conflict"
    else:
        word = "done" if code == 0 else "not done"
    err(f"sgpatch: {plan.name}: {state_counts(plan)}; {word}{untested_tail(plan)}")


def apply_summary(
    plan, code, written, dry_run: bool, unmet: Sequence = (), where: Sequence[str] = ()
) -> None:
    """One line a build log can grep: what happened to the set, counted by final state, and
    why it was not applied when --strict refused `unmet` preconditions."""
    parts, tail = state_counts(plan), untested_tail(plan)
    if code != 0:
        why = (
            ": --strict and unmet precondition(s) "
            + ", ".join(f"{x.package}{x.specifier} (found {x.found})" for x in unmet)
            if unmet
            else ""
        )
        err(
            f"sgpatch: {plan.name}: not applied{why} ({parts}); nothing was written"
            f"{_next(plan, where)}{tail}"
        )
    elif dry_run:
        err(f"sgpatch: {plan.name}: dry run ({parts}); nothing was written{tail}")
    elif written:
        err(f"sgpatch: {plan.name}: applied; {len(written)} file(s) written ({parts}){tail}")
    else:
        err(f"sgpatch: {plan.name}: nothing to do ({parts}){tail}")


def notes(reconciled, dropped: bool = False) -> None:  # reconciled: state.upgrade.Reconciled
    """One line per stale set: what to run (a run that only reads), or, from the run that
    wrote the ledger without them (`dropped`), that their records are gone: said once."""
    for note in reconciled.dropped if dropped else reconciled.notes:
        err(f"sgpatch: {note}")


def applied_untested(record) -> None:  # record: state.ledger.SetRecord | None
    """One stderr line when the ledger says the set was applied to an untested version."""
    if record is not None and record.variants_of:
        err(
            f"sgpatch: {record.name} was applied to untested sglang {record.sglang_version} "
            f"with the {record.variants_of} variants (apply --untested)"
        )
