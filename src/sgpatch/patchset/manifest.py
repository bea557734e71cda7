"""Load and validate `patchset.yaml` (docs/manifest.md) into frozen dataclasses.

The YAML is composed into nodes (not loaded into plain dicts) so every error can name
`file:line: field: problem`, duplicate keys are caught, and version-like scalars keep the text the
author wrote (`since: 0.6` stays "0.6", not the float 0.6).
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NoReturn

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import Version

from sgpatch.errors import SgpatchError, bad_input, unsafe
from sgpatch.patchset.hygiene import refuse_others_writable, refuse_writable_inside
from sgpatch.patchset.probe import ProbeNode, describe, parse_top
from sgpatch.versions import checked

MANIFEST_NAME = "patchset.yaml"
SCHEMA = 1
ENV_SGPATCH_PATH = "SGPATCH_PATH"
PATCH_TYPES = ("feature", "bugfix", "portability", "backport")
UPSTREAM_STATUSES = ("pending", "submitted", "merged")
MAX_FUZZ = 2
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_PACKAGE_RE = re.compile(r"^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$")


@dataclass(frozen=True)
class Upstream:
    """Where upstream stands on a patch: pending, submitted (ref) or merged (ref, since)."""

    status: str
    ref: str | None
    since: Version | None

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "ref": self.ref,
                "since": str(self.since) if self.since else None}  # fmt: skip


@dataclass(frozen=True)
class Variant:
    """One release range of a patch: the diff to apply there, or why it does not apply (n/a)."""

    sglang: SpecifierSet
    patch: Path | None  # absolute: base_dir / the path written in the manifest
    na: str | None
    line: int
    base: Version | None = None  # the release the patch file was made on (`base:`, optional)
    probe: ProbeNode | None = None  # its own probe (`probe:`): replaces the patch's on its releases
    probe_suggested: bool = False  # that probe is a suggestion no person has edited

    @property
    def made_on(self) -> Version | None:
        """The release the patch file was made on, when the manifest says: its `base:`, or
        the one release of an `==X` range (None: a range, which names no single release)."""
        if self.base is not None:
            return self.base
        specs = list(self.sglang)
        if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
            try:
                return Version(specs[0].version)
            except ValueError:
                return None
        return None

    @property
    def file(self) -> Path:
        """The patch file, for code that has already ruled out an n/a variant."""
        if self.patch is None:
            raise ValueError(f"variant {self.sglang} is n/a: it has no patch file")
        return self.patch

    def to_json(self, base_dir: Path) -> dict[str, object]:
        """The variant in `show --json`: its patch file as the manifest names it (relative to
        the set folder `base_dir`), its own probe only when it has one."""
        doc: dict[str, object] = {
            "sglang": str(self.sglang),
            "patch": self.patch.relative_to(base_dir).as_posix() if self.patch else None,
            "na": self.na,
        }
        if self.probe is not None:
            doc["probe"] = describe(self.probe)
        return doc


@dataclass(frozen=True)
class EnvRequirement:
    """A package the patched tree needs at run time, reported by `status` (never installed)."""

    package: str
    specifier: SpecifierSet
    why: str

    def to_json(self) -> dict[str, object]:
        return {"package": self.package, "specifier": str(self.specifier), "why": self.why}


@dataclass(frozen=True)
class PatchSpec:
    """One patch of a set as the manifest declares it (variants per release, probe, needs)."""

    id: str
    summary: str
    type: str
    upstream: Upstream
    requires: tuple[str, ...]
    optional: bool
    probe: ProbeNode | None
    variants: tuple[Variant, ...]
    environment: tuple[EnvRequirement, ...]
    line: int
    probe_suggested: bool = False  # `suggested: true`: made by sgpatch, no person has edited it

    def to_json(self, base_dir: Path) -> dict[str, object]:
        """The patch as `show --json` writes it (docs/json.md); `base_dir`: the set folder."""
        return {
            "id": self.id,
            "summary": self.summary,
            "type": self.type,
            "optional": self.optional,
            "requires": list(self.requires),
            "upstream": self.upstream.to_json(),
            "probe": describe(self.probe) if self.probe is not None else None,
            "variants": [v.to_json(base_dir) for v in self.variants],
            "environment": [e.to_json() for e in self.environment],
        }


@dataclass(frozen=True)
class SetManifest:
    """A validated `patchset.yaml`; every path in it is resolved under `base_dir`."""

    name: str
    summary: str
    sglang: SpecifierSet
    fuzz: int
    patches: tuple[PatchSpec, ...]
    path: Path  # the patchset.yaml
    base_dir: Path  # the set directory; patch paths are relative to it

    def patch(self, patch_id: str) -> PatchSpec:
        """The patch with this id (bad_input if there is none)."""
        for spec in self.patches:
            if spec.id == patch_id:
                return spec
        known = ", ".join(p.id for p in self.patches)
        raise bad_input(f"patch set {self.name!r} has no patch {patch_id!r} (known: {known})")

    def to_json(self) -> dict[str, object]:
        """The set in `show --json` (docs/json.md): every patch whole."""
        return {
            "name": self.name,
            "summary": self.summary,
            "sglang": str(self.sglang),
            "fuzz": self.fuzz,
            "patches": [p.to_json(self.base_dir) for p in self.patches],
        }

    def listed_json(self) -> dict[str, object]:
        """The set as `list --json` lists it (docs/json.md): patches counted, its folder."""
        return {
            "name": self.name,
            "summary": self.summary,
            "sglang": str(self.sglang),
            "patches": len(self.patches),
            "path": str(self.base_dir),
        }


class AsWritten(SpecifierSet):
    """A SpecifierSet that prints as the manifest wrote it. packaging sorts the clauses, so
    `>=0.5.5,<0.5.24` would be shown to its author as `<0.5.24,>=0.5.5`."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        specs = getattr(self, "_specs", None)  # packaging 26 keeps them in order, as written
        if not isinstance(specs, tuple):  # older ones a frozenset: parse each clause again
            specs = tuple(Specifier(c.strip()) for c in text.split(",") if c.strip())
        self._text = ",".join(str(s) for s in specs)

    def __str__(self) -> str:
        return self._text

    def __reduce__(self) -> tuple[type[AsWritten], tuple[str]]:  # pickling (matrix's workers)
        return (type(self), (self._text,))


