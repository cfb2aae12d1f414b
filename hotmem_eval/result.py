"""The blocks of a run's result document (JSON, ``benchmarks/retrieval/result.schema.json``):
what every profile shares (configuration, fixture, timings, facts) and each profile's entry.
``result_document.build_result`` assembles them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import polars as pl

import hotmem
from hotmem_eval.adoption import OBJECTIVE
from hotmem_eval.attribution import Miss
from hotmem_eval.evaluate import EvalRun
from hotmem_eval.fixture_schema import NEGATIVE_CATEGORY, category_order
from hotmem_eval.fixtures import Fixture
from hotmem_eval.metric_registry import OVERALL
from hotmem_eval.paired import bootstrap_ci
from hotmem_eval.runner import COMPONENTS, rows_by_query

__all__ = [
    "TIMINGS_NOTE",
    "facts_block",
    "fixture_block",
    "intervals_block",
    "latency_quantiles",
    "metrics_block",
    "metrics_by_k",
    "profile_entry",
    "queries_block",
    "recommendation_block",
    "run_configuration",
    "run_timings",
    "transfer_block",
]

TIMINGS_NOTE = (
    "Local diagnostics measured on this machine in this run; not a cross-machine performance "
    "guarantee."
)
QUANTILE_METHOD = "linear interpolation between closest ranks (numpy/polars 'linear')"


def latency_quantiles(latencies_ms: tuple[float, ...]) -> dict[str, float | int | str | None]:
    """p50 and p95 of the search latencies, with linear interpolation."""
    series = pl.Series("ms", latencies_ms, dtype=pl.Float64)
    empty = series.len() == 0
    return {
        "p50": None if empty else series.quantile(0.50, interpolation="linear"),
        "p95": None if empty else series.quantile(0.95, interpolation="linear"),
        "samples": series.len(),
        "quantile_method": QUANTILE_METHOD,
    }


def metrics_block(aggregate: pl.DataFrame) -> dict[str, Any]:
    blocks: dict[str, dict[str, Any]] = {}
    for row in aggregate.iter_rows(named=True):
        blocks.setdefault(row["category"], {})[row["metric"]] = {
            "value": row["value"],
            "numerator": row["numerator"],
            "denominator": row["denominator"],
            "query_count": row["query_count"],
        }
    overall = blocks.pop(OVERALL)
    return {"overall": overall, "by_category": {c: blocks[c] for c in category_order(blocks)}}


def metrics_by_k(run: EvalRun) -> dict[str, Any]:
    """The metrics at each cutoff of the run, by k (as text: JSON keys), ascending."""
    frame = run.aggregate_by_k if run.aggregate_by_k is not None else run.aggregate
    return {
        str(k): metrics_block(frame.filter(pl.col("k") == k).drop("k"))
        for k in (run.cutoffs or (run.top_k,))
    }


def _components(row: dict[str, Any]) -> dict[str, Any]:
    return {key: row[key] for key in COMPONENTS}


def queries_block(run: EvalRun) -> list[dict[str, Any]]:
    """Each query's entry of a result document: its judgements, its top ``run.top_k`` results
    (the first cutoff: a deeper ranking is in the export's results table and TREC run, and
    would make the document grow with the depth times the queries), metrics, misses and
    failures."""
    grades: dict[str, dict[str, int]] = {}
    for row in run.fixture.qrels.to_pylist():
        grades.setdefault(row["query_id"], {})[row["memory_id"]] = row["grade"]
    slots = rows_by_query(run.results.filter(pl.col("rank") <= run.top_k))
    leaking = _leaking(run)
    misses: dict[str, list[Miss]] = {}
    for miss in run.misses:
        misses.setdefault(miss.query_id, []).append(miss)
    metrics: dict[str, dict[str, Any]] = {}
    for row in run.per_query.filter(pl.col("applicable")).iter_rows(named=True):
        metrics.setdefault(row["query_id"], {})[row["metric"]] = row["value"]

    entries = []
    for query in run.fixture.queries.to_pylist():
        query_id, scope = query["query_id"], query["identifier"]
        graded = grades.get(query_id, {})
        returned = slots.get(query_id, [])
        failures = _failures(bool(misses.get(query_id)), graded, returned, query_id in leaking)
        entries.append(
            {
                "query_id": query_id,
                "category": query["category"],
                "query": query["query"],
                "identifier": scope,
                "relevance": dict(sorted(graded.items())),
                "results": [
                    {
                        "rank": r["rank"],
                        "memory_id": r["memory_id"],
                        "identifier": r["identifier"],
                        "grade": graded.get(r["memory_id"], 0),
                        "score": r["score"],
                        "components": _components(r),
                    }
                    for r in returned
                ],
                "metrics": metrics.get(query_id, {}),
                "missed": [m.to_dict() for m in misses.get(query_id, [])],
                "failures": failures,
            }
        )
    return entries


def _leaking(run: EvalRun) -> set[str]:
    """The scoped queries with a result, at any depth (the largest cutoff), from another
    identifier than their scope."""
    scopes = pl.DataFrame(run.fixture.queries.select(["query_id", "identifier"])).rename(
        {"identifier": "_scope"}
    )
    leaked = run.results.join(scopes, on="query_id").filter(
        pl.col("_scope").is_not_null() & (pl.col("identifier") != pl.col("_scope"))
    )
    return {str(q) for q in leaked["query_id"].to_list()}


def _failures(
    missed: bool, graded: dict[str, int], returned: list[dict[str, Any]], leaked: bool
) -> list[str]:
    """A query's failures: a relevant memory missed, results (in the top k) for a query with
    no answer, a result (at any depth) from outside its scope."""
    failures = []
    if missed:
        failures.append("missed_relevant")
    if returned and not any(g >= 1 for g in graded.values()):
        failures.append("false_positive")
    if leaked:
        failures.append("scope_leak")
    return failures


def facts_block(fixture: Fixture, entries: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The fact of every memory a query of any profile entry grades or returned, by memory_id
    (for the report)."""
    wanted = {m for e in entries for q in e["queries"] for m in q["relevance"]}
    wanted |= {r["memory_id"] for e in entries for q in e["queries"] for r in q["results"]}
    corpus = fixture.corpus.select(["memory_id", "fact"]).to_pylist()
    return {row["memory_id"]: row["fact"] for row in corpus if row["memory_id"] in wanted}


