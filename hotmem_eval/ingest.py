"""Load a fixture's corpus into a real HotMem store through the public API."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

import hotmem

__all__ = [
    "FIXED_CLOCK",
    "STORE_FIELDS",
    "ingest",
    "memory_records",
    "open_fixture_store",
    "spaces_needed",
]

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


def spaces_needed(profiles: Iterable[hotmem.Profile]) -> tuple[str, ...]:
    """The vector spaces ``profiles`` read, each once, in order of first use."""
    return tuple(dict.fromkeys(space for profile in profiles for space in profile.spaces))


def open_fixture_store(
    path: str | Path, corpus: pa.Table, *, spaces: Iterable[str] = ()
) -> hotmem.MemoryStore:
    """Open a new store at ``path`` with the fixed clock and ingest ``corpus`` into it, with
    the vectors of every space of ``spaces`` (model ids; ``hotmem-hash-v1`` is always built).

    Raises:
        hotmem.MissingExtraError: a space needs an extra that is not installed.
    """
    store = hotmem.open_store(path, clock=hotmem.fixed_clock(FIXED_CLOCK))
    try:
        for space in spaces:
            if space != hotmem.MODEL_NAME:
                store.add_space(space)  # before the memories: add_many embeds every space
        ingest(store, corpus)
    except BaseException:
        store.close()
        raise
    return store