# --- YAML nodes with positions -------------------------------------------------------------------


def _display(path: Path) -> str:
    """The path as the user would recognise it: relative to the cwd when it is below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


class _Checker:
    """Walks composed YAML nodes; every failure is `file:line: field: problem`."""

    def __init__(self, path: Path, base_dir: Path) -> None:
        self.path = path
        self.shown = _display(path)
        self.base_dir = base_dir

    def fail(self, node: object, field: str, problem: str, *, is_unsafe: bool = False) -> NoReturn:
        line = _line(node)
        where = f"{self.shown}:{line}" if line else self.shown
        message = f"{where}: {field}: {problem}" if field else f"{where}: {problem}"
        raise unsafe(message) if is_unsafe else bad_input(message)

    def kind(self, node: object) -> str:
        """What a node is, for a message ("a list", "integer 3", "null")."""
        return _kind(node)

    # scalars ----------------------------------------------------------------------------------

    def text(self, node: object, field: str, *, empty_ok: bool = False) -> str:
        """A string field. Plain scalars keep their source text (`0.6` is "0.6", not a float)."""
        import yaml

        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, field, f"must be a string, got {_kind(node)}")
        if node.tag == "tag:yaml.org,2002:null" and node.style is None:
            self.fail(node, field, "must be a string, got null")
        if node.tag == "tag:yaml.org,2002:bool":
            self.fail(node, field, f"must be a string, got boolean {node.value!r} (quote it)")
        value = str(node.value)
        if not empty_ok and not value.strip():
            self.fail(node, field, "must not be empty")
        return value

    def boolean(self, node: object, field: str) -> bool:
        import yaml

        if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:bool":
            self.fail(node, field, f"must be true or false, got {_describe(node)}")
        return node.value.lower() in ("true", "yes", "on")

    def integer(self, node: object, field: str) -> int:
        import yaml

        if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:int":
            self.fail(node, field, f"must be an integer, got {_describe(node)}")
        try:
            return int(node.value, 0)
        except ValueError:
            self.fail(node, field, f"must be a decimal integer, got {node.value!r}")

    def specifier(self, node: object, field: str) -> SpecifierSet:
        text = self.text(node, field).strip()
        try:
            return checked(AsWritten(text))
        except ValueError:  # InvalidSpecifier, or a version with digits past int()'s limit
            hint = " (a bare version needs '==')" if _looks_like_version(text) else ""
            self.fail(node, field, f"invalid specifier {text!r}{hint}")

    def version(self, node: object, field: str) -> Version:
        text = self.text(node, field).strip()
        try:
            return Version(text)
        except ValueError:  # InvalidVersion, or digits past int()'s limit
            self.fail(node, field, f"invalid version {text!r} (PEP 440, e.g. '0.5.10')")

    # containers -------------------------------------------------------------------------------

    def mapping(
        self,
        node: object,
        field: str,
        required: Sequence[str],
        optional: Sequence[str] = (),
    ) -> dict[str, tuple[object, object]]:
        """A mapping with known keys: {key: (key_node, value_node)}; unknown/missing/dupes fail."""
        import yaml

        if not isinstance(node, yaml.MappingNode):
            self.fail(node, field, f"must be a mapping, got {_kind(node)}")
        allowed = (*required, *optional)
        out: dict[str, tuple[object, object]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.fail(key_node, field, "keys must be plain strings")
            key = str(key_node.value)
            sub = f"{field}.{key}" if field else key
            if key in out:
                self.fail(key_node, sub, f"duplicate key (first at line {_line(out[key][0])})")
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]!r}?" if close else ""
                expected = "expected one of: " + ", ".join(allowed)
                self.fail(key_node, sub, f"unknown key ({hint + ' ' if hint else ''}{expected})")
            out[key] = (key_node, value_node)
        for key in required:
            if key not in out:
                self.fail(node, field, f"missing required key {key!r}")
        return out

    def sequence(self, node: object, field: str, *, non_empty: bool = False) -> list[object]:
        import yaml

        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, field, f"must be a list, got {_kind(node)}")
        if non_empty and not node.value:
            self.fail(node, field, "must not be empty")
        return list(node.value)

    # paths ------------------------------------------------------------------------------------

    def relative_path(self, node: object, field: str, what: str) -> str:
        """A path that must stay inside the set directory / package root (unsafe otherwise)."""
        text = self.text(node, field).strip()
        pure = PurePosixPath(text)
        drive = text[1:2] == ":" and text[:1].isascii() and text[:1].isalpha()  # C:
        if pure.is_absolute() or text.startswith(("~", "\\")) or drive:
            self.fail(node, field, f"{what} {text!r} must be a relative path", is_unsafe=True)
        if "\\" in text:
            self.fail(node, field, f"{what} {text!r} must use '/' separators", is_unsafe=True)
        if ".." in pure.parts:
            self.fail(node, field, f"{what} {text!r} must not contain '..'", is_unsafe=True)
        return text

    def patch_file(self, node: object, field: str) -> Path:
        rel = self.relative_path(node, field, "patch path")
        path = self.base_dir / rel
        if _has_symlink(self.base_dir, rel):  # only then can it lead outside: resolve it
            try:
                path.resolve().relative_to(self.base_dir.resolve())
            except ValueError:
                problem = f"patch {rel!r} resolves outside the set directory (symlink)"
                self.fail(node, field, problem, is_unsafe=True)
        if not path.is_file():
            self.fail(node, field, f"patch file {rel!r} not found in {_display(self.base_dir)}")
        refuse_writable_inside(self.base_dir, rel, f"patch file {rel} of {self.shown}")
        return path


def _has_symlink(base: Path, rel: str) -> bool:
    """Some component of `rel` under `base` is a symlink (or cannot be looked at). A set has a
    variant per release range: one lstat per component instead of a realpath of the whole
    path (and of the set directory) per variant."""
    cur = str(base)
    for part in PurePosixPath(rel).parts:
        cur = os.path.join(cur, part)
        try:
            if stat.S_ISLNK(os.lstat(cur).st_mode):
                return True
        except FileNotFoundError:
            return False  # nothing further to follow; is_file() says "not found"
        except OSError:
            return True
    return False


def _line(node: object) -> int | None:
    mark = getattr(node, "start_mark", None)
    return mark.line + 1 if mark is not None else None


def _kind(node: object) -> str:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.ScalarNode):
        return _describe(node)
    return "nothing"


def _describe(node: object) -> str:
    import yaml

    if not isinstance(node, yaml.ScalarNode):
        return _kind(node)
    kind = node.tag.rsplit(":", 1)[-1]
    if kind == "null":
        return "null"
    names = {"str": "string", "int": "integer", "bool": "boolean", "float": "number"}
    return f"{names.get(kind, kind)} {node.value!r}"


def _looks_like_version(text: str) -> bool:
    try:
        Version(text)
    except ValueError:  # InvalidVersion, or digits past int()'s limit
        return False
    return True


# --- the manifest --------------------------------------------------------------------------------

_TOP_REQUIRED = ("schema", "name", "summary", "sglang", "patches")
_TOP_OPTIONAL = ("fuzz",)
_PATCH_REQUIRED = ("id", "summary", "type", "upstream", "variants")
_PATCH_OPTIONAL = ("requires", "optional", "probe", "environment")


MAX_YAML_DEPTH = 64  # nested mappings/lists; real manifests use about 6
MAX_YAML_NODES = 100_000  # nodes once every alias is expanded; real manifests: a few hundred


def _check_yaml_limits(text: str, shown: str) -> None:
    """Refuse, before composing, YAML that would make sgpatch do unbounded work: nesting deeper
    than MAX_YAML_DEPTH (the composer recurses) or aliases that expand to more than
    MAX_YAML_NODES nodes (a 1.5 KB "billion laughs" document expands to billions). Reads the
    event stream once, keeping each anchor's expanded size; a syntax error is left to the
    composer, which reports it precisely."""
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            _walk_events(yaml.parse(text, Loader=fast), shown)
            return
        except yaml.YAMLError:
            pass  # libyaml refused it (its own depth limit, a syntax error): ask the Python one
    try:
        _walk_events(yaml.parse(text, Loader=yaml.SafeLoader), shown)
    except yaml.YAMLError:
        return  # a syntax error: the composer reports it with its line


def _walk_events(events, shown: str) -> None:
    """Count nesting depth and alias-expanded size over a YAML event stream (no recursion)."""
    import yaml

    sizes: dict[str, int] = {}  # anchor -> expanded size of its node
    frames: list[list] = [[None, 0]]  # [anchor, expanded size] per open collection
    for ev in events:
        if isinstance(ev, yaml.CollectionStartEvent):
            frames.append([ev.anchor, 1])
            if len(frames) - 1 > MAX_YAML_DEPTH:
                line = ev.start_mark.line + 1 if ev.start_mark is not None else 0
                raise bad_input(
                    f"{shown}:{line}: invalid YAML: nested deeper than {MAX_YAML_DEPTH} levels"
                )
            continue
        if isinstance(ev, yaml.CollectionEndEvent):
            anchor, size = frames.pop()
            if anchor is not None:
                sizes[anchor] = size
        elif isinstance(ev, yaml.AliasEvent):
            size = sizes.get(ev.anchor or "", 1)
        elif isinstance(ev, yaml.ScalarEvent):
            size = 1
            if ev.anchor is not None:
                sizes[ev.anchor] = 1
        else:
            continue
        frames[-1][1] += size
        if frames[-1][1] > MAX_YAML_NODES:
            raise bad_input(
                f"{shown}:{ev.start_mark.line + 1}: invalid YAML: aliases expand to more than "
                f"{MAX_YAML_NODES} nodes"
            )


def _fast_compose(text: str):
    """Compose with libyaml when it is there (about 10x faster than the Python parser). Safe
    before any limit is checked: libyaml refuses nesting beyond 1000 levels and composing
    never expands an alias. None means "use the Python parser" (no libyaml, or it refused the
    text: a syntax error to report precisely, or nesting it does not take)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        return None
    try:
        return yaml.compose(text, Loader=loader)
    except yaml.YAMLError:
        return None


