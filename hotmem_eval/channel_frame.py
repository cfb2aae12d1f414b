"""Channel scores as data: every candidate's channel values for every query, once, and any
weighted or reciprocal-rank profile's ranking as a polars expression over them.

``channel_table`` asks ``hotmem.channel_values_many`` (the search's own engine) for every
query, each in its scope, in one read transaction, and stacks the answers in one Arrow
table, ``CHANNEL_SCHEMA`` plus one ``cosine:<space>`` column per space:

==================  ============================================================================
``query_id``         the query
``memory_id``        a candidate: a lexical match, or a cosine of at least ``min_cosine`` in
                     one of the spaces (the table's metadata records ``min_cosine`` and spaces)
``importance``       the memory's importance
``bm25_raw``         its raw BM25 (FTS5's ``bm25()``, negated), null without a lexical match
``bm25_best``        the best raw BM25 of the query's scope (0.0 without a match)
``cosine:<space>``   its exact cosine to the query in that space
==================  ============================================================================

``fused_ranking`` then ranks a profile's top ``limit`` per query with the operations of
``hotmem/retrieval/fusion.py``, in the same order, so the same bits: weighted fusion
``w_v * cosine + w_l * (raw / best) + w_i * importance`` over the candidates its floor and gate
admit, or reciprocal-rank fusion of the two channel lists cut at the profile's depth; ties by
memory_id. **Completeness:** a profile's candidates have a lexical match or a cosine at its
floor, so every one is in the table when its floor is at least ``min_cosine`` (checked), and
``bm25_best`` comes from every match of the scope. A reranker (MMR) is refused: it reorders
with the vectors themselves. Its tests hold the ranking equal to ``hotmem.search_memories``:
ids, order and score bits.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import polars as pl
import pyarrow as pa

import hotmem
from hotmem_eval.errors import EvalError

__all__ = [
    "CHANNEL_SCHEMA",
    "ChannelFrame",
    "channel_frame",
    "channel_table",
    "complete_for",
    "cosine_column",
    "fused_ranking",
]

_FIELDS: list[pa.Field[Any]] = [
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("memory_id", pa.string(), nullable=False),
    pa.field("importance", pa.float64(), nullable=False),
    pa.field("bm25_raw", pa.float64(), nullable=True),
    pa.field("bm25_best", pa.float64(), nullable=False),
]
#: The columns every channel table starts with (then one ``cosine:<space>`` per space).
CHANNEL_SCHEMA: Final = pa.schema(_FIELDS)
#: The ranking ``fused_ranking`` returns.
RANKING_COLUMNS: Final = {
    "query_id": pl.String(),
    "rank": pl.Int64(),
    "memory_id": pl.String(),
    "score": pl.Float64(),
}


def cosine_column(space: str) -> str:
    """The column of a space's cosines."""
    return f"cosine:{space}"


def complete_for(profiles: Sequence[hotmem.Profile]) -> tuple[list[str], float]:
    """The spaces and ``min_cosine`` of a channel table complete for every profile of
    ``profiles``: the vector spaces they search, in the order they name them
    (hotmem-hash-v1 when none has a vector channel), and their smallest floor (1.0 then: the
    table holds the lexical matches)."""
    spaces = list(dict.fromkeys(p.vector.space for p in profiles if p.vector is not None))
    floors = [p.vector.floor for p in profiles if p.vector is not None]
    return spaces or [hotmem.MODEL_NAME], min(floors, default=1.0)


