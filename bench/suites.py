#!/usr/bin/env python3
"""Peer test suites, side by side: GNU patch's own tests/ run with GNU patch, `git apply` and
sgpatch in its place ("make bench").

The suites are GPL-licensed, so nothing of them is in this repository: the runner reads them
from a fetched copy (a git mirror of GNU patch, e.g. github.com/mirror/patch) given by
`--gnu-patch DIR` or $SGPATCH_SUITE_GNU_PATCH, and skips cleanly when there is none. Each
upstream script runs unchanged in a scratch folder, with its test library's `_check` replaced by
one that scores outcomes instead of messages (every tool words its messages differently):

    apply step    a check whose command runs `patch`: correct when the tool failed exactly
                  when GNU's expected output says it fails ("Status: N")
    outcome step  any other check (`cat f`, `ls`, ...): correct when its output is as expected

A step the tool cannot express (an option it does not have: backups, reject files, ed or
context diffs, an explicit file to patch, ...) is n/a, and so is every later step of that
script (the tree no longer is what the script expects). A check that reads a reject (.rej) or
backup (.orig) file is n/a for every tool: those are GNU patch features, not placement.
GNU patch is scored too: a step it fails shows where its own expectations assume something
(e.g. a locale or a GNU diff).

    python bench/suites.py --gnu-patch /path/to/patch-mirror [--out docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parent)
)  # bench/docsection.py, also when loaded by path

REPO = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- suites:begin -->", "<!-- suites:end -->"
ENV_GNU = "SGPATCH_SUITE_GNU_PATCH"
ENV_GIT = "SGPATCH_SUITE_GIT"
GIT_SCRIPTS = re.compile(r"^t41[0-4]\d-apply-[\w-]+\.sh$")
TOOLS = ("gnu-patch", "git-apply", "sgpatch")
SKIP = {"test-lib.sh", "Makefile.am"}
TIMEOUT = 120
VERBOSE = False

# `_check` replaced: score outcomes, not messages. $SUITE_LOG gets one line per step.
CHECK_SHIM = r"""
_suite_is_apply() {
    printf '%s\n' "$*" | grep -Eq '(^|[;&|(`]|then|do)[[:space:]]*patch([[:space:];|&)]|$)'
}
_check() {
    expected=`cat`
    rm -f "$SUITE_STATUS"
    got=`set +x; eval "$*" 3>&2 </dev/null 2>&1`
    case "$*" in *.rej*|*.orig*)  # reject and backup files: features, not placement
        echo "na" >> "$SUITE_LOG"; return;;
    esac
    if test -e "$SUITE_NA" || grep -q '^125$' "$SUITE_STATUS" 2>/dev/null; then
        : > "$SUITE_NA"; echo "na" >> "$SUITE_LOG"; return
    fi
    if _suite_is_apply "$*"; then
        want=ok; printf '%s\n' "$expected" | grep -qi 'status: [1-9]' && want=fail
        have=ok; grep -qv '^0$' "$SUITE_STATUS" 2>/dev/null && have=fail
        if test "$want" = "$have"; then echo "ok apply" >> "$SUITE_LOG"
        else printf 'FAILED apply\t%s\n' "$*" >> "$SUITE_LOG"; fi
    elif test "$expected" = "$got"; then echo "ok outcome" >> "$SUITE_LOG"
    else printf 'FAILED outcome\t%s\n' "$*" >> "$SUITE_LOG"; fi
}
"""

# One `patch` per tool: a wrapper that records its exit status (125: the tool cannot do it).
WRAPPER = """#!/bin/sh
"{python}" "{adapter}" {tool} "$@"
rc=$?
echo $rc >> "$SUITE_STATUS"
exit $rc
"""


# git's t/ runs against the installed git (GIT_TEST_INSTALLED) with no build: it needs a
# GIT-BUILD-OPTIONS file and a `test-tool` for the few helpers its test library calls.
GIT_BUILD_OPTIONS = """SHELL_PATH='/bin/sh'
PERL_PATH='/usr/bin/perl'
TEST_SHELL_PATH='/bin/sh'
DIFF='diff'
PYTHON_PATH='/usr/bin/python3'
X=''
"""
TEST_TOOL = r"""#!/bin/sh
case "$1" in
env-helper)
  shift; def=; code=
  for a; do case "$a" in --default=*) def=${a#--default=};; --type=*) ;;
    --exit-code) code=1;; *) var=$a;; esac; done
  eval "val=\${$var-$def}"
  case "$val" in true|yes|on|1) r=0;; *) r=1;; esac
  if test -z "$code"; then if test $r = 0; then echo true; else echo false; fi; exit 0; fi
  exit $r;;
