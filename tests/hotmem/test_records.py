"""Records (``hotmem.records``): frozen, slotted classes that behave as the frozen dataclasses
they replace, to every tool that asks, without importing ``dataclasses`` into a search."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import subprocess
import sys
from typing import ClassVar

import pytest

import hotmem
from hotmem.records import record, replace


def _pair() -> tuple[type, type]:
    """The same class as a record and as ``@dataclass(frozen=True, slots=True)``."""

    def body() -> type:
        class Sample:
            name: str
            count: int = 0
            tags: tuple[str, ...] = ()
            kind: ClassVar[str] = "sample"

            def __post_init__(self) -> None:
                if self.count < 0:
                    raise ValueError("count must be >= 0")

            @property
            def label(self) -> str:
                return f"{self.kind}:{self.name}"

        return Sample

    return record(body()), dataclasses.dataclass(frozen=True, slots=True)(body())


def test_a_record_behaves_as_the_frozen_slotted_dataclass_of_the_same_class() -> None:
    rec, dc = _pair()
    a, b = rec("x", 2, ("t",)), dc("x", 2, ("t",))
    assert repr(a) == repr(b)
    assert repr(a) == "_pair.<locals>.body.<locals>.Sample(name='x', count=2, tags=('t',))"
    assert a == rec(name="x", count=2, tags=("t",))
    assert a != rec("x", 3)
    assert a != b  # another class, as between two dataclasses
    assert hash(a) == hash(b) == hash(("x", 2, ("t",)))
    assert str(inspect.signature(rec)) == str(inspect.signature(dc))
    assert rec.__match_args__ == dc.__match_args__ == ("name", "count", "tags")
    assert rec.__slots__ == dc.__slots__
    assert not hasattr(a, "__dict__")
    assert (rec.kind, a.label) == ("sample", "sample:x")
    assert rec("y").count == 0
    assert rec("y").tags == ()
    with pytest.raises(ValueError, match="count must be >= 0"):
        rec("x", -1)
    with pytest.raises(TypeError):
        rec()
    match a:
        case rec(name, count):  # type: ignore[misc]
            assert (name, count) == ("x", 2)


def test_a_record_is_frozen_as_a_dataclass_is() -> None:
    rec, dc = _pair()
    for value in (rec("x"), dc("x")):
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'name'"):
            value.name = "y"
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'name'"):
            del value.name


def test_a_record_is_a_dataclass_to_the_dataclasses_module() -> None:
    rec, dc = _pair()
    a, b = rec("x", 2), dc("x", 2)
    assert dataclasses.is_dataclass(rec)
    assert dataclasses.is_dataclass(a)
    assert [(f.name, f.type, f.default) for f in dataclasses.fields(a)] == [
        (f.name, f.type, f.default) for f in dataclasses.fields(b)
    ]
    assert dataclasses.asdict(a) == dataclasses.asdict(b) == {"name": "x", "count": 2, "tags": ()}
    assert dataclasses.astuple(a) == ("x", 2, ())
    assert dataclasses.replace(a, count=5) == rec("x", 5) == replace(a, count=5)
    with pytest.raises(ValueError, match="count must be >= 0"):
        replace(a, count=-1)
    with pytest.raises(TypeError, match="has no field 'size'"):
        replace(a, size=1)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickling_and_copying_a_record_keep_its_values(protocol: int) -> None:
    result = hotmem.SearchResult(
        1, "m-1", "org", "fact", ("a",), 0.5, 0.7, hotmem.ScoreComponents(0.3, None, 0.0, 0.5)
    )
    assert pickle.loads(pickle.dumps(result, protocol)) == result
    assert copy.copy(result) == result
    assert copy.deepcopy(result) == result


def test_hotmem_records_nest_as_dataclasses() -> None:
    components = hotmem.ScoreComponents(0.25, 1.5, 1.0, 0.5)
    result = hotmem.SearchResult(1, "m-1", "org", "fact", ("a",), 0.5, 0.7, components)
    assert dataclasses.asdict(result) == {**result.to_dict(), "tags": ("a",)}
    assert [f.name for f in dataclasses.fields(hotmem.Profile)] == [
        "name",
        "vector",
        "lexical",
        "importance",
        "fusion",
        "rrf_k",
        "depth",
        "reranker",
    ]
    custom = dataclasses.replace(hotmem.PROFILES["default"], name="mine", depth=10)
    assert (custom.name, custom.depth, custom.vector) == ("mine", 10, hotmem.VectorChannel())


def test_what_a_record_cannot_hold_is_refused_as_dataclass_refuses_it() -> None:
    class Listed:
        items: list[int] = []  # noqa: RUF012

    with pytest.raises(ValueError, match=r"Listed\.items: a record field takes a plain default"):
        record(Listed)

    class Factory:
        items: list[int] = dataclasses.field(default_factory=list)

    with pytest.raises(ValueError, match=r"Factory\.items: a record field takes a plain default"):
        record(Factory)

    class Order:
        first: int = 0
        second: int

    with pytest.raises(TypeError, match="non-default argument 'second' follows default"):
        record(Order)


def test_a_first_search_loads_neither_dataclasses_nor_inspect_nor_typing(tmp_path: object) -> None:
    script = (
        "import sys, hotmem\n"
        f"store = hotmem.open_store({str(tmp_path)!r} + '/s.db')\n"
        "store.add('Invoices above 5,000 EUR need two approvals.', identifier='acme')\n"
        "[found] = hotmem.search_memories(store, 'invoice approvals')\n"
        "loaded = [m in sys.modules for m in ('dataclasses', 'inspect', 'typing')]\n"
        "print(found.memory_id[:4], *loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out == "mem- False False False\n"


@pytest.mark.parametrize(
    ("module", "alias", "values"),
    [
        ("hotmem.retrieval.profiles", "Fusion", "_FUSIONS"),
        ("hotmem.store.options", "Accelerator", "_ACCELERATORS"),
    ],
)
def test_a_literal_alias_and_the_values_checked_at_run_time_agree(
    module: str, alias: str, values: str
) -> None:
    """A ``Literal`` alias exists for the type checker only (run time has no ``typing``): the
    tuple the code checks values against must list the same values, in the same order."""
    import ast
    import importlib
    from pathlib import Path

    loaded = importlib.import_module(module)
    tree = ast.parse(Path(str(loaded.__file__)).read_text(encoding="utf-8"))
    [literal] = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == [alias]
        and isinstance(node.value, ast.Subscript)
    ]
    assert isinstance(literal, ast.Subscript)
    assert ast.literal_eval(literal.slice) == getattr(loaded, values)


def test_a_record_writing_its_own_eq_is_hashed_by_its_fields_as_a_dataclass_is() -> None:
    def body() -> type:
        class Pair:
            left: int
            right: int

            def __eq__(self, other: object) -> bool:
                same = type(other) is type(self)
                return same and {self.left, self.right} == {other.left, other.right}  # type: ignore[attr-defined]

        return Pair

    rec, dc = record(body()), dataclasses.dataclass(frozen=True, slots=True)(body())
    assert rec(1, 2) == rec(2, 1)  # its own __eq__
    assert hash(rec(1, 2)) == hash(dc(1, 2)) == hash((1, 2))


def test_a_cli_search_loads_neither_typing_nor_the_snapshot_code(tmp_path: object) -> None:
    db = f"{tmp_path}/s.db"
    script = (
        "import contextlib, io, sys\n"
        "from hotmem.cli import main\n"
        f"main(['--db', {db!r}, 'add', 'Invoices need two approvals.', '--identifier', 'a'])\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    main(['--db', {db!r}, 'search', 'invoice approvals'])\n"
        "names = ('typing', 'dataclasses', 'inspect', 'hotmem.snapshot', 'tomllib')\n"
        "print('Invoices' in out.getvalue(), *(m in sys.modules for m in names))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines()[-1] == "True False False False False False"
