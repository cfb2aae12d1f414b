"""What a search returns and what ``explain`` says: the result values, JSON-ready."""

from __future__ import annotations

from hotmem.records import record

__all__ = ["Explanation", "ScoreComponents", "SearchResult"]


@record
class ScoreComponents:
    """The signals behind a score.

    Attributes:
        cosine: cosine between the query's and the memory's vectors in the profile's vector
            space, in [-1, 1] (0.0 without a vector channel).
        bm25_raw: FTS5 BM25 of the memory for this query (higher is better), ``None``
            without a lexical match.
        bm25_normalised: ``bm25_raw`` divided by the best ``bm25_raw`` among this query's
            matches in scope; 0.0 without a lexical match.
        importance: the memory's static importance.
    """

    cosine: float
    bm25_raw: float | None
    bm25_normalised: float
    importance: float

    @property
    def lexical_match(self) -> bool:
        """Whether the memory matched at least one informative query term."""
        return self.bm25_raw is not None

    def to_dict(self) -> dict[str, float | None]:
        """The components as a JSON-ready dict, keyed by their canonical column names."""
        return {
            "cosine": self.cosine,
            "bm25_raw": self.bm25_raw,
            "bm25_normalised": self.bm25_normalised,
            "importance": self.importance,
        }


@record
class SearchResult:
    """One ranked memory with its score and the components that produced it."""

    rank: int
    memory_id: str
    identifier: str
    fact: str
    tags: tuple[str, ...]
    importance: float
    score: float
    components: ScoreComponents
    #: Its rank in the fused order when a reranker reordered the results, else ``None``.
    fused_rank: int | None = None

    def to_dict(self) -> dict[str, object]:
        """The result as a JSON-ready dict (what ``hotmem search --json`` prints)."""
        return {
            "rank": self.rank,
            "memory_id": self.memory_id,
            "identifier": self.identifier,
            "fact": self.fact,
            "tags": list(self.tags),
            "importance": self.importance,
            "score": self.score,
            "components": self.components.to_dict(),
            "fused_rank": self.fused_rank,
        }


@record
class Explanation:
    """How one memory fares for one query, whether or not it was returned.

    Attributes:
        memory_id: the memory explained.
        identifier: the memory's identifier.
        in_scope: whether the memory belongs to the scope searched.
        components: its score components for this query.
        score: the score it has (or would have) under fusion.
        passes_floor: whether it is a candidate: in scope, and a lexical match (admitted by
            the gate) or ``cosine >= floor``; under reciprocal-rank fusion, in either
            channel's ranked list.
        profile: the name of the profile explained.
        vector_rank, lexical_rank: under reciprocal-rank fusion, its rank in each channel's
            list (``None`` when not in it); ``None`` under weighted fusion.
        reranker: the profile's reranker (``MMR.to_dict``), ``None`` without one.
        pre_rerank_rank, post_rerank_rank: with a reranker, its rank in the fused top
            ``pool`` and after reranking that pool; ``None`` when it is not in the pool
            (beyond it the reranker leaves the fused order as it is), or without a reranker.
    """

    memory_id: str
    identifier: str
    in_scope: bool
    components: ScoreComponents
    score: float
    passes_floor: bool
    profile: str = "default"
    vector_rank: int | None = None
    lexical_rank: int | None = None
    reranker: dict[str, object] | None = None
    pre_rerank_rank: int | None = None
    post_rerank_rank: int | None = None

    def to_dict(self) -> dict[str, object]:
        """The explanation as a JSON-ready dict."""
        return {
            "memory_id": self.memory_id,
            "identifier": self.identifier,
            "in_scope": self.in_scope,
            "score": self.score,
            "passes_floor": self.passes_floor,
            "components": self.components.to_dict(),
            "profile": self.profile,
            "vector_rank": self.vector_rank,
            "lexical_rank": self.lexical_rank,
            "reranker": self.reranker,
            "pre_rerank_rank": self.pre_rerank_rank,
            "post_rerank_rank": self.post_rerank_rank,
        }
