"""Edges of the command line found by exploratory testing, each on a real 0.5.9 tree: Ctrl-C,
closed or full output, maintainer-command options a CI gate relies on, recovery on a tree whose
version cannot be read, and port's direction. Run as the installed console script, as users do."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sgpatch
from sgpatch.patchset.manifest import bundled_dir
from sgpatch.releases import cache as releases
from sgpatch.releases import download

SET = "kimi-eagle3-sm120"
SGPATCH = str(Path(sys.executable).with_name("sgpatch"))
PACKAGE = Path(sgpatch.__file__).parent
ENV = {
    k: v
    for k, v in os.environ.items()
    if k not in ("FORCE_COLOR", "SGPATCH_TEST_KILL_AT", "SGPATCH_TEST_SIGNAL")
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("pristine")
    releases.copy_tree("0.5.9", top, "site-packages")
    return top


def _copy(pristine: Path, dest: Path) -> Path:
    shutil.copytree(pristine, dest, symlinks=True)
    return dest / "sglang"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SGPATCH, *args], capture_output=True, text=True, env=env or ENV)


def _line_of(frame: str) -> int:
    """The line number of a traceback frame line `  File "...", line N, in ...`."""
    return int(frame.split(", line ")[1].split(",")[0])


# the line of __main__.py that installs its start-up SIGINT handler: after it, no traceback
_FIRST_HANDLER_LINE = next(
    i
    for i, ln in enumerate((PACKAGE / "__main__.py").read_text().splitlines(), 1)
    if "_signal.signal(_signal.SIGINT, _stop_at_start_up)" in ln
)


@pytest.mark.parametrize("delay", [0.02, 0.06, 0.1, 0.13, 0.16, 0.2, 0.3])
def test_ctrl_c_is_one_line_and_leaves_the_tree_whole(pristine, tmp_path, delay):
    """Input: SIGINT to `sgpatch apply` after `delay` seconds (during the imports, the plan, the
    writes or the output). Outcome: exit 0 (it had finished), 130 with one line
    `sgpatch: interrupted; ...`, or killed by the signal while the interpreter was already
    shutting down (Python restores the default handler there); never a traceback from sgpatch
    (a SIGINT before sgpatch's first handler, set in __main__'s first lines, is Python's to
    report: a cold start, compiling the modules, made that window wide enough to hit). The package
    is either the release or fully patched; a run stopped before any write leaves at most the
    empty lock file."""
    root = _copy(pristine, tmp_path / "t")
    before = _files(root)
    proc = subprocess.Popen(
        [SGPATCH, "apply", "--set", SET, "--sglang-dir", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if "Traceback" in err:  # only start-up before sgpatch's first handler may print one:
        # the interpreter's own, the package's __init__, or __main__ before its first lines
        frames = [ln for ln in err.splitlines() if ln.strip().startswith('File "')]
        ours = [f for f in frames if str(PACKAGE) in f]
        assert err.rstrip().endswith("KeyboardInterrupt"), err
        assert all(
            "__init__.py" in f or ("__main__.py" in f and _line_of(f) < _FIRST_HANDLER_LINE)
            for f in ours
        ), err
        return
    assert proc.returncode in (0, 130, -signal.SIGINT), err
    if proc.returncode == 130:
        assert err.strip().splitlines()[-1].startswith("sgpatch: interrupted; "), err
    status = json.loads(_run("status", "--set", SET, "--sglang-dir", str(root), "--json").stdout)
    states = {p["state"] for p in status["sets"][0]["patches"] if p["selected"]}
    if states == {"pending"}:
        after = _files(root)
        # stopped while taking the lock, before any write: the empty lock file may stay (the
        # next run that locks removes it); nothing else
        assert set(after) - set(before) <= {".sgpatch/lock", ".sgpatch/lock.owner"}
        assert all(after[k] == before[k] for k in before)
        assert all(after[k] == b"" for k in set(after) - set(before))
    else:
        assert states == {"applied"}, status


@pytest.mark.parametrize("steps", ["3", "7", "7,8", "7,9,11"])
def test_ctrl_c_at_a_write_step_rolls_back_even_when_pressed_again(pristine, tmp_path, steps):
    """Input: Ctrl-C (SIGINT from the test hook) at write step 3 (the journal), 7 (a file
    replaced) or again during the rollback (7,8 / 7,9,11). Outcome: exit 130 with the one line,
    the package byte-identical to the release, no journal and no traceback."""
    root = _copy(pristine, tmp_path / "t")
    before = _files(root)
    env = {**ENV, "SGPATCH_TEST_KILL_AT": steps, "SGPATCH_TEST_SIGNAL": "INT"}
    proc = _run("apply", "--set", SET, "--sglang-dir", str(root), env=env)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("sgpatch: interrupted; "), proc.stderr
    assert "Traceback" not in proc.stderr
    assert _files(root) == before  # no journal, no lock files, nothing half-written


def test_an_ignored_ctrl_c_stays_ignored(pristine, tmp_path):
    """Input: SIGINT ignored by the parent (as for `cmd &` in a script), then sent during an
    apply. Outcome: the run ignores it, as Python programs do, and finishes (exit 0)."""
    root = _copy(pristine, tmp_path / "t")
    env = {**ENV, "SGPATCH_TEST_KILL_AT": "7", "SGPATCH_TEST_SIGNAL": "INT"}
    proc = subprocess.run(
        ["bash", "-c", f"trap '' INT; exec {SGPATCH} apply --set {SET} --sglang-dir {root}"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr


def test_output_that_cannot_be_written(pristine, tmp_path):
    """Input: `status --json` with stdout closed, with stdout on a full disk, and `status -v`
    whose stderr reader quits after one line. Outcome: closed = nothing asked for, exit 0;
    full = one line on stderr, exit 2; the quitting reader ends sgpatch by SIGPIPE, as it ends
    grep (exit 141), never a traceback or an exit 1 that reads like "pending" (0 when all the
    output fit in the pipe before the reader left)."""
    root = _copy(pristine, tmp_path / "t")
    base = f"{SGPATCH} status --sglang-dir {root}"
    closed = subprocess.run(["bash", "-c", f"{base} --json >&-"], capture_output=True, text=True)
    assert closed.returncode == 0 and closed.stderr == "", closed.stderr
    full = subprocess.run(
        ["bash", "-c", f"{base} --json >/dev/full"], capture_output=True, text=True
    )
    assert full.returncode == 2
    assert full.stderr.splitlines() == [
        "sgpatch: error: cannot write the JSON document to stdout: No space left on device "
        "(the command itself ran: status shows the tree)"
    ]
    for _ in range(3):
        piped = subprocess.run(
            ["bash", "-c", f"{base} -v 2>&1 >/dev/null | head -1 >/dev/null; "
             "echo ${PIPESTATUS[0]}"],
            capture_output=True, text=True,
        )  # fmt: skip
        # 141 if head had gone before sgpatch wrote again; 0 if it all fit in the pipe first
        assert piped.stdout.strip() in ("141", "0"), piped


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("matrix", "--releases", "garbage"), "--releases 'garbage': not a PEP 440 specifier"),
        (("lint", "--releases", "garbage"), "--releases 'garbage': not a PEP 440 specifier"),
        (("matrix", "--fail-on", "conflicts"), "--fail-on 'conflicts': expected one of conflict"),
        (("matrix", "--format", "xml"), "--format 'xml': expected one of table, markdown, json"),
        (("lint", "--format", "xml"), "--format 'xml': expected one of text, github, json"),
    ],
)
def test_a_ci_gate_with_a_typo_is_refused(args, message):
    """Input: a maintainer command with a bad --releases / --fail-on / --format. Outcome: exit 2
    and one line, instead of a traceback or a gate that never fires."""
    extra = ("--set", SET) if args[0] == "matrix" else ()
    proc = _run(*args, *extra, "--offline")
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(
        f"sgpatch: error: {message}"
    )


def test_fail_on_how_a_cell_applied():
    """Input: `matrix --fail-on offset` on 0.5.9, where the fusion gate applies with an offset.
    Outcome: exit 3; `--fail-on fuzz` there exits 0 (nothing needs fuzz)."""
    releases.wheel_path("0.5.9")  # --offline plans only what the cache holds
    base = ("matrix", "--set", SET, "--offline", "--releases", "==0.5.9", "--format", "json")
    assert _run(*base, "--fail-on", "offset").returncode == 3
    assert _run(*base, "--fail-on", "fuzz").returncode == 0


def test_format_json_errors_are_a_json_document():
    """Input: `matrix --format json` for an unknown set. Outcome: exit 2 and the error document
    on stdout, as with --json."""
    proc = _run("matrix", "--set", "nope", "--offline", "--format", "json")
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"].startswith("unknown patch set 'nope'")


def test_recover_does_not_need_a_readable_version(pristine, tmp_path):
    """Input: an apply killed mid-write, then `_version.py` made unreadable as a version.
    Outcome: `recover` rolls the run back anyway (exit 0), the package is the release again
    apart from that file, and no `.sgpatch/` is left."""
    root = _copy(pristine, tmp_path / "t")
    before = _files(root)
    killed = subprocess.run(
        [SGPATCH, "apply", "--set", SET, "--sglang-dir", str(root)],
        capture_output=True,
        text=True,
        env={**ENV, "SGPATCH_TEST_KILL_AT": "8"},
    )
    assert killed.returncode == -signal.SIGKILL
    assert (root / ".sgpatch" / "journal").exists()
    (root / "_version.py").write_text('__version__ = "banana"\n')
    proc = _run("recover", "--sglang-dir", str(root), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["interrupted"] is True and doc["target"] == {"root": str(root)}
    after = _files(root)
    assert after.pop("_version.py") == b'__version__ = "banana"\n'
    before.pop("_version.py")
    assert after == before and not (root / ".sgpatch").exists()


def test_port_offline_means_offline(tmp_path, monkeypatch, capsys):
    """Input: `port --offline --to` a release not in the cache, forward (0.5.23) and backward
    (0.5.0; port backports since it became a rebase). Outcome: exit 2 with one line each;
    the manifest is untouched and nothing is fetched."""
    sets = tmp_path / "sets"
    shutil.copytree(bundled_dir() / SET, sets / SET)
    manifest = (sets / SET / "patchset.yaml").read_bytes()
    from helpers import sgpatch

    def no_download(*args, **kwargs):
        raise AssertionError("port --offline tried to download")

    monkeypatch.setattr(download, "_pip_download", no_download)
    monkeypatch.setenv(releases.CACHE_ENV, str(tmp_path / "empty-cache"))
    for target in ("0.5.23", "0.5.0"):
        code = sgpatch("port", "--set", SET, "--patchsets", str(sets), "--to", target, "--offline")
        assert code == 2
        assert f"--offline: sglang {target} is not in the release cache" in capsys.readouterr().err
        assert (sets / SET / "patchset.yaml").read_bytes() == manifest


def test_the_shipped_range_is_shown_as_its_manifest_writes_it():
    """Input: `list --json` and `show --json` of the shipped set. Outcome: `sglang` is the text
    of the manifest's `sglang:` line (packaging alone would reorder its clauses)."""
    import re

    text = (bundled_dir() / SET / "patchset.yaml").read_text()
    written = re.search(r'^sglang: "([^"]+)"', text, re.M).group(1)
    listed = json.loads(_run("list", "--json").stdout)["sets"]
    assert [s["sglang"] for s in listed if s["name"] == SET] == [written]
    assert json.loads(_run("show", SET, "--json").stdout)["sglang"] == written
