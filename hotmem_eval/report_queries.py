"""The per-query sections of the report: the worst queries, with their text and the facts
expected and returned, and the negative queries that returned something."""

from __future__ import annotations

from typing import Any

from hotmem_eval.fixture_schema import NEGATIVE_CATEGORY
from hotmem_eval.tables import Block, table

__all__ = ["TEXT_WIDTH", "negative_lines", "text_cell", "worst", "worst_query_lines"]

#: Facts and query texts are cut to this many characters in tables.
TEXT_WIDTH = 72


def text_cell(value: str, width: int = TEXT_WIDTH) -> str:
    """Free text for a table cell: one line, cut at ``width`` with an ellipsis (the table
    renderer escapes what its format needs)."""
    text = " ".join(value.split())
    if len(text) > width:
        text = text[: width - 1].rstrip() + "…"
    return text


def _sort_key(query: dict[str, Any]) -> tuple[float, float, float, str]:
    m = query["metrics"]
    return (m["ndcg_at_k"], m["recall_at_k"], m["mrr_at_k"], query["query_id"])


def worst(result: dict[str, Any], count: int = 5) -> tuple[list[dict[str, Any]], list[str]]:
    """The ``count`` worst positive queries by nDCG, and the ids of those left out that tie
    with the last one shown (same nDCG), so that the cut is never silent."""
    positives = [q for q in result["queries"] if "recall_at_k" in q["metrics"]]
    imperfect = sorted((q for q in positives if q["metrics"]["ndcg_at_k"] < 1.0), key=_sort_key)
    shown, rest = imperfect[:count], imperfect[count:]
    if not shown:
        return shown, []
    last = shown[-1]["metrics"]["ndcg_at_k"]
    return shown, [q["query_id"] for q in rest if q["metrics"]["ndcg_at_k"] == last]


def worst_query_lines(result: dict[str, Any]) -> list[Block]:
    k = result["configuration"]["top_k"]
    facts: dict[str, str] = result.get("facts", {})
    shown, ties = worst(result)
    lines: list[Block] = []
    for q in shown:
        scope = f" (scope `{q['identifier']}`)" if q["identifier"] else ""
        lines += [
            f"**{q['query_id']}** ({q['category']}), nDCG@{k} {q['metrics']['ndcg_at_k']:.3f}: "
            f"{text_cell(q['query'], 200)}{scope}",
            "",
        ]
        expected = [(m, g) for m, g in q["relevance"].items() if g >= 1]
        expected.sort(key=lambda pair: (-pair[1], pair[0]))
        rows = [("expected", m, g) for m, g in expected]
        rows += [(str(r["rank"]), r["memory_id"], r["grade"]) for r in q["results"]]
        cells: list[tuple[str | None, str, str | None]] = [
            (
                slot,
                f"{memory_id} ({grade})",
                text_cell(facts[memory_id]) if memory_id in facts else None,
            )
            for slot, memory_id, grade in rows
        ]
        if not q["results"]:
            cells.append((None, "nothing returned", ""))
        lines += [table(["slot", "memory (grade)", "fact"], cells), ""]
    if ties:
        lines.append(
            f"{len(ties)} more {'query ties' if len(ties) == 1 else 'queries tie'} with the last "
            f"at nDCG@{k} {shown[-1]['metrics']['ndcg_at_k']:.3f}, not shown: {', '.join(ties)}."
        )
    elif not shown:
        lines.append(f"Every positive query has nDCG@{k} 1.000.")
    return lines


def negative_lines(result: dict[str, Any]) -> list[Block]:
    facts: dict[str, str] = result.get("facts", {})
    negatives = [q for q in result["queries"] if q["category"] == NEGATIVE_CATEGORY]
    answered = [q for q in negatives if q["results"]]
    if not negatives:
        return ["The fixture has no negative queries."]
    lines: list[Block] = [
        f"{len(answered)} of {len(negatives)} negative queries returned something (their "
        "corpus holds no answer, so every result is a false positive).",
    ]
    if answered:
        rows = []
        for q in answered:
            first = q["results"][0]
            fact = text_cell(facts.get(first["memory_id"], "–"), 48)
            rows.append(
                (
                    q["query_id"],
                    text_cell(q["query"], 40),
                    len(q["results"]),
                    f"{first['memory_id']} ({first['score']:.3f}): {fact}",
                )
            )
        columns = ["query", "text", "returned", "first result (score): fact"]
        lines += ["", table(columns, rows, right=["returned"])]
    return lines