def _within_limits(root) -> bool:
    """The composed tree nests at most MAX_YAML_DEPTH deep and its aliases expand to at most
    MAX_YAML_NODES nodes, counted as `_walk_events` counts them (an alias is a leaf for depth
    and its anchor's expanded size for size): one visit per node, so a "billion laughs" costs
    its own size. Also gives libyaml's plain scalars the style the Python parser gives them
    (None, not ''). False: over a limit (the event walk says which, and where). An alias
    inside its own anchor (`&a [*a]`: data that contains itself) raises _Recursive."""
    import yaml

    sizes: dict[int, int] = {}
    open_ids: set[int] = set()  # collections being visited: an alias to one is a cycle

    def visit(node, depth: int) -> int:
        if id(node) in open_ids:
            raise _Recursive(node)
        if id(node) in sizes:  # an alias
            return sizes[id(node)]
        if isinstance(node, yaml.ScalarNode):
            if node.style == "":
                node.style = None
            sizes[id(node)] = 1
            return 1
        if depth > MAX_YAML_DEPTH:
            raise _OverLimit
        open_ids.add(id(node))
        if isinstance(node, yaml.MappingNode):
            children = [x for pair in node.value for x in pair]
        else:
            children = node.value
        size = 1
        for child in children:
            size += visit(child, depth + 1)
            if size > MAX_YAML_NODES:
                raise _OverLimit
        open_ids.discard(id(node))
        sizes[id(node)] = size
        return size

    try:
        return root is None or visit(root, 1) <= MAX_YAML_NODES
    except _OverLimit:
        return False


