"""Every command sgpatch advises works as typed (issue 45, item 5).

The advice is found in the source, not listed by hand: every string that holds a backticked
`sgpatch ...` command and every call of `sgpatch.shown.command`, outside docstrings and --help
texts. Each place that prints one is a key of SITES, naming the test that builds the state
which prints it, runs the printed command as a shell would split it, and checks that it does
what it says (never exit 2, never the same refusal again). A new piece of advice without such
a test fails `test_every_piece_of_advice_has_a_test_that_runs_it`.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import (
    FIXED12,
    V10,
    V12,
    fake_index,
    git,
    hint_commands,
    make_env,
    make_set,
    port_cache,
    release_files,
    run_cli,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "sgpatch"
REPO = SRC.parents[1]
TESTS = Path(__file__).resolve().parents[1]
HERE = "tests/cli/test_hints.py"

# (module, function) -> the test that prints its advice and runs it as typed, or why none can
SITES: dict[tuple[str, str], str] = {
    ("cli/app.py", "help_cmd"): f"{HERE}::test_help_advises_help",
    ("cli/apply.py", "_untested_advice"): f"{HERE}::test_apply_on_an_untested_version",
    ("cli/apply.py", "_without_applied"): "tests/cli/test_apply.py::"
    "test_without_an_applied_patch_says_so_and_its_advice_takes_it_out",
    ("ops/revert.py", "_restore"): f"{HERE}::test_a_revert_of_an_edited_file",
    ("cli/revert.py", "_blocked"): "tests/cli/test_revert.py::"
    "test_dry_run_on_an_edited_tree_shows_what_it_would_do_and_what_blocks_it",
    (
        "ops/report.py",
        "_next",
    ): "tests/cli/test_sets.py::test_apply_with_an_edited_file_says_the_next_step",
    ("ops/status.py", "read"): f"{HERE}::test_status_with_no_set_for_the_version",
    ("cli/common.py", "_wait_or_report"): f"{HERE}::test_status_after_a_crash",
    ("state/lock.py", "check_replay_trusted"): "tests/state/test_lock.py::"
    "test_root_rolls_back_no_journal_another_user_planted",
    ("state/upgrade.py", "_note"): f"{HERE}::test_a_set_reverted_outside_sgpatch",
    ("git/mode.py", "status_check"): f"{HERE}::test_a_revert_of_commits_not_committed",
    ("port/screen.py", "_stop"): f"{HERE}::test_a_stopped_port",
    ("port/screen.py", "_next"): f"{HERE}::test_a_stopped_port",
    ("port/screen.py", "_last"): f"{HERE}::test_a_port_that_pauses_before_writing",
    ("port/stopreport.py", "<module>"): f"{HERE}::test_a_stopped_port",
    ("cli/port.py", "_interrupted"): f"{HERE}::test_an_interrupted_port",
    ("cli/port.py", "_folded"): "tests/port/test_folds.py::"
    "test_a_hand_fix_that_defines_a_name_twice_is_folded_as_the_stop_says",
    ("port/stopped.py", "abort"): f"{HERE}::test_an_abort_over_hand_edits",
    ("port/workspace.py", "check_free"): f"{HERE}::test_a_port_into_a_busy_workspace",
    ("port/workspace.py", "continue_hint"): f"{HERE}::test_a_port_into_a_busy_workspace",
    ("port/workspace.py", "abort_hint"): f"{HERE}::test_a_damaged_workspace",
    ("port/undo.py", "_damaged"): f"{HERE}::test_a_damaged_workspace",
    ("port/sequencer.py", "prepare"): f"{HERE}::test_a_port_offline_to_a_release_not_cached",
    ("releases/download.py", "wheel_path"): f"{HERE}::test_a_port_offline_without_its_base",
    ("port/sequencer.py", "_na_note"): "tests/port/test_finish.py::"
    "test_a_patch_n_a_nearby_whose_file_is_here_is_n_a_as_the_person_says",
    (
        "port/onto_tree.py",
        "_pristine_tree",
    ): f"{HERE}::test_a_port_onto_a_tree_that_is_not_pristine",
    ("port/onto_tree.py", "prepare"): f"{HERE}::test_a_port_onto_a_release_tree",
    ("ops/lint.py", "fold_hint"): "tests/ops/test_fold.py::test_lint_s_fold_advice_runs_as_typed",
    ("ops/fold.py", "standing"): "tests/ops/test_fold.py::test_status_s_fold_advice_runs_as_typed",
    # not advice this sgpatch can follow, or not printed
    ("state/journal.py", "parse"): "none: it advises the newer sgpatch that wrote the journal",
    ("ops/importer.py", "manifest_text"): "none: a comment written into a manifest",
    ("ops/split.py", "_edit"): "none: a comment written into a manifest",
}

_COMMAND = re.compile(r"`sgpatch [^`]*`")


def _skipped(tree: ast.AST) -> set[int]:
    """Docstrings and help texts: they describe commands, they do not advise one."""
    out: set[int] = set()
    for n in ast.walk(tree):
        body = getattr(n, "body", None)
        documented = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        if isinstance(n, documented) and body and isinstance(body[0], ast.Expr):
            out.add(id(body[0].value))
        if isinstance(n, ast.keyword) and n.arg in ("help", "short_help"):
            out |= {id(m) for m in ast.walk(n.value)}
    return out


def _is_command_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id == "command") or (
        isinstance(f, ast.Attribute)
        and f.attr == "command"
        and getattr(f.value, "id", "") == "shown"
    )


def _sites_in(path: Path) -> set[tuple[str, str]]:
    tree = ast.parse(path.read_text())
    skip = _skipped(tree)
    module = path.relative_to(SRC).as_posix()
    found: set[tuple[str, str]] = set()

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            if id(child) in skip:
                continue
            text = None
            if isinstance(child, ast.Constant) and isinstance(child.value, str):
                text = child.value
            elif isinstance(child, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "{}"
                               for v in child.values)  # fmt: skip
            if (text is not None and _COMMAND.search(text)) or _is_command_call(child):
                found.add((module, function))
            visit(child, function)

    visit(tree, "<module>")
    return found


def test_every_piece_of_advice_has_a_test_that_runs_it() -> None:
    """Input: the source, scanned for advised `sgpatch ...` commands (string literals,
    f-strings, `shown.command` calls; gitread's own `command`, git's argv, left out).
    Outcome: the places found are exactly SITES' keys, and each names a test that exists (or
    says why no command is to be run)."""
    found = set()
    for path in sorted(SRC.rglob("*.py")):
        if path.name != "gitread.py":
            found |= _sites_in(path)
    assert found == set(SITES), (sorted(found - set(SITES)), sorted(set(SITES) - found))
    for where in SITES.values():
        if where.startswith("none: "):
            continue
        file, name = where.split("::")
        assert f"def {name}(" in (TESTS.parent / file).read_text(), where


def _runs(advice: str, ok: tuple[int, ...] = (0,)) -> list[tuple[int, str]]:
    """Run every command `advice` holds as typed; each must exit with a code in `ok`."""
    out = []
    commands = hint_commands(advice)
    assert commands, advice
    for argv in commands:
        code, _out, err = run_cli(*argv)
        assert code in ok, (argv, err)
        out.append((code, err))
    return out


def _repo_state() -> str:
    """What `git status` shows of the checkout the tests run from (empty outside one)."""
    if not (REPO / ".git").exists():
        return ""
    argv = ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=all"]
    return subprocess.run(argv, capture_output=True, text=True, check=False).stdout


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test here runs sgpatch, and the advice it prints, from tmp_path: advice may name
    a workspace relative to the current folder (a port's `port-SET-V`), and running it from
    the checkout once wrote a port workspace into the repository. After each test the
    current folder is still tmp_path and the checkout is as it was."""
    before = _repo_state()
    monkeypatch.chdir(tmp_path)
    yield
    assert Path.cwd() == tmp_path
    assert _repo_state() == before, "the test wrote into the repository"


