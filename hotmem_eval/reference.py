"""A plain-Python reference of the metrics, written to be read, used only by the tests.

Dicts and loops, one query at a time, straight from the definitions in ``docs/metrics.md``.
The tests hold ``hotmem_eval.metrics`` (polars) and ``sql/00*.sql`` (DuckDB) to it.

Inputs are rows (mappings with the canonical column names), assumed valid. Outputs are lists of
dicts with the columns and order of ``metrics.per_query_metrics`` and ``aggregate_metrics``.
A memory is relevant when graded ``relevant_grade`` or more (2 unless the call says otherwise),
graded when graded 1 or more; a query's category may be None (it has none).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["REFERENCE_METRICS", "Definition", "aggregate_metrics", "per_query_metrics"]

Row = Mapping[str, Any]

#: The default relevant grade (``fixture_schema.RELEVANT_GRADE``, restated: this is the oracle).
RELEVANT = 2
ALPHA = 0.5
DUPLICATE_CATEGORY = "near_duplicate_diversity"
OVERALL = "overall"


@dataclass(frozen=True, slots=True)
class Query:
    """Everything the metrics need to know about one query."""

    category: str | None
    scope: str | None
    relevant_grade: int
    grades: dict[str, int]  # memory_id -> grade, for grades >= 1
    slots: list[tuple[int, str, str | None, str]]  # (rank, memory, identifier, group), by rank
    groups: dict[str, str]  # memory_id -> group_id, for the memories in a group

    def group(self, memory: str) -> str:
        """The memory's near-duplicate group: itself when it is in none."""
        return self.groups.get(memory, memory)


@dataclass(frozen=True, slots=True)
class Value:
    """One metric's per-query result; ``applicable`` False means the metric does not apply."""

    applicable: bool
    value: float | None = None
    numerator: int | None = None
    denominator: int | None = None


def _relevant(query: Query) -> set[str]:
    return {memory for memory, grade in query.grades.items() if grade >= query.relevant_grade}


def _found(query: Query, depth: int) -> int:
    relevant = _relevant(query)
    return sum(1 for rank, memory, _, _ in query.slots if rank <= depth and memory in relevant)


def _recall(depth: int | None) -> Callable[[Query, int], Value]:
    def recall(query: Query, k: int) -> Value:
        total = len(_relevant(query))
        if total == 0:
            return Value(applicable=False)
        found = _found(query, depth or k)
        return Value(True, found / total, found, total)

    return recall


def _success(depth: int | None) -> Callable[[Query, int], Value]:
    def success(query: Query, k: int) -> Value:
        if not _relevant(query):
            return Value(applicable=False)
        hit = 1 if _found(query, depth or k) > 0 else 0
        return Value(True, float(hit), hit, 1)

    return success


def _precision(query: Query, k: int) -> Value:
    if not _relevant(query):
        return Value(applicable=False)
    found = _found(query, k)
    return Value(True, found / k, found, k)


def _average_precision(query: Query, k: int) -> Value:
    relevant = _relevant(query)
    if not relevant:
        return Value(applicable=False)
    found = 0
    precisions = 0.0
    for rank, memory, _, _ in query.slots:
        if memory in relevant:
            found += 1
            precisions += found / rank
    return Value(True, precisions / len(relevant))


def _mrr(query: Query, k: int) -> Value:
    relevant = _relevant(query)
    if not relevant:
        return Value(applicable=False)
    for rank, memory, _, _ in query.slots:
        if memory in relevant:
            return Value(True, 1.0 / rank)
    return Value(True, 0.0)


def _ndcg(query: Query, k: int) -> Value:
    if not _relevant(query):
        return Value(applicable=False)
    dcg = 0.0
    for rank, memory, _, _ in query.slots:
        dcg += query.grades.get(memory, 0) / math.log2(rank + 1)
    ideal_grades = sorted(query.grades.values(), reverse=True)[:k]
    ideal = 0.0
    for position, grade in enumerate(ideal_grades, start=1):
        ideal += grade / math.log2(position + 1)
    return Value(True, dcg / ideal if ideal > 0 else 0.0)


