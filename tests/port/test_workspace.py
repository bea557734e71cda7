"""The port workspace survives people and accidents (sgpatch.port.workspace, journal, stopped):
a kill or Ctrl-C at fixed points of `port` and `--continue` leaves W resumable, --abort keeps
hand edits, W is made only after the release is checked, one writer at a time, and
--continue writes only to the set the port began on. Synthetic releases, --offline."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import (
    V12,
    fork_cli,
    make_set,
    modes_set,
    no_hang,
    run_cli,
    sgport,
    snapshot,
    start_conflict,
)
from sgpatch.fs import steps
from sgpatch.port.workspace import locked

FIXED = V12.replace("        return 1\n", "        return 100\n").replace(
    "    y = 3\n", "    y = 30\n"
)


def tree_of(w: Path) -> dict[str, bytes]:
    """W's release tree (not the state): what a person sees and edits."""
    return snapshot(w / "sglang")


def port_args(d: Path, w: Path | None, to: str = "1.2") -> list[str]:
    """`port` of the demo set (into `w`; None: a new temporary folder)."""
    args = ["port", "--offline", "--set", "demo", "--patchsets", str(d.parent), "--to", to]
    return args if w is None else [*args, "--workspace", str(w)]


def cont(w: Path) -> list[str]:
    return ["port", "--continue", "--workspace", str(w)]


def steps_of(argv: list[str]) -> tuple[int, list[tuple[int, str]]]:
    """Run in-process and count its write steps: (exit code, [(step, what it wrote)]), read
    off the test hook itself (sgpatch.fs.steps counts every workspace write). The same run
    always takes the same steps, so a step number is a fixed point."""
    import sys

    log: list[tuple[int, str]] = []
    real = steps.step

    def step() -> None:
        real()
        caller = sys._getframe(2)  # write/append -> wsfiles.kill_point -> steps.step
        where = caller.f_locals.get("rel") or caller.f_code.co_name
        log.append((steps.taken, f"{Path(caller.f_locals.get('top', '?')).name}/{where}"))

    steps.reset()
    steps.step = step
    try:
        code = run_cli(*argv)[0]
    finally:
        steps.step = real
    return code, log


@dataclass(frozen=True)
class Reference:
    """The uninterrupted run: the set's files and W's tree at the end, and the write steps
    `port` and `--continue` took (step number, what it wrote)."""

    set_files: dict[str, bytes]
    tree: dict[str, bytes]
    port_log: list[tuple[int, str]]
    cont_log: list[tuple[int, str]]


def reference(tmp: Path) -> Reference:
    """port (exit 3), the fix, --continue (exit 0), nobody interrupting."""
    d = make_set(tmp)
    w = tmp / "w"
    code, port_log = steps_of(port_args(d, w))
    assert code == 3
    (w / "sglang/srt/mod.py").write_text(FIXED)
    code, cont_log = steps_of(cont(w))
    assert code == 0
    return Reference(snapshot(d), tree_of(w), port_log, cont_log)


