"""The data of the report's plots, as frames read from a result document.

Every plot of the HTML report is drawn from one of these frames (``plots.render_plots``; their
schemas are ``plot_frames.SCHEMAS``), and each frame is exported beside the run's tables
(``plots/<name>.parquet``), so a reader can redraw or query what a picture shows:

- ``category_metric``: the headline metric of every profile, overall and per category, with
  its 95% bootstrap interval (``profiles[].intervals``; a category with no query it applies
  to, such as the unanswerable queries', is left out);
- ``paired_differences``: the paired difference of every candidate against the baseline on
  the headline metric, with its interval and Holm-adjusted p (``comparisons``);
- ``channel_scores``: each channel's value (cosine, normalised BM25, importance) of the
  candidates a query returned in its top k and of the relevant memories it missed, relevant
  or not, with the profile's cosine floor;
- ``first_relevant_rank``: the rank of each positive query's first relevant memory in the
  top k (null: none there);
- ``latency``: every search's latency, repeats included.
"""

from __future__ import annotations

from typing import Any, Final

import polars as pl

from hotmem_eval.comparison_report import ALPHA
from hotmem_eval.fixture_schema import category_order
from hotmem_eval.metric_registry import METRICS
from hotmem_eval.plot_frames import SCHEMAS, PlotFrames
from hotmem_eval.report_profiles import HEADLINE

__all__ = ["CHANNELS", "frames_of"]

#: The channels whose values ``channel_scores`` holds, as a result's components name them.
CHANNELS: Final = ("cosine", "bm25_normalised", "importance")


def _category_metric(result: dict[str, Any], label: str) -> list[dict[str, Any]]:
    return [
        {"profile": entry["name"], "category": i["scope"], "label": label, **i}
        for entry in result["profiles"]
        for i in entry["intervals"]
        if i["value"] is not None  # a category without a query the metric applies to
    ]


def _paired(result: dict[str, Any], label: str) -> list[dict[str, Any]]:
    rows = []
    for row in result["comparisons"]:
        if row["metric"] != HEADLINE or not row["n"]:
            continue
        p = row["p_adjusted"]
        rows.append(
            {
                **{key: row[key] for key in ("baseline", "candidate", "scope", "metric", "n")},
                **{key: row[key] for key in ("delta", "ci_low", "ci_high", "p_adjusted")},
                "label": label,
                "significant": p is not None and p < ALPHA,
            }
        )
    return rows


def _channels(result: dict[str, Any]) -> list[dict[str, Any]]:
    grade = result["configuration"]["relevant_grade"]
    rows = []
    for entry in result["profiles"]:
        floor = entry["min_similarity"]
        for query in entry["queries"]:
            seen = [
                (r["memory_id"], r["grade"] >= grade, r["components"]) for r in query["results"]
            ]
            seen += [(m["memory_id"], True, m["components"]) for m in query["missed"]]
            for memory_id, relevant, components in seen:
                for channel in CHANNELS:
                    value = components.get(channel)
                    if value is None:
                        continue
                    rows.append(
                        {
                            "profile": entry["name"],
                            "query_id": query["query_id"],
                            "memory_id": memory_id,
                            "relevant": relevant,
                            "channel": channel,
                            "value": value,
                            "floor": floor,
                        }
                    )
    return rows


def _first_ranks(result: dict[str, Any]) -> list[dict[str, Any]]:
    grade, k = result["configuration"]["relevant_grade"], result["configuration"]["top_k"]
    rows = []
    for entry in result["profiles"]:
        for query in entry["queries"]:
            if not any(g >= grade for g in query["relevance"].values()):
                continue
            ranks = [r["rank"] for r in query["results"] if r["grade"] >= grade]
            rows.append(
                {
                    "profile": entry["name"],
                    "category": query["category"] or "all queries",
                    "query_id": query["query_id"],
                    "rank": min(ranks) if ranks else None,
                    "k": k,
                }
            )
    order = {c: i for i, c in enumerate(category_order({r["category"] for r in rows}))}
    profiles = {entry["name"]: i for i, entry in enumerate(result["profiles"])}
    return sorted(rows, key=lambda r: (order[r["category"]], profiles[r["profile"]]))


def frames_of(result: dict[str, Any]) -> PlotFrames:
    """Every plot's frame (``plot_frames.SCHEMAS``) of a result document."""
    label = METRICS[HEADLINE].label.format(k=result["configuration"]["top_k"])
    rows = {
        "category_metric": _category_metric(result, label),
        "paired_differences": _paired(result, label),
        "channel_scores": _channels(result),
        "first_relevant_rank": _first_ranks(result),
        "latency": [
            {"profile": entry["name"], "ms": ms}
            for entry in result["profiles"]
            for ms in entry["latencies_ms"]
        ],
    }
    return PlotFrames(
        **{
            name: pl.DataFrame(rows[name], schema=schema, orient="row").select(list(schema))
            for name, schema in SCHEMAS.items()
        }
    )
