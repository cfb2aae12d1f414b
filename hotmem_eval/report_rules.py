"""The decision rules in the report: each rule, when it applies, and whether it applies now.

The figures are read back from the result document (``evidence``), and each rule's own
``applies`` decides, so the table shows what ``decision.recommend`` saw.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hotmem_eval.decision import (
    DUPLICATE_SLOT_LIMIT,
    LEXICAL,
    RECALL_GAP,
    RULES,
    SEMANTIC,
    Evidence,
)
from hotmem_eval.fixture_schema import DUPLICATE_CATEGORY
from hotmem_eval.tables import Block, table

__all__ = ["CONDITIONS", "evidence", "rule_lines"]


def evidence(result: dict[str, Any]) -> Evidence:
    """The decision rules' inputs, read back from a result document."""
    blocks = result["metrics"]["by_category"]
    duplicate = blocks.get(DUPLICATE_CATEGORY, {}).get("duplicate_slot_rate_at_k") or {}
    return Evidence(
        top_k=result["configuration"]["top_k"],
        equivalent_queries=result["transfer"]["equivalent_queries"],
        total_queries=result["transfer"]["total_queries"],
        recall_at_k={c: (b.get("recall_at_k") or {}).get("value") for c, b in blocks.items()},
        duplicate_slots=int(duplicate.get("numerator") or 0),
        filled_slots=int(duplicate.get("denominator") or 0),
        categories=frozenset(blocks),
    )


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _gap(e: Evidence) -> str:
    semantic, lexical = e.recall_at_k.get(SEMANTIC), e.recall_at_k.get(LEXICAL)
    return "n/a" if semantic is None or lexical is None else f"{lexical - semantic:.3f}"


#: rule code -> when the rule applies, with the figure it reads now (every rule has one).
CONDITIONS: dict[str, Callable[[Evidence], str]] = {
    "fix_transfer_compatibility": lambda e: (
        f"snapshot/hydrate equivalence below 100% (now {e.equivalent_queries}/{e.total_queries})"
    ),
    "evaluate_semantic_profile": lambda e: (
        f"{SEMANTIC} recall@{e.top_k} at least {RECALL_GAP:.2f} below {LEXICAL} "
        f"(now {_gap(e)} below)"
    ),
    "deterministic_reranking": lambda e: (
        f"{DUPLICATE_CATEGORY} duplicate-slot rate above {DUPLICATE_SLOT_LIMIT:.2f} "
        f"(now {_figure(e.duplicate_slot_rate)})"
    ),
    "retain_and_expand_fixtures": lambda e: "always: the fallback when rules 1 to 3 do not apply",
}


def rule_lines(result: dict[str, Any]) -> list[Block]:
    """The decision rules of a profile's view (``result_document.profile_view``): when each
    applies, and whether it applies now."""
    found, chosen = evidence(result), result["recommendation"]["rule"]
    skipped = {
        item["rule"]: item["reason"] for item in result["recommendation"].get("not_applicable", [])
    }
    rows = []
    for rule in RULES:
        applies = "yes" if rule.applies(found) else "no"
        if rule.number in skipped:
            applies = skipped[rule.number]
        elif rule.number == chosen:
            applies = "**yes: the recommendation**"
        elif applies == "yes" and rule.number > chosen:
            applies = f"yes (rule {chosen} comes first)"
        rows.append((f"{rule.number} `{rule.code}`", CONDITIONS[rule.code](found), applies))
    return [table(["rule", "applies when", "applies now"], rows)]