def points(log: list[tuple[int, str]], few: bool = False) -> list[int]:
    """Fixed points of a run's writes: the first; the state folder made whole; the tree
    list; a carry; the lists; staging the set, writing its patch file and its manifest,
    marking W finished; the middle one; the last. `few`: only those named by a file."""
    picks = set() if few else {1, len(log), len(log) // 2}
    wants = ("/marker", "/tree", "before/", "/todo", "/finishing/", "demo/patches/1.2/",
             "demo/patchset.yaml", "/finished")  # fmt: skip
    for want in wants:
        hit = next((n for n, what in log if want in what), None)
        if hit is not None:
            picks.add(hit)
    return sorted(p for p in picks if 1 <= p <= len(log))


def finish_after(d: Path, w: Path, fixed: bool) -> None:
    """What a person does after an interruption: --continue (or, when the port had not made
    W a workspace yet, the same port again), fix, --continue; never --abort."""
    code, _out, err = run_cli(*cont(w))
    if code == 2:  # killed before W was a workspace: nothing of a port is there to go on with
        assert "a port was interrupted before it began there; run it again" in err, err
        code, _out, err = run_cli(*port_args(d, w))
    if not fixed:
        assert code == 3, err
        (w / "sglang/srt/mod.py").write_text(FIXED)
        code, _out, err = run_cli(*cont(w))
    assert code == 0, err


@pytest.mark.parametrize("sig", ["KILL", "INT", "TERM"])
def test_a_port_interrupted_at_any_point_is_continued(cache, tmp_path, sig):
    """Input: `port --to 1.2` (where `first` stops) killed (SIGKILL), Ctrl-C'd (SIGINT) or
    terminated (SIGTERM) at fixed points of its writes: the first write, the state folder,
    the tree list, a carry, the lists, the last step. Outcome: each time the next --continue
    picks it up from W (or, killed before W was a workspace, the same port again does), the
    fix and --continue finish it, and the set and W end byte for byte as in a run nobody
    interrupted; never --abort."""
    ref = reference(tmp_path / "ref")
    for at in points(ref.port_log, few=sig != "KILL"):
        run = tmp_path / f"{sig}-{at}"
        d = make_set(run)
        w = run / "w"
        how, code = fork_cli(port_args(d, w), kill_at=at, sig=sig)
        assert (how, code) == (
            ("exit", 130) if sig == "INT" else ("killed", getattr(signal, f"SIG{sig}"))
        ), at
        finish_after(d, w, fixed=False)
        assert snapshot(d) == ref.set_files, at
        assert tree_of(w) == ref.tree, at


@pytest.mark.parametrize("sig", ["KILL", "INT"])
def test_a_continue_interrupted_at_any_point_is_continued(cache, tmp_path, sig):
    """Input: the stopped port fixed in W, then `--continue` killed or Ctrl-C'd at fixed
    points: taking the fix, the new patch file, the lists, staging the set, writing the set's
    patch file and manifest, the last step. Outcome: the fix in W is never lost or changed;
    the next --continue finishes, and the set ends byte for byte as in a run nobody
    interrupted."""
    ref = reference(tmp_path / "ref")
    for at in points(ref.cont_log, few=sig != "KILL"):
        run = tmp_path / f"{sig}-{at}"
        d = make_set(run)
        w = run / "w"
        assert run_cli(*port_args(d, w))[0] == 3
        (w / "sglang/srt/mod.py").write_text(FIXED)
        how, code = fork_cli(cont(w), kill_at=at, sig=sig)
        assert (how, code) in (("exit", 130), ("killed", signal.SIGKILL)), at
        assert (w / "sglang/srt/mod.py").read_text() == FIXED, at
        finish_after(d, w, fixed=True)
        assert snapshot(d) == ref.set_files, at
        assert tree_of(w) == ref.tree, at


def test_the_hook_works_through_the_real_cli(cache, tmp_path):
    """Input: `python -m sgpatch port` as a real process, with SGPATCH_TEST_KILL_AT at the
    write that makes the state folder whole. Outcome: it dies by SIGKILL; --continue goes on
    (exit 3, the stop), W holds a workspace."""
    import subprocess
    import sys

    at = next(n for n, what in reference(tmp_path / "ref").port_log if what.endswith("/tree"))
    d = make_set(tmp_path / "run")
    w = tmp_path / "run" / "w"
    env = {**os.environ, steps.KILL_ENV: str(at)}
    p = subprocess.run([sys.executable, "-m", "sgpatch", *port_args(d, w)], env=env,
                       capture_output=True, check=False)  # fmt: skip
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert run_cli(*cont(w))[0] == 3


# ---------------------------------------------------------------------------------------------
# --abort keeps what a person did


def stopped(tmp_path: Path) -> tuple[Path, Path]:
    d = make_set(tmp_path)
    w = tmp_path / "w"
    assert run_cli(*port_args(d, w))[0] == 3
    return d, w


def test_abort_with_hand_edits_refuses_then_keeps_them_aside(cache, tmp_path):
    """Input: a stopped port, mod.py half fixed by hand; `--abort`, then `--abort --force`
    (twice over, the second time on a new port). Outcome: --abort exits 4 in one line naming
    sglang/srt/mod.py and the --force command, W byte for byte as it was; --force exits 0,
    says where it kept the edit: `w.aborted-1/sglang/srt/mod.py` holds it, W is gone; the
    next forced abort keeps its edits in `w.aborted-2`. Nothing else is written outside W."""
    d, w = stopped(tmp_path)
    (w / "sglang/srt/mod.py").write_text(FIXED + "# half done\n")
    before = snapshot(w)
    code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 4
    (line,) = err.splitlines()
    assert "sglang/srt/mod.py" in line and f"sgpatch port --abort --force --workspace {w}" in line
    assert snapshot(w) == before
    outside = sorted(p.name for p in tmp_path.iterdir() if p != w)
    code, _out, err = run_cli("port", "--abort", "--force", "--workspace", str(w))
    assert code == 0, err
    aside = tmp_path / "w.aborted-1"
    assert f"kept your edits in {aside}: sglang/srt/mod.py" in err
    assert (aside / "sglang/srt/mod.py").read_text() == FIXED + "# half done\n"
    assert snapshot(aside) == {"sglang/srt/mod.py": (FIXED + "# half done\n").encode()}
    assert not w.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*outside, "w.aborted-1"])
    assert run_cli(*port_args(d, w))[0] == 3
    (w / "sglang/srt/other.py").write_text("mine = 1\n")
    assert run_cli("port", "--abort", "--force", "--workspace", str(w))[0] == 0
    assert snapshot(tmp_path / "w.aborted-2") == {"sglang/srt/other.py": b"mine = 1\n"}


