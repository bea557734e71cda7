"""`@dataclass` for sgpatch's records: the stdlib's dataclasses, without compiling six methods.

CPython (3.10-3.13) writes every method of a dataclass as source text and compiles it with
`exec` when the class is created; a frozen class gets six (__init__, __repr__, __eq__,
__hash__, __setattr__, __delattr__), about 1 ms per class, and `status` imports ~35 of them:
a quarter of the stack's own start-up, on every run. Here __repr__, __eq__, __hash__ and the
frozen guards are closures over the field names (no compile: same results, same exceptions).
__init__ needs a real signature (keyword binding, defaults, the interpreter's own TypeErrors,
inspect.signature); it is made the first time the class is instantiated, from a template
compiled once per field count with the field names put into its code (`code.replace`) and a
body that hands its arguments to a closure setting the fields in order; a class instantiated
256 times (the engine's, in matrix and port) then gets the stdlib's straight-line body,
from a template per shape. Nothing outlives the process.

The fields are recorded as `dataclasses._process_class` records them (the same Field objects,
`__dataclass_fields__`, `__dataclass_params__`, `__match_args__`) without its per-field
lookups for ClassVar, InitVar and KW_ONLY, which the plain case has none of. Only the plain
case takes this path: the class has a docstring and annotations of its own, no base class,
fields with hashable plain defaults or `field(default=..., default_factory=...)`, and defines
none of the methods itself (no __post_init__, ClassVar, InitVar, KW_ONLY, init=False or kw_only
fields, slots). Anything else goes to `dataclasses.dataclass` unchanged.
tests/test_records.py compares the two on 3.10-3.13.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from _thread import get_ident
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from operator import attrgetter
from types import CodeType, FunctionType
from typing import TYPE_CHECKING, Any, TypeVar

T = TypeVar("T", bound=type)
# the interpreters tests/test_records.py compares this module's classes with the stdlib's on;
# on any other, every class is the stdlib's (slower to create, the same class)
TESTED = (3, 10) <= sys.version_info[:2] <= (3, 13)
_METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
_SPECIAL = ("ClassVar", "InitVar", "KW_ONLY")  # annotations the stdlib treats specially


class _Factory:
    """The default of an argument whose field has a default_factory (shown as the stdlib's)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


if TYPE_CHECKING:  # type checkers see the stdlib's decorator: the classes are the same
    from dataclasses import dataclass as dataclass
else:

    def dataclass(cls: T | None = None, /, *, frozen: bool = False) -> Any:
        """`@dataclass` or `@dataclass(frozen=True)`, as the stdlib's (module docstring)."""

        def wrap(c: T) -> T:
            if not TESTED or not _plain(c):
                return dataclasses.dataclass(c, frozen=frozen)
            return _build(c, frozen)

        return wrap if cls is None else wrap(cls)


def _plain(cls: type) -> bool:
    """True when the class is one this module builds exactly as the stdlib would."""
    body = cls.__dict__
    if cls.__bases__ != (object,) or not body.get("__doc__") or "__slots__" in body:
        return False
    if "__annotations__" not in body:  # no fields, or annotated lazily (3.14): the stdlib's
        return False
    if any(m in body for m in (*_METHODS, "__post_init__")):
        return False
    for name, note in body["__annotations__"].items():
        text = note if isinstance(note, str) else getattr(note, "__name__", repr(note))
        if any(s in text for s in _SPECIAL) or "dataclasses" in text:
            return False
        value = body.get(name, MISSING)
        if isinstance(value, dataclasses.Field):
            if not value.init or getattr(value, "kw_only", MISSING) not in (MISSING, False):
                return False
            value = value.default
        if value is not MISSING and (value.__class__.__hash__ is None or _descriptor(value)):
            return False  # the stdlib refuses mutable defaults and calls __set_name__
    return _FIELD is not None and not any(
        isinstance(v, dataclasses.Field) and k not in body["__annotations__"]
        for k, v in body.items()
    )


def _descriptor(value: object) -> bool:
    return hasattr(type(value), "__set_name__") or hasattr(type(value), "__get__")


def _build(cls: T, frozen: bool) -> T:
    """The fields as the stdlib records them, then our methods."""
    fields = _set_fields(cls, frozen)
    seen_default = False
    for f in fields:
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has_default
    names = frozenset(f.name for f in fields)
    methods: dict[str, Callable[..., Any] | None] = {
        "__init__": _lazy_init(cls, frozen),
        "__repr__": _repr(tuple(f.name for f in fields if f.repr)),
        "__eq__": _eq(_key(tuple(f.name for f in fields if f.compare))),
    }
    if frozen:
        hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        methods["__hash__"] = _hash(_key(hashed))
        methods["__setattr__"], methods["__delattr__"] = _guards(cls, names)
    else:
        methods["__hash__"] = None  # eq without frozen: unhashable, as the stdlib makes it
    for name, fn in methods.items():
        if fn is not None:
            fn.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, fn)
    return cls