class _OverLimit(Exception):
    """The composed YAML is over a limit (see _within_limits)."""


class _Recursive(Exception):
    """An alias refers to the collection it is inside (see _within_limits)."""

    def __init__(self, node: object) -> None:
        super().__init__()
        self.node = node


def _checked(root, shown: str) -> bool:
    """_within_limits, with recursive data refused as bad input naming its anchor's line
    (the checker would recurse into it for ever)."""
    try:
        return _within_limits(root)
    except _Recursive as exc:
        line = _line(exc.node)
        where = f"{shown}:{line}" if line else shown
        raise bad_input(
            f"{where}: invalid YAML: an alias refers to the collection it is in (recursive data)"
        ) from None


def _compose_manifest(path: Path, shown: str) -> object:
    """The manifest's YAML node tree, size-limited; unreadable, invalid or empty YAML is bad
    input naming `shown` and, where YAML knows it, the line."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise bad_input(f"{shown}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise bad_input(f"{shown}: cannot read: {e}") from None
    root = _fast_compose(text)
    if root is None or not _checked(root, shown):
        _check_yaml_limits(text, shown)  # over a limit: the message, with its line
        root = None  # (not over one as the events count: the Python parser composes it)
    try:
        if root is None:  # the C parser refused it: the Python one gives the precise message
            root = yaml.compose(text, Loader=yaml.SafeLoader)
            _checked(root, shown)  # within the limits (the events said so); recursive?
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        context = e.context or ""
        if context and e.context_mark is not None and e.context_mark is not mark:
            context += f" (from line {e.context_mark.line + 1})"
        problem = ", ".join(str(p) for p in (context, e.problem) if p)
        raise bad_input(f"{shown}{line}: invalid YAML: {problem}") from None
    except yaml.YAMLError as e:
        raise bad_input(f"{shown}: invalid YAML: {str(e).splitlines()[0]}") from None
    if root is None:
        raise bad_input(f"{shown}: empty manifest")
    return root


def load_manifest(path: Path) -> SetManifest:
    """Load and validate a set's patchset.yaml; any problem is an SgpatchError naming file:line."""
    path = Path(path).absolute()
    base_dir = path.parent
    chk = _Checker(path, base_dir)
    root = _compose_manifest(path, chk.shown)

    top = chk.mapping(root, "", _TOP_REQUIRED, _TOP_OPTIONAL)
    schema_node = top["schema"][1]
    schema = chk.integer(schema_node, "schema")
    if schema != SCHEMA:
        chk.fail(
            schema_node, "schema", f"unsupported schema {schema} (this sgpatch reads {SCHEMA})"
        )
    name_node = top["name"][1]
    name = chk.text(name_node, "name").strip()
    if name != base_dir.name:
        chk.fail(name_node, "name", f"{name!r} must equal the directory name {base_dir.name!r}")
    summary = chk.text(top["summary"][1], "summary").strip()
    sglang = chk.specifier(top["sglang"][1], "sglang")
    fuzz = 0
    if "fuzz" in top:
        fuzz_node = top["fuzz"][1]
        fuzz = chk.integer(fuzz_node, "fuzz")
        if not 0 <= fuzz <= MAX_FUZZ:
            chk.fail(fuzz_node, "fuzz", f"must be 0, 1 or 2, got {fuzz}")

    patch_nodes = chk.sequence(top["patches"][1], "patches", non_empty=True)
    patches = [_load_patch(chk, node, f"patches[{i}]") for i, node in enumerate(patch_nodes)]
    _check_ids(chk, patches, patch_nodes)
    return SetManifest(
        name=name,
        summary=summary,
        sglang=sglang,
        fuzz=fuzz,
        patches=tuple(p for p, _ in patches),
        path=path,
        base_dir=base_dir,
    )