def run_timings(run: EvalRun) -> dict[str, Any]:
    """The run's timings of what every profile shares: ingest and the one transfer package."""
    t = run.transfer.package
    records = t.source_rows

    def rate(seconds: float) -> float | None:
        return records / seconds if seconds > 0 else None

    return {
        "note": TIMINGS_NOTE,
        "ingest_records_per_s": rate(run.ingest_s),
        "snapshot_records_per_s": rate(t.snapshot_s),
        "snapshot_mb_per_s": t.package_bytes / 1e6 / t.snapshot_s if t.snapshot_s > 0 else None,
        "verify_records_per_s": rate(t.verify_s),
        "hydrate_records_per_s": rate(t.hydrate_s),
        "package_bytes": t.package_bytes,
        "cold_start_to_first_query_ms": t.cold_start_s * 1000.0,
        "stages_s": {"ingest": run.ingest_s},
    }


def transfer_block(run: EvalRun) -> dict[str, Any]:
    t = run.transfer
    return {
        "equivalent_queries": t.equivalent_queries,
        "total_queries": t.total_queries,
        "sampled": t.total_queries < run.fixture.queries.num_rows,
        "rate": t.equivalent_queries / t.total_queries if t.total_queries else None,
        "source_rows": t.package.source_rows,
        "hydrated_rows": t.package.hydrated_rows,
        "fts_integrity": {
            "source": t.package.source_fts_integrity,
            "hydrated": t.package.hydrated_fts_integrity,
        },
        "verify": {"ok": t.package.verify_ok, "problems": list(t.package.verify_problems)},
        "drift": [dict(d) for d in t.drift],
    }


