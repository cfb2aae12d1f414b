"""HotMem: a local-first, portable memory store for software agents.

Public API::

    import hotmem

    with hotmem.open_store("memories.db") as store:
        store.add("Invoices above EUR 5,000 need two approvals.", identifier="acme-finance")
        for result in hotmem.search_memories(store, "invoice approval", limit=5):
            print(result.rank, result.score, result.fact)
"""

from __future__ import annotations

import importlib as _importlib

# Each public name and the module defining it, imported on first use: ``import hotmem`` loads
# this file alone (the standard library's sqlite3 comes with the store).
_ORIGINS = {
    "hotmem.embedding.hash_v1": ("DIMENSION", "MODEL_NAME", "embed"),
    "hotmem.embedding.registry": (
        "EMBEDDERS",
        "SEMANTIC_MODEL",
        "Embedder",
        "EmbedderEntry",
        "EmbedderIdentity",
        "embedder_identity",
        "get_embedder",
    ),
    "hotmem.errors": (
        "DuplicateMemoryError",
        "EmbedderError",
        "HotmemError",
        "HydrationError",
        "MemoryNotFoundError",
        "MissingExtraError",
        "SnapshotError",
        "StoreError",
        "ValidationError",
        "VerificationError",
    ),
    "hotmem.fields": (
        "FIELD_NAMES",
        "MAX_ID_LENGTH",
        "Breach",
        "field_breach",
        "format_timestamp",
        "text_breach",
    ),
    "hotmem.jsonl": (
        "MAX_JSON_DEPTH",
        "MAX_JSON_NUMBER",
        "JsonlProblem",
        "JsonlRecord",
        "read_jsonl",
    ),
    "hotmem.models": ("Memory", "fixed_clock", "parse_timestamp", "system_clock"),
    "hotmem.progress": ("Progress", "ProgressCallback"),
    "hotmem.retrieval.channel_values": (
        "ChannelValues",
        "channel_values",
        "channel_values_many",
    ),
    "hotmem.retrieval.diagnosis": ("VERDICTS", "Diagnosis", "Verdict", "diagnose", "diagnose_many"),
    "hotmem.retrieval.fusion": ("MIN_SIMILARITY", "WEIGHTS", "Weights"),
    "hotmem.retrieval.profiles": (
        "DEFAULT_PROFILE",
        "PROFILES",
        "LexicalChannel",
        "Profile",
        "VectorChannel",
    ),
    "hotmem.retrieval.kept_profiles": ("import_profile", "set_default_profile"),
    "hotmem.retrieval.profile_files": ("read_profiles",),
    "hotmem.retrieval.request": ("MAX_LIMIT", "SearchRequest"),
    "hotmem.retrieval.rerank": ("MMR",),
    "hotmem.retrieval.results": ("Explanation", "ScoreComponents", "SearchResult"),
    "hotmem.retrieval.examine": ("explain",),
    "hotmem.retrieval.search": ("prepare_queries", "search_memories"),
    "hotmem.snapshot": (
        "HydrationReport",
        "SnapshotProblem",
        "SnapshotReport",
        "VerificationReport",
        "hydrate",
        "verify_snapshot",
    ),
    "hotmem.store.fts": ("FTS_TOKENIZER", "LEXICAL_INDEX"),
    "hotmem.store.memory_store": ("MemoryStore", "open_store"),
    "hotmem.store.setup": ("BUSY_TIMEOUT",),
    "hotmem.store.spaces": ("VectorSpace",),
    "hotmem.store.updates": ("ImportCounts",),
}
_ORIGIN = {name: module for module, names in _ORIGINS.items() for name in names}

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    import typing as _typing

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
    from hotmem.jsonl import MAX_JSON_DEPTH, MAX_JSON_NUMBER, JsonlProblem, JsonlRecord, read_jsonl
    from hotmem.models import Memory, fixed_clock, parse_timestamp, system_clock
    from hotmem.progress import Progress, ProgressCallback
    from hotmem.retrieval.channel_values import (
        ChannelValues,
        channel_values,
        channel_values_many,
    )
    from hotmem.retrieval.diagnosis import VERDICTS, Diagnosis, Verdict, diagnose, diagnose_many
    from hotmem.retrieval.examine import explain
    from hotmem.retrieval.fusion import MIN_SIMILARITY, WEIGHTS, Weights
    from hotmem.retrieval.kept_profiles import import_profile, set_default_profile
    from hotmem.retrieval.profile_files import read_profiles
    from hotmem.retrieval.profiles import (
        DEFAULT_PROFILE,
        PROFILES,
        LexicalChannel,
        Profile,
        VectorChannel,
    )
    from hotmem.retrieval.request import MAX_LIMIT, SearchRequest
    from hotmem.retrieval.rerank import MMR
    from hotmem.retrieval.results import Explanation, ScoreComponents, SearchResult
    from hotmem.retrieval.search import prepare_queries, search_memories
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
    from hotmem.store.updates import ImportCounts
del TYPE_CHECKING  # not a public name

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
    "ChannelValues",
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
    "ImportCounts",
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
    "SearchRequest",
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
    "channel_values",
    "channel_values_many",
    "diagnose",
    "diagnose_many",
    "embed",
    "embedder_identity",
    "explain",
    "field_breach",
    "fixed_clock",
    "format_timestamp",
    "get_embedder",
    "hydrate",
    "import_profile",
    "open_store",
    "parse_timestamp",
    "prepare_queries",
    "read_jsonl",
    "read_profiles",
    "search_memories",
    "set_default_profile",
    "system_clock",
    "text_breach",
    "verify_snapshot",
]


def __getattr__(name: str) -> _typing.Any:
    """A public name, imported from its module on first use (module docstring)."""
    module = _ORIGIN.get(name)
    if module is None:
        raise AttributeError(f"module 'hotmem' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
