"""The human-readable Markdown report, rendered from a result document (see ``result.py``).

Rendering reads only the JSON result, so a report can be re-rendered from any saved run.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hotmem_eval.attribution import REASONS
from hotmem_eval.fixture_schema import CATEGORIES
from hotmem_eval.metric_registry import METRICS
from hotmem_eval.report_profiles import profile_lines
from hotmem_eval.report_queries import TEXT_WIDTH, negative_lines, worst_query_lines
from hotmem_eval.report_rules import rule_lines

__all__ = ["NOT_PROVEN", "TABLES", "render_markdown"]

#: Report columns, from the registry: metric -> header (its label). ``k`` is substituted.
COLUMNS = {name: metric.label for name, metric in METRICS.items() if metric.in_report}
#: The metrics tables, each narrow enough for a page: what it shows -> its metrics, which are
#: the report columns in registry order (a test holds them to ``COLUMNS``).
TABLES: dict[str, tuple[str, ...]] = {
    "Relevance": ("recall_at_1", "recall_at_k", "success_at_k", "mrr_at_k", "ndcg_at_k"),
    "Precision": ("precision_at_k", "ap_at_k"),
    "Diversity, false positives and scope": (
        "group_recall_at_k",
        "alpha_ndcg_at_k",
        "negative_fpr_at_k",
        "duplicate_slot_rate_at_k",
        "scope_leak_rate_at_k",
    ),
}

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


def _by_category(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Category blocks in report order (JSON objects do not keep it: keys are sorted)."""
    blocks = result["metrics"]["by_category"]
    order = [c for c in CATEGORIES if c in blocks] + sorted(set(blocks) - set(CATEGORIES))
    return [(category, blocks[category]) for category in order]


def _cell(block: dict[str, Any] | None) -> str:
    if not block or block["value"] is None:
        return "–"
    text = f"{block['value']:.3f}"
    if block["numerator"] is not None:
        text += f" ({block['numerator']}/{block['denominator']})"
    return text


def _metrics_tables(result: dict[str, Any]) -> list[str]:
    k = result["configuration"]["top_k"]
    metrics = result["metrics"]
    counts = result["fixture"]["category_counts"]
    rows = [("**overall**", metrics["overall"]), *_by_category(result)]
    lines: list[str] = []
    for number, (title, columns) in enumerate(TABLES.items()):
        first = number == 0
        headers = ["scope", *(["queries"] if first else []), *(COLUMNS[c] for c in columns)]
        lines += [f"**{title}**", ""] if lines == [] else ["", f"**{title}**", ""]
        lines.append("| " + " | ".join(h.format(k=k) for h in headers) + " |")
        lines.append("|---|" + ("---:|" if first else "") + "---:|" * len(columns))
        for name, block in rows:
            queries = (
                result["fixture"]["query_count"] if name == "**overall**" else counts.get(name, 0)
            )
            cells = [*([str(queries)] if first else []), *(_cell(block.get(m)) for m in columns)]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _cutoffs_line(config: dict[str, Any]) -> list[str]:
    cutoffs = config.get("cutoffs", [config["top_k"]])
    if len(cutoffs) < 2:
        return []
    return [
        f"| cutoffs (k) | {', '.join(map(str, cutoffs))}; the tables above are at k = "
        f"{config['top_k']} |"
    ]


#: The overall metrics the table of every cutoff shows, in registry order.
CUTOFF_METRICS = tuple(
    name
    for name in ("ndcg_at_k", "recall_at_k", "mrr_at_k", "precision_at_k", "ap_at_k")
    if name in METRICS
)


def _cutoff_tables(result: dict[str, Any]) -> list[str]:
    """With several cutoffs: the overall metrics at each k."""
    by_k = result.get("metrics_by_k", {})
    if len(by_k) < 2:
        return []
    headers = [METRICS[name].label.replace("@{k}", "") for name in CUTOFF_METRICS]
    lines = [
        "",
        "**Every cutoff** (overall)",
        "",
        "| k | " + " | ".join(headers) + " |",
        "|---:|" + "---:|" * len(headers),
    ]
    for k in sorted(by_k, key=int):
        overall = by_k[k]["overall"]
        cells = [_cell(overall.get(name)) for name in CUTOFF_METRICS]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return lines