def _group_recall(query: Query, k: int) -> Value:
    relevant = _relevant(query)
    if not relevant:
        return Value(applicable=False)
    groups = {query.group(memory) for memory in relevant}
    found = {group for _, memory, _, group in query.slots if memory in relevant}
    return Value(True, len(found) / len(groups), len(found), len(groups))


def _alpha_gain(memory: str, query: Query, placed: Mapping[str, int]) -> float:
    """(1 - alpha)^c for a relevant memory, c = relevant memories of its group placed before."""
    if memory not in _relevant(query):
        return 0.0
    return (1 - ALPHA) ** placed.get(query.group(memory), 0)


def _alpha_ndcg(query: Query, k: int) -> Value:
    relevant = _relevant(query)
    if not relevant:
        return Value(applicable=False)
    placed: dict[str, int] = defaultdict(int)  # group -> its relevant memories ranked so far
    dcg = 0.0
    for rank, memory, _, group in query.slots:
        dcg += _alpha_gain(memory, query, placed) / math.log2(rank + 1)
        if memory in relevant:
            placed[group] += 1
    # The greedy ideal ranking: at each rank the relevant memory of the largest gain; max()
    # keeps the first of equal gains, so ties go to the smallest memory_id.
    placed.clear()
    left = sorted(relevant)
    ideal = 0.0
    for position in range(1, min(k, len(left)) + 1):
        best = max(left, key=lambda memory: _alpha_gain(memory, query, placed))
        ideal += _alpha_gain(best, query, placed) / math.log2(position + 1)
        placed[query.group(best)] += 1
        left.remove(best)
    return Value(True, dcg / ideal if ideal > 0 else 0.0)


def _negative_fpr(query: Query, k: int) -> Value:
    if query.grades:
        return Value(applicable=False)
    returned = 1 if query.slots else 0
    return Value(True, float(returned), returned, 1)


def _negative_returned(query: Query, k: int) -> Value:
    if query.grades:
        return Value(applicable=False)
    return Value(True, float(len(query.slots)), len(query.slots), 1)


def _rate(count: int, filled: int) -> Value:
    return Value(True, count / filled if filled else None, count, filled)


def _duplicate_slot_rate(query: Query, k: int) -> Value:
    if query.category != DUPLICATE_CATEGORY:
        return Value(applicable=False)
    seen: set[str] = set()
    duplicates = 0
    for _, _, _, group in query.slots:
        if group in seen:
            duplicates += 1
        seen.add(group)
    return _rate(duplicates, len(query.slots))


def _scope_leak_rate(query: Query, k: int) -> Value:
    if query.scope is None:
        return Value(applicable=False)
    leaks = sum(1 for _, _, identifier, _ in query.slots if identifier != query.scope)
    return _rate(leaks, len(query.slots))


@dataclass(frozen=True, slots=True)
class Definition:
    """A metric: its per-query function, and whether a category pools it.

    ``pooled``: a category's value is sum(numerator) / sum(denominator), each slot weighing the
    same (the slot rates); otherwise it is the mean of the per-query values.
    """

    compute: Callable[[Query, int], Value]
    pooled: bool = False


#: Name -> definition, in the same order as ``metric_registry.METRICS`` (a test checks it).
REFERENCE_METRICS: dict[str, Definition] = {
    "recall_at_1": Definition(_recall(1)),
    "recall_at_k": Definition(_recall(None)),
    "success_at_1": Definition(_success(1)),
    "success_at_k": Definition(_success(None)),
    "mrr_at_k": Definition(_mrr),
    "ndcg_at_k": Definition(_ndcg),
    "precision_at_k": Definition(_precision),
    "ap_at_k": Definition(_average_precision),
    "group_recall_at_k": Definition(_group_recall),
    "alpha_ndcg_at_k": Definition(_alpha_ndcg),
    "negative_fpr_at_k": Definition(_negative_fpr),
    "negative_returned_at_k": Definition(_negative_returned),
    "duplicate_slot_rate_at_k": Definition(_duplicate_slot_rate, pooled=True),
    "scope_leak_rate_at_k": Definition(_scope_leak_rate, pooled=True),
}


