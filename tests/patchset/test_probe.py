"""Tests for patchset.probe: regex/absent/symbol probes and their evidence, on synthetic trees."""

from __future__ import annotations

import ast
import os
import textwrap
import zipfile
from pathlib import Path

import pytest

import sgpatch.patchset.probe as probe_mod
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.patchset.probe import (
    AllProbe,
    AnyProbe,
    Evidence,
    NotProbe,
    RegexProbe,
    SymbolProbe,
    describe,
    evaluate,
)


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "sglang"
    write(root, "__init__.py", "")
    write(
        root,
        "srt/layers/communicator.py",
        """\
        import torch

        def gate():
            return _is_sm90_supported or _is_sm100_supported
        # SM12 note
        """,
    )
    write(root, "srt/layers/other.py", "x = 1\n")
    return root


# --- regex probes --------------------------------------------------------------------------------


def test_regex_match_reports_file_line_text(tree: Path) -> None:
    result = evaluate(RegexProbe("srt/layers/*.py", r"^\s+return _is_sm90"), tree)
    assert result.value is True
    (ev,) = result.evidence
    assert ev == Evidence(
        "match",
        "srt/layers/communicator.py",
        4,
        "    return _is_sm90_supported or _is_sm100_supported",
        r"/^\s+return _is_sm90/ matches",
    )


def test_regex_multiline_anchor(tree: Path) -> None:
    assert evaluate(RegexProbe("srt/layers/communicator.py", r"^def gate\(\):$"), tree).value
    assert not evaluate(RegexProbe("srt/layers/communicator.py", r"^return"), tree).value


def test_regex_no_match_lists_files(tree: Path) -> None:
    result = evaluate(RegexProbe("srt/**/*.py", "_is_sm120_supported"), tree)
    assert result.value is False
    assert [(e.kind, e.file) for e in result.evidence] == [
        ("no-match", "srt/layers/communicator.py"),
        ("no-match", "srt/layers/other.py"),
    ]


def test_regex_no_match_summary_for_many_files(tree: Path) -> None:
    for i in range(8):
        write(tree, f"srt/many/m{i}.py", "pass\n")
    result = evaluate(RegexProbe("srt/many/*.py", "nothing"), tree)
    assert result.value is False
    (ev,) = result.evidence
    assert ev.kind == "no-match" and "in 8 files" in ev.note


def test_regex_missing_file(tree: Path) -> None:
    result = evaluate(RegexProbe("srt/layers/flashinfer_comm_fusion.py", "x"), tree)
    assert result.value is False
    assert result.evidence[0].kind == "missing"
    assert "no file matches srt/layers/flashinfer_comm_fusion.py" in result.evidence[0].note


def test_absent(tree: Path) -> None:
    ok = evaluate(RegexProbe("srt/layers/*.py", "sm120", absent=True), tree)
    assert ok.value is True
    found = evaluate(RegexProbe("srt/layers/*.py", "SM12", absent=True), tree)
    assert found.value is False
    assert found.evidence[-1].kind == "match"
    assert found.evidence[-1].line == 5
    assert "not absent" in found.evidence[-1].note
    missing = evaluate(RegexProbe("srt/nope.py", "x", absent=True), tree)
    assert missing.value is False  # nothing to check is not "absent"
    assert missing.evidence[0].kind == "missing"


def test_composites(tree: Path) -> None:
    yes = RegexProbe("srt/layers/communicator.py", "_is_sm100_supported")
    no = RegexProbe("srt/layers/communicator.py", "_is_sm120_supported")
    assert evaluate(AllProbe((yes, yes)), tree).value is True
    assert evaluate(AllProbe((yes, no)), tree).value is False
    assert evaluate(AnyProbe((no, yes)), tree).value is True
    assert evaluate(AnyProbe((no, no)), tree).value is False
    inverted = evaluate(NotProbe(no), tree)
    assert inverted.value is True
    assert inverted.evidence[0].kind == "no-match"
    nested = evaluate(AllProbe((NotProbe(no), AnyProbe((no, yes)))), tree)
    assert nested.value is True
    assert [c.value for c in nested.children] == [True, True]
    assert [c.value for c in nested.children[1].children] == [False, True]
    assert len(nested.evidence) == 3  # every child is evaluated, for -v