# --------------------------------------------------------------------------------- the CLI


def test_help_advises_help() -> None:
    """Input: `sgpatch help nope` (an unknown command). Outcome: exit 2 naming `sgpatch
    --help`, which exits 0."""
    code, _out, err = run_cli("help", "nope")
    assert code == 2
    _runs(err)


@pytest.fixture
def releases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Synthetic releases 1.0-1.3 in a private cache; the index unreachable (the cache
    stands in, as documented), downloads fail loudly."""
    fake_index(monkeypatch)
    return port_cache(tmp_path, monkeypatch)


def _tree(where: Path, text: str, version: str) -> Path:
    for name, data in release_files(text, version).items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_bytes(data)
    return where / "sglang"


@pytest.mark.parametrize(("version", "port"), [("1.1", "--to"), ("1.2.dev3", "--to-tree")])
def test_apply_on_an_untested_version(releases, tmp_path, version, port) -> None:
    """Input: `apply` of the demo set (checked on 1.0) on a tree reporting the release 1.1,
    or the snapshot 1.2.dev3. Outcome: exit 2 advising `sgpatch apply ... --untested` and a
    port: `--to 1.1` for the release (was `port --to-tree`, which refuses a release),
    `--to-tree TREE` for the snapshot, its workspace `port-demo-V` in the current folder
    (tmp_path); each, run as typed, works: the port exits 0 or 3 (carried, or stopped for a
    hand) and writes only that workspace, then (the other way) apply exits 0."""
    d = make_set(tmp_path)
    tree = _tree(tmp_path / "t", V10, version)
    code, _out, err = run_cli("apply", "--set", "demo", "--patchsets", str(d.parent),
                              "--sglang-dir", str(tree))  # fmt: skip
    assert code == 2 and f"`sgpatch port --set demo --patchsets {d.parent} {port} " in err
    untested, ported = hint_commands(err)
    assert ported[-2:] == ["--workspace", str(tmp_path / f"port-demo-{version}")]
    kept = tmp_path / "kept"
    shutil.copytree(d, kept)
    assert run_cli(*ported)[0] in (0, 3)  # first: a port wants the tree as the release made it
    shutil.rmtree(d)
    shutil.copytree(kept, d)  # the other way, from the set as it was
    assert run_cli(*untested)[0] == 0


def test_status_with_no_set_for_the_version(tmp_path) -> None:
    """Input: `status` on a tree of 9.9 (no set supports it). Outcome: exit 2 advising
    `sgpatch list`, which exits 0."""
    pkg, _sets, _args = make_env(tmp_path, "9.9")
    code, _out, err = run_cli("status", "--sglang-dir", str(pkg))
    assert code == 2
    _runs(err)


def test_status_after_a_crash(tmp_path) -> None:
    """Input: an apply killed (SIGKILL) half-way, then `status`. Outcome: exit 4 advising
    `sgpatch recover --sglang-dir TREE`, which as typed exits 0 and leaves the tree as the
    release had it: status then exits 0 (nothing applied)."""
    from helpers import fork_cli, full_snapshot

    pkg, _sets, args = make_env(tmp_path)
    pristine = full_snapshot(pkg)
    assert fork_cli(["apply", *args], kill_at=8) == ("killed", 9)
    code, _out, err = run_cli("status", *args)
    assert code == 4 and "interrupted sgpatch run left its journal" in err, err
    assert hint_commands(err) == [["recover", "--sglang-dir", str(pkg)]]
    _runs(err)
    assert full_snapshot(pkg) == pristine
    assert run_cli("status", *args)[0] == 0


def test_a_set_reverted_outside_sgpatch(tmp_path) -> None:
    """Input: the set applied, then every file it patched put back by hand (as git checkout
    would); `status`. Outcome: a note advising `sgpatch apply --set safety-set --sglang-dir
    TREE --patchsets SETS`, which run as typed exits 0 and applies the set again."""
    from helpers import FILES

    pkg, _sets, args = make_env(tmp_path)
    assert run_cli("apply", *args)[0] == 0
    for rel, text in FILES.items():
        (pkg / rel).write_text(text)
    code, _out, err = run_cli("status", *args)
    assert code == 0 and "reverted outside sgpatch" in err
    _runs(err)
    assert "ALPHA5" in (pkg / "srt/a.py").read_text()


def test_a_revert_of_an_edited_file(tmp_path) -> None:
    """Input: the set applied, a line appended to srt/a.py, then `revert`. Outcome: exit 1
    naming srt/a.py and advising `sgpatch revert --set safety-set --sglang-dir TREE
    --patchsets SETS --force`, which as typed exits 0, keeps the edit and takes the set out."""
    pkg, _sets, args = make_env(tmp_path)
    assert run_cli("apply", *args)[0] == 0
    a = pkg / "srt/a.py"
    a.write_text(a.read_text() + "# my edit\n")
    code, _out, err = run_cli("revert", *args)
    assert code == 1 and "refusing to revert" in err and err.rstrip().endswith("srt/a.py")
    _runs(err)
    assert a.read_text().endswith("# my edit\n") and "ALPHA5" not in a.read_text()


def test_a_revert_of_commits_not_committed(tmp_path, monkeypatch) -> None:
    """Input: a git checkout; `apply --commit`, then `revert` without --commit; `status`.
    Outcome: a note advising `sgpatch revert --set safety-set --sglang-dir TREE --patchsets
    SETS --commit`, which run as typed exits 0 and commits the revert."""
    import shutil

    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    for var, value in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@x"),
                       ("GIT_COMMITTER_NAME", "t"), ("GIT_COMMITTER_EMAIL", "t@x")):  # fmt: skip
        monkeypatch.setenv(var, value)
    pkg, sets, _args = make_env(tmp_path)
    repo = tmp_path / "repo"
    shutil.copytree(pkg, repo / "python" / "sglang")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "release")
    args = ("--set", "safety-set", "--sglang-dir", str(repo / "python" / "sglang"),
            "--patchsets", str(sets))  # fmt: skip
    assert run_cli("apply", *args, "--commit")[0] == 0
    assert run_cli("revert", *args)[0] == 0
    _code, _out, err = run_cli("status", *args)
    assert "the revert is not committed" in err, err
    head = git(repo, "rev-parse", "HEAD")
    _runs(err)
    assert git(repo, "rev-parse", "HEAD") != head


# ------------------------------------------------------------------------------------- port


def _port(d: Path, w: Path, *extra: str) -> tuple[int, str]:
    code, _out, err = run_cli("port", "--set", "demo", "--patchsets", str(d.parent), "--to",
                              "1.2", "--workspace", str(w), *extra)  # fmt: skip
    return code, err


def test_a_stopped_port(releases, tmp_path) -> None:
    """Input: a port that stops (1.2: `first` needs a hand). Outcome: its last line advises
    `sgpatch port --continue --workspace W`, `... --abort ...` and `... --show FILE ...`,
    the files' heading and the fix file's heading the same --continue; --show as typed
    exits 0 with the file's detail; --continue as typed exits 3 (still to fix), then, once
    fixed, 0; on a second stopped port, --abort as typed exits 0."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    code, err = _port(d, w)
    assert code == 3
    cont, abort, show = hint_commands(err.splitlines()[-1])
    assert cont == ["port", "--continue", "--workspace", str(w)]
    assert abort == ["port", "--abort", "--workspace", str(w)]
    assert show == ["port", "--show", "sglang/srt/mod.py", "--workspace", str(w)]
    assert [cont] in [hint_commands(ln) for ln in err.splitlines()[:-1]]
    assert hint_commands((w / ".sgpatch-port" / "fix").read_text()) == [cont]
    code, shown, _err = run_cli(*show)
    assert code == 0 and "first hunk(s)" in shown
    assert run_cli(*cont)[0] == 3
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    assert run_cli(*cont)[0] == 0
    code, err = _port(make_set(tmp_path / "again"), tmp_path / "w2")  # the set as it was
    assert code == 3
    assert run_cli(*hint_commands(err.splitlines()[-1])[1])[0] == 0