def _queries(
    results: Iterable[Row],
    qrels: Iterable[Row],
    queries: Iterable[Row],
    groups: Iterable[Row],
    k: int,
    relevant_grade: int,
) -> dict[str, Query]:
    groups_of: dict[str, dict[str, str]] = defaultdict(dict)
    for row in groups:
        groups_of[row["query_id"]][row["memory_id"]] = row["group_id"]
    grades: dict[str, dict[str, int]] = defaultdict(dict)
    for row in qrels:
        if row["grade"] >= 1:
            grades[row["query_id"]][row["memory_id"]] = row["grade"]
    slots: dict[str, list[tuple[int, str, str | None, str]]] = defaultdict(list)
    for row in results:
        if row["rank"] <= k:
            memory: str = row["memory_id"]
            group = groups_of[row["query_id"]].get(memory, memory)
            slots[row["query_id"]].append((row["rank"], memory, row["identifier"], group))
    return {
        row["query_id"]: Query(
            category=row["category"],
            scope=row["identifier"],
            relevant_grade=relevant_grade,
            grades=grades[row["query_id"]],
            slots=sorted(slots[row["query_id"]]),
            groups=groups_of[row["query_id"]],
        )
        for row in queries
    }


def per_query_metrics(
    results: Iterable[Row],
    qrels: Iterable[Row],
    queries: Iterable[Row],
    groups: Iterable[Row],
    *,
    k: int = 5,
    relevant_grade: int = RELEVANT,
) -> list[dict[str, Any]]:
    """One dict per (query, metric), sorted by metric order, then query_id; each with its k."""
    rows = []
    by_id = _queries(results, qrels, queries, groups, k, relevant_grade)
    for name, metric in REFERENCE_METRICS.items():
        for query_id in sorted(by_id):
            query = by_id[query_id]
            result = metric.compute(query, k)
            rows.append(
                {
                    "k": k,
                    "query_id": query_id,
                    "category": query.category,
                    "metric": name,
                    "value": result.value,
                    "numerator": result.numerator,
                    "denominator": result.denominator,
                    "applicable": result.applicable,
                }
            )
    return rows


def aggregate_metrics(per_query: Iterable[Row]) -> list[dict[str, Any]]:
    """One dict per (k, category, metric): by k, "overall" first, then categories sorted.

    "overall" counts every query of its k; a query with no category (None) counts there only.
    A metric's numerator and denominator are summed where its per-query rows carry them (a
    ratio of counts); they stay None for the others (reciprocal rank, nDCG). With no rows, the
    "overall" rows alone, with k None.
    """
    applicable: dict[tuple[int | None, str, str], list[Row]] = defaultdict(list)
    categories: dict[int, set[str]] = {}
    for row in per_query:
        k, category, metric = row["k"], row["category"], row["metric"]
        found = categories.setdefault(k, set())  # a k whose queries have no category has rows
        if category is not None:
            found.add(category)
        if row["applicable"]:
            if category is not None:
                applicable[(k, category, metric)].append(row)
            applicable[(k, OVERALL, metric)].append(row)
    out = []
    blocks: dict[int | None, list[str]] = {
        k: sorted(found) for k, found in sorted(categories.items())
    } or {None: []}
    for k, names in blocks.items():
        for category in [OVERALL, *names]:
            for metric, definition in REFERENCE_METRICS.items():
                rows = applicable[(k, category, metric)]
                out.append(
                    {"k": k, "category": category, "metric": metric, **_aggregate(definition, rows)}
                )
    return out


def _aggregate(definition: Definition, rows: list[Row]) -> dict[str, Any]:
    value = numerator = denominator = None
    if rows and all(row["numerator"] is not None for row in rows):
        numerator = sum(row["numerator"] for row in rows)
        denominator = sum(row["denominator"] for row in rows)
    if rows and definition.pooled:
        value = numerator / denominator if denominator else None
    elif rows:
        value = sum(row["value"] for row in rows) / len(rows)
    return {
        "value": value,
        "numerator": numerator,
        "denominator": denominator,
        "query_count": len(rows),
    }