def fixture_block(fixture: Fixture) -> dict[str, Any]:
    """What was evaluated: the files (digests of the bytes read) and the counts."""
    categories = Counter(
        str(c) for c in fixture.queries.column("category").to_pylist() if c is not None
    )
    digests = dict(zip(fixture.sources, fixture.digests, strict=True))
    return {
        "format": fixture.format,
        "corpus": str(fixture.corpus_path),
        "queries": str(fixture.queries_path),
        "corpus_sha256": digests[fixture.corpus_path],
        "queries_sha256": digests[fixture.queries_path],
        "sources": [{"path": str(p), "sha256": d} for p, d in digests.items()],
        "memory_count": fixture.corpus.num_rows,
        "query_count": fixture.queries.num_rows,
        "negative_query_count": categories.get(NEGATIVE_CATEGORY, 0),
        "category_counts": {c: categories[c] for c in sorted(categories)},
        "warnings": [str(w) for w in fixture.warnings],
    }


def run_configuration(run: EvalRun) -> dict[str, Any]:
    """The run's settings every profile shares."""
    return {
        "embedding": {"model": hotmem.MODEL_NAME, "dimension": hotmem.DIMENSION},
        "fts_tokenizer": hotmem.LEXICAL_INDEX,
        "top_k": run.top_k,
        "cutoffs": list(run.cutoffs or (run.top_k,)),
        "repeat": run.repeat,
        "relevant_grade": run.fixture.relevant_grade,
    }


def intervals_block(run: EvalRun, metric: str = OBJECTIVE) -> list[dict[str, Any]]:
    """``metric`` overall and in each category: its value (the aggregate's) and the 95%
    percentile bootstrap interval of the mean of its per-query values (``paired.bootstrap_ci``),
    over the ``n`` queries it applies to; no interval for fewer than two."""
    rows = run.per_query.filter(pl.col("metric") == metric, pl.col("applicable"))
    values = run.aggregate.filter(pl.col("metric") == metric)
    value_of = dict(zip(values["category"].to_list(), values["value"].to_list(), strict=True))
    scopes = [OVERALL, *category_order(c for c in value_of if c != OVERALL)]
    found = []
    for scope in scopes:
        part = rows if scope == OVERALL else rows.filter(pl.col("category") == scope)
        sample = [v for v in part["value"].to_list() if v is not None]
        low, high = bootstrap_ci(sample) if len(sample) >= 2 else (None, None)
        found.append(
            {
                "scope": scope,
                "metric": metric,
                "value": value_of.get(scope),
                "ci_low": low,
                "ci_high": high,
                "n": len(sample),
            }
        )
    return found


def profile_entry(run: EvalRun) -> dict[str, Any]:
    """One profile's entry of a result document's ``profiles``."""
    profile = run.profile
    vector, lexical = profile.vector, profile.lexical
    queries = queries_block(run)
    return {
        "name": profile.name,
        "configuration": profile.to_dict(),
        # The fusion weights and floor (0 for a channel it lacks; no floor without a vector
        # channel), as schema version 1 named them.
        "weights": {
            "cosine": 0.0 if vector is None else vector.weight,
            "bm25": 0.0 if lexical is None else lexical.weight,
            "importance": profile.importance,
        },
        "min_similarity": None if vector is None else vector.floor,
        "metrics": metrics_block(run.aggregate),
        "metrics_by_k": metrics_by_k(run),
        "intervals": intervals_block(run),
        "queries": queries,
        "failed_query_ids": [q["query_id"] for q in queries if q["failures"]],
        "transfer": transfer_block(run),
        "recommendation": recommendation_block(run),
        "query_latency_ms": latency_quantiles(run.latencies_ms),
        "latencies_ms": list(run.latencies_ms),
        "stages_s": dict(run.stages_s),
    }


def recommendation_block(run: EvalRun) -> dict[str, Any]:
    """The ``recommendation`` object of a result document."""
    recommendation = run.recommendation
    return {
        "rule": recommendation.rule,
        "code": recommendation.code,
        "text": recommendation.text,
        "guards": list(recommendation.guards),
        "not_applicable": [
            {"rule": number, "code": code, "reason": why}
            for number, code, why in recommendation.not_applicable
        ],
    }
