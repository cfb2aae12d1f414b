"""Agreement with ir_measures: the evaluator's per-query metrics against trec_eval's definitions.

Run: ``uv run python benchmarks/collections/agreement.py EXPORT_DIR [--relevant-grade 1]
[--order score|rank] [--tolerance 1e-9] [--show 20]``.

``EXPORT_DIR`` is an export directory of ``hotmem-eval``: ``runs/<profile>.trec`` (six columns
``query_id Q0 memory_id rank score run_name``), ``qrels.trec`` (``query_id 0 memory_id grade``)
and ``per_query_metrics.parquet`` (columns ``profile``, ``k``, ``query_id``, ``metric``,
``value``, ...). For every profile and k in the parquet file, ir_measures scores that profile's
run against the qrels with the measures below (``rel`` = ``--relevant-grade``, the grade from
which a memory counts as relevant; use the grade the evaluation ran with), and each of our
values is compared with ir_measures' value for the same query (a difference is a gap larger
than ``--tolerance``), then our mean with the mean of ir_measures' values over the same
queries. Rows where our value is null (the metric does not apply: a query with no relevant
memory) are not compared; ir_measures gives those queries a value (0 where nothing relevant
exists), counted as ``ir_measures only``.

=================  ==========================  ==========================
our metric         ir_measures measure         trec_eval
=================  ==========================  ==========================
``ndcg_at_k``      ``nDCG@k``                  ``ndcg_cut.k`` (grade = gain)
``recall_at_k``    ``R(rel=g)@k``              ``recall.k -l g``
``mrr_at_k``       ``RR(rel=g)@k``             (ir_measures' msmarco provider)
``precision_at_k`` ``P(rel=g)@k``              ``P.k -l g``
``ap_at_k``        ``AP(rel=g)@k``             ``map_cut.k -l g``
=================  ==========================  ==========================

``--order score`` (the default) gives ir_measures the runs as written: it orders each query's
documents by score and ignores the rank column, so tied scores are ordered by document id —
descending for the measures run by pytrec_eval (trec_eval's rule), ascending for ``RR@k`` (its
msmarco provider). ``--order rank`` replaces every score by ``-rank`` so that ir_measures follows
the run's own order: a difference that remains is one of definition, not of tie order. A
difference on a query whose top k holds tied scores is marked ``tied``.

Prints one line per (profile, k, metric), the differences (the first ``--show``), and the total;
exits 0 when there is none, 1 when there are differences, 2 when an input is missing or
malformed (``path:line: reason``).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import ir_measures
import polars as pl
from ir_measures import AP, RR, P, R, ScoredDoc, nDCG

METRICS = ("ndcg_at_k", "recall_at_k", "mrr_at_k", "precision_at_k", "ap_at_k")


class InputError(Exception):
    """An export file is missing or malformed: the message is ``path:line: reason``."""


@dataclass(frozen=True, slots=True)
class Slot:
    query_id: str
    doc_id: str
    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class Difference:
    profile: str
    k: int
    metric: str
    query_id: str
    ours: float
    theirs: float | None  # None: ir_measures gave this query no value
    tied: bool


@dataclass(frozen=True, slots=True)
class Row:
    profile: str
    k: int
    metric: str
    queries: int
    ours: float
    theirs: float
    differences: int
    theirs_only: int


def measure(metric: str, k: int, relevant_grade: int) -> object:
    """The ir_measures measure of our ``metric`` at cutoff ``k`` (the table above)."""
    by_name = {
        "ndcg_at_k": nDCG @ k,
        "recall_at_k": R(rel=relevant_grade) @ k,
        "mrr_at_k": RR(rel=relevant_grade) @ k,
        "precision_at_k": P(rel=relevant_grade) @ k,
        "ap_at_k": AP(rel=relevant_grade) @ k,
    }
    return by_name[metric]


def read_run(path: Path) -> list[Slot]:
    """The slots of a six-column TREC run file, in file order."""
    slots = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror})") from error
    for number, line in enumerate(lines, start=1):
        parts = line.split()
        try:
            query_id, _, doc_id, rank, score, _ = parts
            slots.append(Slot(query_id, doc_id, int(rank), float(score)))
        except ValueError as error:
            expected = "six columns 'query Q0 doc rank score run'"
            raise InputError(f"{path}:{number}: expected {expected}, found {line!r}") from error
    return slots


def tied_queries(slots: Iterable[Slot], depth: int) -> set[str]:
    """Queries where a slot ranked within ``depth`` shares its score with another slot."""
    counts = Counter((slot.query_id, slot.score) for slot in slots)
    return {s.query_id for s in slots if s.rank <= depth and counts[s.query_id, s.score] > 1}


def scored_docs(slots: list[Slot], order: str) -> list[ScoredDoc]:
    """The run as ir_measures reads it: scores as written, or ``-rank`` (``order="rank"``)."""
    if order == "rank":
        return [ScoredDoc(s.query_id, s.doc_id, float(-s.rank)) for s in slots]
    return [ScoredDoc(s.query_id, s.doc_id, s.score) for s in slots]


def read_ours(path: Path) -> pl.DataFrame:
    """Our applicable per-query values of the compared metrics."""
    try:
        frame = pl.read_parquet(path, columns=["profile", "k", "query_id", "metric", "value"])
    except (OSError, pl.exceptions.PolarsError) as error:
        raise InputError(f"{path}: not a per-query metrics file ({error})") from error
    return frame.filter(pl.col("metric").is_in(METRICS) & pl.col("value").is_not_null())


def compare_profile(
    ours: pl.DataFrame,
    qrels: list[object],
    slots: list[Slot],
    *,
    grade: int,
    order: str,
    tolerance: float,
) -> tuple[list[Row], list[Difference]]:
    """Compare one profile's rows of ``ours`` (every k) with ir_measures on its run."""
    rows: list[Row] = []
    differences: list[Difference] = []
    run = scored_docs(slots, order)
    for (profile, k), at_k in ours.group_by("profile", "k", maintain_order=True):
        tied = tied_queries(slots, int(k))
        wanted = {m: measure(m, int(k), grade) for m in at_k["metric"].unique(maintain_order=True)}
        theirs: dict[tuple[object, str], float] = {
            (result.measure, result.query_id): result.value
            for result in ir_measures.iter_calc(list(wanted.values()), qrels, run)
        }
        for metric, target in wanted.items():
            mine = at_k.filter(pl.col("metric") == metric).select("query_id", "value")
            values = {q: t for (m, q), t in theirs.items() if m == target}
            row, found = _compare_metric(
                (str(profile), int(k), metric), mine.iter_rows(), values, tied, tolerance
            )
            rows.append(row)
            differences += found
    return rows, differences