def test_unsafe_globs(tree: Path) -> None:
    for pattern in ("../etc/*", "/etc/passwd", "srt/../../x", "~/x", "C:/x", "srt\\x.py", ""):
        with pytest.raises(SgpatchError) as info:
            evaluate(RegexProbe(pattern, "x"), tree)
        assert info.value.code == ExitCode.UNSAFE, pattern
    with pytest.raises(SgpatchError) as info:
        evaluate(SymbolProbe("../x.py", "A", "f"), tree)
    assert info.value.code == ExitCode.UNSAFE


def test_state_dir_and_outside_symlinks_are_ignored(tree: Path, tmp_path: Path) -> None:
    write(tree, ".sgpatch/orig/srt/layers/communicator.py", "needle\n")
    outside = write(tmp_path, "outside/secret.py", "needle\n")
    (tree / "srt" / "layers" / "link.py").symlink_to(outside)
    result = evaluate(RegexProbe("**/*.py", "needle"), tree)
    assert result.value is False
    assert all(".sgpatch" not in e.file and "link" not in e.file for e in result.evidence)


def test_undecodable_bytes_do_not_crash(tree: Path) -> None:
    (tree / "srt" / "bin.py").write_bytes(b"\xff\xfe needle\n")
    assert evaluate(RegexProbe("srt/bin.py", "needle"), tree).value is True


# --- symbol probes -------------------------------------------------------------------------------


@pytest.fixture
def models(tree: Path) -> Path:
    write(
        tree,
        "srt/models/deepseek_v2.py",
        """\
        from torch import nn

        class Mixin:
            pass

        class DeepseekV2ForCausalLM(nn.Module, Mixin):
            def forward(self):
                pass

            def get_embed_and_head(self):
                return 1

        class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
            pass

        Alias = DeepseekV3ForCausalLM
        """,
    )
    write(
        tree,
        "srt/models/kimi.py",
        """\
        from torch import nn
        from sglang.srt.models.deepseek_v2 import DeepseekV3ForCausalLM

        class KimiK25ForConditionalGeneration(nn.Module):
            def forward(self):
                pass
        """,
    )
    write(tree, "srt/models/__init__.py", "from .deepseek_v2 import DeepseekV3ForCausalLM as V3\n")
    return tree


def symbol(root: Path, file: str, cls: str, method: str = "get_embed_and_head"):
    return evaluate(SymbolProbe(file, cls, method), root)


def test_method_defined_directly(models: Path) -> None:
    result = symbol(models, "srt/models/deepseek_v2.py", "DeepseekV2ForCausalLM")
    assert result.value is True
    assert result.evidence[-1] == Evidence(
        "method",
        "srt/models/deepseek_v2.py",
        10,
        "    def get_embed_and_head(self):",
        "get_embed_and_head defined in DeepseekV2ForCausalLM",
    )


def test_method_inherited_in_same_file(models: Path) -> None:
    result = symbol(models, "srt/models/deepseek_v2.py", "DeepseekV3ForCausalLM")
    assert result.value is True
    kinds = [e.kind for e in result.evidence]
    assert kinds == ["class", "no-method", "class", "method"]
    assert result.evidence[0].text == "class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):"
    assert result.evidence[-1].note.endswith("inherited by DeepseekV3ForCausalLM")


def test_method_missing_base_outside_tree(models: Path) -> None:
    result = symbol(models, "srt/models/kimi.py", "KimiK25ForConditionalGeneration")
    assert result.value is False
    cls, missing, base = result.evidence
    assert (cls.kind, cls.file, cls.line) == ("class", "srt/models/kimi.py", 4)
    assert cls.note == "class KimiK25ForConditionalGeneration(nn.Module)"
    assert (
        missing.note == "method get_embed_and_head not defined in KimiK25ForConditionalGeneration"
    )
    assert base.kind == "base" and base.text == "nn.Module"
    assert "base nn.Module is not defined in the tree" in base.note


IMPORT_FORMS = {
    "absolute": "from sglang.srt.models.deepseek_v2 import DeepseekV3ForCausalLM as Base\n",
    "relative": "from .deepseek_v2 import DeepseekV3ForCausalLM as Base\n",
    "module-from": (
        "from sglang.srt.models import deepseek_v2\nBase = deepseek_v2.DeepseekV3ForCausalLM\n"
    ),
    "relative-module": "from . import deepseek_v2 as ds\nBase = ds.DeepseekV3ForCausalLM\n",
    "import-as": "import sglang.srt.models.deepseek_v2 as ds\nBase = ds.DeepseekV3ForCausalLM\n",
    "import-dotted": (
        "import sglang.srt.models.deepseek_v2\n"
        "Base = sglang.srt.models.deepseek_v2.DeepseekV3ForCausalLM\n"
    ),
    "package-reexport": "from sglang.srt.models import V3 as Base\n",
    "alias-assignment": "from .deepseek_v2 import Alias as Base\n",
    "guarded-import": (
        "try:\n    from .deepseek_v2 import DeepseekV3ForCausalLM as Base\n"
        "except ImportError:\n    Base = None\n"
    ),
}


