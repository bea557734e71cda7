"""cli: the habits people bring from git and pip (-h, -V, help CMD, completion, --json on
every reporting command, one-line summaries, one meaning per short flag)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import make_env, patched, run_cli, tree_snapshot
from sgpatch import __version__
from sgpatch.cli.app import app


def test_dash_h_is_help_for_the_app_and_every_command() -> None:
    """Input: `sgpatch -h` and `sgpatch CMD -h` for every command. Outcome: exit 0 and the
    same text as --help."""
    for cmd in [[], *([c.name] for c in app.registered_commands)]:
        short, long_ = run_cli(*cmd, "-h"), run_cli(*cmd, "--help")
        assert short[0] == 0 and short == long_, cmd
        assert "Usage: sgpatch" in short[1]


def test_dash_capital_v_prints_the_version() -> None:
    """Input: `sgpatch -V`. Outcome: exit 0, `sgpatch <version>` on stdout, as --version."""
    assert run_cli("-V") == (0, f"sgpatch {__version__}\n", "")
    assert run_cli("-V") == run_cli("--version")


def test_help_command_prints_a_commands_help_and_refuses_unknown_names() -> None:
    """Input: `sgpatch help status`, `sgpatch help`, `sgpatch help nope`. Outcome: the first is
    status's --help text (from `Usage: sgpatch status` on), the second the app's help, the
    third exit 2 with one error line and nothing on stdout."""
    code, out, _ = run_cli("help", "status")
    _, direct, _ = run_cli("status", "--help")
    assert code == 0 and out.strip() == direct.strip()
    code, out, _ = run_cli("help")
    assert code == 0 and "Commands:" in out and "status" in out
    code, out, err = run_cli("help", "nope")
    assert code == 2 and out == "" and err.count("\n") == 1 and "no such command" in err


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_a_script_for_each_shell(shell: str) -> None:
    """Input: `sgpatch completion SHELL`. Outcome: exit 0 and a script on stdout that calls
    sgpatch back through _SGPATCH_COMPLETE."""
    code, out, _ = run_cli("completion", shell)
    assert code == 0 and "_SGPATCH_COMPLETE" in out


def test_completion_installs_as_cli_md_says_in_a_fresh_home(tmp_path: Path) -> None:
    """Input: docs/cli.md's completion block, run by bash line by line as typed, with HOME an
    empty folder and this sgpatch on PATH. Outcome: every line exits 0 (the folders made
    first), and each shell's script is where the block puts it, as `completion SHELL` prints
    it."""
    import re

    binary = Path(sys.executable).parent / "sgpatch"
    if not binary.exists():
        pytest.skip("no sgpatch console script beside this Python")
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    (block,) = [b for b in re.findall(r"```bash\n(.*?)```", page, re.S) if "completion bash" in b]
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": f"{binary.parent}:{os.environ['PATH']}"}
    for line in block.splitlines():
        done = subprocess.run(["bash", "-c", line], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, (line, done.stderr)
    where = {"bash": ".local/share/bash-completion/completions/sgpatch",
             "zsh": ".zfunc/_sgpatch", "fish": ".config/fish/completions/sgpatch.fish"}  # fmt: skip
    for shell, rel in where.items():
        assert (home / rel).read_text() == run_cli("completion", shell)[1], shell


def test_completion_refuses_an_unknown_shell() -> None:
    """Input: `sgpatch completion tcsh`. Outcome: exit 2, one line naming the shells."""
    code, out, err = run_cli("completion", "tcsh")
    assert code == 2 and out == "" and "bash, zsh, fish" in err


def _complete(words: str, cword: int) -> list[str]:
    env = {
        **os.environ,
        "_SGPATCH_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(cword),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "sgpatch"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_tab_completes_commands_and_options() -> None:
    """Input: what bash's completion script sends for `sgpatch st<Tab>` and
    `sgpatch apply --s<Tab>`. Outcome: `status`, and apply's options starting with --s."""
    assert _complete("sgpatch st", 1) == ["status"]
    assert {"--set", "--sglang-dir", "--strict"} <= set(_complete("sgpatch apply --s", 2))


