"""Fault injection on a real release: SIGKILL `apply` and `revert` of kimi-eagle3-sm120 on a 0.5.9
site-packages tree at every write step, during recovery, and at random times; then check that the
next sgpatch invocation rolls back (exit 4), that the tree is byte-identical to pristine or to fully
patched (modes included, no temp files left), that `status --json` agrees with the bytes, and that
the command after that works.

The runs are forked children of the test process (modules already imported, so a run costs a few
ms instead of the ~0.4 s interpreter start-up); a SIGKILL of a forked child is a real crash: no
`finally`, no atexit, no flush. A few runs go through a genuine `python -m sgpatch` subprocess to
prove the test-only hook (`SGPATCH_TEST_KILL_AT`, see sgpatch.state.txn) works from the real CLI.
The tree holds only the files the set touches or probes, plus the version and dist-info, so a
fresh copy is a few ms.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import run_cli
from sgpatch.fs import atomic, steps
from sgpatch.patchset.manifest import find_sets
from sgpatch.releases import cache as releases
from sgpatch.state import folder as state_folder
from sgpatch.state import txn

VERSION = "0.5.9"
SET = "kimi-eagle3-sm120"
WITH = ("--with", "sm120-symm-mem-two-shot-no-multicast")  # every patch: 5 files
SEED = int(os.environ.get("SGPATCH_FAULT_SEED", "20260505"))
RANDOM_RUNS = 50


# ------------------------------------------------------------------------------------ helpers


def fork_run(argv: list[str], kill_at: int | None = None, kill_after: float | None = None):
    """Run sgpatch in a forked child; SIGKILL it at write step `kill_at` (the txn hook) or after
    `kill_after` seconds. Returns ("killed", signal) or ("exit", code)."""
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 99
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            if kill_at is not None:
                os.environ[steps.KILL_ENV] = str(kill_at)
            steps.reset()
            code, _, _ = run_cli(*argv)
        finally:
            os._exit(code)
    if kill_after is not None:
        time.sleep(kill_after)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "killed", os.WTERMSIG(status)
    return "exit", os.WEXITSTATUS(status)


def snapshot(root: Path) -> dict[str, tuple[bytes, int] | str]:
    """Every file (bytes + mode) and folder under the package root except sgpatch's state."""
    out: dict[str, tuple[bytes, int] | str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] == ".sgpatch":
            continue
        out[rel.as_posix()] = "dir" if p.is_dir() else (p.read_bytes(), p.stat().st_mode & 0o7777)
    return out


def states(pkg: Path) -> dict[str, str]:
    code, out, err = run_cli("status", "--sglang-dir", str(pkg), "--set", SET, "--json", *WITH)
    assert code == 0, err
    return {p["id"]: p["state"] for p in json.loads(out)["sets"][0]["patches"]}


def fresh(template: Path, dest: Path) -> Path:
    """A copy of a template site-packages folder; returns its package root."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(template, dest, symlinks=True)
    return dest / "sglang"


# ------------------------------------------------------------------------------------ fixtures


def _probe_and_patch_files() -> set[str]:
    """Package-relative files kimi-eagle3-sm120 reads at 0.5.9: its probes and patch targets."""
    set_dir = find_sets(())[SET]
    text = (set_dir / "patchset.yaml").read_text()
    files = set(re.findall(r"file:\s*([\w./-]+)", text))
    for patch in (set_dir / "patches" / VERSION).glob("*.patch"):
        files |= set(re.findall(r"^\+\+\+ b/python/sglang/(\S+)", patch.read_text(), re.M))
    for patch in (set_dir / "patches").rglob("*.patch"):
        files |= set(re.findall(r"^\+\+\+ b/python/sglang/(\S+)", patch.read_text(), re.M))
    return files


@pytest.fixture(scope="module", autouse=True)
def _no_disk_flush():
    """fsync only matters for power loss, which no test here simulates; a SIGKILLed process
    loses nothing the kernel already has. Skipping the flush in-process keeps 100+ runs within
    the CI budget; the real-CLI runs below keep it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(atomic, "fsync", lambda fd: None)
        yield


