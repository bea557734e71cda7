"""The docs cannot drift from the CLI: docs/cli.md's reference is generated from the typer app,
and every `sgpatch <command> --option` written in a code span or block of the docs exists."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _gen_cli():
    spec = importlib.util.spec_from_file_location("gen_cli", REPO / "docs" / "gen_cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_current():
    gen = _gen_cli()
    current = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == gen.splice(current, gen.render()), (
        "docs/cli.md is stale: run `python docs/gen_cli.py`"
    )


_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_INDENTED = re.compile(r"(?:^(?: {4}|\t).*\n?)+", re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
# `sgpatch apply`, `python -m sgpatch probe`; not `sgpatch.cli.app`, `src/sgpatch/`, `sgpatch==0.1`
_CALL = re.compile(r"(?<![\w/.-])sgpatch[ \t]+([A-Za-z][\w-]*)")
_END = re.compile(r"[;|&)#>]|\$\(")


def _code(text: str) -> list[str]:
    """Code blocks (fenced and indented) and inline code spans of a markdown file."""
    blocks = _FENCE.findall(text)
    rest = _FENCE.sub("", text)
    blocks += _INDENTED.findall(rest)
    rest = _INDENTED.sub("", rest)
    return blocks + _SPAN.findall(rest)


def _calls(code: str):
    """(command, [options]) for every `sgpatch <word> ...` in a piece of code."""
    code = code.replace("\\\n", " ")
    for line in code.splitlines():
        for m in _CALL.finditer(line):
            tail = _END.split(line[m.end() :], 1)[0]
            opts = [t.split("=", 1)[0] for t in tail.split() if t.startswith("-") and t != "-"]
            yield m.group(1), [o if o.startswith("--") else o[:2] for o in opts]  # -p0 -> -p


def _mentions():
    for path in DOCS:
        for code in _code(path.read_text(encoding="utf-8")):
            for command, opts in _calls(code):
                yield path.relative_to(REPO).as_posix(), command, opts


def test_docs_exist():
    names = {p.relative_to(REPO).as_posix() for p in DOCS}
    for wanted in ("README.md", "docs/cli.md", "docs/exit-codes.md", "docs/json.md"):
        assert wanted in names


@pytest.mark.parametrize("doc", [p.relative_to(REPO).as_posix() for p in DOCS])
def test_documented_commands_and_options_exist(doc):
    commands = _gen_cli().command_options()
    bad = []
    for path, command, opts in _mentions():
        if path != doc:
            continue
        if command not in commands:
            bad.append(f"sgpatch {command}: no such command")
            continue
        bad += [
            f"sgpatch {command} {o}: no such option" for o in opts if o not in commands[command]
        ]
    assert not bad, f"{doc}: " + "; ".join(sorted(set(bad)))


def test_the_checker_sees_mentions():
    """Guard against a regex that silently matches nothing."""
    found = {(path, command) for path, command, _ in _mentions()}
    assert ("README.md", "apply") in found
    assert any(command == "patch" for _, command in found)
    assert list(_calls("sgpatch bogus --x")) == [("bogus", ["--x"])]
    assert list(_calls("pip install sgpatch==0.1.0 && see src/sgpatch/cli/app.py")) == []