def _observations(result: dict[str, Any]) -> list[str]:
    k = result["configuration"]["top_k"]
    reasons: dict[str, Counter[str]] = {}
    for query in result["queries"]:
        for miss in query["missed"]:
            reasons.setdefault(query["category"], Counter())[miss["reason"]] += 1
    lines = []
    for category, block in _by_category(result):
        parts = []
        recall = block.get("recall_at_k", {})
        if recall.get("value") is not None:
            parts.append(f"recall@{k} {_cell(recall)}, MRR@{k} {block['mrr_at_k']['value']:.3f}")
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
                    f", group recall@{k} {_cell(groups)}, "
                    f"α-nDCG@{k} {block['alpha_ndcg_at_k']['value']:.3f}"
                )
            parts.append(f"duplicate-slot rate {_cell(duplicate)}{diversity}")
        leak = block.get("scope_leak_rate_at_k", {})
        if leak.get("value") is not None:
            parts.append(f"scope leak {_cell(leak)}")
        missed = reasons.get(category)
        if missed:
            spread = ", ".join(f"{n} {reason}" for reason, n in sorted(missed.items()))
            parts.append(f"misses: {spread}")
        lines.append(f"- **{category}**: " + "; ".join(parts) + ".")
    return lines


def _transfer(result: dict[str, Any]) -> list[str]:
    t = result["transfer"]
    verify = "ok" if t["verify"]["ok"] else "; ".join(t["verify"]["problems"])
    lines = [
        "| check | result |",
        "|---|---|",
        f"| logical top-k equivalence | {t['equivalent_queries']}/{t['total_queries']} queries |",
        f"| rows source / hydrated | {t['source_rows']} / {t['hydrated_rows']} |",
        f"| FTS integrity check source / hydrated | {t['fts_integrity']['source']} / "
        f"{t['fts_integrity']['hydrated']} |",
        f"| package verification | {verify} |",
    ]
    if t["drift"]:
        lines += ["", "| query | drift | source ids | hydrated ids | max score difference |"]
        lines.append("|---|---|---|---|---:|")
        for d in t["drift"]:
            lines.append(
                f"| {d['query_id']} | {d['kind']} | {', '.join(d['source_ids'])} | "
                f"{', '.join(d['hydrated_ids'])} | {d['max_score_difference']:.3g} |"
            )
    else:
        lines += [
            "",
            "No order or score drift: every query returned the same ids, in the same "
            "order, with bit-identical scores.",
        ]
    return lines


def _number(value: float | None, pattern: str) -> str:
    return "–" if value is None else format(value, pattern)


def _timings(result: dict[str, Any]) -> list[str]:
    t = result["timings"]
    latency = t["query_latency_ms"]
    return [
        f"*{t['note']}*",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| query latency p50 (ms) | {_number(latency['p50'], '.3f')} |",
        f"| query latency p95 (ms) | {_number(latency['p95'], '.3f')} |",
        f"| latency samples | {latency['samples']} |",
        f"| ingest (records/s) | {_number(t['ingest_records_per_s'], ',.0f')} |",
        f"| snapshot (records/s) | {_number(t['snapshot_records_per_s'], ',.0f')} |",
        f"| snapshot (MB/s) | {_number(t['snapshot_mb_per_s'], ',.2f')} |",
        f"| verify (records/s) | {_number(t['verify_records_per_s'], ',.0f')} |",
        f"| hydrate (records/s) | {_number(t['hydrate_records_per_s'], ',.0f')} |",
        f"| package size (bytes) | {t['package_bytes']:,} |",
        f"| cold start to first query (ms) | {_number(t['cold_start_to_first_query_ms'], '.1f')} |",
        "",
        f"Quantiles: {latency['quantile_method']}.",
    ]


