"""HotMem: a local-first, portable memory store for software agents.

Public API::

    import hotmem

    with hotmem.open_store("memories.db") as store:
        store.add("Invoices above EUR 5,000 need two approvals.", identifier="acme-finance")
        for result in hotmem.search_memories(store, "invoice approval", limit=5):
            print(result.rank, result.score, result.fact)
"""

from __future__ import annotations

from hotmem.db import MemoryStore, open_store
from hotmem.embed import DIMENSION, MODEL_NAME, embed
from hotmem.errors import (
    DuplicateMemoryError,
    HotmemError,
    HydrationError,
    MemoryNotFoundError,
    SnapshotError,
    StoreError,
    ValidationError,
    VerificationError,
)
from hotmem.models import Memory, fixed_clock, system_clock
from hotmem.search import (
    MIN_SIMILARITY,
    WEIGHTS,
    Explanation,
    ScoreComponents,
    SearchResult,
    Weights,
    explain,
    search_memories,
)
from hotmem.snapshot import (
    HydrationReport,
    SnapshotProblem,
    SnapshotReport,
    VerificationReport,
    hydrate,
    verify_snapshot,
)

__version__ = "0.1.0"

__all__ = [
    "DIMENSION",
    "MIN_SIMILARITY",
    "MODEL_NAME",
    "WEIGHTS",
    "DuplicateMemoryError",
    "Explanation",
    "HotmemError",
    "HydrationError",
    "HydrationReport",
    "Memory",
    "MemoryNotFoundError",
    "MemoryStore",
    "ScoreComponents",
    "SearchResult",
    "SnapshotError",
    "SnapshotProblem",
    "SnapshotReport",
    "StoreError",
    "ValidationError",
    "VerificationError",
    "VerificationReport",
    "Weights",
    "__version__",
    "embed",
    "explain",
    "fixed_clock",
    "hydrate",
    "open_store",
    "search_memories",
    "system_clock",
    "verify_snapshot",
]
