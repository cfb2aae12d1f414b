"""Every candidate's channel values for one query: what fusion reads, as data.

``channel_values`` computes, once, the values the search's own channels give (``search.py``:
the same engine, the same exact cosines and BM25 as a search), for every memory of the scope
that has a lexical match or, in one of the spaces asked, a cosine of at least ``min_cosine``.
That set holds every candidate of every weighted or reciprocal-rank profile over those spaces
whose floor is ``min_cosine`` or more, whatever its weights, gate or depth: a candidate has a
lexical match (gated or not) or a cosine at its floor, and the BM25 normalisation reads the
best raw score of the scope's matches, which are all kept. The evaluator fuses these values
for any such profile without a new search (``hotmem_eval/channel_frame.py``), and its tests
hold the result equal to ``search_memories``, bit for bit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.errors import ValidationError
from hotmem.progress import ProgressCallback
from hotmem.retrieval.channels import checked_number
from hotmem.retrieval.profiles import LexicalChannel, Profile, VectorChannel
from hotmem.retrieval.request import SearchRequest
from hotmem.retrieval.search import channels_for, prepared_for
from hotmem.store.memory_store import MemoryStore

__all__ = ["ChannelValues", "channel_values", "channel_values_many"]


@dataclass(frozen=True, slots=True)
class ChannelValues:
    """The candidates of one query (in the index's order) and their channel values.

    Attributes:
        query: the query text.
        scope: the identifier searched, ``None`` for the whole store.
        min_cosine: the smallest floor the values serve (``channel_values``).
        best_bm25: the best raw BM25 of the scope's lexical matches (0.0 without a match):
            what a search divides a raw score by.
        memory_ids: each candidate's memory_id.
        importances: each candidate's importance.
        bm25_raw: each candidate's raw BM25, ``None`` without a lexical match.
        cosines: space -> each candidate's exact cosine in that space.
    """

    query: str
    scope: str | None
    min_cosine: float
    best_bm25: float
    memory_ids: tuple[str, ...]
    importances: tuple[float, ...]
    bm25_raw: tuple[float | None, ...]
    cosines: Mapping[str, tuple[float, ...]]


def channel_values(
    store: MemoryStore,
    query: str,
    *,
    identifier: str | None = None,
    spaces: Sequence[str] = (MODEL_NAME,),
    min_cosine: float = -1.0,
) -> ChannelValues:
    """The channel values of every memory of the scope (``identifier``, or the whole store)
    with a lexical match for ``query`` or a cosine of at least ``min_cosine`` in one of
    ``spaces``, in one read transaction (the module docstring says why that is every candidate
    of every profile over ``spaces`` with a floor of ``min_cosine`` or more).

    Raises:
        ValidationError: no space, a space given twice or that the store does not have, or
            ``min_cosine`` outside [-1, 1].
        StoreError: the store cannot be read, or is damaged.
    """
    return channel_values_many(store, [(query, identifier)], spaces=spaces, min_cosine=min_cosine)[
        0
    ]


def channel_values_many(
    store: MemoryStore,
    queries: Sequence[tuple[str, str | None]],
    *,
    spaces: Sequence[str] = (MODEL_NAME,),
    min_cosine: float = -1.0,
    progress: ProgressCallback | None = None,
) -> list[ChannelValues]:
    """:func:`channel_values` of each ``(query, identifier)``, in order, in one read
    transaction (one state of the store for all), reading each memory_id once; ``progress``
    is called with (queries done, queries) after each.

    Raises:
        As :func:`channel_values`.
    """
    floor = checked_number("min_cosine", min_cosine, -1.0, 1.0)
    if isinstance(spaces, str) or not spaces or len(set(spaces)) != len(spaces):
        raise ValidationError(f"expected one or more distinct spaces, found {spaces!r}")
    found = []
    names: dict[int, str] = {}
    with store.reading() as connection:
        for query, identifier in queries:
            found.append(_values(store, connection, query, identifier, spaces, floor, names))
            if progress is not None:
                progress(len(found), len(queries))
    return found


def _candidates(
    raws: list[float | None], cosines: dict[str, list[float]], floor: float
) -> list[int]:
    """The offsets with a lexical match or a cosine of at least ``floor`` in some space."""
    return [
        i
        for i, raw in enumerate(raws)
        if raw is not None or any(values[i] >= floor for values in cosines.values())
    ]


def _values(
    store: MemoryStore,
    connection: sqlite3.Connection,
    query: str,
    identifier: str | None,
    spaces: Sequence[str],
    floor: float,
    names: dict[int, str],
) -> ChannelValues:
    """One query's values; ``names`` (position -> memory_id) is filled as ids are read."""
    cosines: dict[str, list[float]] = {}
    raws: list[float | None] = []
    best, positions = 0.0, []
    for number, space in enumerate(spaces):
        # the lexical channel once, with the first space: the others add their cosines
        profile = Profile(
            "channels",
            vector=VectorChannel(space=space, weight=1.0, floor=-1.0),
            lexical=LexicalChannel(weight=1.0) if number == 0 else None,
            importance=0.0,
        )
        request = SearchRequest(query, identifier, 1, profile, None, None)
        prepared = prepared_for(store, connection, request, request.profile_for(store))
        channels = channels_for(store, prepared)
        positions = list(prepared.scope)
        cosines[space], found = channels.values(positions)
        if number == 0:
            raws, best = found, channels.best
    index = prepared.index
    kept = _candidates(raws, cosines, floor)
    chosen = [positions[i] for i in kept]
    unread = [p for p in chosen if p not in names]
    if unread:
        names.update(index.ids(connection, unread))
    return ChannelValues(
        query=query,
        scope=identifier,
        min_cosine=floor,
        best_bm25=best,
        memory_ids=tuple(names[p] for p in chosen),
        importances=tuple(index.importances[p] for p in chosen),
        bm25_raw=tuple(raws[i] for i in kept),
        cosines={space: tuple(values[i] for i in kept) for space, values in cosines.items()},
    )
