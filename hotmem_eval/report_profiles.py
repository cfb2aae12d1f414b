"""The report's section for a run over several profiles, rendered from the result document.

What each profile is, the paired comparison of every candidate with the baseline, the ablation
of the baseline, the decision rules evaluated per profile, and, where the baseline's
recommendation points at a figure, what each candidate does to it and whether the change is
significant (``comparison_report.ALPHA``, Holm-adjusted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from hotmem_eval.adoption import OBJECTIVE
from hotmem_eval.comparison import COMPARISON_COLUMNS
from hotmem_eval.comparison_report import ALPHA, ablation_blocks, comparison_blocks
from hotmem_eval.decision import LEXICAL, RULES, SEMANTIC, Evidence
from hotmem_eval.fixture_schema import DUPLICATE_CATEGORY
from hotmem_eval.metric_registry import METRICS
from hotmem_eval.report_diversity import diversity_lines
from hotmem_eval.report_rules import evidence
from hotmem_eval.tables import Block, table

__all__ = ["HEADLINE", "RULE_TARGETS", "profile_lines", "profiles_table", "verdict_lines"]

#: rule code -> (the figure it reads, from Evidence; the (scope, metric) compared for it).
RULE_TARGETS: dict[str, tuple[str, Callable[[Evidence], float | None], tuple[str, str] | None]] = {
    "fix_transfer_compatibility": (
        "snapshot/hydrate equivalence",
        lambda e: e.equivalent_queries / e.total_queries if e.total_queries else None,
        None,
    ),
    "evaluate_semantic_profile": (
        f"the {LEXICAL} - {SEMANTIC} recall@k gap",
        lambda e: (
            None
            if e.recall_at_k.get(SEMANTIC) is None or e.recall_at_k.get(LEXICAL) is None
            else e.recall_at_k[LEXICAL] - e.recall_at_k[SEMANTIC]  # type: ignore[operator]
        ),
        (SEMANTIC, "recall_at_k"),
    ),
    "deterministic_reranking": (
        f"the {DUPLICATE_CATEGORY} duplicate-slot rate",
        lambda e: e.duplicate_slot_rate,
        (DUPLICATE_CATEGORY, "duplicate_slot_rate_at_k"),
    ),
}


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _view(result: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """A result-shaped view of one profile's entry, as ``report_rules.evidence`` reads it."""
    return {
        "configuration": result["configuration"],
        "metrics": entry["metrics"],
        "transfer": entry["transfer"],
    }


def _channels(configuration: dict[str, Any]) -> str:
    vector, lexical = configuration["vector"], configuration["lexical"]
    parts = []
    if vector is not None:
        parts.append(f"vector {vector['space']} ×{vector['weight']:g}, floor {vector['floor']:g}")
    if lexical is not None:
        gate = "" if lexical["gate"] is None else f", gate {lexical['gate']:g}"
        parts.append(f"BM25 ×{lexical['weight']:g}{gate}")
    if configuration["fusion"] == "weighted":
        parts.append(f"importance ×{configuration['importance']:g}")
    reranker = configuration["reranker"]
    if reranker is not None:
        fields = ", ".join(f"{key} {value}" for key, value in reranker.items() if key != "kind")
        parts.append(f"reranker {reranker.get('kind', '?')} ({fields})")
    fusion = configuration["fusion"]
    if fusion == "rrf":
        fusion += f" (k {configuration['rrf_k']}, depth {configuration['depth']})"
    return f"{fusion}: " + "; ".join(parts)


def _rules_table(result: dict[str, Any]) -> list[Block]:
    rows = []
    for entry in result["profiles"]:
        found = evidence(_view(result, entry))
        cells = []
        for rule in RULES[:-1]:
            _, figure, _ = RULE_TARGETS[rule.code]
            cells.append(f"{'yes' if rule.applies(found) else 'no'} ({_figure(figure(found))})")
        chosen = entry["recommendation"]
        rows.append((entry["name"], *cells, f"rule {chosen['rule']} `{chosen['code']}`"))
    columns = ["profile", *(f"rule {rule.number}" for rule in RULES[:-1]), "recommendation"]
    return [
        table(columns, rows),
        "",
        "In brackets, the figure each rule reads: "
        + "; ".join(f"rule {r.number}, {RULE_TARGETS[r.code][0]}" for r in RULES[:-1])
        + ".",
    ]


