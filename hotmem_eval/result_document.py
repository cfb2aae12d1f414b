"""A run's result document: one shape, whether it compared one profile or several.

Schema version 3 (``benchmarks/retrieval/result.schema.json``)::

    schema_version, generated_at, hotmem        what wrote it
    configuration                               the run's settings (cutoffs, repeat, grade, ...)
    fixture                                     the files (digests of the bytes read), counts
    timings                                     ingest and the one transfer package
    facts                                       the fact of every memory a query shows
    profiles                                    one entry a profile, the baseline first
    comparisons, adoption, ablation             the profiles compared ([], null, null for one)

A profile's entry (``result.profile_entry``) holds its configuration, metrics (with bootstrap
intervals of the headline), queries, transfer, recommendation and latencies.
``profile_view`` gives one profile as the flat document that the report, the decision rules and
the baseline read (the top level of schema version 2). Version 2 documents, which kept the
baseline's blocks at the top level and ``profiles`` only for several profiles, are refused by
``checked_result`` with the way to convert them: run the evaluation again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

import hotmem
from hotmem_eval.ablation import Ablation
from hotmem_eval.errors import EvalError
from hotmem_eval.evaluate import EvalRun
from hotmem_eval.result import (
    facts_block,
    fixture_block,
    profile_entry,
    run_configuration,
    run_timings,
)
from hotmem_eval.result_profiles import comparison_blocks

__all__ = ["SCHEMA_VERSION", "build_result", "checked_result", "profile_view"]

#: Version 3: one shape for any number of profiles (the module docstring).
SCHEMA_VERSION: Final = 3


def build_result(
    runs: Sequence[EvalRun],
    ablation: Ablation | None = None,
    *,
    generated_at: datetime,
    git_commit: str | None,
    profiles_file: str | None = None,
) -> dict[str, Any]:
    """The result document of the runs of one evaluation, the baseline's first.

    Raises:
        EvalError: no run, or two runs of one profile name.
    """
    blocks = comparison_blocks(runs, ablation, profiles_file=profiles_file)
    entries = [profile_entry(run) for run in runs]
    first = runs[0]
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hotmem": {"version": hotmem.__version__, "git_commit": git_commit},
        "configuration": run_configuration(first),
        "fixture": fixture_block(first.fixture),
        "timings": run_timings(first),
        "facts": facts_block(first.fixture, entries),
        "profiles": entries,
        **blocks,
    }


#: The keys of a profile's entry that its view keeps at the top level.
_ENTRY_KEYS: Final = (
    "name",
    "metrics",
    "metrics_by_k",
    "intervals",
    "queries",
    "failed_query_ids",
    "transfer",
    "recommendation",
)


def profile_view(result: dict[str, Any], index: int = 0) -> dict[str, Any]:
    """Profile ``index`` (0: the baseline) of a result document as one flat document: the
    run's keys, with the profile's blocks at the top level, its configuration under
    ``configuration`` (``profile``, ``weights``, ``min_similarity``) and its latency under
    ``timings``."""
    entry = result["profiles"][index]
    timings = result["timings"]
    return {
        "schema_version": result["schema_version"],
        "generated_at": result["generated_at"],
        "hotmem": result["hotmem"],
        "fixture": result["fixture"],
        "facts": result["facts"],
        "configuration": {
            **result["configuration"],
            "profile": entry["configuration"],
            "weights": entry["weights"],
            "min_similarity": entry["min_similarity"],
        },
        "timings": {
            **timings,
            "query_latency_ms": entry["query_latency_ms"],
            "stages_s": {**timings["stages_s"], **entry["stages_s"]},
        },
        **{key: entry[key] for key in _ENTRY_KEYS},
    }


def checked_result(document: object, source: str) -> dict[str, Any]:
    """``document`` (read from ``source``) as a result document of this version.

    Raises:
        EvalError: not a JSON object, or another schema version (the message says what to do).
    """
    if not isinstance(document, dict):
        raise EvalError(f"{source}: expected a result document (a JSON object)")
    version = document.get("schema_version")
    if version == SCHEMA_VERSION and isinstance(document.get("profiles"), list):
        return document
    if isinstance(version, int) and not isinstance(version, bool) and version < SCHEMA_VERSION:
        raise EvalError(
            f"{source}: a result of schema version {version}; this hotmem-eval reads version "
            f"{SCHEMA_VERSION} (one shape for any number of profiles): run the evaluation again "
            "to write it (docs/retrieval-quality.md#result-schema)"
        )
    raise EvalError(
        f"{source}: expected a result document of schema version {SCHEMA_VERSION}, found "
        f"schema_version {version!r:.40}"
    )
