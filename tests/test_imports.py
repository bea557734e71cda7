"""What each command imports (issue 15: start-up close to the floor of the stack).

Structural, not timed: each command runs in a fresh interpreter, as the console script runs it
(stdout and stderr are pipes, as in CI or a build log), and the modules it imported are checked
against what it must not need. A module on this list is paid for on every run of the command;
bench/speed.py shows what each one costs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import add_dist_info, make_diff, make_env

# The console script's whole run; the modules it imported go to $MODULES_OUT (written with
# what is already loaded, so the check itself adds nothing).
_RUN = """
import os, sys
sys.argv = ["sgpatch", *sys.argv[1:]]
os._exit = sys.exit  # a short command skips teardown (os._exit): end it so that this is written
try:
    from sgpatch.__main__ import main
    main()
except SystemExit:
    pass
finally:
    with open(os.environ["MODULES_OUT"], "w") as f:
        f.write("\\n".join(sorted(sys.modules)))
"""
# Never on the common commands' path: git mode, port and its kin, rich off a terminal.
NEVER = {
    "git",
    "rich",
    "sgpatch.git.mode",
    "sgpatch.port",
    "sgpatch.ops.matrix",
    "sgpatch.ops.lint",
    "sgpatch.ops.importcheck",
    "sgpatch.placement.pyimports",
    "sgpatch.ops.refresh",
    "sgpatch.releases.cache",
}
WRITER = {
    "sgpatch.state.txn",
    "sgpatch.state.lock",
    "sgpatch.state.recovery",
    "sgpatch.state.put",
    "sgpatch.state.store",
    "sgpatch.fs.atomic",
    "sgpatch.fs.lock",
    "filelock",
    "tempfile",
    "socket",
}


def imported(tmp_path: Path, *argv: str) -> set[str]:
    """Modules (top-level package and full names) a run of `sgpatch argv` imported."""
    out = tmp_path / "modules.txt"
    env = {**os.environ, "MODULES_OUT": str(out)}
    env.pop("SGPATCH_PATH", None)
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, *argv], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert out.exists(), proc.stderr
    names = set(out.read_text().split())
    return names | {n.split(".")[0] for n in names}


def test_help_imports_no_library_beyond_typer(tmp_path):
    """Input: `sgpatch --help`. Outcome: none of yaml, unidiff, packaging, rich, GitPython, and
    no sgpatch module beyond the CLI itself (help is typer's alone)."""
    mods = imported(tmp_path, "--help")
    assert "typer" in mods
    unwanted = {
        "yaml",
        "unidiff",
        "packaging",
        "sgpatch.patchset.manifest",
        "sgpatch.placement.engine",
    }
    bad = mods & (NEVER | WRITER | unwanted)
    assert not bad, sorted(bad)


def test_status_imports_no_writer(tmp_path):
    """Input: `status --set` on a pending site-packages tree with a RECORD (drift is checked).
    Outcome: it ran (its table was printed) without importing the writer (txn, its lock and
    temp files), json (no --json, no ledger), git mode, port, or rich off a terminal, nor
    the engine's scope and conflict-explanation code (every hunk has one place), nor hashlib
    (OpenSSL: a few files are hashed with the interpreter's own SHA-256, ledger.sha256), nor
    csv (RECORD rows without quotes are split on commas)."""
    pkg, _sets, args = make_env(tmp_path)
    add_dist_info(pkg)
    mods = imported(tmp_path, "status", *args)
    assert {"sgpatch.cli.status", "sgpatch.ops.plan", "sgpatch.state.drift"} <= mods
    bad = mods & (
        NEVER
        | WRITER
        | {"json", "sgpatch.placement.scope", "sgpatch.placement.explain", "hashlib", "csv"}
    )
    assert not bad, sorted(bad)


def test_apply_imports_the_writer_but_not_git_port_or_rich(tmp_path):
    """Input: `apply --set` on a pending tree (it writes, journal and lock). Outcome: the
    writer is imported; git mode, port, rich, filelock and socket (the lock is fcntl's) are not,
    nor tempfile and random (temp files are named from os.urandom, statefs.new_temp)."""
    pkg, _sets, args = make_env(tmp_path)
    mods = imported(tmp_path, "apply", *args)
    assert (pkg / ".sgpatch").is_dir()  # it applied
    assert "sgpatch.state.txn" in mods
    bad = mods & (NEVER | {"filelock", "socket", "tempfile", "random"})  # flock, uname
    assert not bad, sorted(bad)


def test_patch_imports_no_manifest_or_yaml(tmp_path):
    """Input: `sgpatch patch -p1` of one file. Outcome: it applied with the file planner alone:
    no patch-set code (the set planner ops.plan, manifest, yaml, probe, ledger), no filelock,
    and nothing from NEVER was imported."""
    (tmp_path / "f.py").write_text("a = 1\nb = 2\n")
    (tmp_path / "x.patch").write_text(make_diff("a = 1\nb = 2\n", "a = 1\nb = 3\n"))
    mods = imported(tmp_path, "patch", "-p1", "x.patch")
    assert (tmp_path / "f.py").read_text() == "a = 1\nb = 3\n"
    assert "sgpatch.ops.fileplan" in mods
    bad = mods & (
        NEVER
        | {"filelock", "tempfile", "random", "sgpatch.ops.plan"}
        | {"yaml", "sgpatch.patchset.manifest", "sgpatch.patchset.probe", "sgpatch.state.ledger"}
    )
    assert not bad, sorted(bad)
