"""The committed baseline: a normalised result, diffed row by row against a new run.

Normalising keeps only what a code change can move: configuration that shapes ranking,
fixture counts, every metric, each query's ordered ids, grades and scores, the miss reasons,
the transfer outcome and the recommendation. Timestamps, timings, paths, the HotMem version,
the git commit and the package size are dropped; floats are rounded to ``DIGITS`` places; keys
are sorted. Only ``--update-baseline`` rewrites the file, and only from a run on the fixture
beside it (``update_refusal``) unless forced. The directional check gates the metrics the
registry marks ``gated`` (``GATED``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotmem_eval.errors import EvalError
from hotmem_eval.metric_registry import METRICS
from hotmem_eval.result_document import profile_view
from hotmem_eval.tables import markdown_table, text_frame

__all__ = [
    "DIGITS",
    "BaselineDiff",
    "check",
    "compare",
    "dumps",
    "fixture_mismatch",
    "flatten",
    "load_baseline",
    "normalise",
    "render_diff",
    "update_refusal",
]

DIGITS = 9
#: The metrics the directional check forbids to fall, in registry order.
GATED = tuple(name for name, metric in METRICS.items() if metric.gated)


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, DIGITS)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


def normalise(document: dict[str, Any]) -> dict[str, Any]:
    """The deterministic part of a result document's baseline profile (the first), rounded
    and ready to commit."""
    result = profile_view(document)
    config, fixture, transfer = result["configuration"], result["fixture"], result["transfer"]
    normalised = {
        "schema_version": result["schema_version"],
        "configuration": {key: value for key, value in config.items() if key != "repeat"},
        "fixture": {
            key: fixture[key]
            for key in ("memory_count", "query_count", "negative_query_count", "category_counts")
        },
        "metrics": result["metrics"],
        # the other cutoffs' metrics (the first cutoff's are "metrics")
        "metrics_by_k": {
            k: block
            for k, block in result.get("metrics_by_k", {}).items()
            if k != str(config["top_k"])
        },
        "transfer": dict(transfer.items()),
        "queries": [
            {
                "query_id": q["query_id"],
                "category": q["category"],
                "identifier": q["identifier"],
                "results": [
                    {
                        "rank": r["rank"],
                        "memory_id": r["memory_id"],
                        "grade": r["grade"],
                        "score": r["score"],
                    }
                    for r in q["results"]
                ],
                "missed": [
                    {"memory_id": m["memory_id"], "reason": m["reason"]} for m in q["missed"]
                ],
                "failures": q["failures"],
            }
            for q in result["queries"]
        ],
        "failed_query_ids": result["failed_query_ids"],
        "recommendation": {key: result["recommendation"][key] for key in ("rule", "code", "text")},
    }
    adoption = document.get("adoption")
    if adoption is not None:  # a run of several profiles: the decision before the rules
        normalised["adoption"] = {key: adoption[key] for key in ("profile", "text", "command")}
    rounded: dict[str, Any] = _round(normalised)
    return rounded


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _other_fixture(baseline: Path, corpus: Path, queries: Path) -> list[str]:
    """How the run's (corpus, queries) differ from the fixture beside ``baseline`` (by their
    SHA-256 digests); empty when they are the same, or no fixture is beside it."""
    beside = (baseline.parent / "corpus.jsonl", baseline.parent / "queries.jsonl")
    if not all(path.is_file() for path in beside):
        return []
    return [
        f"{ran} (sha256 {digest[:12]}...) is not {kept} (sha256 {expected[:12]}...)"
        for ran, kept in zip((corpus, queries), beside, strict=True)
        if (digest := _sha256(ran)) != (expected := _sha256(kept))
    ]


def update_refusal(baseline: Path, corpus: Path, queries: Path) -> str | None:
    """Why ``--update-baseline`` must not write ``baseline`` from a run on (corpus, queries).

    A baseline belongs to the fixture beside it: ``DIR/baseline.json`` to ``DIR/corpus.jsonl``
    and ``DIR/queries.jsonl`` (the committed one to ``benchmarks/retrieval/``). When both files
    are there and the run's differ from them (their SHA-256 digests), the run is of another
    fixture and would overwrite that fixture's baseline: the reason is returned. Without a
    fixture beside the baseline there is nothing to compare: None.

    Raises:
        OSError: a fixture file cannot be read.
    """
    differ = _other_fixture(baseline, corpus, queries)
    if not differ:
        return None
    return (
        f"refusing to overwrite {baseline}: it is the baseline of the fixture beside it, and this "
        f"run used another ({'; '.join(differ)}); pass --baseline PATH for a baseline of this "
        "fixture, or --force to overwrite it anyway"
    )


_COUNTS = ("memory_count", "query_count", "negative_query_count")


def fixture_mismatch(path: Path, baseline: dict[str, Any], result: dict[str, Any]) -> str | None:
    """Why the baseline at ``path`` cannot be of the fixture ``result`` ran on, or None: the
    fixture beside the baseline has other digests (``update_refusal``), or the baseline
    records other fixture counts. A row-by-row diff of two fixtures says nothing useful.

    Raises:
        OSError: a fixture file cannot be read.
    """
    fixture = result["fixture"]
    differ = _other_fixture(path, Path(fixture["corpus"]), Path(fixture["queries"]))
    if differ:
        return (
            f"{path} is the baseline of the fixture beside it, and this run used another "
            f"({'; '.join(differ)})"
        )
    kept = baseline.get("fixture")
    counts = {key: kept.get(key) for key in _COUNTS} if isinstance(kept, dict) else {}
    if any(value != fixture[key] for key, value in counts.items()):
        shown = ", ".join(
            f"{key} {value} (this run: {fixture[key]})" for key, value in counts.items()
        )
        return f"{path} is the baseline of another fixture: {shown}"
    return None


def check(path: Path, result: dict[str, Any], normalised: dict[str, Any]) -> tuple[str, bool]:
    """``--check-baseline``: what to print, and whether the run matches the baseline at
    ``path`` (a baseline of another fixture is said so, without a diff).

    Raises:
        EvalError: the baseline cannot be read.
        OSError: a fixture file cannot be read.
    """
    baseline = load_baseline(path)
    mismatch = fixture_mismatch(path, baseline, result)
    if mismatch is not None:
        return (
            f"baseline: not comparable: {mismatch}; pass --baseline PATH for the baseline of "
            "this fixture (or --update-baseline --baseline PATH to create one)",
            False,
        )
    diff = compare(baseline, normalised)
    return render_diff(diff), diff.identical


def dumps(document: dict[str, Any]) -> str:
    """Stable text: sorted keys, two-space indent, UTF-8, trailing newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load_baseline(path: Path) -> dict[str, Any]:
    """Read a baseline file.

    Raises:
        EvalError: the file is missing or is not a JSON object.
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvalError(f"{path}: no baseline (create one with --update-baseline)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvalError(f"{path}: cannot read the baseline: {exc}") from None
    if not isinstance(document, dict):
        raise EvalError(f"{path}: expected a JSON object, found {type(document).__name__}")
    return document


def _key(item: Any, index: int) -> str:
    if isinstance(item, dict):
        for field in ("query_id", "rank", "memory_id"):
            if field in item:
                return f"{field}={item[field]}"
    return str(index)


def flatten(value: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Leaves of a document by path; list items are keyed by their id (query_id, rank, ...)."""
    if isinstance(value, dict):
        leaves: dict[tuple[str, ...], Any] = {}
        for key, item in value.items():
            leaves.update(flatten(item, (*path, str(key))))
        return leaves
    if isinstance(value, list) and any(isinstance(item, dict) for item in value):
        leaves = {}
        for index, item in enumerate(value):
            leaves.update(flatten(item, (*path, _key(item, index))))
        return leaves
    if isinstance(value, list):
        return {path: ", ".join(map(str, value)) if value else "[]"}
    return {path: value}


