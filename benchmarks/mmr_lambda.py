"""Choose the MMR reranker's lambda by evidence: every lambda of a grid on both fixtures.

Run from the repository root::

    uv run python benchmarks/mmr_lambda.py

For each fixture (the committed one, then the public kgh fixture) the corpus is ingested once
into a temporary store, and every query is searched through the production path
(``hotmem_eval.runner.run_queries`` with ``profile=``, as the evaluator runs them) under
``default`` and under ``default`` with ``hotmem.MMR(lambda_, pool=20)`` for each lambda of the
grid. ``per_query_metrics`` and ``aggregate_metrics`` score the runs, and
``compare_profiles`` pairs each MMR run with ``default`` per query.

The rule that picks the default lambda reads the committed fixture only: the lambda < 1 with
the largest alpha-nDCG@5 gain over ``default`` on near_duplicate_diversity among those that lose
no Recall@5 (category mean, exactly) in any other category; the largest lambda wins a tie. When
none gains without a loss, the script says so, and names the fallback that ``default+mmr``
ships with: the lambda < 1 with the smallest alpha-nDCG@5 loss among those losing no Recall@5
in another category (the least harmful, not an improvement). The kgh figures are reported,
never used.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import hotmem  # noqa: E402
from hotmem_eval.comparison import compare_profiles  # noqa: E402
from hotmem_eval.fixture_schema import DUPLICATE_CATEGORY  # noqa: E402
from hotmem_eval.fixtures import Fixture, load_fixture  # noqa: E402
from hotmem_eval.ingest import open_fixture_store  # noqa: E402
from hotmem_eval.metrics import aggregate_metrics, per_query_metrics  # noqa: E402
from hotmem_eval.runner import run_queries  # noqa: E402

K = 5
POOL = 20
GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
FIXTURES = {
    "committed": ROOT / "benchmarks" / "retrieval",
    "kgh": ROOT / "benchmarks" / "retrieval" / "external" / "kgh-retrieval",
}
#: column -> metric, in the order the table shows them.
SHOWN = {
    "recall@5": "recall_at_k",
    "nDCG@5": "ndcg_at_k",
    "group_recall@5": "group_recall_at_k",
    "alpha_nDCG@5": "alpha_ndcg_at_k",
    "dup_slots@5": "duplicate_slot_rate_at_k",
}


def profiles(grid: tuple[float, ...], pool: int) -> list[hotmem.Profile]:
    """``default``, then ``default`` with MMR at each lambda of ``grid``."""
    base = hotmem.PROFILES["default"]
    return [base] + [
        hotmem.Profile.from_mapping(
            f"mmr-{value:.1f}",
            {**base.to_dict(), "reranker": {"kind": "mmr", "lambda": value, "pool": pool}},
        )
        for value in grid
    ]


def per_query(fixture: Fixture, chosen: list[hotmem.Profile]) -> pl.DataFrame:
    """Per-query metrics of every profile on ``fixture``, stacked with a ``profile`` column."""
    frames = []
    with (
        tempfile.TemporaryDirectory() as workdir,
        open_fixture_store(Path(workdir) / "source.db", fixture.corpus) as store,
    ):
        for profile in chosen:
            run = run_queries(store, fixture.queries, top_k=K, profile=profile)
            frame = per_query_metrics(
                pl.DataFrame(run.results), fixture.qrels, fixture.queries, fixture.groups, k=K
            )
            frames.append(frame.with_columns(profile=pl.lit(profile.name)))
    return pl.concat(frames)


def table(stacked: pl.DataFrame, names: list[str]) -> pl.DataFrame:
    """One row per (category, profile): the ``SHOWN`` metrics of ``aggregate_metrics``."""
    rows = []
    for name in names:
        aggregate = aggregate_metrics(stacked.filter(pl.col("profile") == name).drop("profile"))
        for category in aggregate["category"].unique(maintain_order=True).to_list():
            cell = aggregate.filter(pl.col("category") == category)
            values = dict(zip(cell["metric"], cell["value"], strict=True))
            rows.append(
                {"category": category, "profile": name}
                | {column: values.get(metric) for column, metric in SHOWN.items()}
            )
    return pl.DataFrame(rows).sort("category", maintain_order=True)


def recall_losses(stacked: pl.DataFrame, names: list[str]) -> pl.DataFrame:
    """Per candidate and category, the paired Recall@5 change against ``default``."""
    compared = compare_profiles(stacked, profiles=names)
    return compared.filter(pl.col("metric") == "recall_at_k").select(
        "candidate", "scope", "n", "delta", "wins", "losses", "p_value", "p_adjusted"
    )


def choose(shown: pl.DataFrame, names: list[str]) -> tuple[str | None, str | None, str]:
    """The rule of the module docstring: the chosen profile name (or ``None``), the
    fallback (or ``None``), and why."""

    def value(category: str, name: str, column: str) -> float:
        cell = shown.filter((pl.col("category") == category) & (pl.col("profile") == name))
        found = cell[column][0]
        return 0.0 if found is None else float(found)

    others = [
        c for c in shown["category"].unique().to_list() if c not in (DUPLICATE_CATEGORY, "overall")
    ]
    base_alpha = value(DUPLICATE_CATEGORY, "default", "alpha_nDCG@5")
    best: tuple[float, float, str] | None = None
    fallback: tuple[float, float, str] | None = None
    lines = []
    for name in names[1:]:
        gain = value(DUPLICATE_CATEGORY, name, "alpha_nDCG@5") - base_alpha
        lost = [c for c in others if value(c, name, "recall@5") < value(c, "default", "recall@5")]
        lines.append(
            f"{name}: alpha-nDCG@5 gain {gain:+.4f}; Recall@5 lost in "
            f"{', '.join(lost) if lost else 'no other category'}"
        )
        lambda_ = float(name.removeprefix("mmr-"))
        if lost or lambda_ >= 1.0:
            continue
        candidate = (gain, lambda_, name)
        if gain > 0:
            best = candidate if best is None or candidate[:2] > best[:2] else best
        fallback = candidate if fallback is None or candidate[:2] > fallback[:2] else fallback
    return (
        None if best is None else best[2],
        None if fallback is None else fallback[2],
        "\n".join(lines),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=int, default=POOL)
    args = parser.parse_args()
    names: list[str] = []
    pl.Config.set_tbl_rows(200)
    pl.Config.set_tbl_cols(20)
    pl.Config.set_tbl_width_chars(200)
    pl.Config.set_float_precision(4)
    for label, folder in FIXTURES.items():
        fixture = load_fixture(folder / "corpus.jsonl", folder / "queries.jsonl")
        chosen = profiles(GRID, args.pool)
        names = [p.name for p in chosen]
        stacked = per_query(fixture, chosen)
        shown = table(stacked, names)
        print(f"## {label} fixture (pool {args.pool}, k {K})\n")
        print(shown)
        print("\nPaired Recall@5 against default (candidate - default):\n")
        print(recall_losses(stacked, names).filter(pl.col("delta") != 0))
        picked, fallback, why = choose(shown, names)
        print(f"\n{why}")
        if label == "committed":
            print(f"rule (committed fixture only): {picked or 'no lambda gains without a loss'}")
            if picked is None:
                print(f"fallback, the least harmful: {fallback or 'none'}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
