"""hotmem_eval's public surface, and the boundary with the store."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import hotmem_eval

ROOT = Path(__file__).resolve().parents[2]


def test_public_surface_is_sorted_and_resolves() -> None:
    group = lambda n: (0 if n.isupper() else 1 if n[:1].isupper() else 2, n)  # noqa: E731
    assert hotmem_eval.__all__ == sorted(hotmem_eval.__all__, key=group)
    for name in hotmem_eval.__all__:
        assert getattr(hotmem_eval, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = hotmem_eval.nope


def test_store_never_imports_the_toolkit_or_its_dependencies() -> None:
    forbidden = ("hotmem_eval", "polars", "pyarrow", "duckdb")
    for path in (ROOT / "src" / "hotmem").rglob("*.py"):
        text = path.read_text()
        for name in forbidden:
            assert f"import {name}" not in text, (path, name)
            assert f"from {name}" not in text, (path, name)


def test_cli_starts_without_duckdb() -> None:
    probe = (
        "import sys; from hotmem_eval.cli import main; "
        "print('duckdb' in sys.modules, 'polars' in sys.modules)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.split() == ["False", "False"]


def _toolkit_sources() -> list[Path]:
    return sorted([*(ROOT / "hotmem_eval").rglob("*.py"), *(ROOT / "scripts").glob("*.py")])


def test_toolkit_uses_only_the_public_surface_of_hotmem() -> None:
    import hotmem
    import hotmem.cli

    public = set(hotmem.__all__)
    # The command lines' shared helpers are the public surface of the package hotmem.cli.
    shared = set(hotmem.cli.__all__)
    reaching: list[str] = []
    for path in _toolkit_sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and node.module == "hotmem.cli":
                reaching += [
                    f"{where}: hotmem.cli.{a.name}" for a in node.names if a.name not in shared
                ]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hotmem."):
                reaching.append(f"{where}: from {node.module} import ...")
            elif isinstance(node, ast.ImportFrom) and node.module == "hotmem":
                reaching += [f"{where}: {a.name}" for a in node.names if a.name not in public]
            elif isinstance(node, ast.Import):
                reaching += [f"{where}: import {a.name}" for a in node.names if "hotmem." in a.name]
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "hotmem"
                and node.attr not in public
                and node.attr != "__version__"
            ):
                reaching.append(f"{where}: hotmem.{node.attr}")
            elif isinstance(node, ast.Attribute) and node.attr == "connection":
                reaching.append(f"{where}: .connection (raw SQL on a store)")
    assert reaching == []
