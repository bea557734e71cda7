"""Evaluate probes against a target tree: does upstream already contain a patch's change?

A probe is a small tree of nodes (see docs/manifest.md). Evaluation never raises for what it finds
in the tree (missing files, syntax errors): those make a node false and say why in the evidence, so
`sgpatch probe -v` can show file:line and the matched text for every verdict. Only a probe that
would look outside the package root is refused (exit 4).

Each kind of node (regex/absent, symbol, all, any, not) is one class holding its parse (from
composed YAML), render (back to manifest lines), files (what a minimal tree must hold for it) and
evaluate; `KINDS` maps the YAML word to the class, so this module alone reads and writes probes.

Evidence kinds:
    match      a regex matched (file, line, the line's text)
    no-match   a regex did not match in a file (or in N files)
    missing    no file matches the glob / the file does not exist / the class is not there
    class      the class a symbol probe looks at, with its bases
    method     the method was found (where, and through which class)
    no-method  the method is not defined in a class
    base       a base class that cannot be followed (not defined in the tree, or not resolvable)
    error      a file could not be parsed or read
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import ClassVar, NoReturn, Protocol, TypeVar, cast

from sgpatch.errors import bad_input, internal, unsafe
from sgpatch.tree.files import within


class Fields(Protocol):
    """What parsing a probe needs of the YAML checker that reads it (manifest._Checker): every
    failure it raises is `file:line: field: problem`, exit 2 (4 for a path leaving the root)."""

    def fail(
        self, node: object, field: str, problem: str, *, is_unsafe: bool = False
    ) -> NoReturn: ...
    def text(self, node: object, field: str, *, empty_ok: bool = False) -> str: ...
    def boolean(self, node: object, field: str) -> bool: ...
    def mapping(
        self, node: object, field: str, required: Sequence[str], optional: Sequence[str] = ()
    ) -> dict[str, tuple[object, object]]: ...
    def sequence(self, node: object, field: str, *, non_empty: bool = False) -> list[object]: ...
    def relative_path(self, node: object, field: str, what: str) -> str: ...
    def kind(self, node: object) -> str: ...


# --- the kinds: one class each, with its parse, render, files, describe and evaluate ------------
# The registry (KINDS, below the classes) maps each word that selects a kind in YAML to its class,
# as pre-commit's `languages` does: parsing, writing, the files a minimal tree needs and the
# evaluation all go through it, so a new kind is one class and one registry entry, and a node of
# a kind sgpatch does not know is an error wherever it turns up, never "no files, not upstream".


@dataclass(frozen=True)
class RegexProbe:
    """Some file matching `file_glob` has a match for `regex` (or, if `absent`, none has)."""

    file_glob: str
    regex: str
    absent: bool = False

    WORDS: ClassVar[tuple[str, ...]] = ("regex", "absent")
    FORM: ClassVar[str] = "{file, regex}, {file, absent}"

    @classmethod
    def parse(cls, fields: Fields, node: object, field: str, word: str) -> RegexProbe:
        keys = fields.mapping(node, field, ("file", word))
        glob = fields.relative_path(keys["file"][1], f"{field}.file", "probe file")
        pattern_node = keys[word][1]
        pattern = fields.text(pattern_node, f"{field}.{word}")
        try:
            re.compile(pattern, REGEX_FLAGS)  # Python's re words the error
            compile_regex(pattern)  # RE2 where installed: refuse what it cannot run, here
        except re.error as e:
            fields.fail(pattern_node, f"{field}.{word}", f"invalid regex {pattern!r}: {e}")
        except RegexUnsupported as e:
            fields.fail(pattern_node, f"{field}.{word}", str(e))
        return cls(file_glob=glob, regex=pattern, absent=word == "absent")

    def render(self, indent: int) -> list[str]:
        word = "absent" if self.absent else "regex"
        return [f"{' ' * indent}{{file: {_path(self.file_glob)}, {word}: {quote(self.regex)}}}"]

    def files(self) -> list[str]:
        return [self.file_glob]

    def describe(self) -> str:
        return f"{'absent' if self.absent else 'regex'} {self.file_glob} /{self.regex}/"

    def evaluate(self, ctx: Reader) -> ProbeResult:
        return _eval_regex(self, ctx)


@dataclass(frozen=True)
class SymbolProbe:
    """Class `cls` in `file` has `method`, defined in it or inherited from a base in the tree."""

    file: str
    cls: str
    method: str

    WORDS: ClassVar[tuple[str, ...]] = ("symbol",)
    FORM: ClassVar[str] = "{symbol}"

    @classmethod
    def parse(cls, fields: Fields, node: object, field: str, word: str) -> SymbolProbe:
        node = fields.mapping(node, field, (word,))[word][1]
        field = f"{field}.{word}"
        keys = fields.mapping(node, field, ("file", "class", "method"))
        file = fields.relative_path(keys["file"][1], f"{field}.file", "probe file")
        if any(c in file for c in "*?["):
            fields.fail(
                keys["file"][1], f"{field}.file", "a symbol probe names one file, not a glob"
            )
        names = {}
        for key in ("class", "method"):
            value_node = keys[key][1]
            value = fields.text(value_node, f"{field}.{key}").strip()
            if not value.isidentifier():
                fields.fail(value_node, f"{field}.{key}", f"{value!r} is not a Python identifier")
            names[key] = value
        return cls(file=file, cls=names["class"], method=names["method"])

    def render(self, indent: int) -> list[str]:
        return [f"{' ' * indent}symbol: {{file: {_path(self.file)}, class: {self.cls}, "
                f"method: {self.method}}}"]  # fmt: skip

    def files(self) -> list[str]:
        """The file, and its folder's modules: the base classes are often beside it."""
        return [self.file, str(PurePosixPath(self.file).parent / "*.py")]

    def describe(self) -> str:
        return f"symbol {self.file} {self.cls}.{self.method}"

    def evaluate(self, ctx: Reader) -> ProbeResult:
        return _eval_symbol(self, ctx)


