"""The style card's layering, enforced: no import runs up a layer, and no module cycle.

Structural, not behavioural: every module under src/sgpatch is parsed with ast, and each of its
`sgpatch` imports (top-level and inside functions, where the lazy ones live) is checked against
LAYERS below. A module may import its own layer or a lower one; the no-cycle checks keep
same-layer imports honest, between modules and between packages (two packages in one row may
not import each other both ways: a row is not a way round the layering). A new module must be
placed in LAYERS (the test says so), and docs/architecture.md describes the same table.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# Lowest first: the top-level core modules, then one row per package (its modules by name
# without the `sgpatch.` prefix, package `__init__`s included). `sgpatch` is the package itself.
CORE = {
    "sgpatch",
    "boundary",
    "console",
    "errors",
    "interrupts",
    "pyrun",
    "shown",
    "startup",
    "versions",
    "__main__",
}
PACKAGE_LAYERS: list[tuple[str, set[str]]] = [
    ("core", set()),
    ("fs", {"fs"}),  # the one file-system safety layer: below everything that writes
    ("diff, tree, releases", {"diff", "tree", "releases"}),
    ("state, placement", {"state", "placement"}),
    ("patchset", {"patchset"}),
    ("git", {"git"}),  # below ops: apply and revert make git mode's commits, it prints nothing
    ("ops", {"ops"}),
    ("port", {"port"}),
    ("cli", {"cli"}),
]


def _layers() -> list[tuple[str, set[str]]]:
    """PACKAGE_LAYERS with every module of each package listed (`__main__` sits with the cli:
    it is the console script)."""
    rows: list[tuple[str, set[str]]] = []
    for name, packages in PACKAGE_LAYERS:
        mods = {m for m in _all_modules() if m.split(".")[0] in packages}
        if name == "core":
            mods = CORE - {"__main__"}
        if name == "cli":
            mods |= {"__main__"}
        rows.append((name, mods))
    return rows


def _all_modules() -> set[str]:
    out: set[str] = set()
    for path in (SRC / "sgpatch").rglob("*.py"):
        parts = path.relative_to(SRC / "sgpatch").with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.add(".".join(parts) or "sgpatch")
    return out


LAYERS = _layers()
RANK = {mod: i for i, (_, mods) in enumerate(LAYERS) for mod in mods}


def _modules() -> dict[str, Path]:
    """Every module under src/sgpatch by its name without the `sgpatch.` prefix."""
    out: dict[str, Path] = {}
    for path in sorted((SRC / "sgpatch").rglob("*.py")):
        parts = path.relative_to(SRC / "sgpatch").with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts) or "sgpatch"] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """`sgpatch.a.b` -> the longest known module name it names (`from sgpatch.port import x`
    may name the submodule `port.x`; that is resolved by the caller)."""
    if name == "sgpatch":
        return "sgpatch"
    if not name.startswith("sgpatch."):
        return None
    rest = name[len("sgpatch.") :].split(".")
    for end in range(len(rest), 0, -1):
        if ".".join(rest[:end]) in known:
            return ".".join(rest[:end])
    return None


def _imports(mod: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The sgpatch modules `mod` imports anywhere in its body (absolute or relative)."""
    pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    deps: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            deps |= {r for a in node.names if (r := _resolve(a.name, known))}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = [p for p in pkg if p != "sgpatch"][: len(pkg) - node.level + 1]
                full = ".".join(["sgpatch", *base, *([node.module] if node.module else [])])
            else:
                full = node.module or ""
            for alias in node.names:
                sub = _resolve(f"{full}.{alias.name}", known)
                target = sub if sub and sub != _resolve(full, known) else _resolve(full, known)
                if target:
                    deps.add(target)
    deps.discard(mod)
    return deps


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {mod: _imports(mod, path, known) for mod, path in known.items()}


def test_every_module_has_a_layer() -> None:
    """Input: every module under src/sgpatch. Outcome: each is placed in LAYERS (a new module
    must be placed deliberately), and LAYERS names no module that no longer exists."""
    known = set(_modules())
    assert sorted(known - set(RANK)) == []
    assert sorted(set(RANK) - known) == []


def test_no_import_runs_up_a_layer() -> None:
    """Input: each module's sgpatch imports, lazy ones included. Outcome: none names a module
    in a higher layer than the importer's."""
    upward = [
        f"{mod} ({LAYERS[RANK[mod]][0]}) imports {dep} ({LAYERS[RANK[dep]][0]})"
        for mod, deps in _graph().items()
        for dep in sorted(deps)
        if mod in RANK and dep in RANK and RANK[dep] > RANK[mod]
    ]
    assert upward == []


def test_no_import_cycle() -> None:
    """Input: the module import graph. Outcome: it is acyclic (depth-first search finds no
    back edge), so same-layer imports still run one way."""
    assert _cycles(_graph()) == []


def test_the_graph_sees_lazy_imports() -> None:
    """Input: cli/app.py, whose command modules are imported inside functions. Outcome: the
    graph records them, so the checks above cover lazy imports too."""
    assert any(dep.startswith("cli.") for dep in _graph()["cli.app"])


def _unit(mod: str) -> str:
    """The package a module belongs to (`ops.apply` -> `ops`); a top-level module is its own."""
    return mod.split(".")[0]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every back edge a depth-first search of `graph` finds, as the cycle it closes."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded onto packages: `a -> b` when a module of `a` imports one of
    `b` (a package's imports of itself dropped)."""
    out: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        out.setdefault(_unit(mod), set()).update(_unit(d) for d in deps if _unit(d) != _unit(mod))
    return out


def test_no_package_cycle() -> None:
    """Input: the import graph folded onto packages (ops, git, ...). Outcome: acyclic, so two
    packages that share a layer still depend one way only (ops on git, never git on ops)."""
    assert _cycles(_package_graph(_graph())) == []


def test_the_package_check_sees_a_cycle_inside_a_row() -> None:
    """Input: two packages of one row importing each other through different modules (no
    module cycle). Outcome: the package check finds the cycle the module check cannot."""
    graph = {"diff.a": {"tree.b"}, "tree.c": {"diff.d"}, "diff.d": set(), "tree.b": set()}
    assert _cycles(graph) == []
    assert _cycles(_package_graph(graph)) == [["diff", "tree", "diff"]]
