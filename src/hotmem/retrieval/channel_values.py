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

**Cost.** The engine's candidates (``Channels.candidates``) take its float32 products for
what they are, and compute an exact cosine only where one, moved by ``cosines.MARGIN``, could
fall either side of ``min_cosine``; the candidates then get their exact cosine in every space.
When every memory is a candidate, the hash-v1 cosines of a group of queries are computed in one
pass over the vectors (``cosines.every_hash_cosine``): a vector is unpacked once for the group.
A group's queries are embedded in one call a model space (the same bytes as one at a time),
where a search embeds its one query.
"""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Mapping, Sequence

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.errors import ValidationError
from hotmem.progress import ProgressCallback
from hotmem.records import record
from hotmem.retrieval.channels import checked_number
from hotmem.retrieval.cosines import every_hash_cosine
from hotmem.retrieval.index import SearchIndex
from hotmem.retrieval.prepared import keep_query_vectors
from hotmem.retrieval.profiles import LexicalChannel, Profile, VectorChannel
from hotmem.retrieval.reference import ReferenceChannels
from hotmem.retrieval.request import SearchRequest
from hotmem.retrieval.search import Channels, channels_for, prepared_for
from hotmem.store.memory_store import MemoryStore

__all__ = ["ChannelValues", "channel_values", "channel_values_many"]

#: Queries computed together: embedded in one call a model space, and their hash-v1 cosines
#: of every memory, when they are all candidates, sharing one unpacking of the vectors
#: (``cosines.every_hash_cosine``), for a few MB of values held at a time (32 x 8 bytes a
#: memory).
_GROUP = 32


@record
class ChannelValues:
    """The candidates of one query (in the index's order) and their channel values.

    Attributes:
        query: the query text.
        scope: the identifier searched, ``None`` for the whole store.
        min_cosine: the smallest floor the values serve (``channel_values``).
        best_bm25: the best raw BM25 of the scope's lexical matches (0.0 without a match):
            what a search divides a raw score by.
        memory_ids: each candidate's memory_id.
        importances: each candidate's importance (float64 values, one buffer).
        bm25_raw: each candidate's raw BM25, ``None`` without a lexical match.
        cosines: space -> each candidate's exact cosine in that space (float64 values).
    """

    query: str
    scope: str | None
    min_cosine: float
    best_bm25: float
    memory_ids: tuple[str, ...]
    importances: array[float]
    bm25_raw: tuple[float | None, ...]
    cosines: Mapping[str, array[float]]


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
    found: list[ChannelValues] = []
    names: dict[int, str] = {}
    with store.reading() as connection:
        for start in range(0, len(queries), _GROUP):
            _embed_queries(store, [query for query, _ in queries[start : start + _GROUP]], spaces)
            group = [
                _asked(store, connection, query, identifier, spaces, floor)
                for query, identifier in queries[start : start + _GROUP]
            ]
            for asked, hashed in zip(group, _every_hash(group, spaces), strict=True):
                found.append(_values(connection, asked, spaces, floor, names, hashed))
                if progress is not None:
                    progress(len(found), len(queries))
    return found


def _embed_queries(store: MemoryStore, texts: list[str], spaces: Sequence[str]) -> None:
    """The vectors of ``texts`` in each model space asked that the store has, embedded in one
    call a space and kept for the searches' preparation (``prepared.keep_query_vectors``)."""
    have = {space.name for space in store.spaces}
    for space in spaces:
        if space != MODEL_NAME and space in have:
            from hotmem.store.reindex import embedder_for  # a space with a model

            embedder = embedder_for(store.space(space), store.path, store.model_dir)
            keep_query_vectors(embedder, texts)


@record
class _Asked:
    """One query's channels, a space each (the lexical channel with the first), and its
    candidates (positions, ascending)."""

    query: str
    identifier: str | None
    engines: list[Channels]
    chosen: Sequence[int]
    index: SearchIndex
    hash_query: tuple[float, ...] | None  # its hash-v1 vector, when the space is asked


def _asked(
    store: MemoryStore,
    connection: sqlite3.Connection,
    query: str,
    identifier: str | None,
    spaces: Sequence[str],
    floor: float,
) -> _Asked:
    engines, hash_query = [], None
    for number, space in enumerate(spaces):
        profile = Profile(
            "channels",
            vector=VectorChannel(space=space, weight=1.0, floor=-1.0),
            lexical=LexicalChannel(weight=1.0) if number == 0 else None,
            importance=0.0,
        )
        request = SearchRequest(query, identifier, 1, profile, None, None)
        prepared = prepared_for(store, connection, request, request.profile_for(store))
        engines.append(channels_for(store, prepared))
        if space == MODEL_NAME and prepared.vector is not None:
            hash_query = prepared.vector.values
    scope = prepared.scope
    found = [channels.candidates(floor) for channels in engines]
    if any(len(positions) == len(scope) for positions in found):
        chosen: Sequence[int] = scope
    else:
        chosen = sorted(set().union(*found))
    return _Asked(query, identifier, engines, chosen, prepared.index, hash_query)


def _every_hash(group: list[_Asked], spaces: Sequence[str]) -> list[list[float] | None]:
    """The hash-v1 cosines of the queries of ``group`` whose candidates are every memory
    and whose engine has not computed them all already (``None`` for the others), unpacking
    each vector once for all of them."""
    if MODEL_NAME not in spaces:
        return [None] * len(group)
    at = spaces.index(MODEL_NAME)
    wanted = [
        a.hash_query
        if len(a.chosen) == len(a.index.vectors)
        and not isinstance(a.engines[at], ReferenceChannels)
        else None
        for a in group
    ]
    asked = [query for query in wanted if query is not None]
    if not asked:
        return [None] * len(group)
    found = iter(every_hash_cosine(group[0].index, asked))
    return [None if query is None else next(found) for query in wanted]


def _values(
    connection: sqlite3.Connection,
    asked: _Asked,
    spaces: Sequence[str],
    floor: float,
    names: dict[int, str],
    hashed: list[float] | None,
) -> ChannelValues:
    """One query's values; ``names`` (position -> memory_id) is filled as ids are read;
    ``hashed``: its hash-v1 cosines of every memory, when computed for its group."""
    index, chosen, engines = asked.index, asked.chosen, asked.engines
    cosines: dict[str, array[float]] = {}
    for space, channels in zip(spaces, engines, strict=True):
        if space == MODEL_NAME and hashed is not None:
            cosines[space] = array("d", hashed)
        else:
            cosines[space] = array("d", channels.cosines_at(chosen))
    unread = set(chosen).difference(names)
    if unread:
        names.update(index.ids(connection, unread))
    return ChannelValues(
        query=asked.query,
        scope=asked.identifier,
        min_cosine=floor,
        best_bm25=engines[0].best,
        memory_ids=tuple(map(names.__getitem__, chosen)),
        importances=_importances(index, chosen),
        bm25_raw=tuple(engines[0].raws_of(chosen)),  # the lexical channel's
        cosines=cosines,
    )


def _importances(index: SearchIndex, chosen: Sequence[int]) -> array[float]:
    if isinstance(chosen, range) and chosen.step == 1:  # a slice of the column
        return index.importances[chosen.start : chosen.stop]
    return array("d", map(index.importances.__getitem__, chosen))