@dataclass(frozen=True)
class _ListProbe:
    """A node over a list of sub-probes: `all` and `any` read, write, list and describe it
    alike and differ only in their word and in how the children's values combine (a kind is
    a subclass that adds no field, so it keeps this dataclass's init, equality and hash)."""

    nodes: tuple[ProbeNode, ...]

    WORDS: ClassVar[tuple[str, ...]]
    FORM: ClassVar[str]
    COMBINE: ClassVar[Callable[[Iterable[bool]], bool]]

    @classmethod
    def parse(cls: type[_L], fields: Fields, node: object, field: str, word: str) -> _L:
        return cls(_parse_list(fields, node, field, word))

    def render(self, indent: int) -> list[str]:
        return _render_list(self.WORDS[0], self.nodes, indent)

    def files(self) -> list[str]:
        return [f for n in self.nodes for f in files(n)]

    def describe(self) -> str:
        return f"{self.WORDS[0]}(" + ", ".join(describe(n) for n in self.nodes) + ")"

    def evaluate(self, ctx: Reader) -> ProbeResult:
        """Every child is evaluated (no short-circuit) so -v shows the whole picture."""
        children = tuple(_eval(child, ctx) for child in self.nodes)
        evidence = tuple(ev for c in children for ev in c.evidence)
        value = type(self).COMBINE(c.value for c in children)
        return ProbeResult(value, evidence, cast("AllProbe | AnyProbe", self), children)


_L = TypeVar("_L", bound=_ListProbe)


class AllProbe(_ListProbe):
    """True when every sub-probe is."""

    WORDS = ("all",)
    FORM = "{all}"
    COMBINE = all


class AnyProbe(_ListProbe):
    """True when at least one sub-probe is."""

    WORDS = ("any",)
    FORM = "{any}"
    COMBINE = any


