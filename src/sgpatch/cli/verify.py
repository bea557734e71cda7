"""`sgpatch verify`: a set's per-release check (apply, compile, reapply no-op, exact revert)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sgpatch import console
from sgpatch.errors import SgpatchError
from sgpatch.ops import verify as vf


@dataclass(frozen=True)
class VerifyOptions:
    """`sgpatch verify`'s options, as parsed."""

    set_name: str
    patchsets: tuple[Path, ...]
    releases_spec: str | None
    offline: bool
    keep: bool
    as_json: bool


def run(opts: VerifyOptions) -> int:
    from sgpatch.ops import matrix as mx
    from sgpatch.patchset.manifest import load_set

    manifest = load_set(opts.set_name, tuple(opts.patchsets))
    versions = mx.select_versions(manifest, opts.releases_spec, opts.offline)
    if not versions:
        raise SgpatchError(f"no release matches {opts.releases_spec or manifest.sglang}")
    work = Path(tempfile.mkdtemp(prefix="sgpatch-verify-"))
    checks = []
    try:
        for v in versions:
            check = vf.check_release(manifest, opts.patchsets, str(v), work)
            checks.append(check)
            if not opts.keep:
                shutil.rmtree(work / str(v), ignore_errors=True)
            if not opts.as_json:
                _progress(check)
    finally:
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
    code = max(c.exit_code for c in checks)
    if opts.as_json:
        console.emit_json(
            {
                "command": "verify",
                "exit_code": code,
                "set": manifest.name,
                "releases": [c.to_json() for c in checks],
                "kept": str(work) if opts.keep else None,
            }
        )
        return code
    console.table(("release", "patches", *vf.STEPS), [vf.row(c) for c in checks])
    for c in checks:
        for s in c.steps:
            if not s.ok:
                console.out(f"{c.release} {s.name}: {s.detail}")
    if opts.keep:
        console.err(f"trees kept in {work}")
    bad = sum(1 for c in checks if c.exit_code)
    verdict = f"{bad} of {len(checks)} release(s) failed" if bad else "verified"
    console.err(f"sgpatch: {manifest.name}: {len(checks)} release(s); {verdict}")
    return code


def _progress(check) -> None:
    """A line per release as it finishes: a long run shows it is moving, in a log too."""
    failed = next((s for s in check.steps if not s.ok), None)
    how = f"{failed.name} failed" if failed else "ok"
    console.err(f"verify {check.release}: {how}")
