"""Small builders shared by the unit tests: make diffs and run the engine on lists of lines."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from sgpatch.diffs import Patch, parse_patch, split_lines
from sgpatch.engine import FileResult, apply_hunks


def make_diff(old: str, new: str, path: str = "f.py", n: int = 3) -> str:
    """A git-style unified diff of two texts (what `diff -u` / `git diff` would write)."""
    body = difflib.unified_diff(
        split_lines(old), split_lines(new), f"a/{path}", f"b/{path}", n=n, lineterm="\n"
    )
    out = []
    for line in body:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def patch_of(old: str, new: str, path: str = "f.py", n: int = 3) -> Patch:
    return parse_patch(make_diff(old, new, path, n), "test.patch")


def run(text: str, patch: Patch | str, fuzz: int = 0, reverse: bool = False) -> FileResult:
    if isinstance(patch, str):
        patch = parse_patch(patch, "test.patch")
    return apply_hunks(split_lines(text), patch.files[0].hunks, fuzz=fuzz, reverse=reverse)


def text(result: FileResult) -> str:
    return "".join(result.lines)


def lines(*items: str) -> str:
    return "".join(f"{i}\n" for i in items)


def statuses(result: FileResult) -> list[str]:
    return [h.status for h in result.hunks]


def numbered(prefix: str, count: int) -> Sequence[str]:
    return [f"{prefix}{i}" for i in range(count)]


def sgpatch(*args: str) -> int:
    """Run the CLI in-process (fast: no interpreter start-up) and return its exit code."""
    from sgpatch.cli import main

    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def git(repo, *args: str) -> str:
    """Run git in `repo` with a fixed identity and no user/system config; return stdout."""
    import os
    import subprocess

    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    out = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return out.stdout.decode().strip()


def run_cli(*argv: str) -> tuple[int, str, str]:
    """sgpatch in-process with its own capture: (exit code, stdout, stderr). For tests that
    cannot use capsys (forked children, several runs per test)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = sgpatch(*argv)
    return code, out.getvalue(), err.getvalue()