# The stdlib's marker of a real field (ClassVar and InitVar pseudo-fields have others): 3.7+.
_FIELD = getattr(dataclasses, "_FIELD", None)


def _set_fields(cls: type, frozen: bool) -> tuple[dataclasses.Field, ...]:
    """What `dataclasses._process_class` records for a plain class (`_plain`): a Field per
    annotation (the class attribute its default, a `field()` turned into its default or
    removed), `__dataclass_fields__`, `__dataclass_params__` (frozen or not; init, repr and
    eq) and `__match_args__`; without its per-field ClassVar/InitVar/KW_ONLY lookups."""
    out = {}
    own = cls.__dict__["__annotations__"]  # noqa: RUF063 - as dataclasses reads them (<3.14)
    for name, note in own.items():
        value = getattr(cls, name, MISSING)
        f = value if isinstance(value, dataclasses.Field) else dataclasses.field(default=value)
        f.name, f.type, f._field_type = name, note, _FIELD  # type: ignore[attr-defined]
        if getattr(f, "kw_only", False) is MISSING:
            f.kw_only = False  # type: ignore[attr-defined]
        if isinstance(value, dataclasses.Field):
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        out[name] = f
    cls.__dataclass_fields__ = out  # type: ignore[attr-defined]
    cls.__dataclass_params__ = _params(frozen)  # type: ignore[attr-defined]
    cls.__match_args__ = tuple(out)  # type: ignore[attr-defined]
    return tuple(out.values())


@functools.cache
def _params(frozen: bool) -> object:
    """The stdlib's `__dataclass_params__` for (frozen, init, repr, eq), shared by the classes
    made here: taken from an empty class it processed, as its fields part is version-specific."""

    class Template:
        """Without a docstring the stdlib would make one from inspect.signature (~2 ms)."""

    dataclasses.dataclass(Template, init=False, repr=False, eq=False)
    params = Template.__dataclass_params__  # type: ignore[attr-defined]
    params.init = params.repr = params.eq = True
    params.frozen = frozen  # what a dataclass subclass checks (frozen from frozen only)
    return params


def _lazy_init(cls: type, frozen: bool) -> Callable[..., None]:
    """An __init__ that compiles the real one on the first instantiation and replaces itself."""

    def __init__(self: object, *args: Any, **kwargs: Any) -> None:
        real = _compile_init(cls, frozen)
        cls.__init__ = real  # type: ignore[misc]
        real(self, *args, **kwargs)

    return __init__


def _compile_init(cls: type, frozen: bool) -> Callable[..., None]:
    """The __init__ the stdlib would generate: one argument per field (defaults, and
    default_factory as it handles them), each set in field order with `object.__setattr__`
    when frozen (an ordinary assignment otherwise). First a generic one: its signature from a
    template per field count, its body handing the arguments to a closure (no compile of its
    own); a class instantiated `_HOT` times gets straight-line code, as the stdlib's, from a
    template per shape (field count, frozen, which fields have a factory)."""
    fields = dataclasses.fields(cls)
    code = _template(len(fields))
    return _init_from(cls, fields, code, {"__dc_fill": _filler(cls, fields, frozen)})


_HOT = 256  # instantiations after which a class gets its own straight-line __init__


def _init_from(
    cls: type, fields: tuple[dataclasses.Field, ...], code: CodeType, scope: dict[str, Any]
) -> Callable[..., None]:
    """An __init__ of `code` (a template: its argument names, the strings and attribute
    names it sets, __dc_name_<i>) for this class's fields."""
    names = {f"__dc_name_{i}": f.name for i, f in enumerate(fields)}
    code = code.replace(
        co_varnames=tuple(names.get(v, v) for v in code.co_varnames),
        co_names=tuple(names.get(v, v) for v in code.co_names),
        co_consts=tuple(names.get(c, c) if isinstance(c, str) else c for c in code.co_consts),
    )
    defaults = tuple(_FACTORY if _has_factory(f) else f.default for f in fields if _has_default(f))
    init = FunctionType(code, scope, "__init__", defaults or None)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**{f.name: f.type for f in fields}, "return": None}
    return init


