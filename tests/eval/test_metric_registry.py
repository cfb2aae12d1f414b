"""The metric registry: its relation, and the facts every other place reads from it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import polars as pl
import pytest

import hotmem_eval
from hotmem_eval.baseline import GATED
from hotmem_eval.metric_registry import METRICS, METRICS_COLUMNS, STATISTICS, metrics_frame
from hotmem_eval.report import COLUMNS


def test_metrics_frame_is_the_registry_in_order() -> None:
    frame = metrics_frame()
    assert dict(frame.schema) == METRICS_COLUMNS
    assert frame["metric"].to_list() == list(METRICS)
    assert frame["metric_order"].to_list() == list(range(1, len(METRICS) + 1))
    for row in frame.iter_rows(named=True):
        metric = METRICS[row["metric"]]
        assert row == {
            "metric": metric.name,
            "metric_order": row["metric_order"],
            "description": metric.description,
            "formula": metric.formula,
            "applies_to": metric.applies_to,
            "aggregation": metric.aggregation,
            "has_ratio": metric.has_ratio,
            "label": metric.label,
            "in_report": metric.in_report,
            "gated": metric.gated,
        }


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
    ("negative_fpr_at_k", "negative", "macro", True, "neg FPR@{k}", True, False),
    ("negative_returned_at_k", "negative", "macro", True, "neg returned@{k}", False, False),
    ("duplicate_slot_rate_at_k", "near_duplicate", "pooled", True, "dup slots@{k}", True, False),
    ("scope_leak_rate_at_k", "scoped", "pooled", True, "scope leak@{k}", True, False),
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
        "negative_fpr_at_k": "neg FPR@{k}",
        "duplicate_slot_rate_at_k": "dup slots@{k}",
        "scope_leak_rate_at_k": "scope leak@{k}",
    }
    assert GATED == ("recall_at_k", "mrr_at_k")