@pytest.mark.parametrize("form", sorted(IMPORT_FORMS))
def test_bases_resolved_through_imports(models: Path, form: str) -> None:
    write(models, "srt/models/leaf.py", IMPORT_FORMS[form] + "\nclass Leaf(Base):\n    pass\n")
    result = symbol(models, "srt/models/leaf.py", "Leaf")
    assert result.value is True, result.evidence
    last = result.evidence[-1]
    assert (last.kind, last.file, last.line) == ("method", "srt/models/deepseek_v2.py", 10)
    assert last.note.endswith("inherited by Leaf through DeepseekV3ForCausalLM")


def test_base_via_attribute_in_class_statement(models: Path) -> None:
    write(
        models,
        "srt/models/leaf.py",
        "from sglang.srt.models import deepseek_v2\n\n"
        "class Leaf(deepseek_v2.DeepseekV2ForCausalLM):\n    pass\n",
    )
    assert symbol(models, "srt/models/leaf.py", "Leaf").value is True


def test_relative_import_two_levels(models: Path) -> None:
    write(
        models,
        "srt/models/sub/deep.py",
        "from ..deepseek_v2 import DeepseekV2ForCausalLM\n\n"
        "class Deep(DeepseekV2ForCausalLM): ...\n",
    )
    assert symbol(models, "srt/models/sub/deep.py", "Deep").value is True
    write(models, "srt/models/sub/top.py", "from .... import nothing\n\nclass T(nothing): ...\n")
    result = symbol(models, "srt/models/sub/top.py", "T")
    assert result.value is False
    assert "not defined in the tree" in result.evidence[-1].note


def test_chain_across_three_files(tree: Path) -> None:
    write(
        tree,
        "srt/a.py",
        "from torch import nn\nclass A(nn.Module):\n    async def hook(self): ...\n",
    )
    write(tree, "srt/b.py", "from sglang.srt.a import A as Renamed\nclass B(Renamed): pass\n")
    write(tree, "srt/c.py", "from .b import B\nclass C(B): pass\n")
    result = symbol(tree, "srt/c.py", "C", "hook")
    assert result.value is True
    assert [e.file for e in result.evidence if e.kind == "class"] == [
        "srt/c.py",
        "srt/b.py",
        "srt/a.py",
    ]
    assert result.evidence[-1].note == "hook defined in A, inherited by C through B"


def test_method_forms(tree: Path) -> None:
    write(
        tree,
        "srt/forms.py",
        """\
        def helper(self): ...

        class Assigned:
            hook = helper

        class Guarded:
            if True:
                def hook(self): ...

        class Annotated:
            hook: object = helper

        class OnlyAnnotation:
            hook: object

        class Nested:
            def other(self):
                def hook(): ...
        """,
    )
    for cls, expected in [
        ("Assigned", True),
        ("Guarded", True),
        ("Annotated", True),
        ("OnlyAnnotation", False),
        ("Nested", False),
    ]:
        assert symbol(tree, "srt/forms.py", cls, "hook").value is expected, cls


def test_left_to_right_bases_and_unresolvable(tree: Path) -> None:
    write(
        tree,
        "srt/m.py",
        """\
        from typing import Generic
        class Has:
            def hook(self): ...
        class X(make_base(), Generic[T], Has): pass
        """,
    )
    result = symbol(tree, "srt/m.py", "X", "hook")
    assert result.value is True
    notes = [e.note for e in result.evidence if e.kind == "base"]
    assert notes[0] == "base make_base() cannot be resolved statically"
    assert notes[1].startswith("base Generic[T] is not defined in the tree")


def test_inheritance_cycle_terminates(tree: Path) -> None:
    write(tree, "srt/cyc.py", "class A(B): pass\nclass B(A): pass\n")
    assert symbol(tree, "srt/cyc.py", "A", "hook").value is False


