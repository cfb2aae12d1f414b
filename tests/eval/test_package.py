"""hotmem_eval's public surface, and the boundary with the store."""

from __future__ import annotations

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
