"""How the ``hotmem`` CLI shows search results, score components and diagnoses as text."""

from __future__ import annotations

from hotmem.diagnosis import Diagnosis
from hotmem.fusion import WEIGHTS, Weights
from hotmem.search import ScoreComponents, SearchResult
from hotmem.topk import Rule

__all__ = ["diagnosis_lines", "result_lines", "score_line"]


def score_line(score: float, components: ScoreComponents, weights: Weights = WEIGHTS) -> str:
    """``score S = 0.6 * cosine C + 0.2 * bm25 B + 0.2 * importance I`` and the lexical match."""
    lexical = (
        f"lexical match, bm25 {components.bm25_raw:.5g}"
        if components.bm25_raw is not None
        else "no lexical match"
    )
    return (
        f"score {score:.4f} = {weights.cosine:g} * cosine {components.cosine:.4f}"
        f" + {weights.bm25:g} * bm25 {components.bm25_normalised:.4f}"
        f" + {weights.importance:g} * importance {components.importance:.4f} ({lexical})"
    )


def result_lines(result: SearchResult, *, explain: bool, rule: Rule) -> list[str]:
    """One result, and with ``explain`` why it is a candidate (under ``rule``, the search's
    profile) and how its score adds up."""
    lines = [f"{result.rank}. [{result.score:.4f}] {result.memory_id} ({result.identifier}): "
             f"{result.fact}"]  # fmt: skip
    if explain:
        c = result.components
        why = (
            "a lexical match"
            if c.lexical_match
            else f"cosine {c.cosine:.4f} >= {rule.floor if rule.floor is not None else 0.0:g}"
        )
        lines.append(f"   candidate by {why}; {score_line(result.score, c, rule.weights)}")
    return lines


def diagnosis_lines(diagnosis: Diagnosis, fact: str) -> list[str]:
    """What ``hotmem explain`` prints: the memory, the verdict, the score, who ranks above."""
    e = diagnosis.explanation
    scope = "all identifiers" if diagnosis.scope is None else f"identifier {diagnosis.scope!r}"
    lines = [
        f"{e.memory_id} ({e.identifier}): {fact}",
        f"query: {diagnosis.query!r} in {scope}, top {diagnosis.limit}, "
        f"min_similarity {diagnosis.min_similarity:g}",
        f"{diagnosis.verdict}: {diagnosis.detail}",
        score_line(e.score, e.components),
    ]
    if diagnosis.above:
        lines.append("ranked above it:" if diagnosis.verdict == "returned" else "outranked by:")
        lines += [
            f"  {r.rank}. [{r.score:.4f}] {r.memory_id} ({r.identifier}), "
            f"{r.score - e.score:+.4f}: {r.fact}"
            for r in diagnosis.above
        ]
    return lines
