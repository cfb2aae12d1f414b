"""The whole evaluation command, cold, on the committed fixture: wall time and where it goes.

Run: ``uv run python benchmarks/eval_bench.py [--runs 5]``

1. Wall time of ``python scripts/retrieval_eval.py --output ... --report ...`` in a fresh
   process, from spawn to exit (best and median of ``--runs``), with the bare interpreter's
   start-up for context. Target: under 2 s.
2. A breakdown of one run in-process: imports, fixture loading, ingest, queries, failure
   attribution, transfer (snapshot, verify, hydrate, cold-start process, re-run), metrics,
   rendering and writing.

Figures are local diagnostics for this machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "retrieval_eval.py"


def wall(argv: list[str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return samples


def breakdown() -> list[tuple[str, float]]:
    steps: list[tuple[str, float]] = []
    clock = time.perf_counter()

    def lap(label: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        steps.append((label, now - clock))
        clock = now

    sys.path.insert(0, str(ROOT))
    import polars as pl

    import hotmem  # noqa: F401
    from hotmem_eval import attribution, ingest, metrics, runner, transfer
    from hotmem_eval.baseline import normalise
    from hotmem_eval.decision import recommend
    from hotmem_eval.evaluate import EvalRun, evidence_from
    from hotmem_eval.fixtures import load_fixture
    from hotmem_eval.report import render_markdown
    from hotmem_eval.result_document import build_result

    lap("imports (polars, pyarrow, hotmem, hotmem_eval)")
    fixture = load_fixture(
        ROOT / "benchmarks/retrieval/corpus.jsonl", ROOT / "benchmarks/retrieval/queries.jsonl"
    )
    lap("load and validate the fixture")
    with tempfile.TemporaryDirectory() as tmp:
        store = ingest.open_fixture_store(Path(tmp) / "source.db", fixture.corpus)
        lap("ingest into a temporary store")
        run = runner.run_queries(store, fixture.queries, top_k=5)
        lap("search every query")
        misses = attribution.attribute_misses(
            store, fixture.queries, fixture.qrels, run.results, top_k=5
        )
        lap("attribute misses")
        outcome = transfer.run_transfer(store, fixture.queries, run.results, Path(tmp), top_k=5)
        lap("transfer (snapshot, verify, hydrate, cold start, re-run)")
        store.close()
    results = pl.from_arrow(run.results)
    per_query = metrics.per_query_metrics(
        results, fixture.qrels, fixture.queries, fixture.groups, k=5
    )
    aggregate = metrics.aggregate_metrics(per_query)
    evidence = evidence_from(aggregate, outcome, top_k=5)
    lap("metrics (polars) and decision")
    evaluation = EvalRun(
        fixture,
        5,
        1,
        results,
        per_query,
        aggregate,
        tuple(misses),
        outcome,
        run.latencies_ms,
        0.0,
        evidence,
        recommend(evidence),
    )
    from datetime import UTC, datetime

    document = build_result([evaluation], generated_at=datetime.now(UTC), git_commit=None)
    render_markdown(document)
    normalise(document)
    lap("JSON document, Markdown report, baseline normalisation")
    steps.append(
        (
            "  of which: snapshot / verify / hydrate / cold start",
            outcome.snapshot_s + outcome.verify_s + outcome.hydrate_s + outcome.cold_start_s,
        )
    )
    steps.append(("  of which: cold-start process alone", outcome.cold_start_s))
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable,
            str(SCRIPT),
            "--output",
            f"{tmp}/result.json",
            "--report",
            f"{tmp}/report.md",
        ]
        whole = wall(command, args.runs)
        bare = wall([sys.executable, "-c", "pass"], args.runs)
    print("| measure | best (s) | median (s) |")
    print("|---|---:|---:|")
    print(
        f"| whole command, cold process to written report | {min(whole):.3f} "
        f"| {statistics.median(whole):.3f} |"
    )
    print(f"| bare `python -c pass` | {min(bare):.3f} | {statistics.median(bare):.3f} |")
    print()
    print("| step (one in-process run) | seconds |")
    print("|---|---:|")
    for label, seconds in breakdown():
        print(f"| {label} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