def test_missing_file_and_class(models: Path) -> None:
    result = symbol(models, "srt/models/nope.py", "X")
    assert (result.value, result.evidence[0].kind) == (False, "missing")
    assert result.evidence[0].note == "srt/models/nope.py does not exist"
    result = symbol(models, "srt/models/kimi.py", "Nope")
    assert (result.value, result.evidence[0].kind) == (False, "missing")
    assert "class Nope not defined in srt/models/kimi.py" in result.evidence[0].note


def test_syntax_error_in_target_file(tree: Path) -> None:
    write(tree, "srt/bad.py", "class A:\n    def hook(self:\n")
    result = symbol(tree, "srt/bad.py", "A", "hook")
    assert result.value is False
    (ev,) = result.evidence
    assert ev.kind == "error" and ev.file == "srt/bad.py" and ev.line is not None
    assert ev.note.startswith("syntax error")


def test_syntax_error_in_base_file(tree: Path) -> None:
    write(tree, "srt/bad.py", "class Base:\n    def hook(self:\n")
    write(tree, "srt/leaf.py", "from .bad import Base\nclass Leaf(Base): pass\n")
    result = symbol(tree, "srt/leaf.py", "Leaf", "hook")
    assert result.value is False
    assert "srt/bad.py:2: syntax error" in result.evidence[-1].note