def test_command_summaries_are_whole_sentences() -> None:
    """Input: `sgpatch --help` at 80 columns. Outcome: every command's summary ends with a
    full stop and none is cut with '...'."""
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run(
        [sys.executable, "-m", "sgpatch", "--help"], env=env, capture_output=True, text=True
    )
    commands = proc.stdout.split("Commands:", 1)[1].strip().splitlines()
    assert len(commands) == len(app.registered_commands)
    for line in commands:
        assert line.rstrip().endswith(".") and "..." not in line, line
        assert len(line) <= 80, line


@pytest.mark.parametrize("cmd", ["matrix", "lint"])
def test_json_contradicting_format_is_refused(cmd: str) -> None:
    """Input: `matrix/lint --json --format markdown|github`. Outcome: exit 2, one error line,
    nothing computed (no release is looked up)."""
    fmt = "markdown" if cmd == "matrix" else "github"
    code, out, err = run_cli(cmd, "--set", "kimi-eagle3-sm120", "--json", "--format", fmt)
    assert code == 2 and "contradict" in err
    assert json.loads(out)["exit_code"] == 2


def test_short_flags_mean_one_thing() -> None:
    """Input: every command's options. Outcome: each short flag has one long spelling across
    all commands (-p is --strip, -s is --set), hidden aliases aside."""
    import typer

    meaning: dict[str, set[str]] = {}
    group = typer.main.get_command(app)
    for name in group.list_commands(None):
        for p in group.get_command(None, name).params:
            if getattr(p, "hidden", False):
                continue
            longs = [o for o in p.opts if o.startswith("--")]
            for o in p.opts:
                if not o.startswith("--") and longs:
                    meaning.setdefault(o, set()).update(longs)
    assert all(len(v) == 1 for v in meaning.values()), meaning
    assert meaning["-p"] == {"--strip"} and meaning["-s"] == {"--set"}


def test_refresh_dash_p_still_works_for_one_release_with_a_warning(tmp_path) -> None:
    """Input: `refresh -p ID` (the old spelling of --patch) on a folder that is no SGLang tree,
    and `refresh` with no patch id. Outcome: the first warns that -p is deprecated, then fails
    on the tree as --patch would (exit 2); the second is exit 2 'missing option --patch'."""
    args = ("refresh", "--set", "kimi-eagle3-sm120", "--sglang-dir", str(tmp_path))
    code, _, err = run_cli(*args, "-p", "kimi-k25-eagle3-hooks")
    _, _, plain_err = run_cli(*args, "--patch", "kimi-k25-eagle3-hooks")
    first, *rest = err.splitlines()
    assert code == 2 and "-p is deprecated" in first and "use --patch" in first
    assert rest == plain_err.splitlines()
    code, _, err = run_cli(*args)
    assert code == 2 and "missing option --patch" in err


def test_a_listing_to_a_full_disk_is_one_error_line() -> None:
    """Input: `sgpatch list > /dev/full` (its product on stdout cannot be written). Outcome:
    exit 2 and one `sgpatch: error:` line on stderr, no Python 'Exception ignored' noise."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "sgpatch", "list"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "sgpatch: error: cannot write to stdout: No space left on device"
    ]


ONLY_OUTPUT = [
    ["--version"],
    ["--help"],
    ["apply", "--help"],
    ["help", "apply"],
    ["completion", "bash"],
]  # commands whose whole work is printing


@pytest.mark.parametrize("argv", ONLY_OUTPUT, ids=" ".join)
def test_printing_to_a_full_disk_is_one_error_line(argv: list[str]) -> None:
    """Input: `sgpatch --version`, `--help`, `apply --help`, `help apply`, `completion bash`,
    each with stdout on /dev/full. Outcome: exit 2 and the one `cannot write to stdout` line
    (was exit 70, an internal error, for all five)."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "sgpatch", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert (proc.returncode, proc.stderr) == (
        2,
        "sgpatch: error: cannot write to stdout: No space left on device\n",
    )


