"""HotMem: a local-first, portable memory store for software agents.

Public API::

    import hotmem

    with hotmem.open_store("memories.db") as store:
        store.add("Invoices above EUR 5,000 need two approvals.", identifier="acme-finance")
        for result in hotmem.search_memories(store, "invoice approval", limit=5):
            print(result.rank, result.score, result.fact)
"""

from __future__ import annotations

from hotmem.diagnosis import VERDICTS, Diagnosis, Verdict, diagnose
from hotmem.embedding.hash_v1 import DIMENSION, MODEL_NAME, embed
from hotmem.embedding.registry import (
    EMBEDDERS,
    SEMANTIC_MODEL,
    Embedder,
    EmbedderEntry,
    EmbedderIdentity,
    embedder_identity,
    get_embedder,
)
from hotmem.errors import (
    DuplicateMemoryError,
    EmbedderError,
    HotmemError,
    HydrationError,
    MemoryNotFoundError,
    MissingExtraError,
    SnapshotError,
    StoreError,
    ValidationError,
    VerificationError,
)
from hotmem.fields import (
    FIELD_NAMES,
    MAX_ID_LENGTH,
    Breach,
    field_breach,
    format_timestamp,
    text_breach,
)
from hotmem.fusion import MIN_SIMILARITY, WEIGHTS, Weights
from hotmem.jsonl import MAX_JSON_DEPTH, MAX_JSON_NUMBER, JsonlProblem, JsonlRecord, read_jsonl
from hotmem.models import Memory, fixed_clock, parse_timestamp, system_clock
from hotmem.profiles import (
    DEFAULT_PROFILE,
    PROFILES,
    LexicalChannel,
    Profile,
    VectorChannel,
)
from hotmem.progress import Progress, ProgressCallback
from hotmem.rerank import MMR
from hotmem.search import (
    MAX_LIMIT,
    Explanation,
    ScoreComponents,
    SearchResult,
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
from hotmem.store.fts import FTS_TOKENIZER, LEXICAL_INDEX
from hotmem.store.memory_store import MemoryStore, open_store
from hotmem.store.setup import BUSY_TIMEOUT
from hotmem.store.spaces import VectorSpace

__version__ = "0.1.0"

__all__ = [
    "BUSY_TIMEOUT",
    "DEFAULT_PROFILE",
    "DIMENSION",
    "EMBEDDERS",
    "FIELD_NAMES",
    "FTS_TOKENIZER",
    "LEXICAL_INDEX",
    "MAX_ID_LENGTH",
    "MAX_JSON_DEPTH",
    "MAX_JSON_NUMBER",
    "MAX_LIMIT",
    "MIN_SIMILARITY",
    "MMR",
    "MODEL_NAME",
    "PROFILES",
    "SEMANTIC_MODEL",
    "VERDICTS",
    "WEIGHTS",
    "Breach",
    "Diagnosis",
    "DuplicateMemoryError",
    "Embedder",
    "EmbedderEntry",
    "EmbedderError",
    "EmbedderIdentity",
    "Explanation",
    "HotmemError",
    "HydrationError",
    "HydrationReport",
    "JsonlProblem",
    "JsonlRecord",
    "LexicalChannel",
    "Memory",
    "MemoryNotFoundError",
    "MemoryStore",
    "MissingExtraError",
    "Profile",
    "Progress",
    "ProgressCallback",
    "ScoreComponents",
    "SearchResult",
    "SnapshotError",
    "SnapshotProblem",
    "SnapshotReport",
    "StoreError",
    "ValidationError",
    "VectorChannel",
    "VectorSpace",
    "Verdict",
    "VerificationError",
    "VerificationReport",
    "Weights",
    "__version__",
    "diagnose",
    "embed",
    "embedder_identity",
    "explain",
    "field_breach",
    "fixed_clock",
    "format_timestamp",
    "get_embedder",
    "hydrate",
    "open_store",
    "parse_timestamp",
    "read_jsonl",
    "search_memories",
    "system_clock",
    "text_breach",
    "verify_snapshot",
]
