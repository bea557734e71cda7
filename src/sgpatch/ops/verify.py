"""Verify a patch set on real releases, end to end, the way a user's tree will see it.

Per release: a fresh copy of the pristine release (from the release cache), then the installed
`sgpatch` itself, run as a separate process exactly as a Dockerfile runs it:
  1. `apply --strict` exits 0 (the set applies with fuzz 0, no ambiguity, no conflict);
  2. every Python file it wrote compiles;
  2b. every import of SGLang it added or kept in those files resolves on the release
     (placement.pyimports: the module and the name are there; else where they are now);
  3. `apply` again is a no-op (exit 0, nothing written, the tree's bytes unchanged);
  4. `status --check` exits 0 (the set is done);
  5. `revert` exits 0 and leaves every file exactly as the wheel's RECORD says, with nothing
     added or left behind (sgpatch's own `.sgpatch/` state folder aside).
Black-box on purpose: what is checked is what users run, not an in-process shortcut.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import ExitCode
from sgpatch.pyrun import module_command
from sgpatch.state.folder import STATE_DIR

STEPS = ("apply", "compile", "imports", "reapply", "status", "revert")


@dataclass(frozen=True)
class Step:
    """One check on one release: its name, whether it passed, and why not."""

    name: str
    ok: bool
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        return {"step": self.name, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True)
class ReleaseCheck:
    """Every step run on one release (a failed step ends the release's run)."""

    release: str
    exit_code: int
    states: dict[str, str]
    written: tuple[str, ...]
    steps: tuple[Step, ...]

    def to_json(self) -> dict[str, object]:
        """The release in `verify --json` (docs/json.md)."""
        return {
            "release": self.release,
            "exit_code": self.exit_code,
            "ok": self.exit_code == 0,
            "states": self.states,
            "written": list(self.written),
            "steps": [s.to_json() for s in self.steps],
        }


class _Failed(Exception):
    def __init__(self, step: Step, code: int) -> None:
        self.step, self.code = step, code


def sgpatch_json(args: Sequence[str]) -> tuple[int, dict]:
    """Run the installed sgpatch with --json in a separate process: (exit code, its document)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SGLANG_DIR", "_SGPATCH_COMPLETE")}
    env["NO_COLOR"] = "1"
    proc = subprocess.run(
        [*module_command("sgpatch"), *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        doc = {"error": (proc.stderr.strip().splitlines() or ["no JSON document"])[-1]}
    return proc.returncode, doc


def check_release(manifest, patchsets: Sequence[Path], version: str, workdir: Path) -> ReleaseCheck:
    """The five steps on a fresh copy of `version` under `workdir` (left for the caller).
    Optional patches are chosen too (`--with`): each patch the set ships gets verified."""
    from sgpatch.releases import cache as releases

    root = releases.copy_tree(version, workdir / version, "site-packages")
    tree = ["--set", manifest.name, "--sglang-dir", str(root)]
    for p in patchsets:
        tree += ["--patchsets", str(p)]
    base = [*tree, *(a for p in manifest.patches if p.optional for a in ("--with", p.id))]
    steps: list[Step] = []
    states: dict[str, str] = {}
    written: tuple[str, ...] = ()
    code = 0
    try:
        states, written = _apply(base, steps)
        _compile(root, written, steps)
        _imports(root, version, written, steps)
        _reapply(root, base, written, steps)
        _status(base, steps)
        _revert(root, version, tree, steps)
    except _Failed as failed:
        steps.append(failed.step)
        code = failed.code
    return ReleaseCheck(version, code, states, written, tuple(steps))


def _apply(base: list[str], steps: list[Step]) -> tuple[dict[str, str], tuple[str, ...]]:
    code, doc = sgpatch_json(["apply", "--strict", *base])
    if code != 0:
        raise _Failed(Step("apply", False, _why(doc, code)), code)
    states = {p["id"]: p["state"] for p in doc.get("patches", []) if p.get("selected", True)}
    steps.append(Step("apply", True, f"{len(doc.get('written', []))} file(s) written"))
    return states, tuple(doc.get("written", []))


def _why(doc: dict, code: int) -> str:
    """The error line, or the patches that stopped the run with their notes."""
    if doc.get("error"):
        return f"exit {code}: {doc['error']}"
    bad = [
        f"{p['id']} {p['state']}" + (f" ({p['note']})" if p.get("note") else "")
        for p in doc.get("patches", [])
        if p.get("selected", True) and p["state"] not in ("applied", "upstream", "present", "n/a")
    ]
    return f"exit {code}: " + ("; ".join(bad) or "apply on this release says why")


def _compile(root: Path, written: Sequence[str], steps: list[Step]) -> None:
    """Byte-compile in memory (no __pycache__ left in the tree)."""
    errors = []
    for rel in written:
        path = root / rel
        if rel.endswith(".py") and path.is_file():
            try:
                compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as exc:
                line = getattr(exc, "lineno", None)
                errors.append(f"{rel}:{line}: {getattr(exc, 'msg', exc)}")
    if errors:
        raise _Failed(Step("compile", False, "; ".join(errors)), ExitCode.CONFLICT)
    steps.append(Step("compile", True, f"{sum(r.endswith('.py') for r in written)} file(s)"))


def _imports(root: Path, version: str, written: Sequence[str], steps: list[Step]) -> None:
    """The imports the set added or kept in the Python files it wrote, checked on the patched
    tree (the release with the set applied); each one that does not resolve is named with
    where it is now (a file that compiles and fails at import)."""
    from sgpatch.diff.unified import decode
    from sgpatch.ops.importcheck import tree_release
    from sgpatch.placement.pyimports import unresolved
    from sgpatch.releases import cache as releases

    release = tree_release(root)
    found = []
    files = [r for r in written if r.endswith(".py") and (root / r).is_file()]
    for rel in files:
        before = releases.read_member(version, rel) if releases.has_member(version, rel) else None
        after = decode((root / rel).read_bytes())
        found += unresolved(rel, after, decode(before) if before is not None else None, release)
    if found:
        detail = "; ".join(u.brief() for u in found)
        raise _Failed(Step("imports", False, detail), ExitCode.CONFLICT)
    steps.append(Step("imports", True, f"{len(files)} file(s)"))


def _reapply(root: Path, base: list[str], written: Sequence[str], steps: list[Step]) -> None:
    before = tree_hashes(root)
    code, doc = sgpatch_json(["apply", "--strict", *base])
    if code != 0:
        raise _Failed(Step("reapply", False, _why(doc, code)), max(code, ExitCode.CONFLICT))
    changed = sorted(k for k, v in tree_hashes(root).items() if before.get(k) != v)
    changed += sorted(k for k in before if not (root / k).exists())
    if doc.get("written") or changed:
        what = ", ".join(doc.get("written") or changed)
        raise _Failed(Step("reapply", False, f"not a no-op: wrote {what}"), ExitCode.CONFLICT)
    steps.append(Step("reapply", True, "no-op"))


def _status(base: list[str], steps: list[Step]) -> None:
    code, doc = sgpatch_json(["status", "--check", *base])
    if code != 0:
        raise _Failed(Step("status", False, _why(doc, code)), max(code, ExitCode.CONFLICT))
    steps.append(Step("status", True, "done"))


def _revert(root: Path, version: str, base: list[str], steps: list[Step]) -> None:
    code, doc = sgpatch_json(["revert", *base])
    if code != 0:
        raise _Failed(Step("revert", False, _why(doc, code)), max(code, ExitCode.CONFLICT))
    diffs = record_differences(root, version)
    if diffs:
        raise _Failed(Step("revert", False, "; ".join(diffs)), ExitCode.CONFLICT)
    steps.append(Step("revert", True, "exact (RECORD)"))


def tree_hashes(root: Path) -> dict[str, str]:
    """Package-relative path -> sha256 of every file, sgpatch's state folder left out."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (Path(dirpath) == root and d == STATE_DIR)]
        for f in files:
            path = Path(dirpath) / f
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def record_differences(root: Path, version: str) -> list[str]:
    """What differs between the tree and the wheel's RECORD: changed, missing, extra files."""
    from sgpatch.releases import cache as releases

    prefix = f"{releases.PACKAGE}/"
    want = {
        name[len(prefix) :]: _hex(h)
        for name, h in releases.record(version).items()
        if name.startswith(prefix)
    }
    have = tree_hashes(root)
    out = [
        f"{p} differs from RECORD"
        for p in sorted(want)
        if p in have and want[p] and have[p] != want[p]
    ]
    out += [f"{p} missing" for p in sorted(set(want) - set(have))]
    out += [f"{p} left behind" for p in sorted(set(have) - set(want))]
    return out


def _hex(record_hash: str) -> str:
    """RECORD's "sha256=<urlsafe base64>" as hexdigest (empty for a file without a hash)."""
    from sgpatch.releases.record import hex_sha256

    return hex_sha256(record_hash) or ""


def row(check: ReleaseCheck) -> tuple[str, ...]:
    """One table row: release, the patches' states counted, then ok / FAIL / - per step."""
    done = {s.name: ("ok" if s.ok else "FAIL") for s in check.steps}
    counts: dict[str, int] = {}
    for state in check.states.values():
        counts[state] = counts.get(state, 0) + 1
    states = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "-"
    return (check.release, states, *(done.get(name, "-") for name in STEPS))
