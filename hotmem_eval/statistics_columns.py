"""The per-query statistics the metrics are computed from (``metric_statistics`` builds them;
every metric of ``metric_registry`` is a formula over them)."""

from __future__ import annotations

from typing import Final

__all__ = ["STATISTICS"]

#: The per-query statistics every metric is computed from, with their meaning.
STATISTICS: Final[dict[str, str]] = {
    "k": "the cutoff: slots ranked beyond it are ignored",
    "relevant_total": "memories graded >= relevant_grade (retrieved or not)",
    "graded_total": "memories graded >= 1 (retrieved or not)",
    "relevant_at_1": "relevant memories in the top 1",
    "relevant_at_k": "distinct relevant memories in the top k",
    "first_relevant_rank": "rank of the first relevant memory in the top k, null if none",
    "precision_sum": "sum over the top k's relevant slots of "
    "|relevant in the top rank| / rank (precision at each relevant slot)",
    "dcg": "sum over the top k of grade / log2(rank + 1), a repeated memory counted once",
    "ideal_dcg": "the same sum over every graded memory sorted by grade descending, cut at k",
    "relevant_groups": "groups holding a relevant memory (retrieved or not)",
    "relevant_groups_at_k": "relevant groups with a relevant memory in the top k",
    "alpha_dcg": "sum over the top k's relevant slots of (1 - ALPHA)^c / log2(rank + 1), "
    "c = earlier relevant slots of the slot's group",
    "ideal_alpha_dcg": "the same sum over the greedy ideal ranking of the relevant memories "
    "(each rank takes the largest gain left), cut at k",
    "filled_slots": "top-k slots holding a memory",
    "duplicate_slots": "top-k slots whose near-duplicate group filled an earlier slot",
    "leaked_slots": "top-k slots whose memory's identifier differs from the query's",
}
