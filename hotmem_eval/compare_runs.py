"""``hotmem-eval compare RUN_A RUN_B``: the paired comparison of two exported runs.

Each run is an export directory (``--export-dir``). The baseline profile of RUN_B (the first it
ran) is compared with that of RUN_A, query by query, from their ``per_query_metrics`` tables:
nothing is searched again. The runs must be of one fixture (the SHA-256 digests of corpus and
queries in their manifests) and one top-k; else the comparison would pair different queries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from hotmem_eval.comparison import compare_profiles
from hotmem_eval.comparison_report import render_comparison_table
from hotmem_eval.errors import EvalError, UsageError
from hotmem_eval.query import read_manifest

__all__ = ["compare_runs", "run_per_query"]

_DIGESTS = ("corpus_sha256", "queries_sha256")


def _checked_manifest(directory: Path) -> dict[str, Any]:
    manifest = read_manifest(directory)
    fixture = manifest.get("fixture")
    if not isinstance(fixture, dict) or not all(
        isinstance(fixture.get(key), str) for key in _DIGESTS
    ):
        raise UsageError(
            f"{directory}: the manifest has no fixture digests (an export of schema version "
            f"{manifest.get('schema_version')!r}, expected 2 or later); export the run again "
            "with --export-dir"
        )
    profiles = manifest.get("profiles")
    if (
        not isinstance(profiles, list)
        or not profiles
        or not all(isinstance(name, str) for name in profiles)
    ):
        raise UsageError(f"{directory}: the manifest names no profiles; export the run again")
    return manifest


def run_per_query(directory: Path, profile: str) -> pl.DataFrame:
    """The per-query metrics of ``profile`` in the run exported to ``directory``.

    Raises:
        UsageError: the table is missing or cannot be read.
    """
    path = directory / "per_query_metrics.parquet"
    try:
        frame = pl.read_parquet(path)
    except FileNotFoundError:
        raise UsageError(
            f"{directory}: missing {path.name} (expected every export table)"
        ) from None
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise UsageError(f"{path}: cannot read the table: {exc}") from None
    if "profile" not in frame.columns:
        raise UsageError(f"{path}: no profile column; export the run again")
    return frame.filter(pl.col("profile") == profile)


def _labels(a: Path, b: Path, first: str, second: str) -> tuple[str, str]:
    """Distinct names of the two profiles: the profile's, or with the run's where they match."""
    if first != second:
        return first, second
    names = (a.resolve().name or str(a), b.resolve().name or str(b))
    if names[0] == names[1]:
        names = ("RUN_A", "RUN_B")
    return f"{first}@{names[0]}", f"{second}@{names[1]}"


def compare_runs(a: Path, b: Path) -> str:
    """The Markdown comparison of run ``b``'s baseline profile against run ``a``'s.

    Raises:
        UsageError: a directory is not a run export of schema version 2 or later, the runs are
            of different fixtures or top-k values, or their per-query rows do not pair.
    """
    first, second = _checked_manifest(a), _checked_manifest(b)
    differ = [
        f"{key} {first['fixture'][key][:12]}... in {a} but {second['fixture'][key][:12]}... in {b}"
        for key in _DIGESTS
        if first["fixture"][key] != second["fixture"][key]
    ]
    if differ:
        raise UsageError(
            "cannot compare runs of different fixtures (expected the same corpus and queries): "
            + "; ".join(differ)
        )
    if first["top_k"] != second["top_k"]:
        raise UsageError(
            f"cannot compare runs of different top-k: top_k={first['top_k']!r} in {a}, "
            f"top_k={second['top_k']!r} in {b}"
        )
    baseline, candidate = _labels(a, b, first["profiles"][0], second["profiles"][0])
    per_query = pl.concat(
        [
            run_per_query(a, first["profiles"][0]).with_columns(profile=pl.lit(baseline)),
            run_per_query(b, second["profiles"][0]).with_columns(profile=pl.lit(candidate)),
        ],
        how="diagonal_relaxed",
    )
    try:
        comparisons = compare_profiles(per_query, profiles=[baseline, candidate])
    except EvalError as exc:  # the rows do not pair
        raise UsageError(f"cannot pair the runs {a} and {b}: {exc}") from None
    return (
        f"# {candidate} against {baseline}\n\n"
        f"RUN_A {a} (baseline), RUN_B {b} (candidate): one fixture "
        f"(corpus sha256 {first['fixture']['corpus_sha256'][:12]}...), top-k {first['top_k']}.\n\n"
        + render_comparison_table(comparisons, k=int(first["top_k"]))
    )
