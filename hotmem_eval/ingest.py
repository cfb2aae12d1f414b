"""Load a fixture's corpus into a real HotMem store through the public API."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

import hotmem
from hotmem_eval.errors import UsageError

__all__ = ["FIXED_CLOCK", "STORE_FIELDS", "ingest", "memory_records", "open_fixture_store"]

# The evaluator's clock: memories without created_at get this time, so runs are reproducible.
FIXED_CLOCK = "2026-01-01T00:00:00Z"
STORE_FIELDS = ("memory_id", "identifier", "fact", "importance", "tags", "created_at")


def memory_records(corpus: pa.Table) -> list[dict[str, object]]:
    """The store's fields of every memory (fixture-only fields such as namespace dropped).

    A null ``created_at`` is left out, so the store's fixed clock supplies it.
    """
    columns = corpus.select(list(STORE_FIELDS)).to_pylist()
    return [{key: value for key, value in row.items() if value is not None} for row in columns]


def ingest(store: hotmem.MemoryStore, corpus: pa.Table) -> int:
    """Add every memory of ``corpus`` in one transaction; return how many were added."""
    return len(store.add_many(memory_records(corpus)))


def open_fixture_store(
    path: str | Path, corpus: pa.Table, *, spaces: Iterable[str] = ()
) -> hotmem.MemoryStore:
    """Open a new store at ``path`` with the fixed clock and ingest ``corpus`` into it, with
    every vector space of ``spaces`` built (the spaces the evaluated profiles read).

    This is the one place the evaluator ingests: the store every profile is searched on.

    Raises:
        UsageError: a space this HotMem's store does not build (today only
            ``hotmem.MODEL_NAME``, built by every add).
    """
    unknown = sorted(set(spaces) - {hotmem.MODEL_NAME})
    if unknown:
        raise UsageError(
            f"a profile needs the vector space(s) {', '.join(map(repr, unknown))}; "
            f"this HotMem builds {hotmem.MODEL_NAME!r} only"
        )
    store = hotmem.open_store(path, clock=hotmem.fixed_clock(FIXED_CLOCK))
    try:
        ingest(store, corpus)
    except BaseException:
        store.close()
        raise
    return store