# A parsed patch plus the nodes of its requires entries (for error lines in the cross-checks).
_Loaded = tuple[PatchSpec, list[object]]


def _load_patch(chk: _Checker, node: object, field: str) -> _Loaded:
    keys = chk.mapping(node, field, _PATCH_REQUIRED, _PATCH_OPTIONAL)
    id_node = keys["id"][1]
    patch_id = chk.text(id_node, f"{field}.id").strip()
    if not ID_RE.match(patch_id):
        chk.fail(id_node, f"{field}.id", f"{patch_id!r} must match [a-z0-9][a-z0-9-]*")
    summary = chk.text(keys["summary"][1], f"{field}.summary").strip()
    type_node = keys["type"][1]
    patch_type = chk.text(type_node, f"{field}.type").strip()
    if patch_type not in PATCH_TYPES:
        chk.fail(
            type_node, f"{field}.type", f"{patch_type!r} is not one of {', '.join(PATCH_TYPES)}"
        )
    upstream = _load_upstream(chk, keys["upstream"][1], f"{field}.upstream")

    requires: list[str] = []
    require_nodes: list[object] = []
    if "requires" in keys:
        for j, item in enumerate(chk.sequence(keys["requires"][1], f"{field}.requires")):
            sub = f"{field}.requires[{j}]"
            requires.append(chk.text(item, sub).strip())
            require_nodes.append(item)
    optional = (
        chk.boolean(keys["optional"][1], f"{field}.optional") if "optional" in keys else False
    )
    probe, suggested = (
        parse_top(chk, keys["probe"][1], f"{field}.probe") if "probe" in keys else (None, False)
    )
    if upstream.status == "merged" and probe is None:
        chk.fail(
            keys["upstream"][1],
            f"{field}.upstream",
            "a merged patch needs a probe, so sgpatch can tell when upstream has it",
        )

    variant_nodes = chk.sequence(keys["variants"][1], f"{field}.variants", non_empty=True)
    variants = tuple(
        _load_variant(chk, v, f"{field}.variants[{j}]") for j, v in enumerate(variant_nodes)
    )
    environment: list[EnvRequirement] = []
    if "environment" in keys:
        for j, item in enumerate(chk.sequence(keys["environment"][1], f"{field}.environment")):
            environment.append(_load_env(chk, item, f"{field}.environment[{j}]"))
    spec = PatchSpec(
        id=patch_id,
        summary=summary,
        type=patch_type,
        upstream=upstream,
        requires=tuple(requires),
        optional=optional,
        probe=probe,
        variants=variants,
        environment=tuple(environment),
        line=_line(node) or 0,
        probe_suggested=suggested,
    )
    return spec, require_nodes