@dataclass(frozen=True)
class NotProbe:
    """True when its sub-probe is false."""

    node: ProbeNode

    WORDS: ClassVar[tuple[str, ...]] = ("not",)
    FORM: ClassVar[str] = "{not}"

    @classmethod
    def parse(cls, fields: Fields, node: object, field: str, word: str) -> NotProbe:
        keys = fields.mapping(node, field, (word,))
        return cls(parse(fields, keys[word][1], f"{field}.{word}"))

    def render(self, indent: int) -> list[str]:
        inner = render(self.node, indent + 2)
        pad = " " * indent
        if len(inner) == 1 and inner[0].lstrip().startswith("{"):  # a flow mapping: one line
            return [f"{pad}not: {inner[0].strip()}"]
        return [f"{pad}not:", *inner]  # `not: symbol: {...}` would not be YAML

    def files(self) -> list[str]:
        return files(self.node)

    def describe(self) -> str:
        return f"not({describe(self.node)})"

    def evaluate(self, ctx: Reader) -> ProbeResult:
        child = _eval(self.node, ctx)
        return ProbeResult(not child.value, child.evidence, self, (child,))


ProbeNode = RegexProbe | SymbolProbe | AllProbe | AnyProbe | NotProbe
_KINDS: tuple[type[ProbeNode], ...] = (RegexProbe, SymbolProbe, AllProbe, AnyProbe, NotProbe)
KINDS: dict[str, type[ProbeNode]] = {word: kind for kind in _KINDS for word in kind.WORDS}
FORMS = ", ".join(k.FORM for k in _KINDS[:-1]) + f" or {_KINDS[-1].FORM}"
SUGGESTED = "suggested"  # the marker key a probe sgpatch suggested carries (docs/manifest.md)
SUGGESTED_LINE = (
    "suggested: true  # made from the patch's lines by sgpatch; delete this line if you edit it"
)


def kind_of(node: object) -> ProbeNode:
    """`node`, checked to be of a registered kind: anything else (a kind added to the code but
    not to KINDS) is sgpatch breaking its own rule, one line and exit 70, not a false verdict."""
    if type(node) not in _KINDS:
        raise internal(f"not a probe kind sgpatch knows: {type(node).__name__}")
    return cast("ProbeNode", node)


def entries(node: ProbeNode) -> tuple[ProbeNode, ...]:
    """The clauses of a top-level `all` (a suggested probe is an all of lines), else the node
    alone: what import, split and port keep or drop one by one."""
    return node.nodes if isinstance(node, AllProbe) else (node,)


def all_of(nodes: Sequence[ProbeNode]) -> ProbeNode | None:
    """The probe made of those clauses: None for none, a single one itself, else their all."""
    if not nodes:
        return None
    return nodes[0] if len(nodes) == 1 else AllProbe(tuple(nodes))


def files(node: ProbeNode | None) -> list[str]:
    """The files (globs, package-relative) a probe reads: what a minimal tree must hold for it
    (matrix, lint, port and the suggestion checks all build theirs from this)."""
    return [] if node is None else kind_of(node).files()


def describe(node: ProbeNode) -> str:
    """A compact one-line rendering of a probe node, for reports."""
    return kind_of(node).describe()


def render(node: ProbeNode, indent: int) -> list[str]:
    """The probe as manifest lines (block style, one flow mapping per leaf), `indent` spaces:
    every kind (a person's probe that port writes back too); `parse` reads them back."""
    return kind_of(node).render(indent)


def probe_lines(node: ProbeNode, indent: int, suggested: bool) -> list[str]:
    """What goes under `probe:` (`indent` spaces): the probe, and with `suggested` the marker
    that says sgpatch made it (docs/manifest.md), which lets `port` replace it by a new
    suggestion when the patch changes; `parse_top` reads both back."""
    if not suggested:
        return render(node, indent)
    pad = " " * indent
    if isinstance(node, RegexProbe):  # block style, so the marker sits beside file and regex
        word = "absent" if node.absent else "regex"
        body = [f"{pad}file: {_path(node.file_glob)}", f"{pad}{word}: {quote(node.regex)}"]
    else:
        body = render(node, indent)
    return [pad + SUGGESTED_LINE, *body]


