"""The human-readable report, rendered from a result document (``result_document``).

Rendering reads only the result document, so a report can be re-rendered from any saved run.
It reads top-down: the decision and its evidence first (``report_decision``), the categories
next, then an appendix of folded sections (``<details>``): configuration, the paired tables,
ablation and rules of the profiles compared, every metric of the baseline, the worst queries,
the misses, transfer, timings, and what the benchmark does not prove. The report is a list of
blocks (``tables.Block``), rendered as Markdown here and as HTML by ``report_html``.
"""

from __future__ import annotations

from typing import Any

from hotmem_eval.report_appendix import (
    configuration_blocks,
    miss_blocks,
    timing_blocks,
    transfer_blocks,
)
from hotmem_eval.report_decision import category_blocks, decision_blocks, decision_line
from hotmem_eval.report_metrics import cutoff_blocks, metrics_blocks, observation_lines
from hotmem_eval.report_profiles import profile_lines, profiles_table
from hotmem_eval.report_queries import TEXT_WIDTH, negative_lines, worst_query_lines
from hotmem_eval.report_rules import rule_lines
from hotmem_eval.result_document import profile_view
from hotmem_eval.tables import Block, markdown

__all__ = ["DETAILS", "NOT_PROVEN", "TITLE", "folded", "render_markdown", "report_blocks"]

TITLE = "HotMem retrieval evaluation"
#: The line that opens a folded section.
DETAILS = '<details markdown="1">'

NOT_PROVEN = (
    "That HotMem retrieves well on *your* data: the fixture is small and synthetic, written "
    "by the people who built the store, so its absolute numbers say little about another corpus.",
    "Semantic understanding: `hotmem-hash-v1` vectors are character-trigram fingerprints, not "
    "learned embeddings; a paraphrase that shares no words is expected to be missed.",
    "Statistical significance: with about ten queries per category, one query moves a category "
    "figure by about 0.1. Read categories as diagnostics, and compare runs, not absolute values.",
    "Speed on another machine: timings are local diagnostics for one small fixture, dominated by "
    "fixed costs; the benchmarks under `benchmarks/` measure throughput at scale.",
    "That a reranker, entity extraction or another embedding would help: the recommendation "
    "orders the next investment from this evidence; the change itself must be measured again.",
)


def folded(summary: str, blocks: list[Block]) -> list[Block]:
    """``blocks`` in a ``<details>`` section that shows ``summary`` until opened (its
    ``markdown="1"`` asks Python-Markdown's ``md_in_html`` to render what it holds; GitHub
    does so anyway)."""
    return [
        DETAILS,
        f"<summary>{summary}</summary>",
        "",
        *blocks,
        "",
        "</details>",
        "",
    ]


def _rules(view: dict[str, Any]) -> list[Block]:
    return [
        "Rules 1 to 4 are tried in order; the first that applies is the recommendation:",
        "",
        *rule_lines(view),
        "",
        "Rules 5 and 6 are standing guards, in force with every recommendation:",
        "",
        *(f"- {guard}" for guard in view["recommendation"]["guards"]),
        "",
        "These are prioritisation rules for the next retrieval change, not release thresholds.",
    ]


def _appendix(result: dict[str, Any], view: dict[str, Any]) -> list[Block]:
    k, name = view["configuration"]["top_k"], view["name"]
    several = len(result["profiles"]) > 1
    out: list[Block] = ["## Appendix", ""]
    out += folded("Configuration", [*configuration_blocks(view), "", *profiles_table(result)])
    if several:
        out += folded(
            "Profiles compared: paired tables, ablation, diversity, rules", profile_lines(result)
        )
    out += folded(f"Decision rules on {name}", _rules(view))
    metrics = [
        f"Relevant means grade >= {view['configuration']['relevant_grade']}. Values are means "
        "over the applicable queries; (n/d) are the pooled integer counts. – means no "
        "applicable query.",
        "",
        *metrics_blocks(view),
        *cutoff_blocks(view),
        "",
        "Observations:",
        "",
        *observation_lines(view),
    ]
    out += folded(f"Every metric of {name}, by category", metrics)
    worst = [
        "Each query's graded memories (expected, grade in brackets), then what it returned, "
        f"rank by rank. Facts are cut at {TEXT_WIDTH} characters.",
        "",
        *worst_query_lines(view),
    ]
    out += folded(f"Five worst queries of {name} (by nDCG@{k})", worst)
    out += folded("Negative queries that returned something", negative_lines(view))
    out += folded(f"Why relevant memories were missed ({name})", miss_blocks(view))
    out += folded("Transfer: snapshot → verify → hydrate", transfer_blocks(view))
    out += folded("Timings", timing_blocks(view))
    out += folded("What this benchmark does not prove", [f"- {line}" for line in NOT_PROVEN])
    return out


def report_blocks(result: dict[str, Any]) -> list[Block]:
    """The report of a result document, top-down, as blocks."""
    view = profile_view(result)
    return [
        f"# {TITLE}",
        "",
        decision_line(result),
        "",
        *decision_blocks(result),
        *category_blocks(result, view),
        *_appendix(result, view),
    ]


def render_markdown(result: dict[str, Any]) -> str:
    """The Markdown report of a result document."""
    return "\n".join(markdown(report_blocks(result))).rstrip("\n") + "\n"