@pytest.fixture(scope="module")
def world(tmp_path_factory, _no_disk_flush):
    """Templates: pristine and fully patched subset trees, their snapshots and status states."""
    wanted = {f"sglang/{f}" for f in _probe_and_patch_files()}

    def members(name: str) -> bool:
        return name in wanted or ".dist-info/" in name or name.endswith("version.py")

    base = tmp_path_factory.mktemp("crash")
    pristine = base / "pristine"
    pkg = releases.copy_tree(VERSION, pristine, "site-packages", members)
    # the subset must behave like the full release: same states on a full pristine tree
    full = releases.copy_tree(VERSION, base / "full", "site-packages")
    assert states(pkg) == states(full)
    patched = base / "patched"
    ppkg = fresh(pristine, patched)
    code, _, err = run_cli(*apply_argv(ppkg))
    assert code == 0, err
    world = {
        "base": base,
        "pristine": pristine,
        "patched": patched,
        "snap_pristine": snapshot(pkg),
        "snap_patched": snapshot(ppkg),
        "states_pristine": states(pkg),
        "states_patched": states(ppkg),
        "stats": {"runs": 0, "killed": 0, "rolled_back": 0},
    }
    assert world["snap_pristine"] != world["snap_patched"]
    assert set(world["states_patched"].values()) == {"applied"}
    assert "applied" not in world["states_pristine"].values()
    yield world
    s = world["stats"]
    sys.stderr.write(
        f"\nfault injection: {s['runs']} runs, {s['killed']} killed, "
        f"{s['rolled_back']} rolled back\n"
    )


def _everything(pkg: Path) -> dict[str, bytes | str]:
    """Every entry under the package root, sgpatch's state included (a reader changes none)."""
    return {
        p.relative_to(pkg).as_posix(): p.read_bytes() if p.is_file() else "other"
        for p in sorted(pkg.rglob("*"))
    }


def check_after_crash(world, pkg: Path, outcome) -> str:
    """Iff a journal was left: `status` (a reader) exits 4 in one line naming `recover` and
    changes nothing, state included; `recover` rolls back (exit 0). Then the bytes are
    pristine or fully patched, and status --json agrees. Returns 'pristine' or 'patched'."""
    world["stats"]["runs"] += 1
    journal = pkg / ".sgpatch" / state_folder.JOURNAL
    if outcome[0] == "killed":
        assert outcome[1] == signal.SIGKILL
        world["stats"]["killed"] += 1
    else:
        assert not journal.exists()
    if journal.exists():
        before = _everything(pkg)
        code, out, err = run_cli("status", "--sglang-dir", str(pkg), "--set", SET, "--json")
        assert code == 4, err
        said = json.loads(out)["error"] if out else err  # --json: the error document
        assert f"sgpatch recover --sglang-dir {pkg}" in said and "Traceback" not in err
        assert _everything(pkg) == before
        code, _out, err = run_cli("recover", "--sglang-dir", str(pkg))
        assert code == 0 and "rolled back" in err, err
        world["stats"]["rolled_back"] += 1
    assert not journal.exists()
    snap = snapshot(pkg)
    leftovers = [k for k in snap if k.endswith(atomic.TMP_SUFFIX)]
    assert not leftovers
    if snap == world["snap_pristine"]:
        assert states(pkg) == world["states_pristine"]
        return "pristine"
    assert snap == world["snap_patched"], sorted(
        k for k in snap if snap[k] != world["snap_patched"].get(k)
    )
    assert states(pkg) == world["states_patched"]
    return "patched"


def apply_argv(pkg: Path) -> list[str]:
    return ["apply", "--sglang-dir", str(pkg), "--set", SET, *WITH]


def revert_argv(pkg: Path) -> list[str]:
    return ["revert", "--sglang-dir", str(pkg), "--set", SET]


# ------------------------------------------------------------------------------------ tests


def test_kill_apply_at_every_write_step(world):
    """Input: apply SIGKILLed right before write step 1, 2, ... until a run completes.
    Outcome: after each, one rolled-back invocation, then pristine bytes (or patched once the
    journal is gone), status agrees, `sgpatch recover` on a pristine tree leaves no .sgpatch/
    (no lock, lock.owner or temp file), and a second apply completes the set byte-exactly."""
    work = world["base"] / "work-apply"
    seen = []
    for step in range(1, 200):
        pkg = fresh(world["pristine"], work)
        outcome = fork_run(apply_argv(pkg), kill_at=step)
        seen.append(check_after_crash(world, pkg, outcome))
        if seen[-1] == "pristine":  # crash residue (lock, stale lock.owner, temps): recover
            assert run_cli("recover", "--sglang-dir", str(pkg))[0] == 0
            assert not (pkg / ".sgpatch").exists()
        code, _, err = run_cli(*apply_argv(pkg))
        assert code == 0, err
        assert snapshot(pkg) == world["snap_patched"]
        if outcome[0] == "exit":
            assert outcome[1] == 0
            break
    else:
        pytest.fail("apply never completed")
    assert step > 10  # journal + 5 files + ledger + originals: many steps
    # killed after the journal is removed (last step) -> patched; before -> pristine
    assert seen[-1] == "patched" and seen[0] == "pristine"
    assert seen.count("patched") <= 2


