#!/usr/bin/env python3
"""GNU patch's command line, translated for the tool under test (bench/suites.py).

    suite_adapter.py gnu-patch|git-apply|sgpatch [GNU patch arguments...]

Exit 125 when the tool has no equivalent of what was asked (backups, reject files, ed or
context diffs, an explicit file to patch, ...): the runner counts that step as n/a.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

VALUE = {"-p", "-i", "-d", "-F", "-o", "-r", "-B", "-Y", "-z", "-V", "-D", "-g", "-x"}
LONG_VALUE = {"--strip", "--input", "--directory", "--fuzz", "--get"}
IGNORED = {
    "-f",
    "--force",
    "-t",
    "--batch",
    "-s",
    "--silent",
    "--quiet",
    "-u",
    "--unified",
    "--verbose",
    "-l",
    "--ignore-whitespace",
    "--no-backup-if-mismatch",
    "--binary",
    "-g",
    "--get",
}
KEPT = {"-R", "--reverse", "-N", "--forward", "-E", "--remove-empty-files", "--dry-run"}
UNSUPPORTED = 125


def parse(argv: list[str]) -> tuple[dict[str, str], set[str], list[str]] | None:
    """GNU options -> (values, flags, positionals); None when an option has no equivalent."""
    values: dict[str, str] = {}
    flags: set[str] = set()
    pos: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a.startswith("--") and "=" in a:
            key, val = a.split("=", 1)
            if key not in LONG_VALUE:
                return None
            values[
                {"--strip": "-p", "--input": "-i", "--directory": "-d", "--fuzz": "-F"}.get(
                    key, key
                )
            ] = val
        elif a in LONG_VALUE:
            key = {"--strip": "-p", "--input": "-i", "--directory": "-d", "--fuzz": "-F"}.get(a, a)
            values[key], i = argv[i], i + 1
        elif re.match(r"^-[a-zA-Z]", a) and a[:2] in VALUE:
            if len(a) > 2:
                values[a[:2]] = a[2:]
            else:
                values[a[:2]], i = argv[i], i + 1
        elif a in IGNORED or a in KEPT:
            flags.add(a)
        elif re.match(r"^-[a-zA-Z]{2,}$", a):  # bundled short flags: -fN, -sR, ...
            for ch in a[1:]:
                if f"-{ch}" not in IGNORED | KEPT:
                    return None
                flags.add(f"-{ch}")
        elif a.startswith("-") and a != "-":
            return None
        else:
            pos.append(a)
    if set(values) - {"-p", "-i", "-d", "-F", "-g"}:
        return None
    return values, flags, pos


def default_strip(patch: bytes) -> str:
    """GNU patch without -p keeps the base name only; strip every folder of the first name."""
    for line in patch.decode("utf-8", "replace").splitlines():
        if line.startswith(("--- ", "+++ ")):
            name = line[4:].split("\t")[0].strip()
            if name != "/dev/null":
                return str(name.count("/"))
    return "0"


def main(argv: list[str]) -> int:
    if argv[0] == "--git":
        return git_main(argv[1], argv[2:])
    tool, args = argv[0], argv[1:]
    if tool == "gnu-patch":
        return subprocess.run(["patch", *args]).returncode
    parsed = parse(args)
    if parsed is None:
        return UNSUPPORTED
    values, flags, pos = parsed
    if pos:
        return UNSUPPORTED  # an explicit file to patch: neither git apply nor sgpatch has it
    source = values.get("-i") or "-"
    data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    if not re.search(rb"^@@ -\d", data, re.M) and re.search(
        rb"^(\*{15}|\d+(,\d+)?[acd]\d)", data, re.M
    ):
        return UNSUPPORTED  # a context, normal or ed diff: unified diffs only
    strip = values.get("-p") or default_strip(data)
    cwd = values.get("-d") or "."
    reverse = bool(flags & {"-R", "--reverse"})
    if tool == "git-apply":
        cmd = ["git", "apply", f"-p{strip}", *(["-R"] if reverse else [])]
        cmd += ["--check"] if "--dry-run" in flags else []
    else:
        fuzz = min(int(values.get("-F", "2")), 2)
        cmd = [sys.executable, "-m", "sgpatch", "patch", "-p", strip, "--fuzz", str(fuzz)]
        cmd += ["-R"] if reverse else []
        cmd += ["-E"] if flags & {"-E", "--remove-empty-files"} else []
        cmd += ["--dry-run"] if "--dry-run" in flags else []
    return subprocess.run([*cmd, "-"], input=data, cwd=cwd, env=os.environ).returncode


# --------------------------------------------------------------------------- git's t41xx side

GIT = os.environ.get("SUITE_REAL_GIT", "/usr/bin/git")
GIT_IGNORED = {"-v", "--verbose", "--unidiff-zero", "--binary", "--apply", "--whitespace=nowarn"}
GIT_IGNORED |= {"--whitespace=warn", "--no-color", "-q", "--quiet"}


def git_main(tool: str, argv: list[str]) -> int:
    """`git ...` for git's own test scripts: everything goes to the real git except `apply`,
    which the tool under test does (with `--index`: the touched paths are then staged)."""
    i = next((k for k, a in enumerate(argv) if not a.startswith("-")), len(argv))
    if i >= len(argv) or argv[i] != "apply" or tool == "git-apply":
        return subprocess.run([GIT, *argv]).returncode
    _mark("SUITE-CALL")
    opts = parse_git_apply(argv[i + 1 :])
    if opts is None:
        _mark("SUITE-NA")
        return UNSUPPORTED
    strip, reverse, check, index, files = opts
    data = b"".join(
        sys.stdin.buffer.read() if f == "-" else Path(f).read_bytes() for f in files or ["-"]
    )
    if strip is None:  # git guesses -p for a traditional diff; a git diff is -p1
        strip = "1" if re.search(rb"^diff --git ", data, re.M) else default_strip(data)
    top = subprocess.run([GIT, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    cwd = top.stdout.strip() if top.returncode == 0 else "."
    if tool == "gnu-patch":
        cmd = ["patch", f"-p{strip}", "-f", "-s", "--no-backup-if-mismatch"]
        cmd += (["-R"] if reverse else []) + (["--dry-run"] if check else [])
    else:
        cmd = [sys.executable, "-m", "sgpatch", "patch", "-p", strip, "--json"]
        cmd += (["-R"] if reverse else []) + (["--dry-run"] if check else [])
        cmd += ["-"]
    proc = subprocess.run(cmd, input=data, cwd=cwd, capture_output=True)
    sys.stderr.write(proc.stderr.decode(errors="replace"))
    if proc.returncode == 0 and index and not check:
        paths = touched(data)
        subprocess.run([GIT, "add", "-A", "--", *paths], cwd=cwd, capture_output=True)
    return proc.returncode


def _mark(word: str) -> None:
    """Tell the runner, also when the test redirected our stderr: git's test library keeps
    its verbose output open on fd 4 inside test bodies."""
    try:
        os.write(4, f"{word}\n".encode())
    except OSError:
        print(word, file=sys.stderr)


def parse_git_apply(args: list[str]) -> tuple[str | None, bool, bool, bool, list[str]] | None:
    strip: str | None = None
    reverse, check, index = False, False, False
    files: list[str] = []
    for a in args:
        if a in GIT_IGNORED:
            continue
        if re.match(r"^-p\d+$", a):
            strip = a[2:]
        elif a in ("-R", "--reverse"):
            reverse = True
        elif a == "--check":
            check = True
        elif a == "--index":
            index = True
        elif a.startswith("-") and a != "-":
            return None  # --cached, --3way, --reject, --directory, --stat, -C, --whitespace=fix
        else:
            files.append(a)
    return strip, reverse, check, index, files


def touched(data: bytes) -> list[str]:
    """Paths a git diff names (a/ and b/ sides, renames included), for `git add -A`."""
    out = set()
    for line in data.decode("utf-8", "replace").splitlines():
        m = re.match(r"^diff --git a/(\S+) b/(\S+)$", line)
        if m:
            out.update(m.groups())
    return sorted(out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
