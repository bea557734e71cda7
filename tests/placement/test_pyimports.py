"""Imports that no longer resolve (placement/pyimports.py): a synthetic fla-module tree."""

from __future__ import annotations

import pytest

from sgpatch.placement.pyimports import (
    Unresolved,
    release_of,
    top_names,
    unresolved,
)

# Release V: upstream moved srt/layers/attention/fla/ to kernels/ops/attention/fla/.
FLA = "kernels/ops/attention/fla"
V_FILES = {
    f"{FLA}/__init__.py": b"",
    f"{FLA}/fused_recurrent.py": b"def fused_recurrent_gated_delta_rule(x):\n    return x\n",
    f"{FLA}/chunk.py": b"from sglang.kernels.ops.attention.fla.utils import cdiv\n\n"
    b"def chunk(x):\n    return cdiv(x)\n",
    f"{FLA}/utils.py": b"def cdiv(a):\n    return a\n\nBLOCK: int = 16\n",
    "srt/__init__.py": b"",
    "srt/layers/__init__.py": b"",
    "srt/layers/linear.py": b"class Linear:\n    pass\n",
    "srt/utils/__init__.py": b"from .common import get_device\n",
    "srt/utils/common.py": b"def get_device():\n    return 'cpu'\n\ndef moved_helper():\n"
    b"    pass\n",
    "srt/dyn.py": b"def __getattr__(name):\n    return name\n",
    "srt/star.py": b"from sglang.srt.utils.common import *\n",
    "srt/ns/leaf.py": b"X = 1\n",  # srt/ns: a folder without __init__.py
    "srt/_kernels.cpython-311-x86_64-linux-gnu.so": b"\x7fELF",
}
V = release_of(V_FILES, V_FILES)
BEFORE = V_FILES[f"{FLA}/chunk.py"].decode()
OLD_IMPORT = (
    "from sglang.srt.layers.attention.fla.fused_recurrent import fused_recurrent_gated_delta_rule"
)


def _added(line: str, to: str = BEFORE) -> str:
    """`to` with `line` added after its first line (as a carried hunk adds it)."""
    first, rest = to.split("\n", 1)
    return f"{first}\n{line}\n{rest}"


def test_the_fla_move_an_added_import_of_the_old_module_is_named_with_its_new_home():
    """Input: the carried chunk.py on V gains the hunk's `from sglang.srt.layers.attention.fla.
    fused_recurrent import ...` (line 2); V has that module only under kernels/ops/.
    Outcome: one Unresolved at chunk.py:2: no module; now at sglang.kernels.ops..."""
    after = _added(OLD_IMPORT)
    (u,) = unresolved(f"{FLA}/chunk.py", after, BEFORE, V)
    assert u == Unresolved(
        f"{FLA}/chunk.py",
        2,
        OLD_IMPORT,
        "sglang.srt.layers.attention.fla.fused_recurrent",
        None,
        ("sglang.kernels.ops.attention.fla.fused_recurrent",),
    )
    assert u.brief() == (
        f"{FLA}/chunk.py:2: {OLD_IMPORT}: no module sglang.srt.layers.attention.fla."
        "fused_recurrent; now at sglang.kernels.ops.attention.fla.fused_recurrent"
    )
    assert u.to_json()["homes"] == ["sglang.kernels.ops.attention.fla.fused_recurrent"]


def test_the_same_import_of_the_new_module_resolves():
    """Input: the hunk's import rewritten to the new module. Outcome: nothing to report."""
    after = _added(OLD_IMPORT.replace("srt.layers.attention", "kernels.ops.attention"))
    assert unresolved(f"{FLA}/chunk.py", after, BEFORE, V) == []


def test_a_name_gone_from_a_module_that_stays_is_named_with_the_module_defining_it():
    """Input: `from sglang.srt.layers.linear import moved_helper, Linear` added; linear.py is
    on V but defines only Linear; utils/common.py defines moved_helper.
    Outcome: one Unresolved for the name, now at sglang.srt.utils.common."""
    after = _added("from sglang.srt.layers.linear import moved_helper, Linear")
    (u,) = unresolved(f"{FLA}/chunk.py", after, BEFORE, V)
    assert (u.module, u.name, u.homes) == (
        "sglang.srt.layers.linear",
        "moved_helper",
        ("sglang.srt.utils.common",),
    )
    assert u.missing == "no name moved_helper in sglang.srt.layers.linear"