def _fixes(result: dict[str, Any], comparisons: pl.DataFrame) -> list[str]:
    """What each candidate does to the figure the baseline's recommendation points at."""
    baseline = result["profiles"][0]
    code = baseline["recommendation"]["code"]
    if code not in RULE_TARGETS:
        return [
            f"The baseline's recommendation (rule {baseline['recommendation']['rule']}) points "
            "at no figure to fix."
        ]
    label, figure, target = RULE_TARGETS[code]
    rule = next(r for r in RULES if r.code == code)
    before = figure(evidence(_view(result, baseline)))
    lines = []
    for entry in result["profiles"][1:]:
        found = evidence(_view(result, entry))
        after = figure(found)
        change = "n/a" if before is None or after is None else f"{after - before:+.3f}"
        verdict = "still applies" if rule.applies(found) else "no longer applies: fixed"
        text = (
            f"- **{entry['name']}**: rule {rule.number} {verdict}; {label} "
            f"{_figure(before)} → {_figure(after)} ({change})"
        )
        if target is None:
            text += "; a count, not a sampled quantity: no test."
        else:
            scope, metric = target
            row = comparisons.filter(
                (pl.col("candidate") == entry["name"])
                & (pl.col("scope") == scope)
                & (pl.col("metric") == metric)
            )
            if not row.height or row["p_adjusted"][0] is None:
                text += f"; no paired {metric} query in {scope}."
            else:
                p, delta, n = row["p_adjusted"][0], row["delta"][0], row["n"][0]
                significant = "significant" if p < ALPHA else "not significant"
                text += (
                    f"; {metric} in {scope} Δ {delta:+.3f} over {n} paired queries, "
                    f"{significant} at {ALPHA} (adjusted p {p:.3f})."
                )
        lines.append(text)
    return lines


#: The metric the verdict ranks the profiles by (overall): the adoption's objective.
HEADLINE = OBJECTIVE


def verdict_lines(result: dict[str, Any], comparisons: pl.DataFrame) -> list[str]:
    """Which profile wins on the headline metric overall, and how each candidate compares
    with the baseline by the paired test (Holm-adjusted p; ``overall`` is not adjusted)."""
    k = result["configuration"]["top_k"]
    label = METRICS[HEADLINE].label.format(k=k)
    entries = result["profiles"]
    values = {e["name"]: e["metrics"]["overall"][HEADLINE]["value"] for e in entries}
    baseline = entries[0]["name"]
    ranked = sorted((name for name in values if values[name] is not None), key=lambda n: -values[n])
    if not ranked:
        return [f"No profile has an {label} (no query with a relevant memory)."]
    best = ranked[0]
    lines = [
        f"**Highest {label} overall: {best}** ({_figure(values[best])}); "
        + ", ".join(f"{name} {_figure(values[name])}" for name in ranked[1:])
        + ("." if len(ranked) > 1 else ""),
        "",
    ]
    rows = comparisons.filter(pl.col("scope") == "overall", pl.col("metric") == HEADLINE)
    for row in rows.iter_rows(named=True):
        p = row["p_adjusted"]
        if row["n"] == 0 or p is None:
            lines.append(f"- {row['candidate']} against {baseline}: no query to pair.")
            continue
        significant = p < ALPHA
        if row["delta"] == 0:
            verdict = "no different from"  # equal means: no direction to call significant
        else:
            direction = "better than" if row["delta"] > 0 else "worse than"
            verdict = direction if significant else f"not significantly {direction}"
        lines.append(
            f"- {row['candidate']} is {verdict} {baseline} on {label}: Δ {row['delta']:+.3f} "
            f"(95% CI {row['ci_low']:+.3f} to {row['ci_high']:+.3f}), p = {p:.3g} over "
            f"{row['n']} queries ({row['wins']} won, {row['losses']} lost)."
        )
    return lines


def profiles_table(result: dict[str, Any]) -> list[Block]:
    """What each profile is (its channels, weights, floor and fusion) and its transfer."""
    rows = [
        (
            entry["name"],
            _channels(entry["configuration"]),
            f"{entry['transfer']['equivalent_queries']}/{entry['transfer']['total_queries']}",
        )
        for entry in result["profiles"]
    ]
    return [table(["profile", "configuration", "transfer"], rows)]


def profile_lines(result: dict[str, Any]) -> list[Block]:
    """The appendix on the profiles compared: the paired comparison of every candidate, the
    ablation, diversity and the decision rules per profile (empty for one profile)."""
    if len(result["profiles"]) < 2:
        return []
    k = result["configuration"]["top_k"]
    comparisons = pl.DataFrame(result["comparisons"], schema=COMPARISON_COLUMNS)
    out: list[Block] = ["### Paired comparison", "", *comparison_blocks(comparisons, k=k)]
    ablation = result.get("ablation")
    if ablation is not None:
        out += ["", f"### Ablation of {ablation['baseline']}", ""]
        if ablation["variants"]:
            frame = pl.DataFrame(ablation["comparisons"], schema=COMPARISON_COLUMNS)
            labels = {v["name"]: f"{v['removed']} ({v['name']})" for v in ablation["variants"]}
            out += ablation_blocks(frame, k=k, labels=labels)
        else:
            out.append("The baseline has no channel that can be removed alone.")
    out += ["", *diversity_lines(result, comparisons, k=k)]
    out += ["### Decision rules per profile", "", *_rules_table(result), ""]
    out += [
        f"What each candidate does to what the baseline's rule points at "
        f"(significance: Holm-adjusted p < {ALPHA}):",
        "",
        *_fixes(result, comparisons),
        "",
    ]
    return out