def _load_upstream(chk: _Checker, node: object, field: str) -> Upstream:
    keys = chk.mapping(node, field, ("status",), ("ref", "since"))
    status_node = keys["status"][1]
    status = chk.text(status_node, f"{field}.status").strip()
    if status not in UPSTREAM_STATUSES:
        choices = ", ".join(UPSTREAM_STATUSES)
        chk.fail(status_node, f"{field}.status", f"{status!r} is not one of {choices}")
    ref = chk.text(keys["ref"][1], f"{field}.ref").strip() if "ref" in keys else None
    since = chk.version(keys["since"][1], f"{field}.since") if "since" in keys else None
    if status in ("submitted", "merged") and ref is None:
        chk.fail(node, field, f"status {status} needs 'ref' (e.g. \"sgl-project/sglang#19689\")")
    if status == "merged" and since is None:
        chk.fail(node, field, "status merged needs 'since' (the first release that has it)")
    if status != "merged" and since is not None:
        chk.fail(keys["since"][0], f"{field}.since", f"only valid with status merged, not {status}")
    return Upstream(status=status, ref=ref, since=since)


def _load_variant(chk: _Checker, node: object, field: str) -> Variant:
    keys = chk.mapping(node, field, ("sglang",), ("patch", "na", "base", "probe"))
    sglang = chk.specifier(keys["sglang"][1], f"{field}.sglang")
    if ("patch" in keys) == ("na" in keys):
        chk.fail(node, field, "needs exactly one of 'patch' or 'na'")
    for key in ("base", "probe"):
        if key in keys and "patch" not in keys:
            chk.fail(
                node, field, f"'{key}' belongs to a variant with a patch file: it needs 'patch'"
            )
    if "patch" in keys:
        patch = chk.patch_file(keys["patch"][1], f"{field}.patch")
        base = _load_base(chk, keys["base"][1], f"{field}.base") if "base" in keys else None
        probe, suggested = (
            parse_top(chk, keys["probe"][1], f"{field}.probe") if "probe" in keys else (None, False)
        )
        return Variant(sglang=sglang, patch=patch, na=None, line=_line(node) or 0, base=base,
                       probe=probe, probe_suggested=suggested)  # fmt: skip
    reason = chk.text(keys["na"][1], f"{field}.na").strip()
    return Variant(sglang=sglang, patch=None, na=reason, line=_line(node) or 0)


def _load_base(chk: _Checker, node: object, field: str) -> Version:
    """`base:` is one release (a PEP 440 version, local label dropped), not a range."""
    text = chk.text(node, field).strip()
    try:
        return Version(Version(text).public)
    except ValueError:  # InvalidVersion, or digits past int()'s limit
        chk.fail(node, field, f"{text!r} is not a PEP 440 version (one release, e.g. 0.5.9)")


