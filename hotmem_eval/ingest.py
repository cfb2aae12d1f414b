"""Load a fixture's corpus into a real HotMem store through the public API.

A store kept with ``--store PATH`` (``kept_store``) is reused by the next run on the same
collection: beside it, ``PATH.hotmem-eval.json`` records the sha256 of the memories as they
were ingested (``corpus_digest``: the store's fields of every memory, in ``memory_id`` order,
as canonical JSON), so a run on another collection, or on the same one changed, is refused
with the reason instead of searching stale memories. Spaces a later run needs are added to
the kept store (their vectors computed once, then kept with it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

import hotmem
from hotmem_eval.errors import UsageError

__all__ = [
    "FIXED_CLOCK",
    "STORE_FIELDS",
    "corpus_digest",
    "ingest",
    "kept_store",
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


def ingest(
    store: hotmem.MemoryStore,
    corpus: pa.Table,
    progress: hotmem.ProgressCallback | None = None,
) -> int:
    """Add every memory of ``corpus`` in one transaction; return how many were added.
    ``progress`` is called with (memories added, memories) by the store (``add_stream``): as
    each space's model finishes a run and each batch is in. The list is handed over whole, so
    the store checks it a batch of columns at a time."""
    return store.add_stream(memory_records(corpus), progress=progress)


def corpus_digest(corpus: pa.Table) -> str:
    """The sha256 of the memories the store holds of ``corpus`` (module docstring)."""
    records = sorted(memory_records(corpus), key=lambda r: str(r["memory_id"]))
    digest = hashlib.sha256()
    for record in records:
        text = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str)
        digest.update(text.encode("utf-8") + b"\n")
    return digest.hexdigest()


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".hotmem-eval.json")


def kept_store(
    path: Path,
    corpus: pa.Table,
    *,
    spaces: Iterable[str] = (),
    progress: hotmem.ProgressCallback | None = None,
) -> tuple[hotmem.MemoryStore, bool]:
    """The store kept at ``path`` for ``corpus`` with every space of ``spaces``: opened and
    reused when it was built from the same memories, else built there; and whether it was
    reused.

    Raises:
        UsageError: ``path`` holds a store of other memories, or one this evaluator did not
            build (no record beside it), or its record cannot be read.
    """
    digest, record = corpus_digest(corpus), _record_path(path)
    if not path.exists():
        try:
            store = open_fixture_store(path, corpus, spaces=spaces, progress=progress)
        except BaseException:  # no half-built store left to be refused next time
            for leftover in (
                path,
                path.with_name(path.name + "-wal"),
                path.with_name(path.name + "-shm"),
            ):
                leftover.unlink(missing_ok=True)
            raise
        record.write_text(json.dumps({"corpus_digest": digest}) + "\n", encoding="utf-8")
        return store, False
    try:
        kept = json.loads(record.read_text(encoding="utf-8")).get("corpus_digest")
    except (OSError, ValueError, AttributeError):
        raise UsageError(
            f"refusing to reuse {path}: no readable record of the collection it was built "
            f"from ({record}); remove the store or pass another --store path"
        ) from None
    if kept != digest:
        raise UsageError(
            f"refusing to reuse {path}: it was built from other memories (sha256 "
            f"{str(kept)[:12]}...), and this collection's are sha256 {digest[:12]}...; remove "
            "it or pass another --store path"
        )
    store = hotmem.open_store(path, clock=hotmem.fixed_clock(FIXED_CLOCK))
    try:
        held = {space.name for space in store.spaces}
        for space in spaces:
            if space not in held:
                store.add_space(space, progress=progress)
    except BaseException:
        store.close()
        raise
    return store, True


def spaces_needed(profiles: Iterable[hotmem.Profile]) -> tuple[str, ...]:
    """The vector spaces ``profiles`` read, each once, in order of first use."""
    return tuple(dict.fromkeys(space for profile in profiles for space in profile.spaces))


def open_fixture_store(
    path: str | Path,
    corpus: pa.Table,
    *,
    spaces: Iterable[str] = (),
    progress: hotmem.ProgressCallback | None = None,
) -> hotmem.MemoryStore:
    """Open a new store at ``path`` with the fixed clock and ingest ``corpus`` into it, with
    the vectors of every space of ``spaces`` (model ids; ``hotmem-hash-v1`` is always built);
    ``progress`` is called with (memories added, memories).

    Raises:
        hotmem.MissingExtraError: a space needs an extra that is not installed.
    """
    store = hotmem.open_store(path, clock=hotmem.fixed_clock(FIXED_CLOCK))
    try:
        for space in spaces:
            if space != hotmem.MODEL_NAME:
                store.add_space(space)  # before the memories: add_many embeds every space
        ingest(store, corpus, progress)
    except BaseException:
        store.close()
        raise
    return store