path-utils) case "$2" in file-size) stat -c %s "$3";; *) realpath -m "$3";; esac;;
date) exit 0;;
*) echo "test-tool stub: $*" >&2; exit 1;;
esac
"""
GIT_WRAPPER = """#!/bin/sh
for a; do case "$a" in apply) exec "{python}" "{adapter}" --git {tool} "$@";; -*) ;; *) break;; esac
done
exec "{git}" "$@"
"""


def gnu_dir(arg: str | None) -> Path | None:
    path = arg or os.environ.get(ENV_GNU)
    return Path(path) if path else None


def read_suite(mirror: Path) -> dict[str, str]:
    """The upstream tests/ folder from a mirror: a work tree, or a bare git folder (HEAD)."""
    if (mirror / "tests" / "test-lib.sh").is_file():
        return {p.name: p.read_text() for p in (mirror / "tests").iterdir() if p.is_file()}
    git = ["git", "-C", str(mirror)]
    names = subprocess.run(
        [*git, "ls-tree", "--name-only", "HEAD", "tests/"], capture_output=True, text=True
    ).stdout.split()
    out = {}
    for name in names:
        show = subprocess.run([*git, "show", f"HEAD:{name}"], capture_output=True)
        if show.returncode == 0:
            out[Path(name).name] = show.stdout.decode("utf-8", "replace")
    return out


def run_script(name: str, suite: dict[str, str], tool: str, work: Path) -> Counter:
    """Run one upstream script with `tool` as its patch; count ok / FAILED / na per step kind."""
    build = work / f"{tool}-{name}"
    tests = build / "tests"
    tests.mkdir(parents=True)
    for fname, text in suite.items():
        (tests / fname).write_text(text)
    (tests / "test-lib.sh").write_text(suite["test-lib.sh"] + CHECK_SHIM)
    bindir = build / "bin"
    bindir.mkdir()
    wrapper = bindir / "patch"
    wrapper.write_text(
        WRAPPER.format(
            python=sys.executable, adapter=Path(__file__).with_name("suite_adapter.py"), tool=tool
        )
    )
    wrapper.chmod(0o755)
    env = {
        **os.environ,
        "srcdir": str(tests),
        "abs_top_builddir": str(build),
        "PATCH": str(wrapper),
        "SUITE_LOG": str(build / "log"),
        "SUITE_STATUS": str(build / "status"),
        "SUITE_NA": str(build / "na"),
        "PYTHONPATH": str(REPO / "src"),
        "LC_ALL": "C",
    }
    (build / "log").write_text("")
    with contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run(
            ["bash", str(tests / name)], cwd=tests, env=env, capture_output=True, timeout=TIMEOUT
        )
    steps = [ln.split("\t", 1) for ln in (build / "log").read_text().splitlines() if ln.strip()]
    if VERBOSE:
        for step in steps:
            if len(step) == 2:
                print(f"{tool} {name}: {step[0]}: {step[1]}", file=sys.stderr)
    return Counter(step[0].strip() for step in steps)


def prepare_git(mirror: Path, work: Path, tools: tuple[str, ...]) -> Path:
    """git's t/ from the mirror into `work`, with the stubs a build would have made."""
    root = work / "git"
    root.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(mirror), "archive", "HEAD", "t/"], capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    (root / "GIT-BUILD-OPTIONS").write_text(GIT_BUILD_OPTIONS)
    helper = root / "t" / "helper"
    helper.mkdir(exist_ok=True)
    (helper / "test-tool").write_text(TEST_TOOL)
    (helper / "test-tool").chmod(0o755)
    real = shutil.which("git") or "/usr/bin/git"
    adapter = Path(__file__).with_name("suite_adapter.py")
    for tool in tools:
        bindir = root / f"bin-{tool}"
        bindir.mkdir()
        text = GIT_WRAPPER.format(python=sys.executable, adapter=adapter, tool=tool, git=real)
        (bindir / "git").write_text(
            text if tool != "git-apply" else f'#!/bin/sh\nexec "{real}" "$@"\n'
        )
        (bindir / "git").chmod(0o755)
    return root