def test_kill_revert_at_every_write_step(world):
    work = world["base"] / "work-revert"
    for step in range(1, 200):
        pkg = fresh(world["patched"], work)
        outcome = fork_run(revert_argv(pkg), kill_at=step)
        where = check_after_crash(world, pkg, outcome)
        if outcome[0] == "killed" and step == 1:
            assert where == "patched"
        code, _, err = run_cli(*revert_argv(pkg))
        assert code == 0, err
        assert snapshot(pkg) == world["snap_pristine"]
        assert not (pkg / ".sgpatch").exists()  # the last set reverted: no state, no residue
        assert states(pkg) == world["states_pristine"]
        if outcome[0] == "exit":
            assert outcome[1] == 0 and where == "pristine"
            break
    else:
        pytest.fail("revert never completed")
    assert step > 5


def test_kill_during_recovery_is_finished_by_the_next_run(world):
    """Input: an apply killed half-way, then the recovering command itself killed at each of its
    write steps. Outcome: the run after that still rolls back to pristine."""
    work = world["base"] / "work-recover"
    half = 12
    for step in range(1, 100):
        pkg = fresh(world["pristine"], work)
        assert fork_run(apply_argv(pkg), kill_at=half)[0] == "killed"
        assert (pkg / ".sgpatch" / state_folder.JOURNAL).exists()
        outcome = fork_run(["recover", "--sglang-dir", str(pkg)], kill_at=step)
        if outcome[0] == "exit":
            assert outcome[1] == 0  # it recovered and said so
            assert check_after_crash(world, pkg, outcome) == "pristine"
            break
        assert check_after_crash(world, pkg, outcome) == "pristine"
    else:
        pytest.fail("recovery never completed")
    assert step > 2


def test_kill_apply_and_revert_at_random_times(world):
    """Input: apply or revert SIGKILLed after a random delay within its run time (seeded;
    SGPATCH_FAULT_SEED to vary). Outcome: pristine or patched, never anything else."""
    rng = random.Random(SEED)
    work = world["base"] / "work-random"
    durations = {}
    for kind, template in (("apply", "pristine"), ("revert", "patched")):
        pkg = fresh(world[template], work)
        t0 = time.perf_counter()
        argv = apply_argv(pkg) if kind == "apply" else revert_argv(pkg)
        assert fork_run(argv) == ("exit", 0)
        durations[kind] = time.perf_counter() - t0
    outcomes = {"pristine": 0, "patched": 0}
    for i in range(RANDOM_RUNS):
        kind = "apply" if i % 2 == 0 else "revert"
        pkg = fresh(world["pristine" if kind == "apply" else "patched"], work)
        argv = apply_argv(pkg) if kind == "apply" else revert_argv(pkg)
        outcome = fork_run(argv, kill_after=rng.uniform(0, durations[kind] * 1.1))
        outcomes[check_after_crash(world, pkg, outcome)] += 1
    assert sum(outcomes.values()) == RANDOM_RUNS


@pytest.mark.parametrize("step", [1, 8, 22])
def test_kill_hook_through_the_real_cli(world, step):
    """The same hook through a real `python -m sgpatch apply` process."""
    pkg = fresh(world["pristine"], world["base"] / f"work-cli-{step}")
    env = {**os.environ, steps.KILL_ENV: str(step)}
    src = str(Path(txn.__file__).parent.parent)
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "sgpatch", *apply_argv(pkg)], env=env, capture_output=True
    )
    assert proc.returncode == -signal.SIGKILL
    assert check_after_crash(world, pkg, ("killed", signal.SIGKILL)) == "pristine"


def test_drift_on_the_real_release(world):
    """The 0.5.9 wheel's own RECORD: no drift pristine or patched; a file edited before apply is
    named (and stays named after apply, from the ledger's pre-sgpatch hash)."""
    pkg = fresh(world["pristine"], world["base"] / "work-drift")
    code, out, _ = run_cli("status", "--sglang-dir", str(pkg), "--set", SET, "--json", *WITH)
    assert code == 0 and json.loads(out)["drift"] == []
    target = pkg / "srt/layers/communicator.py"
    target.write_bytes(target.read_bytes() + b"\n# vendor hotfix\n")
    assert run_cli(*apply_argv(pkg))[0] == 0
    code, out, _ = run_cli("status", "--sglang-dir", str(pkg), "--set", SET, "--json", *WITH)
    assert [(d["path"], d["seen_in"]) for d in json.loads(out)["drift"]] == [
        ("srt/layers/communicator.py", "ledger")
    ]
    code, _, err = run_cli("status", "--sglang-dir", str(pkg), "--set", SET, *WITH)
    assert "drift: 1 file(s) differ from the wheel's RECORD: srt/layers/communicator.py" in err
