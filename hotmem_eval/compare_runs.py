"""``hotmem-eval compare RUN_A RUN_B``: the paired comparison of two runs.

``compare_runs``: each run is an export directory (``--export-dir``). The baseline profile of
RUN_B (the first it ran) is compared with that of RUN_A, query by query, from their
``per_query_metrics`` tables: nothing is searched again. The runs must be of one fixture (the
SHA-256 digests of corpus and queries in their manifests) and one top-k; else the comparison
would pair different queries.

``compare_trec_runs``: each run is a TREC run file, judged by one TREC qrels file
(``trec_output`` reads both). The queries are those of the qrels; a judged query a run does not
rank returned nothing (as ``trec_eval -c``), and a run's lines of a query the qrels do not judge
are left out (as trec_eval). Each run is ranked as trec_eval ranks it (``rank_as_trec_eval``:
score descending, ties by memory_id descending, the rank column ignored), its per-query metrics
computed by the metric engine at every cutoff, then compared as ``compare_runs`` does. Queries
have no category here, so every comparison is ``overall``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl

from hotmem_eval.comparison import (
    COMPARED_METRICS,
    GROUP_METRICS,
    PROFILE_PER_QUERY_COLUMNS,
    compare_profiles,
)
from hotmem_eval.comparison_report import render_comparison_table
from hotmem_eval.errors import EvalError, FixtureError, Problem, UsageError
from hotmem_eval.fixture_schema import COLLECTION_RELEVANT_GRADE
from hotmem_eval.metric_registry import METRICS, OVERALL
from hotmem_eval.metrics import per_query_metrics
from hotmem_eval.query import read_manifest
from hotmem_eval.trec_output import rank_as_trec_eval
from hotmem_eval.trec_read import read_qrels, read_run

__all__ = [
    "compare_runs",
    "compare_trec_runs",
    "run_compare",
    "run_per_query",
    "trec_per_query",
]

_DIGESTS = ("corpus_sha256", "queries_sha256")


def _checked_manifest(directory: Path) -> dict[str, Any]:
    manifest = read_manifest(directory)
    if manifest.get("kind", "run") != "run":
        raise UsageError(
            f"{directory}: a {manifest['kind']} export, not a run's: compare takes two runs "
            "exported with hotmem-eval --export-dir"
        )
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
    missing = [column for column in PROFILE_PER_QUERY_COLUMNS if column not in frame.columns]
    if missing:  # else the runs' tables would be stacked with nulls, and nothing compared
        raise UsageError(
            f"{path}: expected the columns {', '.join(PROFILE_PER_QUERY_COLUMNS)}, found no "
            f"{', '.join(missing)} column; export the run again"
        )
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


def _checked_cutoffs(ks: Sequence[int], relevant_grade: int) -> list[int]:
    def positive(value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1

    if isinstance(ks, (str, bytes)) or not ks or not all(positive(k) for k in ks):
        raise UsageError(f"expected one or more cutoffs k >= 1, found ks={ks!r}")
    if not positive(relevant_grade):
        raise UsageError(
            f"expected relevant_grade to be an int >= 1, found relevant_grade={relevant_grade!r}"
        )
    return sorted(set(ks))


def trec_per_query(
    run: pl.DataFrame, qrels: pl.DataFrame, *, k: int, relevant_grade: int
) -> pl.DataFrame:
    """The per-query metrics of a TREC run at cutoff ``k``, over the queries of ``qrels``.

    Parameters:
        run: ``query_id``, ``memory_id``, ``score`` (``trec_read.read_run``'s frame); ranked
            as trec_eval ranks it, whatever its ``rank`` column says.
        qrels: ``query_id``, ``memory_id``, ``grade`` (``trec_read.read_qrels``'s frame).
        k, relevant_grade: as ``metrics.per_query_metrics``.

    Returns:
        ``metrics.PER_QUERY_COLUMNS``, one row per (judged query, metric); every category null.

    Raises:
        EvalError: as ``metrics.per_query_metrics``.
    """
    judged = qrels.select(pl.col("query_id").unique().sort())
    queries = judged.with_columns(
        category=pl.lit(None, pl.String), identifier=pl.lit(None, pl.String)
    )
    results = (
        rank_as_trec_eval(run)
        .join(judged, on="query_id", how="semi")
        .with_columns(identifier=pl.lit(None, pl.String))
    )
    groups = pl.DataFrame(
        schema={"query_id": pl.String, "memory_id": pl.String, "group_id": pl.String}
    )
    return per_query_metrics(results, qrels, queries, groups, k=k, relevant_grade=relevant_grade)


#: What two TREC runs are compared on: the compared metrics of positive queries that do not
#: read near-duplicate groups (a TREC run has none), in registry order.
TREC_METRICS: Final = tuple(
    name
    for name in COMPARED_METRICS
    if METRICS[name].applies_to == "positive" and name not in GROUP_METRICS
)


def _read_trec(
    a: Path, b: Path, qrels: Path, warnings: list[Problem]
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The qrels and both runs, or one ``FixtureError`` with the problems of all three; the
    qrels' warnings appended to ``warnings``."""
    problems: list[Problem] = []
    frames = []
    readers: list[tuple[Callable[[Path], pl.DataFrame], Path]] = [
        (lambda path: read_qrels(path, warnings), qrels),
        (read_run, a),
        (read_run, b),
    ]
    for reader, path in readers:
        try:
            frames.append(reader(path))
        except FixtureError as error:
            problems.extend(error.problems)
    if problems:
        raise FixtureError(tuple(problems))
    return frames[0], frames[1], frames[2]


def _run_name(run: pl.DataFrame, path: Path) -> str:
    return str(run["run_name"][0]) if run.height else path.stem or str(path)


def _coverage(judged: pl.Series, run: pl.DataFrame) -> tuple[int, int]:
    """(judged queries the run ranks, queries the run ranks that are not judged)."""
    ranked = run["query_id"].unique()
    inside = int(ranked.is_in(judged.implode()).sum())
    return inside, ranked.len() - inside


def compare_trec_runs(
    a: Path,
    b: Path,
    qrels: Path,
    *,
    ks: Sequence[int],
    relevant_grade: int = COLLECTION_RELEVANT_GRADE,
) -> str:
    """The Markdown comparison of TREC run ``b`` against TREC run ``a``, judged by ``qrels``.

    The module docstring says how the runs are ranked and which queries count. The labels are
    the runs' names (their sixth column), or the file names where the two are equal.

    Parameters:
        a, b: the baseline's run file and the candidate's.
        qrels: the TREC qrels file.
        ks: the cutoffs; one table each, in ascending order.
        relevant_grade: the smallest grade that counts as relevant (trec_eval's: 1).

    Raises:
        FixtureError: a file cannot be read or is malformed: every problem of the three files.
        UsageError: no cutoff, a cutoff or ``relevant_grade`` below 1.
    """
    cutoffs = _checked_cutoffs(ks, relevant_grade)
    warnings: list[Problem] = []
    judgments, first, second = _read_trec(a, b, qrels, warnings)
    baseline, candidate = _labels(a, b, _run_name(first, a), _run_name(second, b))
    judged = judgments["query_id"].unique()
    (ranked_a, unjudged_a), (ranked_b, unjudged_b) = (
        _coverage(judged, run) for run in (first, second)
    )
    out = [
        f"# {candidate} against {baseline}\n\n"
        f"RUN_A {a} (baseline), RUN_B {b} (candidate), judged by {qrels}: {judged.len()} "
        f"judged queries, relevant grade >= {relevant_grade}, cutoffs "
        f"{', '.join(map(str, cutoffs))}.\n"
        f"RUN_A ranks {ranked_a} of the judged queries, RUN_B {ranked_b} (a judged query a run "
        f"does not rank returned nothing); queries not judged are left out ({unjudged_a} in "
        f"RUN_A, {unjudged_b} in RUN_B).\n"
        "Each run is ranked as trec_eval ranks it: by score descending, ties by memory_id "
        "descending.\n",
        *(f"Warning: {warning}.\n" for warning in warnings),
    ]
    for k in cutoffs:
        per_query = pl.concat(
            [
                trec_per_query(run, judgments, k=k, relevant_grade=relevant_grade).with_columns(
                    profile=pl.lit(label)
                )
                for run, label in ((first, baseline), (second, candidate))
            ]
        )
        comparisons = compare_profiles(
            per_query, profiles=[baseline, candidate], metrics=TREC_METRICS
        ).filter(pl.col("scope") == OVERALL)
        paired = comparisons.filter(pl.col("n") > 0).height > 0
        table = render_comparison_table(comparisons, k=k) if paired else "No query was paired.\n"
        heading = f"\n## k = {k}\n" if len(cutoffs) > 1 else ""
        out.append(f"{heading}\n{table}")
    return "".join(out)


def run_compare(args: argparse.Namespace) -> str:
    """The report of ``hotmem-eval compare``: two exported runs, or two TREC runs with
    ``--qrels``.

    Raises:
        UsageError, FixtureError: as ``compare_runs`` and ``compare_trec_runs``, or ``--k``
            without ``--qrels``.
    """
    if args.qrels is None:
        if args.cutoffs:
            raise UsageError("--k goes with --qrels (two TREC runs)")
        return compare_runs(Path(args.run_a), Path(args.run_b))
    return compare_trec_runs(
        Path(args.run_a),
        Path(args.run_b),
        args.qrels,
        ks=sorted(set(args.cutoffs or [10])),
        relevant_grade=args.relevant_grade,
    )