@dataclass(frozen=True, slots=True)
class BaselineDiff:
    """How a run differs from the baseline.

    Attributes:
        changed: (where, field, baseline, now) for every leaf that differs.
        regressions: gated metrics that fell, and categories that disappeared.
        improvements: gated metrics that rose.
    """

    changed: tuple[tuple[str, str, Any, Any], ...]
    regressions: tuple[str, ...]
    improvements: tuple[str, ...]

    @property
    def identical(self) -> bool:
        return not self.changed


_MISSING = "(absent)"


def _directional(baseline: dict[str, Any], now: dict[str, Any]) -> tuple[list[str], list[str]]:
    def blocks(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
        metrics = document.get("metrics", {})
        return {"overall": metrics.get("overall", {}), **metrics.get("by_category", {})}

    before, after = blocks(baseline), blocks(now)
    regressions, improvements = [], []
    for category, metrics in before.items():
        if category not in after:
            regressions.append(f"{category}: the category disappeared")
            continue
        for metric in GATED:
            old = (metrics.get(metric) or {}).get("value")
            new = (after[category].get(metric) or {}).get("value")
            if old is None:
                continue
            if new is None or new < old - 1e-12:
                regressions.append(f"{category}: {metric} fell from {old:.4f} to {new}")
            elif new > old + 1e-12:
                improvements.append(f"{category}: {metric} rose from {old:.4f} to {new:.4f}")
    return regressions, improvements


def compare(baseline: dict[str, Any], now: dict[str, Any]) -> BaselineDiff:
    """Diff a normalised run against a baseline, leaf by leaf, plus the directional check."""
    old, new = flatten(baseline), flatten(now)
    changed = []
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path, _MISSING), new.get(path, _MISSING)
        if a != b:
            where = "/".join(path[:2]) if path[0] in {"queries", "metrics"} else path[0]
            field = "/".join(path[2:] if path[0] in {"queries", "metrics"} else path[1:])
            changed.append((where, field or "-", a, b))
    regressions, improvements = _directional(baseline, now)
    return BaselineDiff(tuple(changed), tuple(regressions), tuple(improvements))


def render_diff(diff: BaselineDiff, *, limit: int = 60) -> str:
    """A readable table of the rows that changed, then the directional verdict."""
    if diff.identical:
        return "baseline: identical"
    rows: list[tuple[object, ...]] = list(diff.changed[:limit])
    if len(diff.changed) > limit:
        rows.append(("...", f"{len(diff.changed) - limit} more", "", ""))
    lines = [
        f"baseline: {len(diff.changed)} row(s) changed",
        "",
        *markdown_table(text_frame(["where", "field", "baseline", "now"], rows)),
        "",
    ]
    for regression in diff.regressions:
        lines.append(f"WORSE  {regression}")
    for improvement in diff.improvements:
        lines.append(f"better {improvement}")
    if not diff.regressions and not diff.improvements:
        lines.append(f"No gated metric ({', '.join(GATED)}) moved in any category.")
    lines.append("")
    lines.append("If the change is intended, regenerate with --update-baseline and explain it.")
    return "\n".join(lines)