def parse(fields: Fields, node: object, field: str) -> ProbeNode:
    """A probe node from composed YAML: the one key that names its kind picks the class in
    KINDS (`{file: F}` alone is a regex probe missing its regex); no such key, or two, is
    `file:line: field: problem` (exit 2)."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        fields.fail(node, field, f"must be a mapping ({FORMS}), got {fields.kind(node)}")
    present = [str(k.value) for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
    words = [w for w in present if w in KINDS] or (["regex"] if "file" in present else [])
    if not words:
        named = ", ".join(repr(w) for w in present) or "none"
        fields.fail(node, field, f"not a probe: unknown kind ({named}); expected {FORMS}")
    if len(words) > 1:
        fields.fail(node, field, f"has both {words[0]!r} and {words[1]!r}; use one")
    return KINDS[words[0]].parse(fields, node, field, words[0])


def parse_top(fields: Fields, node: object, field: str) -> tuple[ProbeNode, bool]:
    """A `probe:` value: the probe node, and whether it carries `suggested: true` (a probe
    sgpatch made that no person has edited since; port may replace it by a new suggestion)."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return parse(fields, node, field), False
    marked = [
        (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == SUGGESTED
    ]
    if not marked:
        return parse(fields, node, field), False
    suggested = fields.boolean(marked[0][1], f"{field}.{SUGGESTED}")
    drop = {id(k) for k, _ in marked}
    rest = yaml.MappingNode(node.tag, [(k, v) for k, v in node.value if id(k) not in drop],
                            node.start_mark, node.end_mark, node.flow_style)  # fmt: skip
    return parse(fields, rest, field), suggested


def _parse_list(fields: Fields, node: object, field: str, word: str) -> tuple[ProbeNode, ...]:
    keys = fields.mapping(node, field, (word,))
    items = fields.sequence(keys[word][1], f"{field}.{word}", non_empty=True)
    return tuple(parse(fields, item, f"{field}.{word}[{i}]") for i, item in enumerate(items))


def _render_list(word: str, nodes: Sequence[ProbeNode], indent: int) -> list[str]:
    pad = " " * indent
    out = [f"{pad}{word}:"]
    for child in nodes:
        lines = render(child, 0)
        out.append(f"{pad}  - {lines[0]}")
        out += [f"{pad}    {ln}" for ln in lines[1:]]
    return out


def quote(text: str) -> str:
    """A YAML single-quoted scalar (no escapes inside: backslashes stay as they are)."""
    return "'" + text.replace("'", "''") + "'"


def _path(rel: str) -> str:
    return rel if re.fullmatch(r"[A-Za-z0-9_./-]+", rel) else quote(rel)


@dataclass(frozen=True)
class Evidence:
    """One observation behind a verdict; `file` is relative to the package root (posix)."""

    kind: str
    file: str
    line: int | None
    text: str
    note: str

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "file": self.file, "line": self.line, "text": self.text,
                "note": self.note}  # fmt: skip


