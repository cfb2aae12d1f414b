"""The report's appendix sections of one profile's view (``result_document.profile_view``):
configuration, misses, transfer and timings."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hotmem_eval.attribution import REASONS
from hotmem_eval.tables import Block, table

__all__ = [
    "FAILED_QUERIES",
    "configuration_blocks",
    "miss_blocks",
    "timing_blocks",
    "transfer_blocks",
]

#: What the report counts as a failed query (``result.queries[].failures``).
FAILED_QUERIES = (
    "A failed query is one with at least one failure: `missed_relevant` (a relevant memory "
    "is not in its top k), `false_positive` (it has no relevant memory and returned "
    "something) or `scope_leak` (it returned a memory of another identifier than its own)."
)


def _floor(value: float | None) -> str:
    return "– (no vector channel)" if value is None else str(value)


def configuration_blocks(result: dict[str, Any]) -> list[Block]:
    """The settings of the run and of the profile."""
    config, fixture = result["configuration"], result["fixture"]
    weights = config["weights"]
    rows = [
        (
            "HotMem",
            f"{result['hotmem']['version']} (commit {result['hotmem']['git_commit'] or 'unknown'})",
        ),
        ("profile", f"{config['profile']['name']} ({config['profile']['fusion']} fusion)"),
        (
            "embedding",
            f"{config['embedding']['model']}, dimension {config['embedding']['dimension']}",
        ),
        (
            "fusion weights",
            f"cosine {weights['cosine']}, BM25 {weights['bm25']}, "
            f"importance {weights['importance']}",
        ),
        ("relevance floor (min_similarity)", _floor(config["min_similarity"])),
        ("FTS tokenizer", config["fts_tokenizer"]),
        ("top-k / repeat", f"{config['top_k']} / {config['repeat']}"),
    ]
    cutoffs = config.get("cutoffs", [config["top_k"]])
    if len(cutoffs) > 1:
        rows.append(
            (
                "cutoffs (k)",
                f"{', '.join(map(str, cutoffs))}; the tables are at k = {config['top_k']}",
            )
        )
    rows.append(
        (
            "fixture",
            f"{fixture['memory_count']} memories, {fixture['query_count']} queries "
            f"({fixture['negative_query_count']} negative)",
        )
    )
    return [table(["setting", "value"], rows)]


def miss_blocks(result: dict[str, Any]) -> list[Block]:
    """Why relevant memories were missed: each reason with its count, then every miss."""
    misses = [(q, m) for q in result["queries"] for m in q["missed"]]
    counts = Counter(m["reason"] for _, m in misses)
    out: list[Block] = [
        f"- `{reason}` ({counts.get(reason, 0)}): {meaning}" for reason, meaning in REASONS.items()
    ]
    if misses:
        rows = [
            (q["query_id"], f"{m['memory_id']} ({m['grade']})", m["reason"], m["detail"])
            for q, m in misses
        ]
        out += ["", table(["query", "missed (grade)", "reason", "detail"], rows)]
    failed = result["failed_query_ids"]
    out += ["", f"Failed queries ({len(failed)}): " + (", ".join(failed) or "none"), ""]
    out.append(FAILED_QUERIES)
    return out


def transfer_blocks(result: dict[str, Any]) -> list[Block]:
    """Snapshot, verify, hydrate: equivalence, rows, integrity, verification and drift."""
    t = result["transfer"]
    verify = "ok" if t["verify"]["ok"] else "; ".join(t["verify"]["problems"])
    out: list[Block] = [
        table(
            ["check", "result"],
            [
                (
                    "logical top-k equivalence",
                    f"{t['equivalent_queries']}/{t['total_queries']} queries",
                ),
                ("rows source / hydrated", f"{t['source_rows']} / {t['hydrated_rows']}"),
                (
                    "FTS integrity check source / hydrated",
                    f"{t['fts_integrity']['source']} / {t['fts_integrity']['hydrated']}",
                ),
                ("package verification", verify),
            ],
        )
    ]
    if t["drift"]:
        columns = ["query", "drift", "source ids", "hydrated ids", "max score difference"]
        rows = [
            (
                d["query_id"],
                d["kind"],
                ", ".join(d["source_ids"]),
                ", ".join(d["hydrated_ids"]),
                f"{d['max_score_difference']:.3g}",
            )
            for d in t["drift"]
        ]
        out += ["", table(columns, rows, right=columns[-1:])]
    else:
        out += [
            "",
            "No order or score drift: every query returned the same ids, in the same "
            "order, with bit-identical scores.",
        ]
    return out


def _number(value: float | None, pattern: str) -> str:
    return "–" if value is None else format(value, pattern)


def timing_blocks(result: dict[str, Any]) -> list[Block]:
    """The run's timings (local diagnostics) and how the quantiles are taken."""
    t = result["timings"]
    latency = t["query_latency_ms"]
    embedding = t["stages_s"].get("query_embedding")  # absent from results of earlier versions
    rows = [
        ("query latency p50 (ms)", _number(latency["p50"], ".3f")),
        ("query latency p95 (ms)", _number(latency["p95"], ".3f")),
        ("latency samples", latency["samples"]),
        ("query embedding, before the searches (s)", _number(embedding, ".3f")),
        ("ingest (records/s)", _number(t["ingest_records_per_s"], ",.0f")),
        ("snapshot (records/s)", _number(t["snapshot_records_per_s"], ",.0f")),
        ("snapshot (MB/s)", _number(t["snapshot_mb_per_s"], ",.2f")),
        ("verify (records/s)", _number(t["verify_records_per_s"], ",.0f")),
        ("hydrate (records/s)", _number(t["hydrate_records_per_s"], ",.0f")),
        ("package size (bytes)", f"{t['package_bytes']:,}"),
        ("cold start to first query (ms)", _number(t["cold_start_to_first_query_ms"], ".1f")),
    ]
    return [
        f"*{t['note']}*",
        "",
        table(["measure", "value"], rows, right=["value"]),
        "",
        f"Quantiles: {latency['quantile_method']}.",
    ]
