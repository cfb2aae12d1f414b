"""The package: stdlib-only imports and one sorted public surface."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import hotmem

PROBE = textwrap.dedent(
    """
    import sys, tempfile, pathlib
    before = set(sys.modules)
    import hotmem
    with tempfile.TemporaryDirectory() as tmp:
        with hotmem.open_store(pathlib.Path(tmp) / "s.db") as store:
            store.add("Invoices need two approvals.", identifier="acme")
            hotmem.search_memories(store, "invoice approvals", identifier="acme")
            hotmem.explain(store, "invoice", store.get(next(iter(store)).memory_id).memory_id)
            snapshot = getattr(store, "snapshot", None)
            if snapshot is not None:
                snapshot(pathlib.Path(tmp) / "s.zip")
                hotmem.verify_snapshot(pathlib.Path(tmp) / "s.zip")
                hotmem.hydrate(pathlib.Path(tmp) / "s.zip", pathlib.Path(tmp) / "t.db")
    import hotmem.cli
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
