"""One query made ready for an engine: its scope, its phrases with their postings and IDF,
its vector. The same value feeds both engines, so they read the same inputs.

A query term is the phrase of the tokens FTS5's tokenizer makes of it (``tokens.py``): one
token, looked up in the postings (``index.py``); several (a character FTS5 does not count as
part of a word inside a term), scored by FTS5 itself for that phrase alone, which is the share
the phrase adds to ``bm25()``; none, nothing (FTS5 matches no row with an empty phrase).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Collection, Sequence

from hotmem.embedding.hash_v1 import MODEL_NAME, embed
from hotmem.errors import StoreError
from hotmem.retrieval.fusion import Rule, Weights
from hotmem.retrieval.index import SearchIndex, SpaceColumn
from hotmem.retrieval.postings import Postings, idf
from hotmem.retrieval.profiles import Profile
from hotmem.retrieval.query import lexical_query, match_expression
from hotmem.retrieval.tokens import tokenizer
from hotmem.store import changes
from hotmem.store.changes import ResultRow
from hotmem.store.lexical_index import Table

__all__ = [
    "QUERY_VECTORS",
    "Phrase",
    "Prepared",
    "VectorQuery",
    "keep_query_vectors",
    "prepare",
    "rule_of",
]


class Phrase:
    """One phrase of the query in one lexical index, ready to score.

    Attributes:
        table: the index.
        postings: a one-token phrase's postings (``None`` for a phrase of several tokens).
        scores: a phrase of several tokens: position -> the share FTS5 gives it.
        idf: a one-token phrase's IDF (FTS5's, over the whole index).
        avgdl: the index's tokens a row.
        lengths: each position's token count in the index.
    """

    __slots__ = ("avgdl", "idf", "lengths", "postings", "scores", "table")

    table: Table
    postings: Postings | None
    scores: dict[int, float] | None
    idf: float
    avgdl: float
    lengths: array[float]

    def __init__(
        self,
        table: Table,
        postings: Postings | None,
        scores: dict[int, float] | None,
        idf: float,
        avgdl: float,
        lengths: array[float],
    ) -> None:
        self.table = table
        self.postings = postings
        self.scores = scores
        self.idf = idf
        self.avgdl = avgdl
        self.lengths = lengths


class VectorQuery:
    """The query's vector in the profile's space: ``hotmem-hash-v1`` (``space`` is ``None``:
    the index's own vectors) or another space's column and the query's packed vector."""

    __slots__ = ("packed", "space", "values")

    values: tuple[float, ...]
    space: SpaceColumn | None
    packed: bytes

    def __init__(
        self, values: tuple[float, ...], space: SpaceColumn | None = None, packed: bytes = b""
    ) -> None:
        self.values = values
        self.space = space
        self.packed = packed


class Prepared:
    """What an engine reads for one query (module docstring)."""

    __slots__ = (
        "connection",
        "index",
        "keep",
        "phrases",
        "read",
        "rule",
        "scope",
        "vector",
        "whole",
    )

    index: SearchIndex
    connection: sqlite3.Connection
    scope: Sequence[int]
    whole: bool
    rule: Rule
    phrases: tuple[Phrase, ...]
    vector: VectorQuery | None
    read: dict[int, ResultRow]  # the rows read so far
    keep: int | None  # how many results the search returns (None: all it ranks)

    def __init__(
        self,
        index: SearchIndex,
        connection: sqlite3.Connection,
        scope: Sequence[int],
        whole: bool,
        rule: Rule,
        phrases: tuple[Phrase, ...],
        vector: VectorQuery | None,
        read: dict[int, ResultRow] | None = None,
    ) -> None:
        self.index = index
        self.connection = connection
        self.scope = scope
        self.whole = whole
        self.rule = rule
        self.phrases = phrases
        self.vector = vector
        self.read = {} if read is None else read
        self.keep = None

    def rows(self, positions: Collection[int]) -> dict[int, ResultRow]:
        """position -> what a search returns of the memory (read once a query)."""
        known = self.read
        missing = [p for p in positions if p not in known]
        if missing:
            known.update(self.index.rows(self.connection, missing))
        return {p: known[p] for p in positions}

    def names(self, positions: Collection[int]) -> dict[int, str]:
        """position -> memory_id (``fusion.Names``): read with the rest of their rows, unless
        they are more than the search will return (``keep``): then the ids alone."""
        known = self.read
        missing = [p for p in positions if p not in known]
        if self.keep is None or len(missing) <= self.keep:
            return {p: row[0] for p, row in self.rows(positions).items()}
        found = self.index.ids(self.connection, missing)
        return {p: known[p][0] if p in known else found[p] for p in positions}

    def identifier_of(self, position: int) -> str:
        """The identifier of the memory at ``position``."""
        sql = "SELECT identifier FROM memories WHERE rowid = ?"
        row = self.connection.execute(sql, (self.index.rowids[position],)).fetchone()
        return str(row[0])


def rule_of(profile: Profile) -> Rule:
    """Who is a candidate under ``profile`` and how candidates are weighed."""
    vector, words = profile.vector, profile.lexical
    weights = Weights(
        cosine=0.0 if vector is None else vector.weight,
        bm25=0.0 if words is None else words.weight,
        importance=profile.importance,
    )
    return Rule(
        weights, None if vector is None else vector.floor, None if words is None else words.gate
    )


def _phrases(index: SearchIndex, connection: sqlite3.Connection, text: str) -> tuple[Phrase, ...]:
    query = lexical_query(text)
    found: list[Phrase] = []
    tables: tuple[tuple[Table, tuple[str, ...]], ...] = (
        ("memories_fts", query.words),
        ("memories_cjk", query.grams),
    )
    for table, terms in tables:
        column = index.lexical[table]
        for term, tokens in zip(terms, tokenizer(table).phrases(terms), strict=True):
            if len(tokens) == 1:
                postings = index.postings(connection, table, tokens[0])
                hits = postings.hits(index.live, index.deaths)
                if hits:
                    weight = idf(column.rows, hits)
                    found.append(
                        Phrase(table, postings, None, weight, column.avgdl, column.lengths)
                    )
            elif tokens:
                expression = match_expression([term]) or ""
                scores = changes.phrase_scores(connection, table, expression)
                at = {r: index.position.get(r) for r in scores}
                by_position = {p: scores[r] for r, p in at.items() if p is not None}
                if by_position:
                    found.append(
                        Phrase(table, None, by_position, 0.0, column.avgdl, column.lengths)
                    )
    return tuple(found)


#: How many query vectors are kept per model embedder (about 1.5 KB each at 384 dimensions).
QUERY_VECTORS = 1024
_QUERY_VECTORS: weakref.WeakKeyDictionary[object, OrderedDict[str, bytes]] = (
    weakref.WeakKeyDictionary()
)
_QUERY_LOCK = threading.Lock()


def _query_vector(embedder: object, text: str) -> bytes:
    """The model embedder's vector of a query ``text``, kept for the ``QUERY_VECTORS`` texts
    used last: an embedding is the same bytes every time (docs/semantic.md), and a search,
    its explanation and the evaluator's re-runs ask for the same query again. An embedder
    that cannot be weakly referenced or hashed is asked every time."""
    with _QUERY_LOCK:
        try:
            kept = _QUERY_VECTORS.setdefault(embedder, OrderedDict())
        except TypeError:
            kept = OrderedDict()
        found = kept.get(text)
        if found is not None:
            kept.move_to_end(text)
            return found
    packed: bytes = embedder.embed_many([text])[0]  # type: ignore[attr-defined]
    with _QUERY_LOCK:
        kept[text] = packed
        while len(kept) > QUERY_VECTORS:
            kept.popitem(last=False)
    return packed


def keep_query_vectors(embedder: object, texts: Sequence[str]) -> int:
    """Embed the ``texts`` whose vectors are not kept, in one ``embed_many`` call (the
    embedder's batches, on every core: the same bytes as one text at a time), and keep them as
    ``_query_vector`` does; the kept ones become the most recently used. Returns how many texts
    were embedded. An embedder that cannot be weakly referenced or hashed is not asked (its
    searches embed each query).

    Raises:
        ValueError: more than ``QUERY_VECTORS`` distinct texts (they could not all be kept).
    """
    distinct = list(dict.fromkeys(texts))
    if len(distinct) > QUERY_VECTORS:
        raise ValueError(f"at most {QUERY_VECTORS} distinct texts; found {len(distinct)}")
    with _QUERY_LOCK:
        try:
            kept = _QUERY_VECTORS.setdefault(embedder, OrderedDict())
        except TypeError:
            return 0
        missing = [text for text in distinct if text not in kept]
    packed: list[bytes] = embedder.embed_many(missing) if missing else []  # type: ignore[attr-defined]
    with _QUERY_LOCK:
        for text, vector in zip(missing, packed, strict=True):
            kept[text] = vector
        for text in distinct:
            if text in kept:
                kept.move_to_end(text)
        while len(kept) > QUERY_VECTORS:
            kept.popitem(last=False)
    return len(missing)


def _vector(
    index: SearchIndex,
    connection: sqlite3.Connection,
    text: str,
    profile: Profile,
    embedder: object,
) -> VectorQuery | None:
    if profile.vector is None:
        return None
    if profile.vector.space == MODEL_NAME:
        return VectorQuery(embed(text))
    packed = _query_vector(embedder, text)
    dimension = len(packed) // 4
    column = index.space(connection, profile.vector.space, dimension)
    return VectorQuery((), column, packed)


def prepare(
    index: SearchIndex,
    connection: sqlite3.Connection,
    text: str,
    identifier: str | None,
    profile: Profile,
    embedder: object = None,
) -> Prepared:
    """The query ``text`` over ``identifier``'s memories (every memory for ``None``), made
    ready for an engine under ``profile`` (``embedder``: the embedder of the profile's space,
    when it is not hotmem-hash-v1).

    Raises:
        StoreError: the profile's space lacks the vector of a memory in scope (an interrupted
            reindex), or the store's index is damaged.
    """
    scope = index.scope(identifier)
    vector = _vector(index, connection, text, profile, embedder)
    if vector is not None and vector.space is not None and vector.space.missing:
        space = vector.space
        missing = len(space.missing)
        raise StoreError(
            f"store {index.target!r}: the vector space {space.name!r} is not built for "
            f"{missing} of {index.size} memories (an interrupted reindex); complete it with "
            f"`hotmem reindex --space {space.name}`"
        )
    phrases = _phrases(index, connection, text) if profile.lexical is not None else ()
    return Prepared(
        index=index,
        connection=connection,
        scope=scope,
        whole=isinstance(scope, range) and len(scope) == len(index.rowids),
        rule=rule_of(profile),
        phrases=phrases,
        vector=vector,
    )