def channel_table(
    store: hotmem.MemoryStore,
    queries: pa.Table,
    *,
    spaces: Sequence[str] = (hotmem.MODEL_NAME,),
    min_cosine: float = -1.0,
    progress: hotmem.ProgressCallback | None = None,
) -> pa.Table:
    """Every query's candidates and their channel values (the module docstring), each query
    searched in its ``identifier`` scope. The schema's metadata holds ``min_cosine`` and the
    spaces. ``progress`` is called with (queries done, queries).

    Raises:
        ValidationError: as ``hotmem.channel_values`` (a space the store lacks, ...).
    """
    asked = queries.select(["query_id", "query", "identifier"]).to_pylist()
    answers = hotmem.channel_values_many(
        store,
        [(query["query"], query["identifier"]) for query in asked],
        spaces=spaces,
        min_cosine=min_cosine,
        progress=progress,
    )
    fields = [*_FIELDS, *(pa.field(cosine_column(s), pa.float64(), nullable=False) for s in spaces)]
    metadata: dict[bytes | str, bytes | str] = {
        "min_cosine": repr(float(min_cosine)),
        "spaces": json.dumps(list(spaces)),
    }
    schema = pa.schema(fields, metadata=metadata)
    batches = [
        pa.record_batch(_columns(str(query["query_id"]), found, spaces), schema=schema)
        for query, found in zip(asked, answers, strict=True)
    ]
    return pa.Table.from_batches(batches, schema=schema).combine_chunks()


def _floats(values: array[float]) -> pa.Array[Any]:
    """A float64 array of ``values``, its buffer as it is."""
    return pa.Array.from_buffers(pa.float64(), len(values), [None, pa.py_buffer(values)])


def _columns(
    query_id: str, found: hotmem.ChannelValues, spaces: Sequence[str]
) -> list[pa.Array[Any]]:
    """One query's rows of the table, column by column."""
    count = len(found.memory_ids)
    return [
        pa.repeat(pa.scalar(query_id, pa.string()), count),
        pa.array(found.memory_ids, pa.string()),
        _floats(found.importances),
        pa.array(found.bm25_raw, pa.float64()),
        _floats(array("d", [found.best_bm25]) * count),
        *(_floats(found.cosines[space]) for space in spaces),
    ]


@dataclass(frozen=True, slots=True)
class ChannelFrame:
    """A channel table as a polars frame, with the spaces and ``min_cosine`` of its metadata
    (``channel_frame``): what ``fused_ranking`` reads many times without converting again."""

    frame: pl.DataFrame
    spaces: tuple[str, ...]
    min_cosine: float


def channel_frame(table: pa.Table) -> ChannelFrame:
    """``table`` (``channel_table``'s) as a ``ChannelFrame``."""
    metadata = table.schema.metadata or {}
    spaces = tuple(json.loads(metadata.get(b"spaces", b"[]")))
    min_cosine = float(metadata.get(b"min_cosine", b"1.0"))
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return ChannelFrame(frame, spaces, min_cosine)


def _checked(table: pa.Table | ChannelFrame, profile: hotmem.Profile) -> pl.DataFrame:
    found = table if isinstance(table, ChannelFrame) else channel_frame(table)
    spaces, min_cosine = found.spaces, found.min_cosine
    if profile.reranker is not None:
        raise EvalError(
            f"profile {profile.name!r} reranks with MMR, which a channel table cannot: "
            "search it with hotmem.search_memories"
        )
    vector = profile.vector
    if vector is not None and vector.space not in spaces:
        raise EvalError(
            f"profile {profile.name!r} searches the space {vector.space!r}, which the channel "
            f"table does not hold (it holds {', '.join(spaces)})"
        )
    if vector is not None and vector.floor < min_cosine:
        raise EvalError(
            f"profile {profile.name!r} has the floor {vector.floor:g}, below the table's "
            f"min_cosine {min_cosine:g}: its candidates may be missing from the table"
        )
    return found.frame


def _ranked(frame: pl.DataFrame, key: pl.Expr, limit: int, name: str) -> pl.DataFrame:
    """The rows of each query ranked by ``key`` descending then memory_id, numbered 1.. per
    query as ``name``, kept up to ``limit``. Only the rows whose key is at least each query's
    ``limit``-th largest (ties included) are sorted."""
    contenders = frame.filter(key.rank("min", descending=True).over("query_id") <= limit)
    ordered = contenders.sort(
        [pl.col("query_id"), key, pl.col("memory_id")], descending=[False, True, False]
    )
    return ordered.with_columns(
        (pl.int_range(pl.len()).over("query_id") + 1).cast(pl.Int64).alias(name)
    ).filter(pl.col(name) <= limit)


