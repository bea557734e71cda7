"""sgpatch.records.dataclass builds the class the stdlib's dataclass would (issue 15).

Each behaviour a caller can see is compared with a twin class made by `dataclasses.dataclass`
from the same body: construction (positional, keyword, defaults, default_factory, errors),
repr, ==, hash, immutability, replace/fields/asdict/is_dataclass, __match_args__, pickling,
subclassing by a stdlib dataclass, and the fallback to the stdlib for what it does not build.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
import pkgutil
from dataclasses import FrozenInstanceError, field

import pytest

import sgpatch
from sgpatch import records
from sgpatch.patchset.probe import Evidence


def _twins(frozen: bool):
    """The same class body made by both decorators."""

    def body():
        class Rec:
            """A record."""

            name: str
            size: int
            tags: tuple[str, ...] = ()
            extra: dict = field(default_factory=dict, hash=False)
            note: str | None = field(default=None, compare=False, repr=False)

        return Rec

    ours = records.dataclass(frozen=frozen)(body())
    theirs = dataclasses.dataclass(frozen=frozen)(body())
    return ours, theirs


@pytest.mark.parametrize("frozen", [True, False])
def test_same_construction_repr_and_equality(frozen):
    ours, theirs = _twins(frozen)
    for args, kwargs in [
        (("a", 1), {}),
        (("a",), {"size": 2, "tags": ("x",)}),
        ((), {"name": "b", "size": 3, "note": "n"}),
    ]:
        a, b = ours(*args, **kwargs), theirs(*args, **kwargs)
        assert repr(a) == repr(b)
        assert a == ours(*args, **kwargs)
        assert dataclasses.asdict(a) == dataclasses.asdict(b)
        assert dataclasses.astuple(a) == dataclasses.astuple(b)
    assert ours("a", 1) != ours("a", 2)
    assert ours("a", 1) == ours("a", 1, note="ignored: compare=False")
    assert ours("a", 1) != theirs("a", 1)  # another class: NotImplemented both ways
    assert ours("a", 1).extra is not ours("a", 1).extra  # a fresh default per instance
    for bad_args, bad_kwargs in [
        ((), {}),
        (("a", 1, (), {}, None, 9), {}),
        (("a", 1), {"nope": 1}),
    ]:
        with pytest.raises(TypeError) as mine:
            ours(*bad_args, **bad_kwargs)
        with pytest.raises(TypeError) as stdlib:
            theirs(*bad_args, **bad_kwargs)
        assert str(mine.value).replace("__dc_self", "self") == str(stdlib.value)


def test_frozen_hash_immutability_and_helpers():
    ours, theirs = _twins(True)
    a, b = ours("a", 1, ("t",)), theirs("a", 1, ("t",))
    assert hash(a) == hash(ours("a", 1, ("t",))) == hash(b)
    assert hash(a) == hash(ours("a", 1, ("t",), note="x"))  # note: compare=False, not hashed
    for obj in (a, b):
        with pytest.raises(FrozenInstanceError, match="cannot assign to field 'name'"):
            obj.name = "z"
        with pytest.raises(FrozenInstanceError, match="cannot delete field 'size'"):
            del obj.size
        with pytest.raises(FrozenInstanceError, match="cannot assign to field 'other'"):
            obj.other = 1
    assert dataclasses.is_dataclass(ours) and dataclasses.is_dataclass(a)
    assert [f.name for f in dataclasses.fields(ours)] == [
        f.name for f in dataclasses.fields(theirs)
    ]
    assert dataclasses.replace(a, size=5) == ours("a", 5, ("t",))
    assert ours.__match_args__ == theirs.__match_args__
    assert ours.__dataclass_params__.frozen and ours.__dataclass_params__.eq
    ev = Evidence("match", "srt/x.py", 3, "text", "note")  # a real one: picklable by name
    assert pickle.loads(pickle.dumps(ev)) == ev == copy.deepcopy(ev)
    assert ours.__eq__.__qualname__ == f"{ours.__qualname__}.__eq__"


@pytest.mark.parametrize("frozen", [True, False])
def test_same_fields_params_and_class_attributes(frozen):
    """The fields, params and class attributes the stdlib records, and (once compiled) the
    same __init__ signature."""
    ours, theirs = _twins(frozen)
    keys = ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare")
    keys += ("metadata", "kw_only", "_field_type")
    mine = [[getattr(f, k) for k in keys] for f in dataclasses.fields(ours)]
    stdlib = [[getattr(f, k) for k in keys] for f in dataclasses.fields(theirs)]
    assert mine == stdlib
    assert repr(ours.__dataclass_params__) == repr(theirs.__dataclass_params__)
    for name in ("name", "size", "tags", "extra", "note"):
        assert getattr(ours, name, "absent") == getattr(theirs, name, "absent")
    ours("a", 1)  # compiles __init__
    mine_sig = str(inspect.signature(ours)).replace("__dc_self, ", "")
    assert mine_sig == str(inspect.signature(theirs))


def test_mutable_is_unhashable_and_assignable():
    ours, theirs = _twins(False)
    a = ours("a", 1)
    a.size = 2
    assert a == ours("a", 2)
    assert ours.__hash__ is None is theirs.__hash__
    assert not ours.__dataclass_params__.frozen


def test_stdlib_subclass_and_recursive_repr():
    ours, _ = _twins(True)

    @dataclasses.dataclass(frozen=True)
    class Sub(ours):
        more: int = 0

    assert Sub("a", 1, more=2).more == 2
    shown = "name='a', size=1, tags=(), extra={}, more=0"
    assert repr(Sub("a", 1)) == f"{Sub.__qualname__}({shown})"
    with pytest.raises(TypeError, match="non-frozen dataclass from a frozen one"):

        @dataclasses.dataclass
        class Thaw(ours):
            pass

    mutable, theirs = _twins(False)
    loop, twin = mutable("a", 1), theirs("a", 1)
    loop.extra["self"], twin.extra["self"] = loop, twin
    assert repr(loop) == repr(twin)


def test_what_it_does_not_build_goes_to_the_stdlib():
    @records.dataclass(frozen=True)
    class WithPost:
        """Has __post_init__."""

        x: int

        def __post_init__(self) -> None:
            object.__setattr__(self, "x", self.x * 2)

    @records.dataclass
    class NoDoc:
        x: int = field(default=0, init=False)

    assert WithPost(2).x == 4
    assert NoDoc().x == 0
    for cls in (WithPost, NoDoc):
        assert cls.__repr__.__module__ != records.__name__
    with pytest.raises(ValueError, match="mutable default"):

        @records.dataclass
        class Mutable:
            """A list default, refused as the stdlib refuses it."""

            x: list = []  # noqa: RUF012

    with pytest.raises(TypeError, match="non-default argument 'y' follows default argument"):

        @records.dataclass
        class Order:
            """Bad order."""

            x: int = 0
            y: int


def test_every_sgpatch_record_takes_the_fast_path():
    """Every dataclass of sgpatch (port/ aside: its own branch) is built here, not by the stdlib,
    except a subclass (importer.ReleaseOverlay) and a class without a docstring."""
    slow = []
    for info in pkgutil.walk_packages(sgpatch.__path__, "sgpatch."):
        if info.name.startswith(("sgpatch.port", "sgpatch.cli.port")) or info.name.endswith(
            "__main__"
        ):
            continue
        mod = importlib.import_module(info.name)
        for name, value in vars(mod).items():
            ours = isinstance(value, type) and value.__module__ == info.name
            built_here = getattr(value.__repr__, "__module__", None) == records.__name__
            if ours and dataclasses.is_dataclass(value) and not built_here:
                slow.append(f"{info.name}.{name}")
    assert slow == ["sgpatch.ops.importer.ReleaseOverlay"]


@pytest.mark.parametrize("frozen", [True, False])
def test_a_hot_class_gets_the_straight_init_and_keeps_behaving(frozen):
    """Input: a class instantiated more than records._HOT times (its __init__ then becomes
    straight-line code). Outcome: the same arguments, defaults, factory, errors and signature
    as the stdlib's twin, before and after the switch."""
    ours, theirs = _twins(frozen)
    first = ours("a", 1)
    generic = ours.__init__
    for i in range(records._HOT + 5):
        ours(str(i), i)
    assert ours.__init__ is not generic
    for args, kwargs in [(("a", 1), {}), (("a",), {"size": 2, "tags": ("x",)})]:
        assert repr(ours(*args, **kwargs)) == repr(theirs(*args, **kwargs))
    assert ours("a", 1) == first and ours("a", 1).extra is not first.extra
    for bad_args, bad_kwargs in [((), {}), (("a", 1), {"nope": 1})]:
        with pytest.raises(TypeError) as mine:
            ours(*bad_args, **bad_kwargs)
        with pytest.raises(TypeError) as stdlib:
            theirs(*bad_args, **bad_kwargs)
        assert str(mine.value).replace("__dc_self", "self") == str(stdlib.value)
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
    if frozen:
        with pytest.raises(FrozenInstanceError):
            ours("a", 1).name = "b"


def test_an_untested_interpreter_gets_the_stdlib_s_classes(monkeypatch):
    """Input: records.TESTED false (an interpreter the comparison tests have not run on).
    Outcome: the decorator hands every class to the stdlib: its own generated methods."""
    monkeypatch.setattr(records, "TESTED", False)

    @records.dataclass(frozen=True)
    class Point:
        """A point."""

        x: int
        y: int = 0

    assert Point.__eq__.__code__.co_filename != records.__file__  # the stdlib's, not ours
    assert Point(1) == Point(1, 0) and hash(Point(1)) == hash(Point(1, 0))
    with pytest.raises(FrozenInstanceError):
        Point(1).x = 2  # type: ignore[misc]