def _load_env(chk: _Checker, node: object, field: str) -> EnvRequirement:
    keys = chk.mapping(node, field, ("package", "specifier", "why"))
    package_node = keys["package"][1]
    package = chk.text(package_node, f"{field}.package").strip()
    if not _PACKAGE_RE.match(package):
        chk.fail(package_node, f"{field}.package", f"{package!r} is not a valid package name")
    specifier = chk.specifier(keys["specifier"][1], f"{field}.specifier")
    why = chk.text(keys["why"][1], f"{field}.why").strip()
    return EnvRequirement(package=package, specifier=specifier, why=why)


def load_probe_text(text: str, path: Path) -> tuple[ProbeNode | None, bool]:
    """A probe written on its own (a file holding what `probe:` holds in the manifest, as port
    keeps a stopped patch's probe in its workspace): (the probe, `suggested: true`?). A file
    with nothing but comments is no probe (None). Errors name `path:line: probe...` (exit 2)."""
    import yaml

    shown = _display(path)
    _check_yaml_limits(text, shown)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        raise bad_input(f"{shown}: invalid YAML: {e}") from None
    if root is None:
        return None, False
    return parse_top(_Checker(path, path.parent), root, "probe")


def probe_for(spec: PatchSpec, version: Version) -> ProbeNode | None:
    """The probe that speaks for `spec` on `version`: the covering variant's own probe when it
    has one, else the patch's (docs/manifest.md, "A variant's own probe")."""
    variant = select_variant(spec, version)
    if variant is not None and variant.probe is not None:
        return variant.probe
    return spec.probe


def probes_of(spec: PatchSpec) -> list[ProbeNode]:
    """Every probe the patch has: its own and its variants'."""
    own = [spec.probe] if spec.probe is not None else []
    return own + [v.probe for v in spec.variants if v.probe is not None]


def _check_ids(chk: _Checker, patches: list[_Loaded], nodes: list[object]) -> None:
    """Ids are unique; requires name existing ids, not themselves, and form no cycle."""
    import yaml

    seen: dict[str, int] = {}
    for i, ((spec, _), node) in enumerate(zip(patches, nodes, strict=True)):
        if spec.id in seen:
            assert isinstance(node, yaml.MappingNode)
            id_node = next(v for k, v in node.value if k.value == "id")
            message = f"duplicate id {spec.id!r} (first at line {seen[spec.id]})"
            chk.fail(id_node, f"patches[{i}].id", message)
        seen[spec.id] = spec.line
    for i, (spec, require_nodes) in enumerate(patches):
        for j, (req, req_node) in enumerate(zip(spec.requires, require_nodes, strict=True)):
            field = f"patches[{i}].requires[{j}]"
            if req == spec.id:
                chk.fail(req_node, field, f"patch {spec.id!r} requires itself")
            if req not in seen:
                chk.fail(req_node, field, f"unknown patch id {req!r} (known: {', '.join(seen)})")
    graph = {spec.id: spec.requires for spec, _ in patches}
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done

    def visit(node_id: str, stack: list[str]) -> None:
        state[node_id] = 1
        for req in graph[node_id]:
            if state.get(req) == 1:
                cycle = [*stack[stack.index(req) :], req]
                i = next(k for k, (s, _) in enumerate(patches) if s.id == node_id)
                spec, require_nodes = patches[i]
                j = spec.requires.index(req)
                message = "dependency cycle " + " -> ".join(cycle)
                chk.fail(require_nodes[j], f"patches[{i}].requires[{j}]", message)
            if state.get(req) is None:
                visit(req, [*stack, req])
        state[node_id] = 2

    for spec, _ in patches:
        if spec.id not in state:
            visit(spec.id, [spec.id])


# --- variants ------------------------------------------------------------------------------------


def select_variant(patch: PatchSpec, version: Version) -> Variant | None:
    """The first variant whose specifier contains `version`, or None.

    Matching uses the public version (`0.5.10+cu130` matches like `0.5.10`) and allows pre/dev
    releases (`0.5.24.dev3` is matched as such; note `<0.5.24` excludes it, by PEP 440).
    """
    public = Version(version.public)
    for variant in patch.variants:
        if variant.sglang.contains(public, prereleases=True):
            return variant
    return None


def set_supports(manifest: SetManifest, version: Version) -> bool:
    """Whether the set's top-level `sglang` range covers `version` (same rules as variants)."""
    return manifest.sglang.contains(Version(version.public), prereleases=True)