def fused_ranking(
    table: pa.Table | ChannelFrame, profile: hotmem.Profile, *, limit: int
) -> pl.DataFrame:
    """The top ``limit`` of every query of ``table`` under ``profile`` (``RANKING_COLUMNS``,
    by query_id then rank), as ``hotmem.search_memories`` ranks them.

    Raises:
        EvalError: a reranking profile, a space the table lacks, or a floor below the table's
            ``min_cosine`` (its candidates might be incomplete).
    """
    frame = _checked(table, profile)
    vector, words = profile.vector, profile.lexical
    cosine = pl.col(cosine_column(vector.space)) if vector is not None else pl.lit(0.0)
    matched = pl.col("bm25_raw").is_not_null() & pl.lit(words is not None)
    gate = None if words is None else words.gate
    lexical = matched if gate is None else matched & (cosine >= gate)
    frame = frame.with_columns(cosine.alias("_cosine"), matched.alias("_matched"))
    cosine, matched = pl.col("_cosine"), pl.col("_matched")
    if profile.fusion == "rrf":
        scored = _rrf(frame, profile, lexical)
    else:
        w_vector = 0.0 if vector is None else vector.weight
        w_lexical = 0.0 if words is None else words.weight
        bm25 = pl.when(matched).then(pl.col("bm25_raw") / pl.col("bm25_best")).otherwise(0.0)
        admitted = lexical if vector is None else (cosine >= vector.floor) | lexical
        scored = frame.filter(admitted).with_columns(
            score=pl.lit(w_vector) * cosine
            + pl.lit(w_lexical) * bm25
            + pl.lit(profile.importance) * pl.col("importance")
        )
    ranked = _ranked(scored, pl.col("score"), limit, "rank")
    return ranked.select(list(RANKING_COLUMNS)).cast(RANKING_COLUMNS)  # type: ignore[arg-type]


def _rrf(frame: pl.DataFrame, profile: hotmem.Profile, lexical: pl.Expr) -> pl.DataFrame:
    """Reciprocal-rank fusion: each channel's list (the vector channel's by cosine, from the
    floor; the lexical channel's by raw BM25, the matches its gate admits), cut at the
    profile's depth, then ``w_v / (k + vector rank) + w_l / (k + lexical rank)``."""
    vector, words, k = profile.vector, profile.lexical, profile.rrf_k
    keys = ["query_id", "memory_id"]
    lists = []
    if vector is not None:
        ranked = _ranked(
            frame.filter(pl.col("_cosine") >= vector.floor),
            pl.col("_cosine"),
            profile.depth,
            "_vector_rank",
        )
        lists.append(ranked.select([*keys, "_vector_rank"]))
    ranked = _ranked(frame.filter(lexical), pl.col("bm25_raw"), profile.depth, "_lexical_rank")
    lists.append(ranked.select([*keys, "_lexical_rank"]))
    both = lists[0]
    for other in lists[1:]:
        both = both.join(other, on=keys, how="full", coalesce=True)
    for column in ("_vector_rank", "_lexical_rank"):
        if column not in both.columns:
            both = both.with_columns(pl.lit(None, pl.Int64).alias(column))
    w_vector = 0.0 if vector is None else vector.weight
    w_lexical = 0.0 if words is None else words.weight
    share = [
        pl.when(pl.col(rank).is_not_null()).then(pl.lit(weight) / (k + pl.col(rank))).otherwise(0.0)
        for weight, rank in ((w_vector, "_vector_rank"), (w_lexical, "_lexical_rank"))
    ]
    return both.with_columns(score=pl.lit(0.0) + share[0] + share[1])
