"""HotMem's evaluation toolkit: fixtures, metrics, the evaluator and its outputs.

The public surface is ``__all__``; names load lazily (PEP 562) so that ``hotmem-eval`` starts
without importing DuckDB, polars or pyarrow until a command needs them.

    from hotmem_eval import load_fixture, per_query_metrics, aggregate_metrics
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module that owns it
_OWNERS = {
    "CATEGORIES": "hotmem_eval.fixture_schema",
    "METRICS": "hotmem_eval.metric_registry",
    "EvalError": "hotmem_eval.errors",
    "EvalRun": "hotmem_eval.evaluate",
    "Evidence": "hotmem_eval.decision",
    "Fixture": "hotmem_eval.fixtures",
    "FixtureError": "hotmem_eval.errors",
    "Miss": "hotmem_eval.attribution",
    "PlotFrames": "hotmem_eval.plot_frames",
    "Problem": "hotmem_eval.errors",
    "Recommendation": "hotmem_eval.decision",
    "aggregate_metrics": "hotmem_eval.metrics",
    "profile_view": "hotmem_eval.result_document",
    "render_html": "hotmem_eval.report_html",
    "build_result": "hotmem_eval.result_document",
    "choose_profiles": "hotmem_eval.profile_choice",
    "compare": "hotmem_eval.baseline",
    "compare_profiles": "hotmem_eval.comparison",
    "compare_runs": "hotmem_eval.compare_runs",
    "evaluate": "hotmem_eval.evaluate",
    "evaluate_profiles": "hotmem_eval.evaluate",
    "load_fixture": "hotmem_eval.fixtures",
    "normalise": "hotmem_eval.baseline",
    "paired_deltas": "hotmem_eval.comparison",
    "per_query_metrics": "hotmem_eval.metrics",
    "recommend": "hotmem_eval.decision",
    "render_ablation_table": "hotmem_eval.comparison_report",
    "render_comparison_table": "hotmem_eval.comparison_report",
    "render_markdown": "hotmem_eval.report",
    "render_plots": "hotmem_eval.plots",
    "run_query": "hotmem_eval.query",
    "sql_metrics": "hotmem_eval.sqlfiles",
    "write_exports": "hotmem_eval.outputs",
}

__all__ = [
    "CATEGORIES",
    "METRICS",
    "EvalError",
    "EvalRun",
    "Evidence",
    "Fixture",
    "FixtureError",
    "Miss",
    "PlotFrames",
    "Problem",
    "Recommendation",
    "aggregate_metrics",
    "build_result",
    "choose_profiles",
    "compare",
    "compare_profiles",
    "compare_runs",
    "evaluate",
    "evaluate_profiles",
    "load_fixture",
    "normalise",
    "paired_deltas",
    "per_query_metrics",
    "profile_view",
    "recommend",
    "render_ablation_table",
    "render_comparison_table",
    "render_html",
    "render_markdown",
    "render_plots",
    "run_query",
    "sql_metrics",
    "write_exports",
]


def __getattr__(name: str) -> Any:
    owner = _OWNERS.get(name)
    if owner is None:
        raise AttributeError(f"module 'hotmem_eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(owner), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