def test_files_parsed_once_per_evaluate(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_parse = ast.parse

    def counting(source, filename="<unknown>", *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(str(filename))
        return real_parse(source, filename, *args, **kwargs)

    monkeypatch.setattr(probe_mod.ast, "parse", counting)
    node = SymbolProbe("srt/models/deepseek_v2.py", "DeepseekV3ForCausalLM", "get_embed_and_head")
    kimi = SymbolProbe("srt/models/kimi.py", "KimiK25ForConditionalGeneration", "forward")
    evaluate(AllProbe((node, node, kimi, NotProbe(node))), models)
    assert sorted(calls) == ["srt/models/deepseek_v2.py", "srt/models/kimi.py"]


def test_describe() -> None:
    node = AllProbe(
        (
            RegexProbe("srt/a.py", "x"),
            NotProbe(RegexProbe("srt/b.py", "y", absent=True)),
            AnyProbe((SymbolProbe("srt/c.py", "C", "m"),)),
        )
    )
    assert (
        describe(node)
        == "all(regex srt/a.py /x/, not(absent srt/b.py /y/), any(symbol srt/c.py C.m))"
    )


# --- real releases -------------------------------------------------------------------------------

WHEEL_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sgpatch" / "wheels"


def extract_models(version: str, dest: Path) -> Path:
    """The package root with srt/models/ of a cached release wheel (skip if not cached)."""
    found = sorted(WHEEL_CACHE.glob(f"sglang-{version}-*.whl"))
    if not found:
        pytest.skip(f"sglang {version} wheel not in {WHEEL_CACHE}")
    with zipfile.ZipFile(found[0]) as wheel:
        for name in wheel.namelist():
            if name.startswith("sglang/srt/models/") and name.endswith(".py"):
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                (dest / name).write_bytes(wheel.read(name))
    return dest / "sglang"


KIMI = ("srt/models/kimi_k25.py", "KimiK25ForConditionalGeneration", "get_embed_and_head")


@pytest.mark.real
def test_real_0_5_9(tmp_path: Path) -> None:
    root = extract_models("0.5.9", tmp_path)
    kimi = evaluate(SymbolProbe(*KIMI), root)
    assert kimi.value is False
    cls = kimi.evidence[0]
    assert (cls.kind, cls.file, cls.line) == ("class", KIMI[0], 648)
    assert cls.note == "class KimiK25ForConditionalGeneration(nn.Module)"
    assert "base nn.Module is not defined in the tree" in kimi.evidence[-1].note

    v3 = evaluate(SymbolProbe("srt/models/deepseek_v2.py", "DeepseekV3ForCausalLM", KIMI[2]), root)
    assert v3.value is True
    found = v3.evidence[-1]
    assert (found.kind, found.file, found.line) == ("method", "srt/models/deepseek_v2.py", 2944)
    assert (
        found.note
        == "get_embed_and_head defined in DeepseekV2ForCausalLM, inherited by DeepseekV3ForCausalLM"
    )


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.5.10", "0.5.10.post1"])
def test_real_0_5_10_kimi_has_hooks(tmp_path: Path, version: str) -> None:
    root = extract_models(version, tmp_path)
    for method in ("get_embed_and_head", "set_eagle3_layers_to_capture"):
        result = evaluate(SymbolProbe(KIMI[0], KIMI[1], method), root)
        assert result.value is True, result.evidence
        assert result.evidence[-1].file == KIMI[0]
        assert result.evidence[-1].note == f"{method} defined in KimiK25ForConditionalGeneration"


# --- the registry of kinds ------------------------------------------------------------------------

EVERY_KIND = AllProbe(
    (
        AnyProbe((RegexProbe("a.py", r"x\d"), RegexProbe("b/*.py", "it's", absent=True))),
        NotProbe(SymbolProbe("srt/c.py", "C", "m")),
    )
)


def test_every_registered_kind_is_written_and_read_back(tmp_path):
    """Input: a probe holding a node of every kind in KINDS. Outcome: each kind's render, read
    back by the one parser (load_probe_text), gives the same probe; no kind is left out."""
    from sgpatch.patchset.manifest import load_probe_text

    seen = {type(n) for n in _nodes(EVERY_KIND)}
    assert seen == set(probe_mod.KINDS.values())
    text = "\n".join(probe_mod.render(EVERY_KIND, 0)) + "\n"
    assert load_probe_text(text, tmp_path / "p.yaml") == (EVERY_KIND, False)


def _nodes(node):
    yield node
    for child in getattr(node, "nodes", ()) + ((node.node,) if isinstance(node, NotProbe) else ()):
        yield from _nodes(child)


def test_files_of_every_kind_come_from_the_registry():
    """Input: the every-kind probe. Outcome: the files it reads, in order: the regex globs, the
    symbol's file and its folder's modules (where its bases usually are)."""
    assert probe_mod.files(EVERY_KIND) == ["a.py", "b/*.py", "srt/c.py", "srt/*.py"]
    assert probe_mod.files(None) == []


def test_a_node_of_no_registered_kind_is_one_internal_error_everywhere(tmp_path):
    """Input: a probe tree holding a node that is no registered kind (code that made one
    without adding it to KINDS). Outcome: evaluate, files, describe and render each raise
    sgpatch's one-line internal error (exit 70), never a false verdict or an empty file list."""
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Grep:
        word: str

    node = AllProbe((RegexProbe("a.py", "x"), Grep("x")))  # type: ignore[arg-type]
    calls = (
        lambda: evaluate(node, tmp_path),
        lambda: probe_mod.files(node),
        lambda: describe(node),
        lambda: probe_mod.render(node, 0),
    )
    for call in calls:
        with pytest.raises(SgpatchError) as info:
            call()
        assert info.value.code == ExitCode.INTERNAL
        assert info.value.message == "not a probe kind sgpatch knows: Grep"


@pytest.mark.parametrize(
    ("yaml_text", "problem"),
    [
        ("{grep: x}", "not a probe: unknown kind ('grep'); expected {file, regex}, "),
        ("{}", "not a probe: unknown kind (none); expected"),
        ("{symbol: {file: a.py, class: C, method: m}, regex: x}", "has both 'symbol' and 'regex'"),
        ("{file: a.py}", "missing required key 'regex'"),
        ("[a]", "must be a mapping ({file, regex}, {file, absent}, {symbol}, {all}, {any} or"),
    ],
)
def test_a_probe_of_no_known_kind_is_refused_where_it_is_read(tmp_path, yaml_text, problem):
    """Input: probe YAML naming no kind, an unknown one, two kinds, or not a mapping. Outcome:
    one line `FILE:1: probe: PROBLEM`, exit 2."""
    from sgpatch.patchset.manifest import load_probe_text

    with pytest.raises(SgpatchError) as info:
        load_probe_text(yaml_text + "\n", tmp_path / "p.yaml")
    assert info.value.code == ExitCode.BAD_INPUT
    assert f"p.yaml:1: probe: {problem}" in info.value.message
    assert "\n" not in info.value.message


def test_entries_and_all_of_take_a_probe_apart_and_back():
    """Input: an all of two clauses, a single regex, and lists of 0, 1 and 2 clauses. Outcome:
    entries gives the all's clauses (a single node alone); all_of gives None, the node itself,
    or their all: taking a probe apart and back gives the same probe."""
    one, two = RegexProbe("a.py", "x"), RegexProbe("b.py", "y")
    both = AllProbe((one, two))
    assert probe_mod.entries(both) == (one, two) and probe_mod.entries(one) == (one,)
    assert probe_mod.all_of([]) is None
    assert probe_mod.all_of([one]) == one
    assert probe_mod.all_of(probe_mod.entries(both)) == both