def run_git_script(name: str, root: Path, tool: str) -> Counter:
    """One t41xx script with `tool` doing `git apply`; count its tests that call git apply."""
    templates = Path("/usr/share/git-core/templates")
    if not templates.is_dir():
        templates = root / "templates"
        templates.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "GIT_TEST_INSTALLED": str(root / f"bin-{tool}"),
        "GIT_TEST_DEFAULT_HASH": "sha1",
        "GIT_TEST_TEMPLATE_DIR": str(templates),
        "PYTHONPATH": str(REPO / "src"),
        "TEST_OUTPUT_DIRECTORY": str(root / f"out-{tool}"),
    }
    try:
        proc = subprocess.run(
            ["sh", name, "-v"],
            cwd=root / "t",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=TIMEOUT,
        )
        out = proc.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace")
    return _tap_counts(out, f"{tool} {name}")


def _tap_counts(out: str, label: str) -> Counter:
    """Tests whose body runs `git apply`: ok / FAILED, or na (the tool cannot express it)."""
    counts: Counter = Counter()
    section: list[str] = []
    tainted = False
    for line in out.splitlines():
        m = re.match(r"^(not ok|ok) \d+ - (.*)$", line)
        if not m:
            section.append(line)
            continue
        body = "\n".join(section)
        section = []
        if "# TODO" in line or "# skip" in line or "git apply" not in body:
            continue
        if "SUITE-NA" in body or tainted:
            counts["na"] += 1  # and every later test: the repository is not what it expects
            tainted = True
        elif m.group(1) == "ok":
            counts["ok apply"] += 1
        else:
            counts["FAILED apply"] += 1
            if VERBOSE:
                print(f"{label}: FAILED: {m.group(2)}", file=sys.stderr)
    return counts


def score_git(
    mirror: Path, tools: tuple[str, ...], only: list[str] | None
) -> dict[str, dict[str, Counter]]:
    names = subprocess.run(
        ["git", "-C", str(mirror), "ls-tree", "--name-only", "HEAD", "t/"],
        capture_output=True,
        text=True,
    ).stdout.split()
    scripts = sorted(Path(n).name for n in names if GIT_SCRIPTS.match(Path(n).name))
    scripts = [n for n in scripts if not only or n in only]
    results: dict[str, dict[str, Counter]] = {}
    with tempfile.TemporaryDirectory(prefix="sgpatch-suites-git-") as tmp:
        root = prepare_git(mirror, Path(tmp), tools)
        for name in scripts:
            results[name] = {t: run_git_script(name, root, t) for t in tools}
    return results


def score(suite: dict[str, str], tools: tuple[str, ...]) -> dict[str, dict[str, Counter]]:
    scripts = sorted(n for n in suite if n not in SKIP and "\n. $srcdir/test-lib.sh" in suite[n])
    results: dict[str, dict[str, Counter]] = {}
    with tempfile.TemporaryDirectory(prefix="sgpatch-suites-") as tmp:
        for name in scripts:
            results[name] = {t: run_script(name, suite, t, Path(tmp)) for t in tools}
    return results


