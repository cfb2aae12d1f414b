"""How the ``hotmem`` CLI shows search results, score components and diagnoses as text."""

from __future__ import annotations

from hotmem.retrieval.profiles import DEFAULT_PROFILE, PROFILES, Profile
from hotmem.retrieval.results import Explanation, ScoreComponents, SearchResult

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from hotmem.retrieval.diagnosis import Diagnosis

__all__ = ["diagnosis_lines", "rerank_line", "result_lines", "score_line"]


def score_line(
    score: float,
    components: ScoreComponents,
    profile: Profile = PROFILES[DEFAULT_PROFILE],
    ranks: tuple[int | None, int | None] | None = None,
) -> str:
    """How ``score`` adds up under ``profile``: ``score S = 0.6 * cosine C + 0.2 * bm25 B +
    0.2 * importance I`` for weighted fusion; for reciprocal-rank fusion the channel ranks
    (when ``ranks`` gives them) and the components; then the lexical match."""
    lexical = (
        f"lexical match, bm25 {components.bm25_raw:.5g}"
        if components.bm25_raw is not None
        else "no lexical match"
    )
    vector = 0.0 if profile.vector is None else profile.vector.weight
    words = 0.0 if profile.lexical is None else profile.lexical.weight
    if profile.fusion == "rrf":
        k = profile.rrf_k
        parts = [
            f"{weight:g} / ({k} + {name} rank {rank})"
            for weight, name, rank in zip(
                (vector, words), ("vector", "lexical"), ranks or (None, None), strict=True
            )
            if rank is not None
        ]
        sums = " + ".join(parts) if parts else "reciprocal-rank fusion"
        return (
            f"score {score:.4f} = {sums}; cosine {components.cosine:.4f}, "
            f"bm25 {components.bm25_normalised:.4f} ({lexical})"
        )
    terms = []
    if profile.vector is not None:
        terms.append(f"{vector:g} * cosine {components.cosine:.4f}")
    if profile.lexical is not None:
        terms.append(f"{words:g} * bm25 {components.bm25_normalised:.4f}")
    if profile.importance:
        terms.append(f"{profile.importance:g} * importance {components.importance:.4f}")
    return f"score {score:.4f} = {' + '.join(terms)} ({lexical})"


def result_lines(result: SearchResult, *, explain: bool, profile: Profile) -> list[str]:
    """One result, and with ``explain`` why it is a candidate and how its score adds up."""
    lines = [f"{result.rank}. [{result.score:.4f}] {result.memory_id} ({result.identifier}): "
             f"{result.fact}"]  # fmt: skip
    if explain:
        c = result.components
        floor = None if profile.vector is None else profile.vector.floor
        if c.lexical_match or floor is None:
            why = "a lexical match"
        else:
            why = f"cosine {c.cosine:.4f} >= {floor:g}"
        lines.append(f"   candidate by {why}; {score_line(result.score, c, profile)}")
        if result.fused_rank is not None:
            lines.append(f"   reranked: fused rank {result.fused_rank} -> rank {result.rank}")
    return lines


def rerank_line(explanation: Explanation) -> str | None:
    """With a reranker, the memory's rank before and after it (``None`` without one)."""
    reranker = explanation.reranker
    if reranker is None:
        return None
    name = (
        f"{reranker['kind']} (lambda {reranker['lambda']:g}, pool {reranker['pool']}, "
        f"{reranker['space']})"
    )
    if explanation.pre_rerank_rank is None:
        return f"reranker {name}: not in the fused top {reranker['pool']}, left in fused order"
    return (
        f"reranker {name}: fused rank {explanation.pre_rerank_rank} -> "
        f"rank {explanation.post_rerank_rank}"
    )


def diagnosis_lines(diagnosis: Diagnosis, fact: str, profile: Profile) -> list[str]:
    """What ``hotmem explain`` prints: the memory, the verdict, the score, who ranks above."""
    e = diagnosis.explanation
    floor = (
        "no cosine floor"
        if diagnosis.min_similarity is None
        else f"min_similarity {diagnosis.min_similarity:g}"
    )
    scope = "all identifiers" if diagnosis.scope is None else f"identifier {diagnosis.scope!r}"
    lines = [
        f"{e.memory_id} ({e.identifier}): {fact}",
        f"query: {diagnosis.query!r} in {scope}, top {diagnosis.limit}, {floor}, "
        f"profile {diagnosis.profile}",
        f"{diagnosis.verdict}: {diagnosis.detail}",
        score_line(e.score, e.components, profile, (e.vector_rank, e.lexical_rank)),
    ]
    rerank = rerank_line(e)
    if rerank is not None:
        lines.append(rerank)
    if diagnosis.above:
        lines.append("ranked above it:" if diagnosis.verdict == "returned" else "outranked by:")
        lines += [
            f"  {r.rank}. [{r.score:.4f}] {r.memory_id} ({r.identifier}), "
            f"{r.score - e.score:+.4f}: {r.fact}"
            for r in diagnosis.above
        ]
    return lines