@functools.cache
def _template(count: int) -> CodeType:
    """The code of an __init__ taking `count` arguments named __dc_name_<i>, which hands
    them (its locals) to __dc_fill."""
    args = "".join(f", __dc_name_{i}" for i in range(count))
    return _compiled(f"def __init__(__dc_self{args}):\n    __dc_fill(__dc_self, locals())\n")


@functools.cache
def _straight_template(frozen: bool, count: int, factories: tuple[int, ...]) -> CodeType:
    """The code of the stdlib's __init__ for `count` fields named __dc_name_<i>, one statement
    per field; fields in `factories` call __dc_make_<i>() where their argument was left out."""
    body = []
    for i in range(count):
        arg = f"__dc_name_{i}"
        value = f"__dc_make_{i}() if {arg} is __dc_factory else {arg}" if i in factories else arg
        if frozen:
            body.append(f"    __dc_setattr(__dc_self, {arg!r}, {value})")
        else:
            body.append(f"    __dc_self.{arg} = {value}")
    args = "".join(f", __dc_name_{i}" for i in range(count))
    return _compiled(f"def __init__(__dc_self{args}):\n" + ("\n".join(body) or "    pass") + "\n")


def _compiled(source: str) -> CodeType:
    scope: dict[str, Any] = {}
    exec(source, scope)  # generated from field counts only, as dataclasses does
    return scope["__init__"].__code__


def _filler(cls: type, fields: tuple[dataclasses.Field, ...], frozen: bool) -> Callable[..., None]:
    """Sets the fields from an __init__'s arguments, in field order, calling a field's
    default_factory where the argument was left out; at the `_HOT`th instance, gives the
    class its straight-line __init__ (the same assignments, without this loop)."""
    names = tuple(f.name for f in fields)
    makers = {f.name: f.default_factory for f in fields if _has_factory(f)}
    put = object.__setattr__ if frozen else setattr
    calls = 0

    def fill(self: object, args: dict[str, Any]) -> None:
        nonlocal calls
        calls += 1
        if calls == _HOT:
            cls.__init__ = _straight_init(cls, fields, frozen)  # type: ignore[misc]
        for name in names:
            value = args[name]
            if value is _FACTORY and name in makers:
                value = makers[name]()
            put(self, name, value)

    return fill


def _straight_init(
    cls: type, fields: tuple[dataclasses.Field, ...], frozen: bool
) -> Callable[..., None]:
    factories = tuple(i for i, f in enumerate(fields) if _has_factory(f))
    scope: dict[str, Any] = {"__dc_setattr": object.__setattr__, "__dc_factory": _FACTORY}
    scope.update({f"__dc_make_{i}": f.default_factory for i, f in enumerate(fields)})
    return _init_from(cls, fields, _straight_template(frozen, len(fields), factories), scope)


def _has_factory(f: dataclasses.Field) -> bool:
    return f.default_factory is not MISSING


def _has_default(f: dataclasses.Field) -> bool:
    return f.default is not MISSING or f.default_factory is not MISSING


def _key(names: tuple[str, ...]) -> Callable[[object], tuple[Any, ...]]:
    """The tuple of these attributes (what the stdlib's __eq__ and __hash__ compare)."""
    if len(names) > 1:
        return attrgetter(*names)
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _repr(names: tuple[str, ...]) -> Callable[[object], str]:
    running: set[tuple[int, int]] = set()  # as reprlib.recursive_repr: a cycle shows "..."

    def __repr__(self: object) -> str:
        key = (id(self), get_ident())
        if key in running:
            return "..."
        running.add(key)
        try:
            shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        finally:
            running.discard(key)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _eq(key: Callable[[object], tuple[Any, ...]]) -> Callable[[object, object], Any]:
    def __eq__(self: object, other: object) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash(key: Callable[[object], tuple[Any, ...]]) -> Callable[[object], int]:
    def __hash__(self: object) -> int:
        return hash(key(self))

    return __hash__


def _guards(cls: type, names: frozenset[str]) -> tuple[Callable[..., None], Callable[..., None]]:
    """__setattr__ and __delattr__ of a frozen dataclass, as the stdlib writes them."""

    def __setattr__(self: object, name: str, value: object) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__