@pytest.mark.parametrize(
    ("closed", "named"),
    [("mod.py", ["mod"]), ("srt", ["__init__", "mod", "other"])],
)
def test_abort_lists_an_edited_file_it_cannot_read_and_removes_nothing(
    cache, tmp_path, monkeypatch, closed, named
):
    """Input: a stopped port, mod.py edited by hand, then mod.py (or its folder sglang/srt)
    made unreadable to sgpatch (chmod 000 as a non-root user; stood in by an open that says
    EACCES, as root reads anything); `--abort`, then `--abort --force`. Outcome: exit 4 in one
    line naming sglang/srt/mod.py, or with the folder every file sgpatch wrote there (it
    cannot tell which were edited; both used to be left out and deleted unseen); with --force,
    exit 2 in one line naming the first of them and that it cannot be read (so it cannot be
    kept aside), no W.aborted-1; W byte for byte as it was both times."""
    _d, w = stopped(tmp_path)
    (w / "sglang/srt/mod.py").write_text(FIXED + "# half done\n")
    before = snapshot(w)
    real_open = os.open

    def no_permission(path, flags, *args, **kwargs):
        if os.fspath(path) == closed and kwargs.get("dir_fd") is not None:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    files = [f"sglang/srt/{n}.py" for n in named]
    with monkeypatch.context() as m:
        m.setattr(os, "open", no_permission)
        code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
        assert code == 4, err
        (line,) = err.splitlines()
        assert f"would delete your edits of {', '.join(files)};" in line
        code, _out, err = run_cli("port", "--abort", "--force", "--workspace", str(w))
    assert code == 2, err
    (line,) = err.splitlines()
    assert line.endswith(f"/w/{files[0]}: cannot read: Permission denied"), line
    assert snapshot(w) == before and not (tmp_path / "w.aborted-1").exists()