def test_a_module_gone_without_a_namesake_is_found_by_the_name_it_imports():
    """Input: `from sglang.srt.old_place import cdiv`: no module ends in `old_place` on V.
    Outcome: the module is reported gone, its home the module that defines cdiv."""
    after = _added("from sglang.srt.old_place import cdiv")
    (u,) = unresolved(f"{FLA}/chunk.py", after, BEFORE, V)
    assert u.name is None and u.homes == (f"sglang.{FLA.replace('/', '.')}.utils",)


def test_nowhere_on_the_release_is_said():
    """Input: `import sglang.srt.nowhere_at_all` added. Outcome: reported, no home, and the
    brief line says it was not found elsewhere."""
    after = _added("import sglang.srt.nowhere_at_all")
    (u,) = unresolved(f"{FLA}/chunk.py", after, BEFORE, V)
    assert u.homes == () and u.brief().endswith("not found elsewhere on this release")


@pytest.mark.parametrize(
    "line",
    [
        "import sglang.srt.layers.linear",
        "import sglang.srt.layers.linear as lin",
        "from sglang.srt import layers",  # a submodule
        "from sglang.srt.utils import get_device",  # bound by the package's __init__ import
        "from sglang.kernels.ops.attention.fla.utils import BLOCK",  # an annotated assignment
        "from sglang.srt.dyn import anything",  # a module __getattr__
        "from sglang.srt.star import anything",  # import *
        "from sglang.srt.ns import leaf",  # a namespace package's submodule
        "from sglang.srt import _kernels",  # an extension module
        "from .utils import cdiv",  # relative: kernels/ops/attention/fla/utils.py
        "from . import fused_recurrent",
        "from ...attention.fla import utils",
        "import torch",  # third-party: out of scope
        "from torch.nn import NotAThing",
        "try:\n    from sglang.srt.gone import x\nexcept ImportError:\n    x = None",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sglang.srt.gone import x",
        "import typing\nif typing.TYPE_CHECKING:\n    import sglang.srt.gone",
        "def f():\n    try:\n        import sglang.srt.gone\n    except (ValueError, "
        "ModuleNotFoundError):\n        pass",
    ],
)
def test_imports_that_resolve_or_are_out_of_scope_are_not_reported(line):
    """Input: an added import that resolves on V (module, submodule, a name bound at the top
    level, a module that may hold any name, a relative import), a third-party one, one the
    author guarded with `except ImportError`, or one under `if TYPE_CHECKING` (never runs).
    Outcome: nothing to report."""
    after = _added(line)
    assert unresolved(f"{FLA}/chunk.py", after, BEFORE, V) == []


@pytest.mark.parametrize(
    ("line", "module", "name"),
    [
        ("from sglang.srt.ns import X", "sglang.srt.ns", "X"),  # a namespace package: no X
        ("from .gone import x", f"sglang.{FLA.replace('/', '.')}.gone", None),
        ("from ...... import x", "(above the sglang package)", None),
        (
            "def f():\n    from sglang.srt.utils import nope\n    return nope",
            "sglang.srt.utils",
            "nope",
        ),
        (
            "try:\n    from sglang.srt.gone import x\nexcept KeyError:\n    pass",
            "sglang.srt.gone",
            None,
        ),
    ],
)
def test_imports_that_do_not_resolve_are_reported(line, module, name):
    """Input: an added import of a name a namespace package lacks, a relative module that is
    gone, one reaching above the package, a lazy one inside a def, one under a `try` that
    catches something else. Outcome: one Unresolved naming the module (and name)."""
    after = _added(line)
    (u,) = unresolved(f"{FLA}/chunk.py", after, BEFORE, V)
    assert (u.module, u.name) == (module, name)


def test_only_the_sets_imports_are_checked_and_upstreams_own_imports_are_upstreams():
    """Input: V's own chunk.py already imports a gone module (upstream's bug); the set adds
    a line elsewhere, and separately adds a second statement importing the same gone name.
    Outcome: nothing reported: neither is the set's doing (the second imports what the
    release's own file imports)."""
    broken = "from sglang.srt.gone import x\n" + BEFORE
    assert unresolved(f"{FLA}/chunk.py", broken + "\ny = 1\n", broken, V) == []
    assert unresolved(f"{FLA}/chunk.py", broken + "\nfrom sglang.srt.gone import x\n", broken,
                      V) == []  # fmt: skip