@pytest.mark.parametrize("argv", ONLY_OUTPUT, ids=" ".join)
def test_printing_to_a_closed_stdout_prints_nothing_and_succeeds(argv: list[str]) -> None:
    """Input: the same commands started with stdout closed (`>&-`). Outcome: exit 0, nothing
    on stderr (was exit 70: `'NoneType' object has no attribute 'write'`)."""
    cmd = " ".join([shlex.quote(sys.executable), "-m", "sgpatch", *argv, ">&-"])
    proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_a_patch_read_from_a_closed_stdin_is_an_empty_patch(tmp_path) -> None:
    """Input: `sgpatch patch -p1 <&-` in an empty folder. Outcome: exit 2, one line saying the
    patch on stdin is empty (was exit 70 on `sys.stdin` being None); nothing written."""
    cmd = " ".join([shlex.quote(sys.executable), "-m", "sgpatch", "patch", "-p1", "<&-"])
    proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == "sgpatch: error: <stdin>: empty patch file\n"
    assert os.listdir(tmp_path) == []


def test_an_error_line_shows_control_characters_escaped(tmp_path) -> None:
    """Input: `--sglang-dir` holding a newline and a terminal escape (ESC [31m). Outcome: exit 2
    and one line on stderr with them written as `\\n` and `\\x1b`; the JSON error document
    keeps the path exact."""
    odd = str(tmp_path / "a\nb\x1b[31m")
    code, out, err = run_cli("status", "--sglang-dir", odd, "--json")
    assert code == 2 and err.count("\n") == 1 and "\x1b" not in err
    assert "a\\nb\\x1b[31m" in err
    assert odd in json.loads(out)["error"]


def test_a_log_holding_both_streams_keeps_the_verdict_last(tmp_path) -> None:
    """Input: `sgpatch probe` on a tiny tree with stdout and stderr into one file (a build log;
    stdout is block-buffered there). Outcome: the findings come first, the verdict line last."""
    pkg = tmp_path / "sglang"
    (pkg / "srt").mkdir(parents=True)
    (pkg / "_version.py").write_text("__version__ = version = '0.5.9'\n")
    log = tmp_path / "log"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as in a build
    args = ["probe", "--set", "kimi-eagle3-sm120", "--sglang-dir", str(pkg)]
    with open(log, "w") as both:
        subprocess.run(
            [sys.executable, "-m", "sgpatch", *args],
            stdout=both,
            stderr=subprocess.STDOUT,
            check=True,
            env=env,
        )
    lines = log.read_text().splitlines()
    assert lines[0].startswith("sglang 0.5.9 at ")
    assert lines[-1].startswith("sgpatch: kimi-eagle3-sm120: 0 of ")


def test_start_up_ctrl_c_says_the_same_line_as_a_command_interrupted() -> None:
    """Input: the start-up SIGINT handler's text in `sgpatch.__main__` (bytes, set before any
    sgpatch import) and `interrupts.MESSAGE` (what cli prints when a command is interrupted).
    Outcome: the same line, so a Ctrl-C reads the same whenever it lands."""
    from sgpatch import __main__ as entry
    from sgpatch import interrupts

    assert (interrupts.MESSAGE + "\n").encode() == entry._MESSAGE


# --- the error boundary (issue 22, item 4)


def _boom(*args: object, **kwargs: object) -> int:
    raise RuntimeError("boom\n  on two lines")


def _listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_an_unexpected_exception_is_one_line_and_exit_70(tmp_path, monkeypatch) -> None:
    """Input: `status` whose code raises a RuntimeError (a bug) with a two-line message.
    Outcome: exit 70, nothing on stdout, exactly one stderr line `sgpatch: internal error:
    RuntimeError: boom on two lines (a bug in sgpatch; SGPATCH_DEBUG=1 shows the traceback)`,
    no traceback; the tree byte-identical and no file (no log) written anywhere under tmp."""
    import sgpatch.cli.status

    pkg, _, args = make_env(tmp_path)
    before, files = tree_snapshot(pkg), _listing(tmp_path)
    monkeypatch.delenv("SGPATCH_DEBUG", raising=False)
    monkeypatch.setattr(sgpatch.cli.status, "run", _boom)
    code, out, err = run_cli("status", *args)
    assert code == 70 and out == ""
    assert err == (
        "sgpatch: internal error: RuntimeError: boom on two lines (a bug in sgpatch; "
        "SGPATCH_DEBUG=1 shows the traceback)\n"
    )
    assert tree_snapshot(pkg) == before and _listing(tmp_path) == files


