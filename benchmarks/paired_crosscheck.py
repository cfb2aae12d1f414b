"""Cross-check the paired sign-flip test against ranx's Fisher randomization test, and time the
comparison builder.

Run from the repository root::

    uv run --with ranx python benchmarks/paired_crosscheck.py

ranx is not a project dependency: ``--with`` adds it for this run only (without it the script
still times the builder and says it could not import ranx).

The per-query values are real: the committed fixture's queries are searched through the public
``hotmem.search_memories`` with the production weights (``default``) and with one fusion weight
set to 0 at a time (``no-cosine``, ``no-bm25``, ``no-importance``), and scored by
``per_query_metrics``. These are weight variants for the cross-check, not the retrieval
profiles of issue 14. For every (candidate, scope, metric) with at least one non-zero
difference, the same baseline and candidate vectors are given to both tests.

What ranx computes (``ranx/statistical_tests/fisher_randomization_test.py``): for each of
``n_permutations`` rounds it swaps each query's (control, treatment) pair with probability 1/2
(a sign flip of the difference), and counts the rounds with
``|mean(permuted control) - mean(permuted treatment)| >= |mean(control) - mean(treatment)|``:
two-sided, with no tolerance, and p = count / n_permutations (no +1 correction). Its zero
differences are flipped too, which changes nothing. Agreement is judged against the Monte-Carlo
standard errors: ``|ours - ranx| <= 4 * (se_ranx + se_ours) + 1 / n_permutations``, with
``se = sqrt(p (1 - p) / N)`` (se_ours is 0 for the exact test).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import hotmem  # noqa: E402
from hotmem_eval.comparison import compare_profiles, paired_deltas  # noqa: E402
from hotmem_eval.comparison_report import render_ablation_table  # noqa: E402
from hotmem_eval.fixtures import load_fixture  # noqa: E402
from hotmem_eval.ingest import open_fixture_store  # noqa: E402
from hotmem_eval.metrics import per_query_metrics  # noqa: E402
from hotmem_eval.paired import EXACT_LIMIT, PERMUTATIONS, TOLERANCE, sign_flip_test  # noqa: E402
from hotmem_eval.runner import RESULTS_SCHEMA, result_rows  # noqa: E402

FIXTURE = ROOT / "benchmarks" / "retrieval"
K = 5
W = hotmem.WEIGHTS
VARIANTS = {
    "default": W,
    "no-cosine": hotmem.Weights(cosine=0.0, bm25=W.bm25, importance=W.importance),
    "no-bm25": hotmem.Weights(cosine=W.cosine, bm25=0.0, importance=W.importance),
    "no-importance": hotmem.Weights(cosine=W.cosine, bm25=W.bm25, importance=0.0),
}


def variant_per_query(fixture_dir: Path) -> pl.DataFrame:
    """Per-query metrics of every weight variant, stacked with a ``profile`` column."""
    fixture = load_fixture(fixture_dir / "corpus.jsonl", fixture_dir / "queries.jsonl")
    queries = fixture.queries.select(["query_id", "query", "identifier"]).to_pylist()
    frames = []
    with tempfile.TemporaryDirectory() as workdir:
        store = open_fixture_store(Path(workdir) / "store.db", fixture.corpus)
        with store:
            for name, weights in VARIANTS.items():
                rows: list[dict[str, object]] = []
                for query in queries:
                    found = hotmem.search_memories(
                        store,
                        query["query"],
                        identifier=query["identifier"],
                        limit=K,
                        weights=weights,
                    )
                    rows.extend(result_rows(query["query_id"], found))
                results = pl.DataFrame(pa.Table.from_pylist(rows, schema=RESULTS_SCHEMA))
                metrics = per_query_metrics(
                    results, fixture.qrels, fixture.queries, fixture.groups, k=K
                )
                frames.append(metrics.with_columns(profile=pl.lit(name)))
    return pl.concat(frames)


def strict_p(differences: np.ndarray) -> float | None:
    """The exact share of sign assignments with |sum| strictly above the observed |sum|.

    The p-value a test gets that counts no tied assignment; None past ``EXACT_LIMIT``.
    """
    values = differences[np.abs(differences) > TOLERANCE]
    if len(values) > EXACT_LIMIT:
        return None
    if len(values) == 0:
        return 0.0
    sums = np.array([0.0])
    for value in values:
        sums = np.concatenate((sums + value, sums - value))
    observed = abs(sums[0])
    return int(np.count_nonzero(np.abs(sums) > observed + TOLERANCE)) / len(sums)


def compare_p(
    key: dict[str, object], control: np.ndarray, treatment: np.ndarray, permutations: int
) -> dict[str, object] | None:
    """Both p-values of one pair of vectors, or None when every difference is zero."""
    from ranx.statistical_tests import fisher_randomization_test

    ours = sign_flip_test((treatment - control).tolist())
    if ours.nonzero == 0:
        return None
    theirs, _ = fisher_randomization_test(control, treatment, permutations, 0.05, 42)
    theirs = float(theirs)
    p = ours.p_value
    strict = strict_p(treatment - control)
    se_ours = 0.0 if ours.method == "exact" else math.sqrt(p * (1 - p) / PERMUTATIONS)
    se_ranx = math.sqrt(p * (1 - p) / permutations)
    bound = 4 * (se_ours + se_ranx) + 1 / permutations
    low = p if strict is None else strict
    return {
        **key,
        "n": len(control),
        "nonzero": ours.nonzero,
        "method": ours.method,
        "ours": p,
        "strict": strict,
        "ranx": theirs,
        "difference": abs(p - theirs),
        "bound": bound,
        "agree": abs(p - theirs) <= bound,
        "between": low - bound <= theirs <= p + bound,
    }


def crosscheck(per_query: pl.DataFrame, permutations: int) -> list[dict[str, object]]:
    """One row per (candidate, scope, metric) with a non-zero difference: both p-values."""
    deltas = paired_deltas(per_query, profiles=list(VARIANTS))
    scoped = pl.concat(
        [
            deltas.with_columns(scope=pl.lit("overall")),
            deltas.with_columns(scope=pl.col("category")),
        ]
    )
    rows = []
    for (candidate, scope, metric), part in scoped.group_by(
        "candidate", "scope", "metric", maintain_order=True
    ):
        part = part.sort("query_id")
        row = compare_p(
            {"case": f"{candidate} {scope} {metric}"},
            part["baseline_value"].to_numpy().astype(np.float64),
            part["candidate_value"].to_numpy().astype(np.float64),
            permutations,
        )
        if row is not None:
            rows.append(row)
    return rows


def synthetic(permutations: int) -> list[dict[str, object]]:
    """Scenarios with more than 20 non-zero differences (the Monte-Carlo path).

    Values are multiples of 1/8, so every sum and mean is exact in both implementations.
    """
    rng = np.random.default_rng(20261201)
    rows = []
    for n, shift in ((30, 0.0), (30, 0.125), (80, 0.0), (80, 0.0625), (200, 0.03125)):
        control = rng.integers(0, 9, n) / 8
        noise = rng.integers(-2, 3, n) / 8
        treatment = np.clip(control + noise + np.where(rng.random(n) < shift * 8, 0.125, 0), 0, 1)
        row = compare_p(
            {"case": f"synthetic n={n} shift={shift}"}, control, treatment, permutations
        )
        if row is not None:
            rows.append(row)
    return rows


def print_table(rows: list[dict[str, object]]) -> None:
    print("| case | n | non-zero | method | ours | strict | ranx | abs diff | bound | agree |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---|")
    for row in rows:
        strict = "–" if row["strict"] is None else f"{row['strict']:.5f}"
        verdict = "yes" if row["agree"] else "tie" if row["between"] else "NO"
        print(
            f"| {row['case']} | {row['n']} | {row['nonzero']} | {row['method']} | "
            f"{row['ours']:.5f} | {strict} | {row['ranx']:.5f} | {row['difference']:.5f} | "
            f"{row['bound']:.5f} | {verdict} |"
        )
    agree = sum(1 for row in rows if row["agree"])
    ties = sum(1 for row in rows if not row["agree"] and row["between"])
    print()
    print(
        f"{agree} of {len(rows)} agree within the bound; {ties} more lie between the strict and "
        f"our p-value (ranx lost tied assignments); {len(rows) - agree - ties} disagree."
    )


def noisy(per_query: pl.DataFrame, profiles: list[str]) -> pl.DataFrame:
    """The baseline's rows under every name, each candidate's values moved on every query.

    The worst case for the builder: every overall comparison has more than 20 non-zero
    differences (Monte-Carlo), every category about ten (exact).
    """
    base = per_query.filter(pl.col("profile") == profiles[0])
    frames = [base]
    for position, name in enumerate(profiles[1:], start=1):
        rng = np.random.default_rng(position)
        shift = pl.Series(rng.choice([-0.25, 0.125, 0.25, 0.5], base.height))
        frames.append(
            base.with_columns(
                profile=pl.lit(name),
                value=(pl.col("value") + shift).clip(0.0, 1.0),
            )
        )
    return pl.concat(frames)


def time_builder(per_query: pl.DataFrame, repeats: int) -> list[float]:
    """Seconds of each of ``repeats`` calls of ``compare_profiles``."""
    profiles = list(dict.fromkeys(per_query["profile"].to_list()))
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        compare_profiles(per_query, profiles=profiles)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--permutations", type=int, default=100_000, help="ranx's rounds")
    parser.add_argument("--repeats", type=int, default=7, help="timed builder calls")
    parser.add_argument("--fixture", type=Path, default=FIXTURE)
    args = parser.parse_args()
    per_query = variant_per_query(args.fixture)
    queries = per_query["query_id"].n_unique()
    three = ["default", "no-cosine", "no-bm25"]
    cases = {
        "weight variants": per_query.filter(pl.col("profile").is_in(three)),
        "every query moved (worst case)": noisy(per_query, three),
    }
    print(f"compare_profiles: 3 profiles (2 candidates) x {queries} queries, 126 rows")
    print()
    print("| input | best (s) | median (s) | Monte-Carlo rows |")
    print("|---|---:|---:|---:|")
    for name, frame in cases.items():
        times = time_builder(frame, args.repeats)
        profiles = list(dict.fromkeys(frame["profile"].to_list()))
        carlo = compare_profiles(frame, profiles=profiles)["method"].eq("monte-carlo").sum()
        print(f"| {name} | {min(times):.3f} | {statistics.median(times):.3f} | {carlo} |")
    print()
    print("Each fusion weight set to 0 in turn, against the production weights:")
    print()
    comparisons = compare_profiles(per_query, profiles=list(VARIANTS))
    labels = {name: f"{name[3:]} weight" for name in VARIANTS if name.startswith("no-")}
    print(render_ablation_table(comparisons, k=K, labels=labels), end="")
    try:
        real = crosscheck(per_query, args.permutations)
        made = synthetic(args.permutations)
    except ImportError as error:
        print(f"ranx not importable ({error}); run with `uv run --with ranx ...`")
        return
    print()
    print(f"ranx fisher_randomization_test, n_permutations={args.permutations}, seed 42")
    print()
    print("Weight variants on the committed fixture (candidate, scope, metric):")
    print()
    print_table(real)
    print()
    print("Synthetic values, multiples of 1/8 (the Monte-Carlo path):")
    print()
    print_table(made)


if __name__ == "__main__":
    main()