def _floor(value: float | None) -> str:
    return "– (no vector channel)" if value is None else str(value)


def render_markdown(result: dict[str, Any]) -> str:
    """Render the Markdown report of a result document."""
    config, fixture, k = (
        result["configuration"],
        result["fixture"],
        result["configuration"]["top_k"],
    )
    weights = config["weights"]
    recommendation = result["recommendation"]
    adoption = result.get("adoption")
    out = [
        "# HotMem retrieval evaluation",
        "",
        *([f"**{adoption['text']}**", ""] if adoption else []),
        "## Configuration",
        "",
        "| setting | value |",
        "|---|---|",
        f"| HotMem | {result['hotmem']['version']} "
        f"(commit {result['hotmem']['git_commit'] or 'unknown'}) |",
        f"| profile | {config['profile']['name']} ({config['profile']['fusion']} fusion) |",
        f"| embedding | {config['embedding']['model']}, "
        f"dimension {config['embedding']['dimension']} |",
        f"| fusion weights | cosine {weights['cosine']}, BM25 {weights['bm25']}, "
        f"importance {weights['importance']} |",
        f"| relevance floor (min_similarity) | {_floor(config['min_similarity'])} |",
        f"| FTS tokenizer | {config['fts_tokenizer']} |",
        f"| top-k / repeat | {k} / {config['repeat']} |",
        *_cutoffs_line(config),
        f"| fixture | {fixture['memory_count']} memories, {fixture['query_count']} queries "
        f"({fixture['negative_query_count']} negative) |",
        "",
        "## Recommendation",
        "",
        f"**Rule {recommendation['rule']} ({recommendation['code']})**: {recommendation['text']}",
        "",
        "Rules 1 to 4 are tried in order; the first that applies is the recommendation:",
        "",
        *rule_lines(result),
        "",
        "Rules 5 and 6 are standing guards, in force with every recommendation:",
        "",
        *(f"- {guard}" for guard in recommendation["guards"]),
        "",
        "These are prioritisation rules for the next retrieval change, not release thresholds.",
        "",
        *profile_lines(result),
        "## Metrics",
        "",
        f"Relevant means grade >= {config['relevant_grade']}. Values are means over the "
        "applicable queries; (n/d) are the pooled integer counts. – means no applicable query.",
        "",
        *_metrics_tables(result),
        *_cutoff_tables(result),
        "",
        f"## Five worst queries (by nDCG@{k})",
        "",
        "Each query's graded memories (expected, grade in brackets), then what it returned, "
        "rank by rank. Facts are cut at "
        f"{TEXT_WIDTH} characters.",
        "",
        *worst_query_lines(result),
        "",
        "## Negative queries that returned something",
        "",
        *negative_lines(result),
    ]
    misses = [(q, m) for q in result["queries"] for m in q["missed"]]
    counts = Counter(m["reason"] for _, m in misses)
    out += ["", "## Why relevant memories were missed", ""]
    out += [
        f"- `{reason}` ({counts.get(reason, 0)}): {meaning}" for reason, meaning in REASONS.items()
    ]
    if misses:
        out += ["", "| query | missed (grade) | reason | detail |", "|---|---|---|---|"]
        out += [
            f"| {q['query_id']} | {m['memory_id']} ({m['grade']}) | {m['reason']} | {m['detail']} |"
            for q, m in misses
        ]
    out += [
        "",
        f"Failed queries ({len(result['failed_query_ids'])}): "
        + (", ".join(result["failed_query_ids"]) or "none"),
        "",
        "## Category observations",
        "",
        *_observations(result),
        "",
        "## Transfer: snapshot → verify → hydrate",
        "",
        *_transfer(result),
        "",
        "## Timings",
        "",
        *_timings(result),
        "",
        "## What this benchmark does not prove",
        "",
        *(f"- {line}" for line in NOT_PROVEN),
        "",
    ]
    return "\n".join(out)
