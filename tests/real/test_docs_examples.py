"""Every example `sgpatch ...` command in README.md and docs/ runs, on real release trees.

Commands are taken from the code blocks of each page (fenced and indented; `\\` continuations
joined): lines that start with `sgpatch`, or `$ sgpatch` in console blocks. Trailing `# comments`
and `; echo $?`-style suffixes are dropped. Each page gets its own workspace (the commands' working
directory) and runs its commands in the order the page gives them, so a page that applies and then
reverts sees its own effects. The placeholder paths of the docs map onto writable copies of real
releases from the release cache (`PLACEHOLDERS`), made on first use; `$SGLANG_DIR` points at the
page's 0.5.9 tree, standing in for "the installed sglang" of commands without `--sglang-dir`.
`stacks/` (import.md) is tests/data/stacks and `examples/` this repository's;
`./my-sets/my-set` (authoring.md) is a copy of the shipped set under that name, `fix.diff`
(cli.md) is the set's 0.5.9 Kimi patch and `/src/tree` a 0.5.9 checkout, and
`dup.diff`/`t.txt` are the duplicated-block scenario engine.md describes, written by
examples/duplicated_block.py as the page says.

Each command must exit with the code the page implies: 0, unless a console block prints
`exit N` after it or `EXPECT` says otherwise (with the reason the page gives), and never print a
traceback. Console blocks' `sgpatch: ...` summary lines must appear in the real output. What
cannot run here is in `SKIP` with the reason; a `SKIP` or `EXPECT` entry that matches nothing
fails the test, so neither list can rot.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from sgpatch.releases import cache as releases

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SET = "kimi-eagle3-sm120"
SET_DIR = REPO / "patchsets" / SET
KIMI_PATCH = SET_DIR / "patches" / "0.5.9" / "0001-kimi-k25-eagle3-hooks.patch"

# placeholder path -> (release, layout, what the path names: "site" = the folder holding
# sglang/, "repo" = a checkout's repository root)
PLACEHOLDERS: dict[str, tuple[str, str, str]] = {
    "/usr/lib/python3/site-packages": ("0.5.9", "site-packages", "site"),
    "/path/to/site-packages": ("0.5.9", "site-packages", "site"),
    "/path/to/sglang": ("0.5.9", "site-packages", "site"),
    "/tmp/docs-t59": ("0.5.9", "site-packages", "site"),
    "/tmp/t59": ("0.5.9", "site-packages", "site"),
    "/tmp/t510": ("0.5.10", "site-packages", "site"),
    "/tmp/t513": ("0.5.13", "site-packages", "site"),
    "/root/sglang": ("0.5.9", "checkout", "repo"),
    "/src/tree": ("0.5.9", "checkout", "repo"),
    "./sglang-fork": ("0.5.9", "checkout", "repo"),
    # snapshots (docs/tracking-main.md): a release's files labelled as a checkout of main
    "/sgl-workspace/sglang": ("0.5.23", "checkout", "repo"),
    "sglang-main": ("0.5.10", "checkout", "repo"),
    "./sglang-main": ("0.5.10", "checkout", "repo"),
}
# placeholder -> the version its _version.py says instead of the release's (LABELS), so it is
# a version the set was not checked on: 0.5.23's files after the 0.5.23 tag, 0.5.10's files
# shortly before the 0.5.10 tag (where the aux-capture patch stops a port)
LABELS: dict[str, str] = {
    "/sgl-workspace/sglang": "0.5.24.dev12+g1a2b3c4",
    "sglang-main": "0.5.10.dev3+gabc1234",
    "./sglang-main": "0.5.10.dev3+gabc1234",
}

# (page, block language or "" for any, regex on the command) -> why it is not run here
SKIP: dict[tuple[str, str, str], str] = {
    ("README.md", "dockerfile", r""): "a Dockerfile RUN line: tests/real/test_docker.py builds "
    "examples/Dockerfile, which has the same commands",
    ("docs/docker.md", "dockerfile", r""): "as README.md's: tests/real/test_docker.py",
    ("docs/ci.md", "yaml", r""): "GitHub Actions / pre-commit configuration (pip install sgpatch "
    "from the index, the newest release on the index)",
    ("docs/porting.md", "", r"^sgpatch port .*(--to 0\.5\.24|port-0\.5\.24)"): "0.5.24 is not "
    "released; port on real history is tests/real/test_port_real.py",
    (
        "docs/porting.md",
        "",
        r"^sgpatch port .*(--patchsets \./kset|--workspace w2|--workspace w14)",
    ): "the executed examples run on the 0.5.9-only copy of the set that "
    "tests/real/test_port_real.py makes (only_059), and their hand fixes; "
    "test_port_the_059_set_like_a_rebase runs these flows (0.5.10, 0.5.14)",
    ("docs/porting.md", "", r"^sgpatch port .*--patchsets \./sets"): "the moved-code stops run "
    "on sets made from the releases by tests/real/moved.py; tests/real/test_port_moved_real.py "
    "runs them and checks the page's output word for word",
    ("docs/cli.md", "", r"^sgpatch completion \w+ >"): "installs into the user's shell set-up; "
    "tests/test_cli.py checks each script and what Tab completes",
    ("docs/tracking-main.md", "dockerfile", r""): "a nightly image's RUN line: its commands are "
    "the bash block above it, run here on a relabelled 0.5.23 checkout",
    ("docs/tracking-main.md", "yaml", r""): "a GitHub Actions job (pip install sgpatch from the "
    "index, a clone of SGLang main); its commands are those of the page, run here",
    ("docs/tracking-main.md", "", r"--to 0\.5\.24"): "0.5.24 is not released; a port to the "
    "next release after a snapshot is tests/port/test_onto_tree.py's",
}

# (page, regex on the command) -> expected exit code, where the page says it is not 0
EXPECT: dict[tuple[str, str], int] = {
    # "sgpatch status --sglang-dir /tmp/t59 --check   # exit 1 while anything is pending/edited"
    ("docs/cli.md", r"^sgpatch status --sglang-dir \S+ --check$"): 1,
    # engine.md: "# exit 3, nothing written"
    ("docs/engine.md", r"^sgpatch patch -p0 --fuzz 0 dup\.diff$"): 3,
    # engine.md: "# exit 4, nothing written" (both copies match at fuzz 1: ambiguous, 46.17)
    ("docs/engine.md", r"^sgpatch patch -p0 --fuzz 1 dup\.diff$"): 4,
    # a port onto main shortly before 0.5.10 stops on the aux capture patch ("# exit 3: fix
    # what is listed"); the test does not fix it, so --continue finds the markers (exit 3)
    ("docs/tracking-main.md", r"^sgpatch port .*--to-tree sglang-main"): 3,
    ("docs/tracking-main.md", r"^sgpatch port --continue --workspace w$"): 3,
    ("docs/cli.md", r"^sgpatch port .*--to-tree"): 3,
    ("docs/porting.md", r"^sgpatch port .*--to-tree"): 3,
}


# ----------------------------------------------------------------------------- extraction
@dataclass(frozen=True)
class Example:
    doc: str
    line: int  # 1-based line of the block in the page
    lang: str
    command: str
    expect: int | None  # from a console block's `exit N`
    summaries: tuple[str, ...]  # `sgpatch: ...` lines a console block shows after it


_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.M | re.S)
_INDENTED = re.compile(r"(?:^(?: {4}|\t).*\n?)+", re.M)
_SUFFIX = re.compile(r"\s*;\s*echo\b.*$")
# usage synopses (`sgpatch list | show | ...`, cli.md's generated `sgpatch apply [OPTIONS]`) are
# not examples
_SYNOPSIS = re.compile(r"\[OPTIONS\]|\[--|COMMAND|\s\|\s")


def _blocks(text: str):
    """(line number, language, body) of fenced and indented code blocks."""
    for m in _FENCE.finditer(text):
        yield text[: m.start()].count("\n") + 1, m.group(1).strip(), m.group(2)
    rest = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for m in _INDENTED.finditer(rest):
        prev = rest[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if re.match(r"\s*([-*]|\d+\.)\s", prev) and not prev.rstrip().endswith(":"):
            continue  # a list item's continuation, not a code block
        body = "\n".join(
            ln[4:] if ln.startswith("    ") else ln[1:] for ln in m.group(0).splitlines()
        )
        yield rest[: m.start()].count("\n") + 1, "indented", body


def _strip_comment(cmd: str) -> str:
    """Drop a trailing `# comment` (outside quotes)."""
    quote = None
    for i, ch in enumerate(cmd):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or cmd[i - 1].isspace()):
            return cmd[:i].rstrip()
    return cmd.rstrip()


def extract(path: Path) -> list[Example]:
    doc = path.relative_to(REPO).as_posix()
    text = path.read_text(encoding="utf-8")
    out: list[Example] = []
    for lineno, lang, body in _blocks(text):
        lines = body.replace("\\\n", " ").splitlines()
        console = any(ln.startswith("$ ") for ln in lines)
        for i, raw in enumerate(lines):
            line = _strip_comment(raw.strip())
            if console:
                if not line.startswith("$ "):
                    continue
                line = line[2:].strip()
            if _SYNOPSIS.search(line):
                continue
            if not re.match(r"sgpatch\s+\S", line) and not (
                lang in ("dockerfile", "yaml") and re.search(r"(?<![\w/.-])sgpatch\s+[a-z]", line)
            ):
                continue
            expect, summaries = None, []
            if console:
                for after in lines[i + 1 :]:
                    if after.startswith("$ "):
                        break
                    m = re.fullmatch(r"exit (\d+)", after.strip())
                    if m:
                        expect = int(m.group(1))
                    elif after.startswith("sgpatch: "):
                        summaries.append(after)
            command = _SUFFIX.sub("", line)
            out.append(Example(doc, lineno, lang, command, expect, tuple(summaries)))
    return out


def _skip_reason(ex: Example) -> str | None:
    for (doc, lang, pattern), reason in SKIP.items():
        if doc == ex.doc and lang in ("", ex.lang) and re.search(pattern, ex.command):
            return reason
    return None


def _expected(ex: Example) -> int:
    codes = {
        code
        for (doc, pattern), code in EXPECT.items()
        if doc == ex.doc and re.search(pattern, ex.command)
    }
    if ex.expect is not None:
        codes.add(ex.expect)
    assert len(codes) <= 1, f"{ex.doc}:{ex.line}: conflicting expectations {codes}"
    return codes.pop() if codes else 0


ALL = [ex for path in DOCS for ex in extract(path)]
PAGES = sorted({ex.doc for ex in ALL})


def test_extraction_sees_the_examples():
    """Guard against an extractor that silently finds nothing."""
    docs = {ex.doc for ex in ALL}
    for wanted in ("README.md", "docs/getting-started.md", "docs/cli.md", "docs/authoring.md"):
        assert wanted in docs, wanted
    readme = [ex.command for ex in ALL if ex.doc == "README.md"]
    assert "sgpatch status --sglang-dir /tmp/t59 --check" in readme
    assert any(ex.expect == 3 for ex in ALL if ex.doc == "README.md")
    assert len(ALL) >= 40, len(ALL)


def test_skip_and_expect_lists_match_something():
    for key in SKIP:
        doc, lang, pattern = key
        assert any(
            ex.doc == doc and lang in ("", ex.lang) and re.search(pattern, ex.command) for ex in ALL
        ), f"SKIP entry matches no example: {key}"
    for doc, pattern in EXPECT:
        assert any(ex.doc == doc and re.search(pattern, ex.command) for ex in ALL), (
            f"EXPECT entry matches no example: {doc} {pattern}"
        )


# ----------------------------------------------------------------------------- running
class Workspace:
    """One page's working directory and the release trees its placeholders map onto."""

    def __init__(self, root: Path):
        self.root = root
        self.made: dict[str, Path] = {}
        root.mkdir(parents=True)
        shutil.copyfile(KIMI_PATCH, root / "fix.diff")
        self._dup(root)
        sets = root / "my-sets" / "my-set"
        shutil.copytree(SET_DIR, sets)
        manifest = sets / "patchset.yaml"
        text = manifest.read_text(encoding="utf-8")
        manifest.write_text(
            re.sub(rf"^name: *{SET}\s*$", "name: my-set", text, count=1, flags=re.M)
        )
        first = sets / "patches" / "0.5.9" / "0001-first-change.patch"
        shutil.copyfile(KIMI_PATCH, first)
        (root / "my-set").symlink_to(sets)
        (root / "stacks").symlink_to(REPO / "tests" / "data" / "stacks")  # import.md
        (root / "examples").symlink_to(REPO / "examples")  # import.md's inputs

    @staticmethod
    def _dup(root: Path) -> None:
        """engine.md's duplicated block: t.txt and dup.diff, written by the script the page
        (and README.md) name, examples/duplicated_block.py."""
        script = REPO / "examples" / "duplicated_block.py"
        subprocess.run([sys.executable, str(script), str(root)], check=True, capture_output=True)

    def tree(self, placeholder: str, create: bool = True) -> Path:
        """The real path for a placeholder; a fresh copy of its release on first use."""
        if placeholder not in self.made:
            version, layout, _names = PLACEHOLDERS[placeholder]
            dest = self.root / "trees" / placeholder.strip("./").replace("/", "_")
            if create:
                root = releases.copy_tree(version, dest, layout)
                if placeholder in LABELS:
                    (root / "_version.py").write_text(
                        f"__version__ = version = '{LABELS[placeholder]}'\n"
                    )
            self.made[placeholder] = dest
        return self.made[placeholder]

    def map(self, command: str) -> str:
        fetch_dest = re.search(r"^sgpatch fetch .*--dest (\S+)", command)
        for ph in sorted(PLACEHOLDERS, key=len, reverse=True):
            pattern = rf"(?<![\w/.-]){re.escape(ph)}(?=$|[\s/;'\"])"
            if re.search(pattern, command):
                create = not (fetch_dest and fetch_dest.group(1) == ph)
                real = str(self.tree(ph, create=create))
                command = re.sub(pattern, lambda _m, r=real: r, command)
        return command

    def env(self, own_cache: bool = False) -> dict[str, str]:
        """The commands' environment. `own_cache`: a release cache of the page's own that
        reads the shared wheels, so the snapshots `port --to-tree` keeps stay out of the
        shared cache."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("SGLANG_DIR", "SGPATCH_PATH", "COLUMNS")
        }
        if own_cache:
            cache = self.root / "cache"
            cache.mkdir(exist_ok=True)
            if not (cache / "wheels").exists():
                (cache / "wheels").symlink_to(releases.cache_dir() / "wheels")
            env["SGPATCH_CACHE"] = str(cache)
        env["SGLANG_DIR"] = str(self.tree("/tmp/t59"))  # "the installed sglang"
        env["SGPATCH_PATH"] = str(self.root / "my-sets")  # authoring.md: `$SGPATCH_PATH`
        # `sgpatch` is this checkout's, run by this Python
        bindir = self.root / "bin"
        if not bindir.is_dir():
            bindir.mkdir()
            shim = bindir / "sgpatch"
            shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m sgpatch "$@"\n')
            shim.chmod(0o755)
        env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        return env


@pytest.mark.parametrize("page", PAGES)
def test_examples_of_the_page_run(page, tmp_path):
    ws = Workspace(tmp_path / "ws")
    env = ws.env(own_cache=any("--to-tree" in e.command for e in ALL if e.doc == page))
    failures: list[str] = []
    ran = 0
    for ex in [e for e in ALL if e.doc == page]:
        if _skip_reason(ex):
            continue
        want = _expected(ex)
        command = ws.map(ex.command)
        proc = subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=ws.root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        ran += 1
        out = proc.stdout + proc.stderr
        where = f"{ex.doc}:{ex.line}: `{ex.command}`"
        if "Traceback" in out:
            failures.append(f"{where}: traceback\n{out}")
        elif proc.returncode != want:
            failures.append(
                f"{where}: exit {proc.returncode}, the page implies {want}\n{out[-3000:]}"
            )
        flat = " ".join(out.split())
        for line in ex.summaries:
            if " ".join(line.split()) not in flat:
                failures.append(
                    f"{where}: the page shows `{line}`; the output has not\n{out[-2000:]}"
                )
    assert ran or all(_skip_reason(e) for e in ALL if e.doc == page)
    assert not failures, "\n\n".join(failures)


def test_fetch_into_an_existing_tree_is_an_error_not_a_traceback(tmp_path):
    """`sgpatch fetch V --dest D` run twice (D holds the tree from the first run): today the second
    run dies in shutil.copytree with FileExistsError on `D/sglang-V.dist-info` (traceback, exit 1).
    exit-codes.md promises one `sgpatch: error: ...` line and exit 2 (or it could be a no-op)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-m", "sgpatch", "fetch", "0.5.10", "--dest", str(tmp_path / "t510")]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert "Traceback" not in again.stderr, again.stderr[-1500:]
    assert again.returncode in (0, 2), again.stderr