def test_a_multiline_import_one_name_added_checks_the_statement():
    """Input: upstream's `from ...utils import (cdiv,)` gains a line `gone,` from the set.
    Outcome: the statement is the set's; `gone` is reported, at the statement's first line."""
    before = "from sglang.kernels.ops.attention.fla.utils import (\n    cdiv,\n)\n"
    after = "from sglang.kernels.ops.attention.fla.utils import (\n    cdiv,\n    gone,\n)\n"
    (u,) = unresolved("srt/x.py", after, before, V)
    assert (u.line, u.name) == (1, "gone")


def test_a_file_the_set_creates_is_checked_whole_and_one_that_does_not_parse_is_left_alone():
    """Input: a new file (before None) importing the old fla module; a file that does not
    parse. Outcome: the first is reported; the second has no findings (compile says it)."""
    (u,) = unresolved("srt/new.py", OLD_IMPORT + "\n", None, V)
    assert u.line == 1
    assert unresolved("srt/new.py", OLD_IMPORT + "\ndef (:\n", None, V) == []


def test_a_name_another_file_of_the_set_adds_resolves():
    """Input: the set adds `def helper` to srt/layers/linear.py and imports it elsewhere;
    the release view holds the set's version of linear.py. Outcome: nothing reported."""
    files = {**V_FILES, "srt/layers/linear.py": b"class Linear:\n    pass\n\ndef helper():\n"
             b"    pass\n"}  # fmt: skip
    after = _added("from sglang.srt.layers.linear import helper")
    assert unresolved(f"{FLA}/chunk.py", after, BEFORE, release_of(files, files)) == []


def test_top_names_reads_bindings_run_at_import_only():
    """Input: a module binding names in if/try/with/for blocks, by walrus, and inside a def.
    Outcome: the top-level ones only; None for `__getattr__`, `import *` or bad syntax."""
    src = (
        "import a.b\nfrom c import d as e\nif X:\n    f = 1\nelse:\n    class G: pass\n"
        "try:\n    h: int = 2\nexcept E:\n    pass\nwith o as (i, j):\n    pass\n"
        "for k in []:\n    pass\nif (m := 3):\n    pass\ndef n():\n    inner = 1\n"
    )
    assert top_names(src) == frozenset("aefGhijkmn")
    assert top_names("def __getattr__(n): pass\n") is None
    assert top_names("from x import *\n") is None
    assert top_names("def (:\n") is None


def test_an_import_the_set_keeps_where_upstream_changed_it_is_checked():
    """Input: upstream's chunk.py on V imports cdiv from the new folder; the set's file (a
    merge that kept the old side) still has the old folder's line. Outcome: reported: the
    (module, name) is not upstream's on V."""
    after = BEFORE.replace("kernels.ops.attention.fla.utils", "srt.layers.attention.fla.utils")
    (u,) = unresolved(f"{FLA}/chunk.py", after, BEFORE, V)
    assert u.module == "sglang.srt.layers.attention.fla.utils" and u.homes == (
        f"sglang.{FLA.replace('/', '.')}.utils",
    )


def test_a_name_added_alone_on_a_continuation_line_is_checked():
    """Input: a backslash-continued import gains a name on a line of its own (no `import` on
    that line). Outcome: the gone name is reported."""
    before = "from sglang.kernels.ops.attention.fla.utils import cdiv, \\\n    BLOCK\n"
    after = "from sglang.kernels.ops.attention.fla.utils import cdiv, \\\n    gone, BLOCK\n"
    (u,) = unresolved("srt/x.py", after, before, V)
    assert (u.line, u.name) == (1, "gone")


def test_a_file_the_set_has_still_to_write_holds_any_name():
    """Input: `from sglang.srt.layers.linear import helper` (linear.py lacks helper) and an
    import of a module no file is yet, both files named as still to be written by a patch of
    the set (port: a waiting patch). Outcome: nothing reported; without them, both are."""
    after = _added("from sglang.srt.layers.linear import helper\nimport sglang.srt.coming")
    assert len(unresolved(f"{FLA}/chunk.py", after, BEFORE, V)) == 2
    waiting = release_of(V_FILES, V_FILES)
    waiting = type(waiting)(waiting.paths, waiting.read, None, frozenset({"srt/layers/linear.py",
                            "srt/coming.py"}))  # fmt: skip
    assert unresolved(f"{FLA}/chunk.py", after, BEFORE, waiting) == []
