"""The report's metric sections for one profile's view (``result_document.profile_view``):
the metrics tables by category, the table of every cutoff, and the observations per category.

Which metrics a table shows, their headers and their order come from the metric registry
(``Metric.report_table``, ``label``, registry order).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hotmem_eval.fixture_schema import category_order
from hotmem_eval.metric_registry import METRICS, REPORT_TABLES
from hotmem_eval.tables import Block, table

__all__ = [
    "COLUMNS",
    "TABLES",
    "by_category",
    "cell",
    "cutoff_blocks",
    "metrics_blocks",
    "observation_lines",
]

#: Report columns, from the registry: metric -> header (its label). ``k`` is substituted.
COLUMNS = {name: metric.label for name, metric in METRICS.items() if metric.in_report}
#: The metrics tables: title -> its metrics, in registry order (``Metric.report_table``).
TABLES: dict[str, tuple[str, ...]] = {
    title: tuple(name for name, m in METRICS.items() if m.report_table == title)
    for title in REPORT_TABLES
}
#: The overall metrics the table of every cutoff shows: the relevance and precision metrics
#: that depend on the cutoff, in registry order.
CUTOFF_METRICS = tuple(
    name
    for name, metric in METRICS.items()
    if metric.report_table in ("Relevance", "Precision") and "{k}" in metric.label
)


def by_category(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Category blocks in report order (JSON objects do not keep it: keys are sorted)."""
    blocks = result["metrics"]["by_category"]
    return [(category, blocks[category]) for category in category_order(blocks)]


def cell(block: dict[str, Any] | None) -> str:
    """A metric's cell: its value, and its pooled counts where it has them."""
    if not block or block["value"] is None:
        return "–"
    text = f"{block['value']:.3f}"
    if block["numerator"] is not None:
        text += f" ({block['numerator']}/{block['denominator']})"
    return text


def metrics_blocks(result: dict[str, Any]) -> list[Block]:
    """One table per ``TABLES`` entry: overall, then each category."""
    k = result["configuration"]["top_k"]
    metrics = result["metrics"]
    counts = result["fixture"]["category_counts"]
    rows = [("**overall**", metrics["overall"]), *by_category(result)]
    out: list[Block] = []
    for number, (title, columns) in enumerate(TABLES.items()):
        first = number == 0
        names = ["scope", *(["queries"] if first else []), *columns]
        out += [f"**{title}**", ""] if not out else ["", f"**{title}**", ""]
        cells = []
        for name, block in rows:
            queries = (
                result["fixture"]["query_count"] if name == "**overall**" else counts.get(name, 0)
            )
            cells.append(
                [name, *([queries] if first else []), *(cell(block.get(m)) for m in columns)]
            )
        headers = [*names[: len(names) - len(columns)], *(COLUMNS[c].format(k=k) for c in columns)]
        out.append(table(names, cells, right=names[1:], headers=headers))
    return out


def cutoff_blocks(result: dict[str, Any]) -> list[Block]:
    """With several cutoffs: the overall metrics at each k."""
    by_k = result.get("metrics_by_k", {})
    if len(by_k) < 2:
        return []
    rows = [
        [k, *(cell(by_k[k]["overall"].get(name)) for name in CUTOFF_METRICS)]
        for k in sorted(by_k, key=int)
    ]
    headers = ["k", *(METRICS[name].label.replace("@{k}", "") for name in CUTOFF_METRICS)]
    names = ["k", *CUTOFF_METRICS]
    return [
        "",
        "**Every cutoff** (overall)",
        "",
        table(names, rows, right=names, headers=headers),
    ]


def observation_lines(result: dict[str, Any]) -> list[str]:
    """One line per category: its recall and MRR, false positives, duplicates, leaks, misses."""
    k = result["configuration"]["top_k"]
    reasons: dict[str, Counter[str]] = {}
    for query in result["queries"]:
        for miss in query["missed"]:
            reasons.setdefault(query["category"], Counter())[miss["reason"]] += 1
    lines = []
    for category, block in by_category(result):
        parts = []
        recall = block.get("recall_at_k", {})
        if recall.get("value") is not None:
            parts.append(f"recall@{k} {cell(recall)}, MRR@{k} {block['mrr_at_k']['value']:.3f}")
        fpr = block.get("negative_fpr_at_k", {})
        if fpr.get("value") is not None:
            returned = block["negative_returned_at_k"]["value"]
            parts.append(
                f"{fpr['numerator']} of {fpr['denominator']} unanswerable queries returned "
                f"something ({returned:.1f} memories on average)"
            )
        duplicate = block.get("duplicate_slot_rate_at_k", {})
        if duplicate.get("value") is not None:
            # Where duplicates are counted, say too how many answers (groups) they left out.
            groups = block.get("group_recall_at_k", {})
            diversity = ""
            if groups.get("value") is not None:
                diversity = (
                    f", group recall@{k} {cell(groups)}, "
                    f"α-nDCG@{k} {block['alpha_ndcg_at_k']['value']:.3f}"
                )
            parts.append(f"duplicate-slot rate {cell(duplicate)}{diversity}")
        leak = block.get("scope_leak_rate_at_k", {})
        if leak.get("value") is not None:
            parts.append(f"scope leak {cell(leak)}")
        missed = reasons.get(category)
        if missed:
            spread = ", ".join(f"{n} {reason}" for reason, n in sorted(missed.items()))
            parts.append(f"misses: {spread}")
        lines.append(f"- **{category}**: " + "; ".join(parts) + ".")
    return lines
