"""Records: HotMem's frozen value classes, made as ``@dataclass(frozen=True, slots=True)`` makes
them, without importing :mod:`dataclasses` (and the :mod:`inspect` it loads) into every process.

Importing ``dataclasses`` and decorating the fifteen classes a first search meets cost about
17 ms of CPU, a sixth of a new process's spawn to first result (``docs/benchmarks.md``, cold
start). :func:`record` makes the same classes in about 2 ms (measured: 13 of them, 2.0 ms):

- ``__init__`` with the fields in order, positional or keyword, with their defaults, then
  ``__post_init__`` when the class has one (``inspect.signature`` shows it as written);
- ``__repr__`` (``Name(field=value, ...)``), ``__eq__`` (the same class and equal fields, in
  order) and ``__hash__`` (of the fields' tuple), unless the class writes its own;
- ``__slots__`` and ``__match_args__`` (the fields);
- assigning or deleting an attribute raises ``dataclasses.FrozenInstanceError``; pickling and
  copying keep the values.

A record is a dataclass to every tool that asks: ``dataclasses.is_dataclass``, ``fields``,
``asdict``, ``astuple`` and ``replace`` work on it through ``__dataclass_fields__``, which
:mod:`dataclasses` itself makes, from a twin dataclass of the same fields, the first time it is
read. A field is an annotated name with a default value or none; an annotation that names
``ClassVar`` is not a field. ``dataclasses.field(...)``, a field without a default after one
with, and an unhashable default (a list, dict or set) are refused as ``@dataclass`` refuses
them. :func:`replace` is ``dataclasses.replace`` for records, without the import.
"""

from __future__ import annotations

from operator import attrgetter

__all__ = ["record", "replace"]

TYPE_CHECKING = False  # typing.TYPE_CHECKING: records exist to keep imports light
if TYPE_CHECKING:
    from typing import Any, TypeVar, dataclass_transform

    _Record = TypeVar("_Record")
else:

    def dataclass_transform(**_: object) -> object:  # what type checkers read, nothing more
        return lambda function: function


_TWINS: dict[type, type] = {}
#: Each record class's fields and defaults (for its twin).
_SHAPES: dict[type, tuple[tuple[str, ...], dict[str, object]]] = {}
_NO_DEFAULT = object()


@dataclass_transform(frozen_default=True)
def record(cls: type[_Record]) -> type[_Record]:
    """The frozen, slotted record class of ``cls`` (the module docstring says what it has)."""
    names, defaults = _fields(cls)
    namespace = {
        key: value
        for key, value in cls.__dict__.items()
        if key not in defaults and key not in ("__dict__", "__weakref__")
    }
    namespace["__qualname__"] = cls.__qualname__
    namespace["__slots__"] = names
    namespace["__match_args__"] = names
    namespace["__init__"] = _init(cls, names, defaults)
    values = _values(names)
    generic: dict[str, Any] = {
        "__repr__": _repr,
        "__eq__": _eq(values),
        "__hash__": _hash(values),
        "__setattr__": _setattr,
        "__delattr__": _delattr,
        "__getstate__": _getstate(values),
        "__setstate__": _setstate,
        "__dataclass_fields__": _Twin("__dataclass_fields__"),
        "__dataclass_params__": _Twin("__dataclass_params__"),
    }
    if namespace.get("__hash__", 0) is None and "__eq__" in cls.__dict__:
        del namespace["__hash__"]  # Python's None for a class writing __eq__: hash the fields
    for key, value in generic.items():
        namespace.setdefault(key, value)
    metaclass: Any = type(cls)
    made: type[_Record] = metaclass(cls.__name__, cls.__bases__, namespace)
    _SHAPES[made] = (names, defaults)
    return made


def replace(obj: _Record, /, **changes: Any) -> _Record:
    """A copy of the record ``obj`` with ``changes``, made by its ``__init__`` (so checked by
    its ``__post_init__``): ``dataclasses.replace``."""
    names: tuple[str, ...] = type(obj).__match_args__  # type: ignore[attr-defined]
    unknown = sorted(set(changes) - set(names))
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {unknown[0]!r}")
    values = {name: changes[name] if name in changes else getattr(obj, name) for name in names}
    return type(obj)(**values)