# --- discovery -----------------------------------------------------------------------------------


def bundled_dir() -> Path:
    """The sets shipped with sgpatch (a symlink to the repo's patchsets/ in development)."""
    import sgpatch

    return Path(sgpatch.__file__).parent / "patchsets"


def _sets_in(directory: Path) -> list[tuple[str, Path]]:
    if (directory / MANIFEST_NAME).is_file():
        return [(directory.name, directory)]
    try:
        children = sorted(directory.iterdir())
    except OSError:
        return []
    return [(c.name, c) for c in children if c.is_dir() and (c / MANIFEST_NAME).is_file()]


def find_sets(
    extra_dirs: Sequence[Path | str] = (),
    environ: Mapping[str, str] | None = None,
    refused: list[SgpatchError] | None = None,
) -> dict[str, Path]:
    """Known patch sets, name -> set directory; the first found wins for a name.

    Search order: `--patchsets DIR` (each a set or a folder of sets; must exist), then
    `$SGPATCH_PATH` (os.pathsep-separated; missing entries are skipped, like $PATH), then the
    bundled sets. A folder on the way, a set folder or its manifest that other users may write
    is refused (exit 4, sgpatch.patchset.hygiene); with `refused`, it goes there instead and
    the search goes on without it (`list` shows the others).
    """
    env = os.environ if environ is None else environ
    places: list[tuple[Path, str]] = []
    for extra in extra_dirs:
        directory = Path(extra).expanduser()
        if not directory.is_dir():
            raise bad_input(f"--patchsets {directory}: not a directory")
        places.append((directory, f"--patchsets {directory}"))
    for entry in env.get(ENV_SGPATCH_PATH, "").split(os.pathsep):
        directory = Path(entry.strip()).expanduser()
        if entry.strip() and directory.is_dir():
            places.append((directory, f"patch set folder {directory} (from ${ENV_SGPATCH_PATH})"))
    if bundled_dir().is_dir():
        places.append((bundled_dir(), f"the shipped patch sets' folder {bundled_dir()}"))
    found: dict[str, Path] = {}
    seen: set[str] = set()  # a refused set still takes its name: a later one is not shown as it
    for directory, what in places:
        if _refused(refused, refuse_others_writable, directory, what):
            continue
        for name, path in _sets_in(directory):
            if name in seen:
                continue
            seen.add(name)
            set_what = f"patch set {name} ({what})"
            if not _refused(refused, refuse_others_writable, path, set_what) and not _refused(
                refused, refuse_others_writable, path / MANIFEST_NAME, f"the manifest of {set_what}"
            ):
                found[name] = path.absolute()
    return found


def _refused(refused: list[SgpatchError] | None, check, *args) -> bool:
    """Run a hygiene check; its refusal raises, or with a `refused` list is kept there."""
    try:
        check(*args)
    except SgpatchError as e:
        if refused is None:
            raise
        refused.append(e)
        return True
    return False


def shadowed(name: str, path: Path) -> Path | None:
    """The shipped set that a set found at `path` under the same name hides, if any."""
    shipped = bundled_dir() / name
    if (shipped / MANIFEST_NAME).is_file() and Path(path).resolve() != shipped.resolve():
        return shipped
    return None


def shadow_note(name: str, path: Path) -> str | None:
    """One line for a user set that hides the shipped set of its name (None if it does not)."""
    if shadowed(name, path) is None:
        return None
    return (
        f"sgpatch: note: set {name} from {path} shadows the shipped set of that name; "
        "this run uses yours"
    )


def load_set(
    name: str, extra_dirs: Sequence[Path | str] = (), environ: Mapping[str, str] | None = None
) -> SetManifest:
    """Find the set called `name` (see find_sets) and load its manifest."""
    sets = find_sets(extra_dirs, environ)
    if name not in sets:
        known = ", ".join(sorted(sets)) or "none"
        raise bad_input(f"unknown patch set {name!r} (known: {known})")
    note = shadow_note(name, sets[name])
    if note is not None:
        with contextlib.suppress(OSError, AttributeError):  # stderr closed or gone
            sys.stderr.write(note + "\n")
    return load_manifest(sets[name] / MANIFEST_NAME)


__all__ = [
    "MANIFEST_NAME",
    "EnvRequirement",
    "PatchSpec",
    "SetManifest",
    "Upstream",
    "Variant",
    "bundled_dir",
    "find_sets",
    "load_manifest",
    "load_probe_text",
    "load_set",
    "probe_for",
    "probes_of",
    "select_variant",
    "set_supports",
    "shadow_note",
]