def test_a_port_that_pauses_before_writing(releases, tmp_path) -> None:
    """Input: a port to 1.1 with --no-finish (everything carries). Outcome: exit 0, its last
    line advises `sgpatch port --continue --workspace W`; run as typed, it exits 0 and
    writes the set's 1.1 variant."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    code, _out, err = run_cli("port", "--set", "demo", "--patchsets", str(d.parent), "--to",
                              "1.1", "--workspace", str(w), "--no-finish")  # fmt: skip
    assert code == 0, err
    (cont,) = hint_commands(err.splitlines()[-1])
    assert cont == ["port", "--continue", "--workspace", str(w)]
    code, _out, err = run_cli(*cont)
    assert code == 0, err
    assert "1.1" in (d / "patchset.yaml").read_text()


def _interrupted(argv: list[str], monkeypatch, fraction: float) -> tuple[int, str]:
    """`argv` run twice: once to count its write steps (on a copy of its state, by the
    caller), then sent Ctrl-C at `fraction` of them."""
    from sgpatch.fs import steps

    steps.reset()
    monkeypatch.setenv(steps.SIGNAL_ENV, "INT")
    monkeypatch.setenv(steps.KILL_ENV, str(max(1, int(_TAKEN[0] * fraction))))
    try:
        code, _out, err = run_cli(*argv)
    finally:
        monkeypatch.delenv(steps.KILL_ENV)
    return code, err


_TAKEN = [0]


def _count(argv: list[str]) -> int:
    from sgpatch.fs import steps

    steps.reset()
    run_cli(*argv)
    _TAKEN[0] = steps.taken
    return steps.taken


def test_an_interrupted_port(releases, tmp_path, monkeypatch) -> None:
    """Input: a port sent Ctrl-C half-way through its writes, and an --abort of a stopped
    port sent Ctrl-C half-way. Outcome: exit 130 and one line each advising `sgpatch port
    --continue --workspace W` (which, as typed, goes on to the stop: exit 3) and `sgpatch port
    --abort --workspace W` (which, as typed, drops W: exit 0)."""
    assert _count(["port", "--set", "demo", "--patchsets", str(make_set(tmp_path / "r").parent),
                   "--to", "1.2", "--workspace", str(tmp_path / "r" / "w")]) > 2  # fmt: skip
    d = make_set(tmp_path)
    w = tmp_path / "w"
    argv = ["port", "--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
            "--workspace", str(w)]  # fmt: skip
    code, err = _interrupted(argv, monkeypatch, 0.5)
    assert code == 130 and "interrupted" in err
    _runs(err, ok=(3,))
    abort = ["port", "--abort", "--workspace", str(w)]
    _count(["port", "--abort", "--workspace", str(_stopped_copy(tmp_path / "c"))])
    code, err = _interrupted(abort, monkeypatch, 0.5)
    assert code == 130 and "--abort: interrupted; again" in err, err
    _runs(err)
    assert not w.exists()


def _stopped_copy(where: Path) -> Path:
    d = make_set(where)
    assert _port(d, where / "w")[0] == 3
    return where / "w"


def test_an_abort_over_hand_edits(releases, tmp_path) -> None:
    """Input: a stopped port whose W holds a hand edit; `--abort`. Outcome: exit 4 advising
    `sgpatch port --abort --force --workspace W` (and --continue); --force as typed exits 0
    and keeps the edit aside."""
    w = _stopped_copy(tmp_path)
    (w / "sglang/srt/mod.py").write_text(FIXED12 + "# half done\n")
    code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 4
    force, cont = hint_commands(err)
    assert force[:3] == ["port", "--abort", "--force"] and cont[1] == "--continue"
    assert run_cli(*force)[0] == 0
    assert (tmp_path / "w.aborted-1/sglang/srt/mod.py").read_text().endswith("# half done\n")


def test_a_port_into_a_busy_workspace(releases, tmp_path) -> None:
    """Input: a new port into W where a port is stopped; then, once that port finished with
    a file of the person's in W, a new port into W again. Outcome: exit 4 advising
    --continue and --abort (each works as typed: 3, the stop; 0 after a fix... the abort: 0),
    then exit 4 advising `--abort --force`, which as typed exits 0."""
    w = _stopped_copy(tmp_path)
    d = tmp_path / "sets" / "demo"
    code, err = _port(d, w)
    assert code == 4
    cont, abort = hint_commands(err)
    assert run_cli(*cont)[0] == 3
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    assert run_cli(*cont)[0] == 0
    (w / "sglang/srt/other.py").write_text("mine = 1\n")  # the person's, in a finished W
    code, err = _port(make_set(tmp_path / "again"), w)
    assert code == 4
    (force,) = hint_commands(err)
    assert force[:3] == ["port", "--abort", "--force"] and run_cli(*force)[0] == 0
    assert abort == ["port", "--abort", "--workspace", str(w)]


def test_a_damaged_workspace(releases, tmp_path) -> None:
    """Input: a stopped port whose `phase` file and (on another) whose journal index hold a
    line sgpatch never writes; `--continue`. Outcome: exit 4 advising `sgpatch port --abort
    --workspace W`, then the port command again; both as typed work (0, then 3: the stop)."""
    from sgpatch.port import undo

    w = _stopped_copy(tmp_path)
    (w / ".sgpatch-port" / "phase").write_text("nonsense\n")
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 4 and "damaged" in err
    abort, again = hint_commands(err)
    assert run_cli(*abort)[0] == 0 and run_cli(*again)[0] == 3
    index = w / undo.INDEX
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text("x\t-\tsglang/a.py\n")
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 4 and "journal/index: damaged" in err
    _runs(err)


def test_a_port_offline_to_a_release_not_cached(releases, tmp_path, monkeypatch) -> None:
    """Input: `port --offline --to 1.4` (not in the cache). Outcome: exit 2 advising `sgpatch
    fetch 1.4`, which as typed exits 0 (the download: a wheel of 1.4 made on the spot, as the
    index would give it); the port then goes on (0 or 3)."""
    from sgpatch.releases import download

    d = make_set(tmp_path)
    argv = ["port", "--offline", "--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
            "--workspace", str(tmp_path / "w")]  # fmt: skip
    code, _out, err = run_cli(*argv)
    assert code == 2 and "`sgpatch fetch 1.4`" in err
    monkeypatch.setattr(download, "_pip_download", _made_wheel)
    _runs(err)
    assert run_cli(*argv)[0] in (0, 3)


def _made_wheel(version: str, dest: Path) -> Path:
    """What `pip download` gives for a synthetic release: its wheel in `dest`."""
    from helpers import make_wheel

    return make_wheel(dest, version, release_files(V10, version))


def test_a_port_offline_without_its_base(tmp_path, monkeypatch) -> None:
    """Input: a cache whose wheel of 1.0 (the release the demo set's patches were made on)
    no longer matches its RECORD; `port --offline --to 1.2`. Outcome: the port stops (3) on
    `first`, "no merge base", advising `sgpatch fetch 1.0` (the bad wheel removed); as typed
    it exits 0, and a port then stops on the merge itself, as with every release at hand."""
    from helpers import make_wheel
    from sgpatch.releases import download

    fake_index(monkeypatch)
    cache = port_cache(tmp_path, monkeypatch, versions=("1.2",))
    bad = {"sglang/srt/mod.py": "sha256=" + "A" * 43}
    make_wheel(cache / "wheels", "1.0", release_files(V10, "1.0"), record_overrides=bad)
    d = make_set(tmp_path)
    argv = ["port", "--offline", "--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
            "--workspace", str(tmp_path / "w")]  # fmt: skip
    code, _out, err = run_cli(*argv)
    assert code == 3 and "no merge base" in err and "`sgpatch fetch 1.0`" in err, err
    monkeypatch.setattr(download, "_pip_download", _made_wheel)
    (fetch,) = [c for c in hint_commands(err) if c[0] == "fetch"]
    assert run_cli(*fetch)[0] == 0
    code, _out, err = run_cli(*argv[:-1], str(tmp_path / "w2"))
    assert code == 3 and "no merge base" not in err


def _snapshot_tree(tmp_path: Path, version: str, text: str = V12) -> Path:
    return _tree(tmp_path / f"tree-{version}", text, version)


def _to_tree(d: Path, tree: Path, w: Path) -> tuple[int, str]:
    code, _out, err = run_cli("port", "--set", "demo", "--patchsets", str(d.parent),
                              "--to-tree", str(tree), "--workspace", str(w))  # fmt: skip
    return code, err


def test_a_port_onto_a_tree_that_is_not_pristine(releases, tmp_path) -> None:
    """Input: `port --to-tree` onto a snapshot (1.1.dev1) holding the journal of an
    interrupted run, then onto one with the demo set applied. Outcome: exit 2 advising
    `sgpatch recover --sglang-dir TREE`, then `sgpatch revert --set demo --sglang-dir TREE
    --patchsets SETS`; each as typed exits 0, and the port then goes on (0 or 3)."""
    from sgpatch.state.txn import FileChange, write_journal

    d = make_set(tmp_path)
    tree = _snapshot_tree(tmp_path, "1.1.dev1", V10)  # the set applies to it as to 1.0
    mod = (tree / "srt/mod.py").read_bytes()
    write_journal(tree / ".sgpatch", [FileChange("srt/mod.py", mod, b"half\n")], {})
    (tree / "srt/mod.py").write_bytes(b"half\n")
    code, err = _to_tree(d, tree, tmp_path / "w1")
    assert code == 2 and "`sgpatch recover --sglang-dir" in err
    _runs(err)
    assert (tree / "srt/mod.py").read_bytes() == mod
    assert run_cli("apply", "--set", "demo", "--patchsets", str(d.parent), "--sglang-dir",
                   str(tree), "--untested")[0] == 0  # fmt: skip
    code, err = _to_tree(d, tree, tmp_path / "w2")
    assert code == 2 and "`sgpatch revert --set demo --sglang-dir" in err
    _runs(err)
    assert _to_tree(d, tree, tmp_path / "w3")[0] in (0, 3)


def test_a_port_onto_a_release_tree(releases, tmp_path) -> None:
    """Input: `port --to-tree` onto a tree of the release 1.2 (a release, not a snapshot).
    Outcome: exit 2 advising `sgpatch port --set demo --patchsets SETS --to 1.2 --workspace
    W`, which as typed stops for its hand (3), as a port to 1.2 does."""
    d = make_set(tmp_path)
    code, err = _to_tree(d, _snapshot_tree(tmp_path, "1.2"), tmp_path / "w")
    assert code == 2
    _runs(err, ok=(3,))