def test_abort_never_removes_a_folder_the_user_made(cache, tmp_path):
    """Input: an empty folder the user made, given as --workspace; the port stops; --abort.
    Outcome: what sgpatch wrote is gone, the folder stays (empty)."""
    d = make_set(tmp_path)
    w = tmp_path / "mine"
    w.mkdir()
    assert run_cli(*port_args(d, w))[0] == 3
    assert run_cli("port", "--abort", "--workspace", str(w))[0] == 0
    assert w.is_dir() and list(w.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# checked before W is made


def test_a_release_the_index_lacks_leaves_w_as_it_was(cache, tmp_path, monkeypatch):
    """Input: `port --to 1.9` (online: the index lists 1.0-1.3 and 1.4, no 1.9), into a new
    folder and into an empty folder; then `--to 1.4`, on the index but not downloadable.
    Outcome: exit 2, one line each; the new folder is never made, the empty one stays empty:
    no lock, no state, nothing to --abort."""
    from helpers import fake_index

    listing = "sglang (1.4)\nAvailable versions: 1.4, 1.3, 1.2, 1.1, 1.0\n"
    fake_index(monkeypatch, listing)
    d = make_set(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    for to in ("1.9", "1.4"):
        for w in (tmp_path / "new", empty):
            args = [a for a in port_args(d, w, to) if a != "--offline"]
            code, _out, err = run_cli(*args)
            assert code == 2, err
            assert err.count("\n") == 1 and ("1.9" in err or "1.4" in err), err
            assert not (tmp_path / "new").exists() and list(empty.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# one writer at a time


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_fifo_or_link_at_the_workspace_lock_ends_in_one_line(cache, tmp_path, kind):
    """Input: a stopped port whose `W/.sgpatch-port.lock` was replaced by a FIFO nobody
    writes, or by a symlink to a file outside W that does not exist yet. Outcome: --continue
    exits 4 at once (it waited for ever on the FIFO) with one line naming the lock and what
    is there; W and the set are byte for byte as they were; nothing is made through the link."""
    d, w = stopped(tmp_path)
    lock = w / ".sgpatch-port.lock"
    lock.unlink()
    outside = tmp_path / "made-through-the-link"
    os.mkfifo(lock) if kind == "fifo" else lock.symlink_to(outside)
    before, set_before = snapshot(w), snapshot(d)
    with no_hang():
        code, _out, err = run_cli(*cont(w))
    assert code == 4, err
    (line,) = err.splitlines()
    assert f"{lock} is a {'FIFO' if kind == 'fifo' else 'symlink'}" in line
    assert snapshot(w) == before and snapshot(d) == set_before and not outside.exists()


def test_a_second_writer_is_refused_in_one_line(cache, tmp_path):
    """Input: a stopped port whose lock another run holds (this test, then a forked process
    holding it): --continue, --abort and a new port into W. Outcome: each exits 4 with one
    line saying another sgpatch port is writing there (the new port: that a port is in
    progress there); W is untouched; once the lock is free, --continue goes on (exit 3:
    nothing fixed yet)."""
    d, w = stopped(tmp_path)
    before = snapshot(w)
    with locked(w):
        for argv in (cont(w), ["port", "--abort", "--workspace", str(w)], port_args(d, w)):
            code, _out, err = run_cli(*argv)
            assert code == 4, err
            (line,) = err.splitlines()
            assert "another sgpatch port is writing there" in line or (
                argv[1] != "--continue" and "a port is in progress there" in line
            )
    assert snapshot(w) == before
    r, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            with locked(w):
                os.write(wr, b"x")
                os.read(os.open(os.devnull, os.O_RDONLY), 1)
                import time

                time.sleep(2)
        finally:
            os._exit(0)
    os.read(r, 1)
    code, _out, err = run_cli(*cont(w))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert code == 4 and "another sgpatch port is writing there" in err
    assert run_cli(*cont(w))[0] == 3


def test_two_continues_at_once_write_the_variant_once(cache, tmp_path):
    """Input: the fixed workspace, then two forked --continue runs started together. Outcome:
    one writes the set (exit 0); the other is refused (exit 4) or finds the port finished
    (exit 2); the manifest has `first`'s new variant once."""
    d, w = stopped(tmp_path)
    (w / "sglang/srt/mod.py").write_text(FIXED)
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            code = 99
            try:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
                code = run_cli(*cont(w))[0]
            finally:
                os._exit(code)
        pids.append(pid)
    codes = sorted(os.WEXITSTATUS(os.waitpid(p, 0)[1]) for p in pids)
    assert codes[0] == 0 and codes[1] in (2, 4), codes
    assert (d / "patchset.yaml").read_text().count("patches/1.2/0001-first.patch") == 1


# ---------------------------------------------------------------------------------------------
# the set --continue writes


def test_continue_writes_only_the_set_the_port_began_on(cache, tmp_path):
    """Input: a stopped port; its `set` state file pointed at a copy of the set (same
    manifest, same digest) elsewhere; then the set's folder reached through a symlink that is
    moved to the copy. Outcome: --continue exits 4 in one line with the --abort command as it
    works, both sets byte for byte as they were; put back, --continue names the absolute path
    of every file it writes."""
    import shutil

    d, w = stopped(tmp_path)
    copy = tmp_path / "elsewhere" / "demo"
    shutil.copytree(d, copy)
    state = w / ".sgpatch-port/set"
    real = state.read_text()
    state.write_text(f"{copy / 'patchset.yaml'}\n")
    (w / "sglang/srt/mod.py").write_text(FIXED)
    before, copy_before = snapshot(d), snapshot(copy)
    code, _out, err = run_cli(*cont(w))
    assert code == 4, err
    (line,) = err.splitlines()
    assert f"`sgpatch port --abort --workspace {w}`" in line
    assert snapshot(d) == before and snapshot(copy) == copy_before
    state.write_text(real)
    code, _out, err = run_cli(*cont(w))
    assert code == 0, err
    new = d / "patches/1.2/0001-first.patch"
    assert f"wrote {new}, {d / 'patchset.yaml'} (workspace kept)" in err
    assert snapshot(copy) == copy_before


def test_every_hint_is_a_command_that_works_as_written(cache, tmp_path):
    """Input: a stopped port (human output); the commands the stop line prints. Outcome: the
    --continue command runs as printed (exit 3: nothing fixed), the --show command prints the
    stopped file's details (exit 0); a damaged state file's hint names `--abort --workspace
    W` and the port command, which also run as printed."""
    d = make_set(tmp_path)
    w = tmp_path / "w w"
    code, _out, err = run_cli(*port_args(d, w))
    assert code == 3
    last = err.splitlines()[-1]
    commands = [c for c in last.split("`")[1::2] if c.startswith("sgpatch ")]
    assert [c.split()[2] for c in commands] == ["--continue", "--abort", "--show"]
    assert run_cli(*shlex.split(commands[0])[1:])[0] == 3
    code, out, _err = run_cli(*shlex.split(commands[2])[1:])
    assert code == 0 and out.startswith("sglang/srt/mod.py (markers at lines ")
    (w / ".sgpatch-port/onto").write_text("not a version\n")
    code, _out, err = run_cli(*cont(w))
    assert code == 4
    hints = [c for c in err.split("`")[1::2] if c.startswith("sgpatch ")]
    assert [c.split()[2] for c in hints] == ["--abort", "--set"]
    assert run_cli(*shlex.split(hints[0])[1:])[0] == 0
    assert run_cli(*shlex.split(hints[1])[1:])[0] == 3


def test_abort_json_names_the_edits_and_where_they_went(cache, tmp_path):
    """Input: a stopped port with an edit, `--abort --force --json`. Outcome: one document:
    state aborted, `edits` the edited files, `kept_in` the aside folder."""
    _d, w = stopped(tmp_path)
    (w / "sglang/srt/mod.py").write_text(FIXED)
    code, out, _err = run_cli("port", "--abort", "--force", "--json", "--workspace", str(w))
    doc = json.loads(out)
    assert code == 0 and doc["state"] == "aborted"
    assert doc["edits"] == ["sglang/srt/mod.py"]
    assert doc["kept_in"] == str(tmp_path / "w.aborted-1")


def test_ctrl_c_names_the_workspace_and_the_command_that_goes_on(cache, tmp_path, monkeypatch):
    """Input: a port without --workspace (a new temporary W), Ctrl-C at its first carry.
    Outcome: exit 130 and one line naming that W and the --continue command; the command,
    run as printed, goes on (exit 3: the stop)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    d = make_set(tmp_path / "run")
    at = next(n for n, what in reference(tmp_path / "ref").port_log if "before/" in what)
    monkeypatch.setenv(steps.KILL_ENV, str(at))
    monkeypatch.setenv(steps.SIGNAL_ENV, "INT")
    steps.reset()
    code, _out, err = run_cli(*port_args(d, None))
    monkeypatch.delenv(steps.KILL_ENV)
    assert code == 130, err
    (line,) = err.splitlines()
    (w,) = tmp_path.glob("sgpatch-port-demo-1.2-*")
    assert line.startswith(f"sgpatch port: interrupted; {w} is as its last whole step left it")
    command = line.split("`")[1]
    assert command == f"sgpatch port --continue --workspace {w}"
    assert run_cli(*shlex.split(command)[1:])[0] == 3


def test_an_abort_killed_at_any_point_loses_no_edit_and_wedges_nothing(cache, tmp_path):
    """Input: a stopped port with a hand edit, `--abort --force` killed at fixed points: the
    copy aside, removing the tree, removing the state. Outcome: the edit is always kept (in W
    or in a `w.aborted-N`); W is either still a workspace (--abort --force again: exit 0) or
    holds only sgpatch's leftovers, which a new port into W clears (exit 3)."""
    d, w = stopped(tmp_path / "ref")
    (w / "sglang/srt/mod.py").write_text(FIXED)
    _code, log = steps_of(["port", "--abort", "--force", "--workspace", str(w)])
    rename = next(n for n, what in log if what.endswith("/remove"))
    for at in sorted({1, len(log) // 2, rename, len(log)}):
        run = tmp_path / f"kill-{at}"
        d, w = stopped(run)
        (w / "sglang/srt/mod.py").write_text(FIXED)
        assert fork_cli(["port", "--abort", "--force", "--workspace", str(w)], kill_at=at) == (
            "killed",
            signal.SIGKILL,
        ), at
        kept = [p.read_text() for p in run.glob("w*/sglang/srt/mod.py")]
        assert FIXED in kept, at
        code, _out, err = run_cli("port", "--abort", "--force", "--workspace", str(w))
        if code == 2:
            code, _out, err = run_cli(*port_args(d, w))
            assert code == 3, (at, err)
        else:
            assert code == 0, (at, err)


def test_a_new_port_never_clears_edits_in_a_finished_workspace(cache, tmp_path):
    """Input: a port that finished by itself (to 1.1), then an edit in its W, then a new port
    into that W. Outcome: exit 4 in one line naming the edited file and the --abort --force
    command; W byte for byte as it was; after that command, the new port runs (exit 0)."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    assert run_cli(*port_args(d, w, "1.1"))[0] == 0
    (w / "sglang/srt/other.py").write_text("mine = 1\n")
    before = snapshot(w)
    code, _out, err = run_cli(*port_args(d, w, "1.1"))
    assert code == 4
    (line,) = err.splitlines()
    assert "sglang/srt/other.py" in line and f"sgpatch port --abort --force --workspace {w}" in line
    assert snapshot(w) == before
    assert run_cli("port", "--abort", "--force", "--workspace", str(w))[0] == 0
    assert run_cli(*port_args(d, w, "1.1"))[0] == 0


def test_a_new_port_takes_over_a_finished_workspace_as_a_whole_tree(cache, tmp_path):
    """Input: a port to 1.1 that finished in W, then a port to 1.2 into the same W (as
    --step does). Outcome: W's tree is byte for byte the tree a port to 1.2 into a new
    folder makes (the files 1.1 had and 1.2 lacks gone, the dist-info of 1.2 only), its
    `tree` list the same, and nothing of the take-over is left in the state folder."""
    d = make_set(tmp_path)
    w, fresh = tmp_path / "w", tmp_path / "fresh"
    assert run_cli(*port_args(d, w, "1.1"))[0] == 0
    assert run_cli(*port_args(d, fresh))[0] == 3  # a stop: the set is not written
    assert run_cli(*port_args(d, w))[0] == 3
    assert snapshot(w / "sglang") == snapshot(fresh / "sglang")
    assert sorted(p.name for p in w.glob("sglang-*.dist-info")) == ["sglang-1.2.dist-info"]
    assert (w / ".sgpatch-port/tree").read_text() == (fresh / ".sgpatch-port/tree").read_text()
    assert not (w / ".sgpatch-port/stage").exists() and not (w / ".sgpatch-port/reused").exists()


def test_a_port_taking_over_a_finished_workspace_killed_anywhere_ends_the_same(cache, tmp_path):
    """Input: a port to 1.1 finished in W, then `port --to 1.2` into W killed (SIGKILL) at
    each of its write steps up to laying out the tree (the hand-over's renames, the state
    folder, the re-lay). Outcome: each time the next --continue (or, with no port begun,
    the same port again) goes on, the fix and --continue finish it, and W's tree ends byte
    for byte as in a run nobody interrupted."""
    d0 = make_set(tmp_path / "log")
    w0 = tmp_path / "log" / "w"
    assert run_cli(*port_args(d0, w0, "1.1"))[0] == 0
    _code, log = steps_of(port_args(d0, w0))
    (w0 / "sglang/srt/mod.py").write_text(FIXED)
    assert run_cli(*cont(w0))[0] == 0
    want = tree_of(w0)
    last = next(n for n, what in log if what.endswith("/todo"))
    wants = ("hand_over", "claim", "_lay_tree", "/reused", "/tree", "/marker")
    picks = {1, last, *(n for n, what in log[:last] if what.endswith(wants))}
    for at in sorted(picks):
        run = tmp_path / f"kill-{at}"
        d = make_set(run)
        w = run / "w"
        assert run_cli(*port_args(d, w, "1.1"))[0] == 0
        assert fork_cli(port_args(d, w), kill_at=at) == ("killed", signal.SIGKILL), at
        code, _out, err = run_cli(*cont(w))
        if code not in (0, 3):  # no port of 1.2 had begun in W: the same port again
            code, _out, err = run_cli(*port_args(d, w))
        assert code == 3, (at, err)
        (w / "sglang/srt/mod.py").write_text(FIXED)
        assert run_cli(*cont(w))[0] == 0, at
        assert tree_of(w) == want, at
        assert sorted(p.name for p in w.glob("sglang-*.dist-info")) == ["sglang-1.2.dist-info"]


# moved from tests/port/test_port.py


def test_workspace_rules(cache, tmp_path):
    """Input: a port into a live workspace; into a folder with other files; --continue on a
    folder that is no workspace; --continue without --workspace.
    Outcome: 4 (a port is in progress there), 2, 2, 2; nothing in them touched."""
    d, w, _code, _ = start_conflict(tmp_path)
    args = ("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1")
    assert sgport(*args, "--workspace", str(w))[0] == 4
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("x")
    assert sgport(*args, "--workspace", str(other))[0] == 2
    assert run_cli("port", "--continue", "--workspace", str(other))[0] == 2
    assert run_cli("port", "--continue")[0] == 2
    assert (other / "x").read_text() == "x"


def test_a_symlink_in_the_workspace_is_not_followed(cache, tmp_path):
    """Input: in a stopped workspace, the conflicted file replaced by a symlink to a file
    outside. Outcome: --continue refuses (exit 4); the outside file is untouched."""
    _d, w, _code, _ = start_conflict(tmp_path)
    outside = tmp_path / "outside.py"
    outside.write_text("keep = 1\n")
    target = w / "sglang/srt/mod.py"
    target.unlink()
    target.symlink_to(outside)
    assert run_cli("port", "--continue", "--workspace", str(w))[0] == 4
    assert outside.read_text() == "keep = 1\n"


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_workspace_that_is_a_symlink_is_refused(cache, tmp_path):
    """Input: --workspace pointing at a symlink to a folder. Outcome: exit 4, folder empty."""
    d = make_set(tmp_path)
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    code, _o, _e = run_cli("port", "--offline", "--set", "demo", "--patchsets", str(d.parent),
                           "--to", "1.1", "--workspace", str(tmp_path / "link"))  # fmt: skip
    assert code == 4 and not any(real.iterdir())


def test_a_digest_list_is_read_by_one_reader_and_damage_is_refused(cache, tmp_path):
    """Input: a stopped workspace's `tree`, then a `reused` list with a line whose digest is cut
    short. Outcome: `digest_list` gives path -> sha256 of every line; the damaged line is
    refused (exit 4, naming the file) or, `lenient` (what --abort reads), left out; an absent
    list is None."""
    from sgpatch.errors import SgpatchError
    from sgpatch.port.workspace import Workspace

    _d, w = stopped(tmp_path)
    ws = Workspace(w)
    tree = ws.digest_list("tree")
    assert tree is not None and len(tree) > 3 and ws.tree() == tree
    assert all(len(sha) == 64 for sha in tree.values())
    assert ws.digest_list("reused") is None
    good = "a" * 64
    (w / ".sgpatch-port/reused").write_text(f"{good}  sglang/x.py\n0123  sglang/y.py\n")
    with pytest.raises(SgpatchError) as e:
        ws.digest_list("reused")
    assert e.value.code == 4 and "reused: damaged" in str(e.value)
    assert ws.digest_list("reused", lenient=True) == {"sglang/x.py": good}


def test_a_new_port_keeps_the_persons_files_of_the_finished_one(cache, tmp_path):
    """Input: a port to 1.1 finished in W, the person's `na-first` reason and a note in a
    folder of the state folder, then a port to 1.2 into W (as the next --step does).
    Outcome: the new port runs as it does without them (exit 3, no `na-first` read as its
    answer), their bytes are in W.aborted-1 (as --abort keeps them), and the first note of
    its --json report says where they went."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    assert run_cli(*port_args(d, w, "1.1"))[0] == 0
    (w / ".sgpatch-port/na-first").write_text("my reason\n")
    (w / ".sgpatch-port/notes").mkdir()
    (w / ".sgpatch-port/notes/todo.txt").write_text("check srt/other.py\n")
    code, out, _err = run_cli(*port_args(d, w), "--json")
    assert code == 3
    aside = tmp_path / "w.aborted-1/.sgpatch-port"
    assert (aside / "na-first").read_text() == "my reason\n"
    assert (aside / "notes/todo.txt").read_text() == "check srt/other.py\n"
    assert not (w / ".sgpatch-port/na-first").exists()
    note = json.loads(out)["steps"][-1]["notes"][0]
    assert ".sgpatch-port/na-first, .sgpatch-port/notes/todo.txt" in note
    assert note.endswith(f"copied to {tmp_path / 'w.aborted-1'}")


def test_a_refused_new_port_copies_nothing_aside(cache, tmp_path):
    """Input: a finished port in W holding the person's `na-first` and an edited tree file,
    then a new port into W. Outcome: exit 4 (the edit), no W.aborted-N made, W unchanged."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    assert run_cli(*port_args(d, w, "1.1"))[0] == 0
    (w / ".sgpatch-port/na-first").write_text("my reason\n")
    (w / "sglang/srt/other.py").write_text("mine = 1\n")
    before = snapshot(w)
    assert run_cli(*port_args(d, w))[0] == 4
    assert snapshot(w) == before and not (tmp_path / "w.aborted-1").exists()


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_a_steps_kept_folders_write_the_same_and_never_follow_a_planted_symlink(tmp_path):
    """Input: inside `kept_dirs` (what one port step holds): state files written and read in
    a few folders, one of them removed meanwhile (by sgpatch's rmtree, then by someone
    else); a tree folder replaced by a symlink to a folder outside W; then the step left.
    Outcome: every state write lands (a removed folder made anew), each state folder opened
    once; the tree write through the symlink is refused (exit 4) and the outside folder stays
    empty; no descriptor is left open after the step."""
    from sgpatch.errors import SgpatchError
    from sgpatch.port import wsfiles

    w = tmp_path / "w"
    (w / "sglang/srt").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    before = _open_fds()
    opened: list[str] = []
    real_open = os.open

    def counting(path, flags, *a, **k):
        fd = real_open(path, flags, *a, **k)
        if flags & os.O_DIRECTORY:
            opened.append(str(path))  # opened (a folder not there yet is made, then opened)
        return fd

    with wsfiles.kept_dirs(w):
        os.open = counting
        try:
            for n in range(5):
                wsfiles.write(w, f".sgpatch-port/before/p/srt/f{n}.py", b"x%d\n" % n)
                wsfiles.append(w, ".sgpatch-port/journal/index", f"{n}\n")
        finally:
            os.open = real_open
        assert sorted(opened) == sorted([str(w), ".sgpatch-port", "before", "p", "srt", "journal"])
        wsfiles.rmtree(w / ".sgpatch-port/before")
        wsfiles.write(w, ".sgpatch-port/before/p/srt/f0.py", b"again\n")
        shutil.rmtree(w / ".sgpatch-port/before/p")  # by someone else: its descriptor kept
        wsfiles.write(w, ".sgpatch-port/before/p/srt/f1.py", b"anew\n")
        (w / "sglang/srt").rename(w / "sglang/srt.bak")
        (w / "sglang/srt").symlink_to(outside)
        with pytest.raises(SgpatchError) as e:
            wsfiles.write(w, "sglang/srt/mod.py", b"x\n")
        assert e.value.code == 4
    assert sorted(os.listdir(w / ".sgpatch-port/before/p/srt")) == ["f1.py"]
    assert (w / ".sgpatch-port/before/p/srt/f1.py").read_bytes() == b"anew\n"
    assert wsfiles.read(w, ".sgpatch-port/journal/index") == b"0\n1\n2\n3\n4\n"
    assert not any(outside.iterdir())
    assert _open_fds() == before


def test_a_retargeted_symlink_is_an_edit_abort_keeps_aside_as_a_link(cache, tmp_path):
    """Input: a port stopped on 1.2 whose patch made srt/alias.py a symlink in W; the person
    points it at other.py. Outcome: --abort refuses (exit 4) naming it; --abort --force
    copies it to w.aborted-1 as a symlink to other.py, and removes W's (never followed)."""
    d = modes_set(tmp_path)
    w = tmp_path / "w"
    assert sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                  "--workspace", str(w))[0] == 3  # fmt: skip
    (w / "sglang/srt/alias.py").unlink()
    (w / "sglang/srt/alias.py").symlink_to("other.py")
    code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 4 and "sglang/srt/alias.py" in err
    assert run_cli("port", "--abort", "--force", "--workspace", str(w))[0] == 0
    assert os.readlink(tmp_path / "w.aborted-1/sglang/srt/alias.py") == "other.py"
    assert not w.exists() and (tmp_path / "sets/demo/patches/1.0").is_dir()


def test_tree_files_of_every_kind_are_read_and_written_without_following_a_link(tmp_path):
    """Input: W's tree given an executable file and a symlink through wsfiles, and a file
    behind a symlinked folder. Outcome: each reads back with its git mode (the link as its
    target, not followed) and digests as `entry_digest` says (a link never as its target's
    text); the file behind the linked folder is refused (exit 4)."""
    from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK
    from sgpatch.errors import ExitCode, SgpatchError
    from sgpatch.port.wsfiles import digest, digests, entry_digest, mode_of, read_entry, write

    top = tmp_path / "w"
    top.mkdir()
    write(top, "sglang/run.sh", b"#!/bin/sh\n", mode=EXECUTABLE)
    write(top, "sglang/link", b"run.sh", mode=SYMLINK)
    write(top, "sglang/x.py", b"x = 1\n")
    assert read_entry(top, "sglang/run.sh") == (b"#!/bin/sh\n", EXECUTABLE)
    assert read_entry(top, "sglang/link") == (b"run.sh", SYMLINK)
    assert read_entry(top, "sglang/x.py") == (b"x = 1\n", REGULAR)
    assert [mode_of(top, f"sglang/{n}") for n in ("run.sh", "link", "x.py", "none")] == [
        EXECUTABLE, SYMLINK, REGULAR, REGULAR,
    ]  # fmt: skip
    got = digests(top, ["sglang/link", "sglang/x.py"])
    assert got == {
        "sglang/link": entry_digest(b"run.sh", SYMLINK),
        "sglang/x.py": digest(b"x = 1\n"),
    }
    assert got["sglang/link"] != digest(b"run.sh")
    (top / "sglang/sub").symlink_to(tmp_path)
    (tmp_path / "secret").write_text("s")
    with pytest.raises(SgpatchError) as e:
        read_entry(top, "sglang/sub/secret")
    assert e.value.code == ExitCode.UNSAFE


def test_a_250_byte_file_name_in_the_state_folder_is_kept_aside_by_abort(cache, tmp_path):
    """Input: a stopped port; the person left a note with a 250-byte name in
    `W/.sgpatch-port/` (NAME_MAX is 255). Outcome: `--abort` exits 0 (it was exit 70, name
    too long, and each retry left another `W.aborted-N`), the note is copied byte for byte to
    `W.aborted-1`, W is gone, and no other `W.aborted-N` exists."""
    _d, w = stopped(tmp_path)
    name = "n" * 250
    (w / ".sgpatch-port" / name).write_bytes(b"my reasons\n")
    code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 0, err
    assert (tmp_path / "w.aborted-1" / ".sgpatch-port" / name).read_bytes() == b"my reasons\n"
    assert not w.exists()
    assert sorted(p.name for p in tmp_path.glob("w.aborted-*")) == ["w.aborted-1"]