@dataclass(frozen=True)
class ProbeResult:
    """The verdict of one node, what it rests on, and (for all/any/not) the verdicts below it."""

    value: bool
    evidence: tuple[Evidence, ...]
    node: ProbeNode | None = None
    children: tuple[ProbeResult, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        """The verdict in --json documents (docs/json.md): its value and every evidence."""
        return {"value": self.value, "evidence": [e.to_json() for e in self.evidence]}


REGEX_FLAGS = re.MULTILINE
_MAX_NO_MATCH_FILES = 5  # beyond this, one summary line instead of one per file
_MAX_TEXT = 200
_SKIP_DIRS = frozenset({".sgpatch", "__pycache__"})  # our own state (original bytes!) and caches
_MAX_DEPTH = 50  # inheritance / re-export chains; guards against pathological trees


def check_relative(pattern: str, what: str) -> None:
    """Refuse a probe path that could leave the package root (absolute, `..`, drive letters)."""
    pure = PurePosixPath(pattern)
    if not pattern or pure.is_absolute() or pattern.startswith(("\\", "~")) or ":" in pattern:
        raise unsafe(f"{what} {pattern!r} must be a path relative to the SGLang package root")
    if ".." in pure.parts or "\\" in pattern:
        raise unsafe(f"{what} {pattern!r} must not contain '..' or backslashes")


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


@dataclass
class _Module:
    """A parsed tree file, read once per probe run (or why it could not be)."""

    rel: str
    tree: ast.Module | None
    lines: list[str]
    error: Evidence | None


class Reader:
    """What probes read in one tree: file texts, parsed modules, compiled regexes, each once
    (per `evaluate` call, or for all the probes a plan evaluates: the tree does not change
    while it is planned)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.texts: dict[Path, str | None] = {}
        self.ascii: dict[Path, bytes] = {}  # the bytes of the files that are all ASCII
        self.modules: dict[Path, _Module] = {}
        self.walked: dict[Path, list[ast.stmt]] = {}
        self.regexes: dict[str, object] = {}

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def inside(self, path: Path) -> bool:
        """`path` resolves (symlinks followed) to the root or below it (treefs.within: string
        work on realpath, not a resolved Path and relative_to per file)."""
        try:
            real = os.path.realpath(path)
        except (ValueError, OSError):
            return False
        return within(real, str(self.root))

    def text(self, path: Path) -> str | None:
        if path not in self.texts:
            try:
                data = path.read_bytes()
            except OSError:
                self.texts[path] = None
                return None
            self.texts[path] = data.decode("utf-8", errors="replace")
            if data.isascii():
                self.ascii[path] = data
        return self.texts[path]

    def statements(self, path: Path) -> list[ast.stmt]:
        """A parsed module's statements at module level, into if/try/with (`_walk_block`),
        walked once: every symbol probe and every base lookup in the file asks for them."""
        if path not in self.walked:
            tree = self.module(path).tree
            self.walked[path] = _walk_block(tree.body) if tree is not None else []
        return self.walked[path]

    def search(self, rx, path: Path, text: str):
        """`rx.search` over the file. An ASCII file is handed to RE2 as its bytes, which are
        its UTF-8 and whose offsets are its characters': the match is the same, without RE2
        encoding the text and counting characters back to each offset."""
        data = self.ascii.get(path)
        if data is None or isinstance(rx, re.Pattern):  # Python's re: str only
            return rx.search(text)
        return rx.search(data)

    def module(self, path: Path) -> _Module:
        if path not in self.modules:
            rel = self.rel(path)
            try:
                data = path.read_bytes()
            except OSError as e:
                ev = Evidence("error", rel, None, "", f"cannot read: {e.strerror or e}")
                self.modules[path] = _Module(rel, None, [], ev)
                return self.modules[path]
            lines = data.decode("utf-8", errors="replace").splitlines()
            try:
                tree = _parse(data, rel)
                self.modules[path] = _Module(rel, tree, lines, None)
            except (SyntaxError, ValueError) as e:
                line = getattr(e, "lineno", None)
                text = lines[line - 1] if line and 0 < line <= len(lines) else ""
                msg = getattr(e, "msg", None) or str(e)
                ev = Evidence("error", rel, line, _clip(text), f"syntax error: {msg}")
                self.modules[path] = _Module(rel, None, lines, ev)
        return self.modules[path]

    def regex(self, pattern: str):
        if pattern not in self.regexes:
            try:
                self.regexes[pattern] = compile_regex(pattern)
            except RegexUnsupported as e:  # a probe built in code, not from a manifest
                raise bad_input(str(e)) from None
        return self.regexes[pattern]


class RegexUnsupported(ValueError):
    """A probe regex the linear-time engine cannot run (lookaround, backreferences, ...)."""


def _re2():
    try:
        import re2
    except ImportError:  # no wheel for this Python: Python's re, without a time bound
        return None
    return re2


def compile_regex(pattern: str):
    """A probe regex, compiled for `search` with ^/$ at line ends (re.MULTILINE).

    With google-re2 installed (a dependency on Python 3.10-3.13), the pattern runs on RE2: time
    linear in the file, so a pattern like `(a+)+$` cannot make `status` hang. RE2 has no
    lookaround, backreferences or possessive quantifiers; such a pattern is refused
    (RegexUnsupported, shown as a one-line manifest error naming it) rather than run on the
    backtracking engine. Without google-re2, Python's re runs it (docs/manifest.md, Limits)."""
    re2 = _re2()
    if re2 is None:
        return re.compile(pattern, REGEX_FLAGS)
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own parse error on stderr
    try:
        return re2.compile("(?m)" + pattern, options)
    except re2.error as e:
        why = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else e
        raise RegexUnsupported(
            f"probe regex /{pattern}/ needs a construct the linear-time regex engine (RE2) "
            f"lacks ({why}): no lookaround, backreferences or possessive quantifiers"
        ) from None


def _parse(data: bytes, filename: str) -> ast.Module:
    """ast.parse without the invalid-escape warnings real SGLang files trigger on stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(data, filename=filename)


def evaluate(node: ProbeNode, root: Path, reader: Reader | None = None) -> ProbeResult:
    """Evaluate a probe tree against the package root `root` (files are parsed once per call).
    `reader`: a `Reader(root)` shared with the other probes of the same plan, so a file two
    of them name is read (and parsed) once."""
    return _eval(node, reader if reader is not None else Reader(root))


def _eval(node: ProbeNode, ctx: Reader) -> ProbeResult:
    return kind_of(node).evaluate(ctx)


def _glob(pattern: str, ctx: Reader) -> list[Path]:
    check_relative(pattern, "probe file")
    if not any(c in pattern for c in "*?["):  # one file named: what Path.glob would yield
        candidates: Iterable[Path] = [ctx.root / pattern]
    else:
        candidates = ctx.root.glob(pattern)
    found = []
    for path in candidates:
        if any(part in _SKIP_DIRS for part in path.relative_to(ctx.root).parts):
            continue
        if path.is_file() and ctx.inside(path):
            found.append(path)
    return sorted(found)


def _eval_regex(node: RegexProbe, ctx: Reader) -> ProbeResult:
    files = _glob(node.file_glob, ctx)
    if not files:
        ev = Evidence("missing", node.file_glob, None, "", f"no file matches {node.file_glob}")
        return ProbeResult(False, (ev,), node)
    rx = ctx.regex(node.regex)
    unreadable: list[Evidence] = []
    for path in files:
        text = ctx.text(path)
        if text is None:
            unreadable.append(Evidence("error", ctx.rel(path), None, "", "cannot read"))
            continue
        m = ctx.search(rx, path, text)
        if m is None:
            continue
        line_no = text.count("\n", 0, m.start()) + 1
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.start())
        line = text[start : end if end >= 0 else len(text)]
        note = f"/{node.regex}/ matches"
        if node.absent:
            note += ", so it is not absent"
        ev = Evidence("match", ctx.rel(path), line_no, _clip(line), note)
        return ProbeResult(not node.absent, (*unreadable, ev), node)
    searched = [p for p in files if ctx.texts.get(p) is not None]
    if len(searched) <= _MAX_NO_MATCH_FILES:
        misses = tuple(
            Evidence("no-match", ctx.rel(p), None, "", f"no match for /{node.regex}/")
            for p in searched
        )
    else:
        note = f"no match for /{node.regex}/ in {len(searched)} files"
        misses = (Evidence("no-match", node.file_glob, None, "", note),)
    value = node.absent and bool(searched)
    return ProbeResult(value, (*unreadable, *misses), node)


# --- symbol probes -------------------------------------------------------------------------------


def _walk_block(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements of a block, looking into if/try/with (definitions are often guarded)."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If):
            out.extend(_walk_block(stmt.body))
            out.extend(_walk_block(stmt.orelse))
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody):
                out.extend(_walk_block(block))
            for handler in stmt.handlers:
                out.extend(_walk_block(handler.body))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            out.extend(_walk_block(stmt.body))
    return out


def _defines(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return stmt.name == name
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        target = stmt.target
        return stmt.value is not None and isinstance(target, ast.Name) and target.id == name
    return False


def _dotted(expr: ast.expr) -> str | None:
    """`a.b.C` -> "a.b.C"; `Generic[T]` -> "Generic"; anything else -> None."""
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


@dataclass(frozen=True)
class _ClassRef:
    """A class definition found by following imports, and the file it lives in."""

    path: Path
    node: ast.ClassDef


class _Resolver:
    """Follows names through a tree's imports with `ast`, the way Python would bind them."""

    def __init__(self, ctx: Reader) -> None:
        self.ctx = ctx

    def module_file(self, dotted: str) -> Path | None:
        """`sglang.srt.x.y` -> root/srt/x/y.py or root/srt/x/y/__init__.py, if in the tree."""
        parts = dotted.split(".")
        if parts[0] != "sglang" or any(not p.isidentifier() for p in parts):
            return None
        return self._package_file(self.ctx.root.joinpath(*parts[1:]))

    def _package_file(self, base: Path) -> Path | None:
        if base != self.ctx.root and base.with_suffix(".py").is_file():
            return base.with_suffix(".py")
        init = base / "__init__.py"
        if init.is_file():
            return init
        return None

    def relative_base(self, path: Path, level: int) -> Path | None:
        """The package directory `from .` (level 1), `from ..` (level 2) ... refers to."""
        base = path.parent
        for _ in range(level - 1):
            if base == self.ctx.root:
                return None
            base = base.parent
        return base if self.ctx.inside(base) else None

    def import_from_target(self, path: Path, stmt: ast.ImportFrom) -> Path | None:
        """The directory-or-module path (without suffix) an ImportFrom's module names."""
        if stmt.level:
            base = self.relative_base(path, stmt.level)
            if base is None:
                return None
            if stmt.module:
                base = base.joinpath(*stmt.module.split("."))
            return base
        module = stmt.module or ""
        parts = module.split(".")
        if parts[0] != "sglang":
            return None
        return self.ctx.root.joinpath(*parts[1:])

    def bindings(self, path: Path, name: str) -> list[ast.stmt]:
        """Module-level statements of `path` that bind `name`, last one last."""
        mod = self.ctx.module(path)
        if mod.tree is None:
            return []
        found: list[ast.stmt] = []
        for stmt in self.ctx.statements(path):
            if isinstance(stmt, ast.ClassDef) and stmt.name == name:
                found.append(stmt)
            elif isinstance(stmt, ast.ImportFrom):
                if any((a.asname or a.name) == name for a in stmt.names):
                    found.append(stmt)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    if bound == name:
                        found.append(stmt)
            elif isinstance(stmt, ast.Assign) and _defines(stmt, name):
                found.append(stmt)
        return found

    def lookup(
        self, path: Path, dotted: str, depth: int = 0
    ) -> tuple[_ClassRef | None, str | None]:
        """Find the class `dotted` names in module `path`: (class, None) or (None, why not)."""
        if depth > _MAX_DEPTH:
            return None, "import chain too deep"
        mod = self.ctx.module(path)
        if mod.tree is None:
            error = mod.error
            where = f"{mod.rel}:{error.line}" if error and error.line else mod.rel
            return None, f"{where}: {error.note if error else 'cannot be parsed'}"
        head = dotted.partition(".")[0]
        bindings = self.bindings(path, head)
        if not bindings:
            return None, f"{head} is not defined or imported in {mod.rel}"
        # The last binding usually wins; earlier ones matter for `try: import ... except: X = None`.
        why: str | None = None
        for stmt in reversed(bindings):
            found, reason = self._follow(path, stmt, dotted, depth)
            if found is not None:
                return found, None
            why = why or reason
        return None, why

    def _follow(
        self, path: Path, stmt: ast.stmt, dotted: str, depth: int
    ) -> tuple[_ClassRef | None, str | None]:
        """Resolve `dotted` through one statement of `path` that binds its first part."""
        mod = self.ctx.module(path)
        head, _, rest = dotted.partition(".")
        if isinstance(stmt, ast.ClassDef):
            if rest:
                return None, f"{dotted} is an attribute of class {head}"
            return _ClassRef(path, stmt), None
        if isinstance(stmt, ast.Assign):
            value = _dotted(stmt.value)
            if value is None or value == dotted:
                return None, f"{head} in {mod.rel} is not a class"
            full = f"{value}.{rest}" if rest else value
            return self.lookup(path, full, depth + 1)
        if isinstance(stmt, ast.ImportFrom):
            alias = next(a for a in stmt.names if (a.asname or a.name) == head)
            target = self.import_from_target(path, stmt)
            if target is None:
                return None, f"module {_import_text(stmt)} is not in the tree"
            # `from pkg import sub` may bind a submodule rather than a name in pkg/__init__.py
            submodule = self._package_file(target / alias.name)
            if submodule is not None and self.ctx.inside(submodule):
                if not rest:
                    return None, f"{head} is a module, not a class"
                return self.lookup(submodule, rest, depth + 1)
            module_file = self._package_file(target)
            if module_file is None or not self.ctx.inside(module_file):
                return None, f"module {_import_text(stmt)} is not in the tree"
            full = f"{alias.name}.{rest}" if rest else alias.name
            return self.lookup(module_file, full, depth + 1)
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname == head:
                    module_name = alias.name
                    break
                if alias.asname is None and alias.name.split(".")[0] == head:
                    module_name = head
                    break
            else:  # pragma: no cover - bindings() guarantees a match
                return None, f"{head} not found"
            # `import a.b` binds `a`: walk the rest of the dotted name as submodules.
            parts = (module_name + ("." + rest if rest else "")).split(".")
            for cut in range(len(parts) - 1, 0, -1):
                module_file = self.module_file(".".join(parts[:cut]))
                if module_file is not None:
                    return self.lookup(module_file, ".".join(parts[cut:]), depth + 1)
            return None, f"module {module_name} is not in the tree"
        return None, f"{head} not resolvable"  # pragma: no cover


def _import_text(stmt: ast.ImportFrom) -> str:
    return "." * stmt.level + (stmt.module or "")


def _class_header(ref: _ClassRef) -> str:
    bases = ", ".join(ast.unparse(b) for b in ref.node.bases)
    return f"class {ref.node.name}({bases})" if bases else f"class {ref.node.name}"


def _find_method(
    ref: _ClassRef, method: str, ctx: Reader, resolver: _Resolver, chain: list[str]
) -> tuple[bool, list[Evidence]]:
    """Depth-first, left-to-right search of the class and its bases (a fair MRO approximation)."""
    visited: set[tuple[Path, str]] = set()
    evidence: list[Evidence] = []

    def visit(ref: _ClassRef, via: list[str]) -> bool:
        key = (ref.path, ref.node.name)
        if key in visited or len(via) > _MAX_DEPTH:
            return False
        visited.add(key)
        mod = ctx.module(ref.path)
        line = ref.node.lineno
        text = _clip(mod.lines[line - 1]) if line <= len(mod.lines) else ""
        evidence.append(Evidence("class", mod.rel, line, text, _class_header(ref)))
        for stmt in _walk_block(ref.node.body):
            if _defines(stmt, method):
                where = stmt.lineno
                where_text = _clip(mod.lines[where - 1]) if where <= len(mod.lines) else ""
                note = f"{method} defined in {ref.node.name}"
                if via:
                    note += f", inherited by {via[0]}"
                    if len(via) > 1:
                        note += " through " + ", ".join(via[1:])
                evidence.append(Evidence("method", mod.rel, where, where_text, note))
                return True
        note = f"method {method} not defined in {ref.node.name}"
        evidence.append(Evidence("no-method", mod.rel, line, text, note))
        for base in ref.node.bases:
            dotted = _dotted(base)
            base_text = ast.unparse(base)
            if dotted is None:
                note = f"base {base_text} cannot be resolved statically"
                evidence.append(Evidence("base", mod.rel, base.lineno, base_text, note))
                continue
            found, why = resolver.lookup(ref.path, dotted)
            if found is None:
                note = f"base {base_text} is not defined in the tree ({why})"
                evidence.append(Evidence("base", mod.rel, base.lineno, base_text, note))
                continue
            if visit(found, [*via, ref.node.name]):
                return True
        return False

    return visit(ref, chain), evidence


def _eval_symbol(node: SymbolProbe, ctx: Reader) -> ProbeResult:
    check_relative(node.file, "probe file")
    path = ctx.root / node.file
    if not path.is_file() or not ctx.inside(path):
        ev = Evidence("missing", node.file, None, "", f"{node.file} does not exist")
        return ProbeResult(False, (ev,), node)
    mod = ctx.module(path)
    if mod.error is not None:
        return ProbeResult(False, (mod.error,), node)
    assert mod.tree is not None
    classes = [
        s for s in ctx.statements(path) if isinstance(s, ast.ClassDef) and s.name == node.cls
    ]
    if not classes:
        ev = Evidence("missing", mod.rel, None, "", f"class {node.cls} not defined in {mod.rel}")
        return ProbeResult(False, (ev,), node)
    ref = _ClassRef(path, classes[-1])  # the last definition is the one Python keeps
    found, evidence = _find_method(ref, node.method, ctx, _Resolver(ctx), [])
    return ProbeResult(found, tuple(evidence), node)