def _cell(c: Counter) -> str:
    ok = c["ok apply"] + c["ok outcome"]
    bad = c["FAILED apply"] + c["FAILED outcome"]
    return f"{ok}/{ok + bad}" + (f" ({c['na']} n/a)" if c["na"] else "")


def markdown(results: dict[str, dict[str, Counter]], tools: tuple[str, ...], origin: str) -> str:
    return (
        f"GNU patch's own tests/ ({origin}), each step scored by outcome: correct steps / steps "
        "the tool could run (n/a: an option it does not have, and the rest of that script).\n\n"
        + table(results, tools)
    )


def table(results: dict[str, dict[str, Counter]], tools: tuple[str, ...]) -> str:
    head = "| script | " + " | ".join(tools) + " |\n|---|" + "---|" * len(tools) + "\n"
    rows = [f"| {n} | " + " | ".join(_cell(r[t]) for t in tools) + " |" for n, r in results.items()]
    total = {t: sum((r[t] for r in results.values()), Counter()) for t in tools}
    rows.append("| **all** | " + " | ".join(_cell(total[t]) for t in tools) + " |")
    return head + "\n".join(rows) + "\n"


def update_doc(path: Path, section: str) -> None:
    from docsection import update_section

    update_section(path, "suites", section, heading="## Peer test suites")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gnu-patch", help=f"GNU patch mirror (or ${ENV_GNU})")
    ap.add_argument("--git", help=f"git mirror, for t/t41xx-apply-* (or ${ENV_GIT})")
    ap.add_argument("--tools", nargs="+", default=list(TOOLS))
    ap.add_argument("--only", nargs="+", help="run only these upstream scripts")
    ap.add_argument("--out", type=Path, help="update the suites section of this Markdown file")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every failed step")
    args = ap.parse_args(argv)
    global VERBOSE
    VERBOSE = args.verbose
    tools = tuple(t for t in args.tools if t != "git-apply" or shutil.which("git"))
    parts = []
    gnu = gnu_dir(args.gnu_patch)
    if gnu is not None and gnu.exists() and "test-lib.sh" in (suite := read_suite(gnu)):
        if args.only:
            suite = {k: v for k, v in suite.items() if k in args.only or "." in k}
        parts.append(markdown(score(suite, tools), tools, _origin(gnu, "GNU patch")))
    else:
        print(f"suites: no GNU patch mirror (--gnu-patch or ${ENV_GNU}); skipped", file=sys.stderr)
    git = Path(args.git or os.environ.get(ENV_GIT) or "/nonexistent")
    if git.exists():
        results = score_git(git, tools, args.only)
        parts.append(
            f"git's t/t41xx-apply-* ({_origin(git, 'git')}), run against the installed git "
            f"({_git_version()}) with `git apply` done by each tool: tests that run `git apply`, "
            "passed / run (n/a: an option the tool does not have).\n\n" + table(results, tools)
        )
    else:
        print(f"suites: no git mirror (--git or ${ENV_GIT}); skipped", file=sys.stderr)
    if not parts:
        return 0
    section = (
        "\n".join(parts) + "\nRegenerate: `python bench/suites.py --gnu-patch DIR --git DIR --out "
        "docs/benchmarks.md` (see bench/README.md).\n"
    )
    print(section)
    if args.out:
        update_doc(args.out, section)
    return 0


def _git_version() -> str:
    out = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    return out.strip().removeprefix("git version ") or "?"


def _origin(mirror: Path, what: str) -> str:
    rev = subprocess.run(
        ["git", "-C", str(mirror), "log", "-1", "--format=%h %cs"], capture_output=True, text=True
    ).stdout.strip()
    return f"{what} at {rev}" if rev else what


if __name__ == "__main__":
    sys.exit(main())
