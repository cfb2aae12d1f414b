"""The shape of the shipped code: no import cycle, small modules, simple functions, layers.

Every import counts, a function's lazy import included (it is a dependency all the same),
except those under ``if TYPE_CHECKING:`` (they never run). A plug-in loaded by its name
(``importlib.import_module("...")``) is not an import: that is how a lower layer reaches a
higher one without a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from radon.complexity import cc_visit

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"hotmem": ROOT / "src" / "hotmem", "hotmem_eval": ROOT / "hotmem_eval"}
MAX_LINES = 400
MAX_COMPLEXITY = 15
#: package -> the packages of hotmem it may import (its layer and those below).
LAYERS = {
    "hotmem.embedding": {"hotmem.embedding"},
    "hotmem.store": {"hotmem.store", "hotmem.embedding"},
    "hotmem.snapshot": {"hotmem.snapshot", "hotmem.store", "hotmem.embedding"},
    "hotmem.retrieval": {"hotmem.retrieval", "hotmem.store", "hotmem.embedding"},
}


def modules(package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package``."""
    root = PACKAGES[package]
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, leaving out the bodies of ``if TYPE_CHECKING:`` blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports, at any depth."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        found.update(t for t in targets if t in known)
    return found - {name}


def graph() -> dict[str, set[str]]:
    every = {**modules("hotmem"), **modules("hotmem_eval")}
    known = set(every)
    return {name: imports(name, path, known) for name, path in every.items()}


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or ``None``."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_module_imports_itself_back() -> None:
    edges = graph()
    # Submodules of a package are imported through the package's __init__; a package's
    # __init__ importing its own submodules is the package's surface, not a cycle.
    trimmed = {
        name: {t for t in targets if not name.startswith(t + ".")}
        for name, targets in edges.items()
    }
    assert _cycle(trimmed) is None


def test_the_lower_layers_do_not_import_the_higher_ones() -> None:
    for name, targets in graph().items():
        layer = next((p for p in LAYERS if name == p or name.startswith(p + ".")), None)
        if layer is None:
            continue
        allowed = LAYERS[layer]
        wrong = sorted(
            t
            for t in targets
            if t.startswith("hotmem.")
            and "." in t[7:]
            and not any(t == a or t.startswith(a + ".") for a in allowed)
            and t.rpartition(".")[0] not in ("hotmem",)
        )
        assert (name, wrong) == (name, [])


def test_hotmem_eval_uses_only_hotmems_public_surface() -> None:
    # hotmem itself, and the helpers the command lines share (the package hotmem.cli's surface).
    public = {"hotmem.cli", "hotmem.cli.common"}
    for name, targets in graph().items():
        if name.startswith("hotmem_eval"):
            reached = sorted(t for t in targets if t.startswith("hotmem.") and t not in public)
            assert (name, reached) == (name, [])


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_shipped_module_is_longer_than_400_lines(package: str) -> None:
    long = {
        name: n
        for name, path in modules(package).items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_function_is_more_complex_than_15(package: str) -> None:
    complex_ = {
        f"{name}.{block.fullname}": block.complexity
        for name, path in modules(package).items()
        for block in cc_visit(path.read_text(encoding="utf-8"))
        if block.complexity > MAX_COMPLEXITY
    }
    assert complex_ == {}