def test_an_internal_error_under_json_is_the_error_document(tmp_path, monkeypatch) -> None:
    """Input: the same bug under `status --json`; and an ordinary error (an unknown set) under
    --json. Outcome: exit 70 and one document `{"schema": 2, "error": ..., "exit_code": 70,
    "internal": true}`; the ordinary error is the same shape with `"internal": false` and its
    own code (2)."""
    import sgpatch.cli.status

    pkg, _, args = make_env(tmp_path)
    monkeypatch.setattr(sgpatch.cli.status, "run", _boom)
    code, out, err = run_cli("status", *args, "--json")
    doc = json.loads(out)
    assert code == 70 and err.count("\n") == 1
    assert doc == {
        "schema": 2,
        "error": "RuntimeError: boom on two lines (a bug in sgpatch; SGPATCH_DEBUG=1 shows the "
        "traceback)",
        "exit_code": 70,
        "internal": True,
    }
    monkeypatch.undo()
    code, out, _ = run_cli("apply", "--sglang-dir", str(pkg), "--set", "nope", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["schema"] == 2 and doc["internal"] is False
    assert doc["exit_code"] == 2 and "unknown patch set 'nope'" in doc["error"]


def test_sgpatch_debug_prints_the_traceback_on_stderr(tmp_path, monkeypatch) -> None:
    """Input: the same bug with SGPATCH_DEBUG=1. Outcome: exit 70, the traceback on stderr
    (naming the function that raised), then the one line; stdout empty."""
    import sgpatch.cli.status

    _, _, args = make_env(tmp_path)
    monkeypatch.setenv("SGPATCH_DEBUG", "1")
    monkeypatch.setattr(sgpatch.cli.status, "run", _boom)
    code, out, err = run_cli("status", *args)
    assert code == 70 and out == ""
    assert err.startswith("Traceback (most recent call last):") and "in _boom" in err
    assert err.splitlines()[-1].startswith("sgpatch: internal error: RuntimeError: boom")


def test_a_real_process_exits_70_on_a_bug(tmp_path) -> None:
    """Input: a real `python -m sgpatch`-style process (sgpatch.__main__.main) whose status
    command raises a KeyError. Outcome: exit 70 and one stderr line, no traceback, nothing on
    stdout (the console script's own exit path, `os._exit` included)."""
    _, _, args = make_env(tmp_path)
    code = (
        "import sys, sgpatch.cli.status as s\n"
        "def boom(*a, **k): raise KeyError('srt/x.py')\n"
        "s.run = boom\n"
        f"sys.argv = ['sgpatch', 'status', *{list(args)!r}]\n"
        "from sgpatch.__main__ import main\n"
        "main()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "SGPATCH_DEBUG"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 70 and proc.stdout == ""
    assert proc.stderr == (
        "sgpatch: internal error: KeyError: 'srt/x.py' (a bug in sgpatch; SGPATCH_DEBUG=1 "
        "shows the traceback)\n"
    )


@pytest.mark.parametrize("command", ["status", "apply"])
def test_output_the_terminal_cannot_encode_is_replaced(tmp_path, command: str) -> None:
    """Input: a tree under `prüfung/`, `sgpatch status` / `apply` in a real process with
    PYTHONIOENCODING=ascii (stdout and stderr both ASCII). Outcome: exit 0, no traceback, the
    path printed with a replacement character (`pr?fung` on stdout, `pr\\xfcfung` on stderr);
    apply still patches the tree."""
    pkg, _, args = make_env(tmp_path / "prüfung")
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run(
        [sys.executable, "-m", "sgpatch", command, *args],
        capture_output=True,
        env=env,
        check=False,
    )
    out, err = proc.stdout.decode("ascii"), proc.stderr.decode("ascii")
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    shown = out if command == "status" else err
    assert "pr?fung" in shown or "pr\\xfcfung" in shown
    assert patched(pkg) == (command == "apply")