def _compare_metric(
    key: tuple[str, int, str],
    mine: Iterable[tuple[str, float]],
    theirs: dict[str, float],
    tied: set[str],
    tolerance: float,
) -> tuple[Row, list[Difference]]:
    """One (profile, k, metric): our values against ir_measures' ``theirs`` by query."""
    pairs = [(query, value, theirs.get(query)) for query, value in mine]
    found = [
        Difference(*key, query, value, other, query in tied)
        for query, value, other in pairs
        if other is None or not math.isclose(value, other, rel_tol=0.0, abs_tol=tolerance)
    ]
    count = max(len(pairs), 1)
    row = Row(
        *key,
        queries=len(pairs),
        ours=sum(value for _, value, _ in pairs) / count,
        theirs=sum(other or 0.0 for _, _, other in pairs) / count,
        differences=len(found),
        theirs_only=len(theirs.keys() - {query for query, _, _ in pairs}),
    )
    return row, found


def reported_means(path: Path) -> dict[tuple[str, int, str], float]:
    """The ``overall`` rows of ``category_metrics.parquet``, if it exists with a ``k`` column."""
    if not path.is_file():
        return {}
    frame = pl.read_parquet(path)
    if not {"profile", "k", "category", "metric", "value"} <= set(frame.columns):
        return {}
    overall = frame.filter((pl.col("category") == "overall") & pl.col("value").is_not_null())
    return {
        (str(p), int(k), str(m)): float(v)
        for p, k, m, v in overall.select("profile", "k", "metric", "value").iter_rows()
    }


def agreement(
    export: Path, *, grade: int, order: str, tolerance: float
) -> tuple[list[Row], list[Difference]]:
    """Every (profile, k, metric) row and every per-query difference of ``export``."""
    ours = read_ours(export / "per_query_metrics.parquet")
    qrels_path = export / "qrels.trec"
    if not qrels_path.is_file():
        raise InputError(f"{qrels_path}: missing")
    try:
        qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    except (ValueError, IndexError) as error:
        raise InputError(f"{qrels_path}: not a TREC qrels file ({error})") from error
    rows: list[Row] = []
    differences: list[Difference] = []
    for profile in ours["profile"].unique(maintain_order=True):
        slots = read_run(export / "runs" / f"{profile}.trec")
        mine = ours.filter(pl.col("profile") == profile)
        found = compare_profile(mine, qrels, slots, grade=grade, order=order, tolerance=tolerance)
        rows += found[0]
        differences += found[1]
    return rows, differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export", type=Path, help="an export directory of hotmem-eval")
    parser.add_argument("--relevant-grade", type=int, default=1)
    parser.add_argument("--order", choices=("score", "rank"), default="score")
    parser.add_argument("--tolerance", type=float, default=1e-9)
    parser.add_argument("--show", type=int, default=20, help="differences printed (default 20)")
    args = parser.parse_args(argv)
    try:
        rows, differences = agreement(
            args.export, grade=args.relevant_grade, order=args.order, tolerance=args.tolerance
        )
    except InputError as error:
        print(f"agreement: {error}", file=sys.stderr)
        return 2
    reported = reported_means(args.export / "category_metrics.parquet")
    print(f"ir_measures {ir_measures.__version__}, rel={args.relevant_grade}, order={args.order}")
    print("profile\tk\tmetric\tqueries\tours\tir_measures\treported\tdifferences\tir_measures only")
    mean_gaps = 0
    for row in rows:
        shown = reported.get((row.profile, row.k, row.metric))
        gaps = [row.ours] + ([shown] if shown is not None else [])
        mean_gaps += any(abs(g - row.theirs) > args.tolerance for g in gaps)
        print(
            f"{row.profile}\t{row.k}\t{row.metric}\t{row.queries}\t{row.ours:.6f}\t"
            f"{row.theirs:.6f}\t{'' if shown is None else f'{shown:.6f}'}\t"
            f"{row.differences}\t{row.theirs_only}"
        )
    for difference in differences[: args.show]:
        theirs = "absent" if difference.theirs is None else repr(difference.theirs)
        print(
            f"  {difference.profile} k={difference.k} {difference.metric} "
            f"query {difference.query_id!r}: ours {difference.ours!r}, ir_measures {theirs}"
            + (" (a score in its top k is tied)" if difference.tied else "")
        )
    print(f"{len(differences)} per-query differences, {mean_gaps} mean differences")
    return 0 if not differences and not mean_gaps else 1


if __name__ == "__main__":
    sys.exit(main())