def _fields(cls: type) -> tuple[tuple[str, ...], dict[str, object]]:
    """The field names of ``cls`` in order, and the defaults of those that have one."""
    names: list[str] = []
    defaults: dict[str, object] = {}
    # inspect.get_annotations would import inspect, which records exist to spare
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    for name, annotation in annotations.items():
        if "ClassVar" in str(annotation):
            continue
        default = cls.__dict__.get(name, _NO_DEFAULT)
        if default is _NO_DEFAULT:
            if defaults:
                raise TypeError(f"non-default argument {name!r} follows default argument")
        elif type(default).__hash__ is None or type(default).__name__ == "Field":
            raise ValueError(f"{cls.__qualname__}.{name}: a record field takes a plain default")
        else:
            defaults[name] = default
        names.append(name)
    return tuple(names), defaults


def _init(cls: type, names: tuple[str, ...], defaults: dict[str, object]) -> Any:
    """The record's ``__init__``, compiled once: each field set, then ``__post_init__``."""
    parameters = ", ".join(f"{n}=_default_{n}" if n in defaults else n for n in names)
    lines = [f"def __init__(self, {parameters}):" if names else "def __init__(self):"]
    lines += [f"    _set(self, {n!r}, {n})" for n in names]
    if hasattr(cls, "__post_init__"):
        lines.append("    self.__post_init__()")
    elif not names:
        lines.append("    pass")
    scope: dict[str, Any] = {f"_default_{n}": value for n, value in defaults.items()}
    scope["_set"] = object.__setattr__
    exec("\n".join(lines), scope)  # generated from identifiers only
    function = scope["__init__"]
    function.__qualname__ = f"{cls.__qualname__}.__init__"
    function.__module__ = cls.__module__
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063  # as in _fields
    function.__annotations__ = {**{n: annotations[n] for n in names}, "return": None}
    return function


def _values(names: tuple[str, ...]) -> Any:
    """A function giving a record's field values as a tuple."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _getstate(values: Any) -> Any:
    def __getstate__(self: Any) -> tuple[object, ...]:
        state: tuple[object, ...] = values(self)
        return state

    return __getstate__


def _repr(self: Any) -> str:
    fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
    return f"{type(self).__qualname__}({fields})"


def _eq(values: Any) -> Any:
    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        equal: bool = values(self) == values(other)
        return equal

    return __eq__


def _hash(values: Any) -> Any:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _frozen(message: str) -> AttributeError:
    from dataclasses import FrozenInstanceError  # only when someone tries

    return FrozenInstanceError(message)


def _setattr(self: Any, name: str, value: object) -> None:
    raise _frozen(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise _frozen(f"cannot delete field {name!r}")


def _setstate(self: Any, state: tuple[object, ...]) -> None:
    for name, value in zip(self.__match_args__, state, strict=True):
        object.__setattr__(self, name, value)


class _Twin:
    """A record's ``__dataclass_fields__`` or ``__dataclass_params__``: its dataclass twin's,
    made when first read."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance: object, owner: type) -> Any:
        twin = _TWINS.get(owner)
        if twin is None:
            twin = _TWINS[owner] = _twin(owner)
        return getattr(twin, self.attribute)


def _twin(owner: type) -> type:
    """A frozen dataclass with ``owner``'s fields, annotations and defaults."""
    import dataclasses

    annotations = owner.__dict__.get("__annotations__", {})  # noqa: RUF063
    names, defaults = _SHAPES[owner]
    fields: list[Any] = [
        (name, annotations[name])
        if name not in defaults
        else (name, annotations[name], dataclasses.field(default=defaults[name]))
        for name in names
    ]
    return dataclasses.make_dataclass(owner.__name__, fields, frozen=True)
