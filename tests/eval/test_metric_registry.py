"""The metric registry: its relation, and the facts every other place reads from it."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

import duckdb
import polars as pl
import pytest

import hotmem_eval
from hotmem_eval.baseline import GATED
from hotmem_eval.metric_registry import (
    METRICS,
    METRICS_COLUMNS,
    REPORT_TABLES,
    STATISTICS,
    Metric,
    metrics_frame,
)
from hotmem_eval.metrics import aggregate_metrics, per_query_metrics
from hotmem_eval.reference import REFERENCE_METRICS
from hotmem_eval.report_metrics import COLUMNS
from hotmem_eval.sqlfiles import sql_metrics
from tests.eval.metric_frames import expected, frames


def test_metrics_frame_is_the_registry_in_order() -> None:
    frame = metrics_frame()
    assert dict(frame.schema) == METRICS_COLUMNS
    assert frame["metric"].to_list() == list(METRICS)
    assert frame["metric_order"].to_list() == list(range(1, len(METRICS) + 1))
    columns = ("metric", "applies_to", "aggregation", "has_ratio", "label", "in_report", "gated")
    assert frame.select(columns).rows() == [
        ("recall_at_1", "positive", "macro", True, "R@1", True, False),
        ("recall_at_k", "positive", "macro", True, "R@{k}", True, True),
        ("success_at_1", "positive", "macro", True, "S@1", False, False),
        ("success_at_k", "positive", "macro", True, "S@{k}", True, False),
        ("mrr_at_k", "positive", "macro", False, "MRR@{k}", True, True),
        ("ndcg_at_k", "positive", "macro", False, "nDCG@{k}", True, False),
        ("precision_at_k", "positive", "macro", True, "P@{k}", True, False),
        ("ap_at_k", "positive", "macro", False, "AP@{k}", True, False),
        ("group_recall_at_k", "positive", "macro", True, "group R@{k}", True, True),
        ("alpha_ndcg_at_k", "positive", "macro", False, "α-nDCG@{k}", True, False),
        ("negative_fpr_at_k", "negative", "macro", True, "neg FPR@{k}", True, False),
        ("negative_returned_at_k", "negative", "macro", True, "neg returned@{k}", False, False),
        (
            "duplicate_slot_rate_at_k",
            "near_duplicate",
            "pooled",
            True,
            "dup slots@{k}",
            True,
            False,
        ),
        ("scope_leak_rate_at_k", "scoped", "pooled", True, "scope leak@{k}", True, False),
    ]
    recall = frame.row(1, named=True)
    assert (recall["description"], recall["formula"]) == (
        "Share of the query's relevant memories found in the top k (trec_eval ``recall``).",
        "recall@k = |relevant in top k| / |relevant|",
    )


def test_metrics_frame_converts_to_arrow() -> None:
    table = metrics_frame().to_arrow()
    assert table.column_names == list(METRICS_COLUMNS)
    assert table.num_rows == len(METRICS)


def test_metrics_frame_of_another_registry() -> None:
    subset = {name: METRICS[name] for name in ("ndcg_at_k", "recall_at_1")}
    frame = metrics_frame(subset)
    assert frame.select("metric", "metric_order").rows() == [("ndcg_at_k", 1), ("recall_at_1", 2)]
    assert metrics_frame({}).height == 0


# The registry's facts, written out: (name, applies_to, aggregation, has_ratio, label,
# in_report, gated). A change here is a change to the report, the baseline gate or the SQL.
REGISTRY = [
    ("recall_at_1", "positive", "macro", True, "R@1", True, False),
    ("recall_at_k", "positive", "macro", True, "R@{k}", True, True),
    ("success_at_1", "positive", "macro", True, "S@1", False, False),
    ("success_at_k", "positive", "macro", True, "S@{k}", True, False),
    ("mrr_at_k", "positive", "macro", False, "MRR@{k}", True, True),
    ("ndcg_at_k", "positive", "macro", False, "nDCG@{k}", True, False),
    ("precision_at_k", "positive", "macro", True, "P@{k}", True, False),
    ("ap_at_k", "positive", "macro", False, "AP@{k}", True, False),
    ("group_recall_at_k", "positive", "macro", True, "group R@{k}", True, True),
    ("alpha_ndcg_at_k", "positive", "macro", False, "α-nDCG@{k}", True, False),
    ("negative_fpr_at_k", "negative", "macro", True, "neg FPR@{k}", True, False),
    ("negative_returned_at_k", "negative", "macro", True, "neg returned@{k}", False, False),
    ("duplicate_slot_rate_at_k", "near_duplicate", "pooled", True, "dup slots@{k}", True, False),
    ("scope_leak_rate_at_k", "scoped", "pooled", True, "scope leak@{k}", True, False),
]


def test_the_registry_says_where_each_metric_is_shown_and_which_way_it_improves() -> None:
    frame = metrics_frame().select("metric", "report_table", "better", "compared")
    assert frame.rows() == [
        ("recall_at_1", "Relevance", "higher", True),
        ("recall_at_k", "Relevance", "higher", True),
        ("success_at_1", None, "higher", False),
        ("success_at_k", "Relevance", "higher", False),
        ("mrr_at_k", "Relevance", "higher", True),
        ("ndcg_at_k", "Relevance", "higher", True),
        ("precision_at_k", "Precision", "higher", True),
        ("ap_at_k", "Precision", "higher", True),
        ("group_recall_at_k", "Diversity, false positives and scope", "higher", True),
        ("alpha_ndcg_at_k", "Diversity, false positives and scope", "higher", True),
        ("negative_fpr_at_k", "Diversity, false positives and scope", "lower", True),
        ("negative_returned_at_k", None, "lower", False),
        ("duplicate_slot_rate_at_k", "Diversity, false positives and scope", "lower", True),
        ("scope_leak_rate_at_k", "Diversity, false positives and scope", "lower", True),
    ]
    assert list(REPORT_TABLES) == [
        "Relevance",
        "Precision",
        "Diversity, false positives and scope",
    ]


def test_registry_facts() -> None:
    columns = ["metric", "applies_to", "aggregation", "has_ratio", "label", "in_report", "gated"]
    assert metrics_frame().select(columns).rows() == REGISTRY
    assert pl.Series([m.label for m in METRICS.values()]).n_unique() == len(METRICS)


PACKAGE = Path(hotmem_eval.__file__).parent
_METRIC_NAME = re.compile(r"^[a-z][a-z0-9_]*_at_(1|k)$")


def _metric_names_in(path: Path) -> set[str]:
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _METRIC_NAME.match(node.value)
    }


@pytest.mark.parametrize(
    "path",
    sorted(p for p in PACKAGE.glob("*.py") if p.name != "metric_registry.py"),
    ids=lambda p: p.name,
)
def test_every_metric_a_module_names_is_registered(path: Path) -> None:
    # A module reads a metric by its registered name; a renamed metric must not leave one behind.
    assert _metric_names_in(path) - set(STATISTICS) <= set(METRICS)


def test_report_columns_and_baseline_gate_come_from_the_registry() -> None:
    assert COLUMNS == {
        "recall_at_1": "R@1",
        "recall_at_k": "R@{k}",
        "success_at_k": "S@{k}",
        "mrr_at_k": "MRR@{k}",
        "ndcg_at_k": "nDCG@{k}",
        "precision_at_k": "P@{k}",
        "ap_at_k": "AP@{k}",
        "group_recall_at_k": "group R@{k}",
        "alpha_ndcg_at_k": "α-nDCG@{k}",
        "negative_fpr_at_k": "neg FPR@{k}",
        "duplicate_slot_rate_at_k": "dup slots@{k}",
        "scope_leak_rate_at_k": "scope leak@{k}",
    }
    assert GATED == ("recall_at_k", "mrr_at_k", "group_recall_at_k")


def test_result_schema_requires_exactly_the_registry_metrics() -> None:
    schema = json.loads(
        (PACKAGE.parent / "benchmarks" / "retrieval" / "result.schema.json").read_text()
    )
    block = schema["$defs"]["metric_block"]
    assert block["required"] == list(METRICS)
    assert list(block["properties"]) == list(METRICS)


# -- every engine reports exactly the registry's metrics, in its order --------------------------

# Every applicability present: positive, negative, grade-1-only, near-duplicate, scoped.
DATA = frames(
    {
        "q1": ("exact_lexical", "acme"),
        "q2": ("near_duplicate_diversity", None),
        "q3": ("negative_or_no_answer", None),
        "q4": ("semantic_paraphrase", None),
    },
    ranked={"q1": ["b", "x", "a"], "q2": ["a", "b"], "q3": ["x"]},
    grades={"q1": {"a": 3, "b": 2}, "q4": {"a": 1}},
    groups={"q2": {"a": "g", "b": "g"}},
)


def _metric_order(frame: pl.DataFrame, block: str) -> list[list[str]]:
    """The metric column of each block of rows (per query, or per category), in row order."""
    return [group["metric"].to_list() for group in frame.partition_by(block, maintain_order=True)]


@pytest.mark.parametrize("k", [1, 5])
def test_every_engine_reports_the_registry_metrics_in_order(k: int) -> None:
    per_query = per_query_metrics(*DATA, k=k)
    sql_per_query, sql_aggregate = sql_metrics(*DATA, k=k)
    reference_per_query, reference_aggregate = expected(DATA, k=k)
    engines = {
        "polars": (per_query, aggregate_metrics(per_query)),
        "sql": (sql_per_query, sql_aggregate),
        "reference": (reference_per_query, reference_aggregate),
    }
    registry = list(METRICS)
    for engine, (by_query, by_category) in engines.items():
        assert by_query["metric"].unique(maintain_order=True).to_list() == registry, engine
        assert (
            _metric_order(by_query.sort("query_id", maintain_order=True), "query_id")
            == [registry] * DATA.queries.height
        ), engine
        assert _metric_order(by_category, "category") == [registry] * 5, engine


def test_reference_definitions_follow_the_registry() -> None:
    assert list(REFERENCE_METRICS) == list(METRICS)
    pooled = {name for name, definition in REFERENCE_METRICS.items() if definition.pooled}
    assert pooled == {name for name, m in METRICS.items() if m.aggregation == "pooled"}


def _renamed(name: str) -> Metric:
    return dataclasses.replace(METRICS["mrr_at_k"], name=name)


# (id, an altered registry, error pattern): the SQL computes exactly the registry's metrics.
ALTERED_REGISTRIES = [
    (
        "metric_removed",
        {name: m for name, m in METRICS.items() if name != "ndcg_at_k"},
        "found metric='ndcg_at_k' missing from it",
    ),
    ("metric_added", {**METRICS, "map_at_k": _renamed("map_at_k")}, "none for metric='map_at_k'"),
    (
        "metric_renamed",
        {name: _renamed("rr_at_k") if name == "mrr_at_k" else m for name, m in METRICS.items()},
        # Either side may be found first: mrr_at_k has no entry, rr_at_k no formula.
        "found (metric='mrr_at_k' missing from it|none for metric='rr_at_k')",
    ),
]


@pytest.mark.parametrize(
    ("registry", "message"),
    [case[1:] for case in ALTERED_REGISTRIES],
    ids=[case[0] for case in ALTERED_REGISTRIES],
)
def test_sql_refuses_a_registry_it_does_not_compute(
    registry: dict[str, Metric], message: str
) -> None:
    with pytest.raises(duckdb.Error, match=message):
        sql_metrics(*DATA, k=5, metrics=metrics_frame(registry))
