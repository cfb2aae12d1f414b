"""The package: stdlib-only imports, one sorted public surface, snapshot code in one place."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import hotmem

PACKAGE = Path(hotmem.__file__).parent
SNAPSHOT = PACKAGE / "snapshot"

PROBE = textwrap.dedent(
    """
    import sys, tempfile, pathlib
    before = set(sys.modules)
    import hotmem
    with tempfile.TemporaryDirectory() as tmp:
        # accelerator="off": numpy, when installed, is the one module a search may load.
        with hotmem.open_store(pathlib.Path(tmp) / "s.db", accelerator="off") as store:
            store.add("Invoices need two approvals.", identifier="acme")
            # A bulk add never imports numpy for its batch embedding.
            store.add_stream({"fact": f"Fact {i}.", "identifier": "x"} for i in range(100))
            hotmem.search_memories(store, "invoice approvals", identifier="acme")
            hotmem.explain(store, "invoice", store.get(next(iter(store)).memory_id).memory_id)
            store.snapshot(pathlib.Path(tmp) / "s.zip")
        hotmem.verify_snapshot(pathlib.Path(tmp) / "s.zip")
        hotmem.hydrate(pathlib.Path(tmp) / "s.zip", pathlib.Path(tmp) / "t.db")
    import hotmem.cli
    # The embedder registry, hash-v1 through it, and the semantic model's file resolution
    # (checking its extra's modules imports none of them).
    hotmem.get_embedder("hotmem-hash-v1").embed_many(["Invoices need two approvals."])
    [entry.missing_modules() for entry in hotmem.EMBEDDERS.values()]
    import hotmem.embedding.semantic.sources
    loaded = set(sys.modules) - before
    roots = {name.split(".")[0] for name in loaded}
    print("\\n".join(sorted(roots - set(sys.stdlib_module_names) - {"hotmem"})))
    """
)


def test_importing_and_using_hotmem_loads_only_the_standard_library() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    )
    assert completed.stdout.split() == []


ACCELERATOR_PROBE = textwrap.dedent(
    """
    import sys
    import hotmem
    seen = []
    for accelerator in ("auto", "numpy"):
        with hotmem.open_store(":memory:", accelerator=accelerator) as store:
            store.add("Invoices need two approvals.", identifier="acme")
            seen.append("numpy" in sys.modules)
            hotmem.search_memories(store, "invoice approvals")
            seen.append("numpy" in sys.modules)
    print(store.accelerated, *seen)
    """
)


def test_numpy_loads_on_the_first_numpy_search_only() -> None:
    # "auto" leaves a scope below NUMPY_FROM to the standard-library engine: no numpy import.
    completed = subprocess.run(
        [sys.executable, "-c", ACCELERATOR_PROBE], capture_output=True, text=True, check=True
    )
    assert completed.stdout.split() == ["True", "False", "False", "False", "True"]


def isort_style(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then everything else, each alphabetical."""
    group = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return group, name


def test_public_surface_is_sorted_and_complete() -> None:
    assert hotmem.__all__ == sorted(hotmem.__all__, key=isort_style)
    for name in hotmem.__all__:
        assert hasattr(hotmem, name), name
    public = {name for name in vars(hotmem) if not name.startswith("_")}
    submodules = {n for n in public if isinstance(getattr(hotmem, n), types.ModuleType)}
    assert public - set(hotmem.__all__) - submodules - {"annotations"} == set()


def top_level_imports(path: Path) -> set[str]:
    """Modules a file imports when it is imported: its top-level ``import``/``from`` only.

    ``from a import b`` counts as ``a`` and ``a.b`` (``b`` may be a module); relative imports are
    resolved against the file's package. Imports inside functions or ``if TYPE_CHECKING:`` are
    not counted: they do not run when the module is imported.
    """
    package = ".".join(path.relative_to(PACKAGE.parent).parent.parts)
    modules: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            modules.add(module)
            modules.update(f"{module}.{alias.name}" for alias in node.names)
    return modules


# The store imports no snapshot code, not even lazily: tests/test_architecture.py.


_DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def defined_names(path: Path, *, nested: bool) -> set[str]:
    """The classes and functions a file defines: at its top level, or at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = ast.walk(tree) if nested else tree.body
    return {node.name for node in nodes if isinstance(node, _DEFINITIONS)}


def imported_modules(path: Path) -> set[str]:
    """The root of every module a file imports, at any depth (lazy imports included)."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return roots


def test_snapshot_code_lives_only_in_the_snapshot_subpackage() -> None:
    snapshot_files = sorted(SNAPSHOT.glob("*.py"))
    others = sorted(p for p in PACKAGE.rglob("*.py") if SNAPSHOT not in p.parents)
    # What the subpackage defines publicly (its file helpers included) is defined nowhere else.
    names = {n for p in snapshot_files for n in defined_names(p, nested=False) if n[0] != "_"}
    core = {"PackageReader", "write_snapshot", "verify_snapshot", "hydrate", "create_beside"}
    assert core <= names
    clashes = {p.name: sorted(defined_names(p, nested=True) & names) for p in others}
    assert {name: found for name, found in clashes.items() if found} == {}
    # Only the snapshot code reads or writes ZIP containers and deflate streams.
    container = {"zipfile", "zlib"}
    readers = {p.name: sorted(imported_modules(p) & container) for p in others}
    assert {name: found for name, found in readers.items() if found} == {}
    # And no flat module is left over from before the subpackage (snapshot_*.py, verify.py, ...).
    flat = sorted(
        p.name for p in PACKAGE.glob("*.py") if p.stem.startswith(("snapshot", "verify", "hydrat"))
    )
    assert flat == []
