"""Benchmark the metric engines against ranx and ir_measures (pytrec_eval), and check agreement.

Run from the repository root::

    uv run --with ranx --with ir-measures python benchmarks/metrics_bench.py
    uv run --with ranx --with ir-measures python benchmarks/metrics_bench.py --sizes 1000 10000

ranx and ir_measures are not project dependencies: ``--with`` adds them for this run only.
Without them the script still measures the polars engine and the SQL files, and says which
library it could not import.

What it does, for synthetic fixtures of 10k and 100k queries with 100 results each (plus qrels,
scopes and near-duplicate groups):

- times every engine computing its metrics, both **in memory** (inputs already loaded in the
  engine's own form: polars frames, Arrow tables for DuckDB, Python dicts for ranx and
  ir_measures; building ranx's ``Qrels``/``Run`` is counted, as it happens on every call) and
  **from Parquet** (reading the four files is counted; the polars engine is given
  ``pl.scan_parquet`` frames, so its ``rank <= k`` filter is applied while reading);
- reports the best of ``--repeats`` runs, each engine and size in its own process, so that a
  process's peak resident memory (``getrusage``) is that engine's alone;
- measures the fixed cost of one call at 1k queries (best of 20 calls);
- checks per-query agreement with ir_measures on nDCG@k, recall@k and success@k (and recall@1,
  reciprocal rank), feeding it rank-derived, tie-free scores; and the SQL files against polars.

The polars engine computes all twelve metrics (``per_query_metrics`` + ``aggregate_metrics``),
the SQL engine runs ``sql/001`` and ``sql/002``; ranx and ir_measures compute the six standard
ones they have (nDCG@k, recall@1/@k, success@1/@k, MRR@k). The output is Markdown.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hotmem_eval.fixture_schema import CATEGORIES  # noqa: E402
from hotmem_eval.metrics import aggregate_metrics, per_query_metrics  # noqa: E402
from hotmem_eval.sqlfiles import sql_metrics  # noqa: E402

K = 5
DEPTH = 100
TABLES = ("results", "qrels", "queries", "groups")
ENGINES = ("polars", "duckdb_sql", "ranx", "ir_measures")
RANX_METRICS = [f"ndcg@{K}", f"recall@{K}-l2", "recall@1-l2", f"hit_rate@{K}-l2", "hit_rate@1-l2"]
RANX_METRICS.append(f"mrr@{K}-l2")


# -- synthetic data ------------------------------------------------------------------------------


def synthetic(queries: int, depth: int = DEPTH) -> dict[str, pl.DataFrame]:
    """A deterministic fixture: every query returns ``depth`` distinct memories.

    Negative queries (category ``negative_or_no_answer``) have no grade >= 1; the others grade
    three returned memories (3, 2, 1, at ranks that vary by query, some beyond k) and one
    unreturned memory (2). A third of the queries are scoped; near-duplicate queries group
    their top slots in pairs. Scores are ``depth + 1 - rank``: tie-free, in rank order.
    """
    index = pl.int_range(queries, dtype=pl.Int64, eager=True).alias("i")
    base = pl.DataFrame(index).with_columns(
        query_id=pl.format("q{}", pl.col("i").cast(pl.String).str.zfill(7)),
        category=pl.lit(pl.Series(CATEGORIES)).gather(pl.col("i") % len(CATEGORIES)),
    )
    query_frame = base.select(
        "query_id",
        "category",
        identifier=pl.when(pl.col("i") % 3 == 0).then(pl.format("p{}", pl.col("i") % 7)),
    )
    ranks = pl.DataFrame({"rank": pl.int_range(1, depth + 1, dtype=pl.Int32, eager=True)})
    # 1_000_003 is prime, so a query's `depth` memory numbers are distinct.
    slots = base.join(ranks, how="cross").with_columns(
        memory_id=pl.format("m{}", (pl.col("i") * 7919 + pl.col("rank") * 104729) % 1_000_003),
        identifier=pl.format("p{}", (pl.col("i") + pl.col("rank")) % 7),
        score=(depth + 1 - pl.col("rank")).cast(pl.Float64),
    )
    results = slots.select("query_id", "rank", "memory_id", "identifier", "score")
    positive = pl.col("category") != "negative_or_no_answer"
    rank, first = pl.col("rank"), pl.col("i") % 11 + 1
    grade = (
        pl.when(rank == first)
        .then(3)
        .when(rank == first + 7)
        .then(2)
        .when(rank == first + 30)
        .then(1)
    )
    graded = (
        slots.filter(positive)
        .select("query_id", "memory_id", grade=grade.cast(pl.Int8))
        .drop_nulls("grade")
    )
    unreturned = base.filter(positive).select(
        "query_id", memory_id=pl.format("u{}", pl.col("i")), grade=pl.lit(2, pl.Int8)
    )
    zero = base.filter(~positive & (pl.col("i") % 2 == 0)).select(
        "query_id", memory_id=pl.format("z{}", pl.col("i")), grade=pl.lit(0, pl.Int8)
    )
    groups = slots.filter(
        (pl.col("category") == "near_duplicate_diversity") & (pl.col("rank") <= 2 * K)
    ).select(
        "query_id",
        "memory_id",
        group_id=pl.concat_str(pl.lit("g"), pl.col("i"), pl.lit("-"), pl.col("rank") // 2),
    )
    return {
        "results": results,
        "qrels": pl.concat([graded, unreturned, zero]),
        "queries": query_frame,
        "groups": groups,
    }


def write(data: dict[str, pl.DataFrame], directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, frame in data.items():
        frame.write_parquet(directory / f"{name}.parquet")


def read(directory: Path) -> dict[str, pl.DataFrame]:
    return {name: pl.read_parquet(directory / f"{name}.parquet") for name in TABLES}


def scan(directory: Path) -> dict[str, pl.LazyFrame]:
    return {name: pl.scan_parquet(directory / f"{name}.parquet") for name in TABLES}


# -- engines -------------------------------------------------------------------------------------
# Each engine has a loader (Parquet directory -> its in-memory input) and a compute step.
# "in memory" times compute(load(dir)) minus load; "parquet" times both.


def _as_dicts(data: dict[str, pl.DataFrame]) -> tuple[dict, dict]:
    qrels: dict[str, dict[str, int]] = {}
    for query_id, memory_id, grade in data["qrels"].iter_rows():
        qrels.setdefault(query_id, {})[memory_id] = int(grade)
    run: dict[str, dict[str, float]] = {}
    for query_id, memory_id, score in (
        data["results"].select("query_id", "memory_id", "score").iter_rows()
    ):
        run.setdefault(query_id, {})[memory_id] = score
    return qrels, run


def _polars(data: dict[str, pl.DataFrame]) -> Any:
    per_query = per_query_metrics(*(data[name] for name in TABLES), k=K)
    return per_query, aggregate_metrics(per_query)


def _duckdb(data: dict[str, Any]) -> Any:
    return sql_metrics(*(data[name] for name in TABLES), k=K)


def _ranx(inputs: tuple[dict, dict]) -> Any:
    import ranx

    qrels, run = inputs
    # Negative queries have no qrels; make_comparable gives them an empty judgement set.
    return ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), RANX_METRICS, make_comparable=True)


def _ranx_parquet(directory: Path) -> Any:
    import pandas as pd
    import ranx

    # ranx's own from_parquet reads through pandas too, but asserts object-dtype id columns,
    # which pandas' Arrow-backed strings are not; the cast is the only step added here.
    qrels = pd.read_parquet(directory / "qrels.parquet")
    run = pd.read_parquet(directory / "results.parquet", columns=["query_id", "memory_id", "score"])
    for frame in (qrels, run):
        frame[["query_id", "memory_id"]] = frame[["query_id", "memory_id"]].astype(object)
    qrels["grade"] = qrels["grade"].astype("int64")
    return ranx.evaluate(
        ranx.Qrels.from_df(qrels, "query_id", "memory_id", "grade"),
        ranx.Run.from_df(run, "query_id", "memory_id", "score"),
        RANX_METRICS,
        make_comparable=True,
    )


def _ir_measures_list() -> list[Any]:
    from ir_measures import RR, R, Success, nDCG

    return [
        nDCG @ K,
        R(rel=2) @ K,
        R(rel=2) @ 1,
        Success(rel=2) @ K,
        Success(rel=2) @ 1,
        RR(rel=2) @ K,
    ]


def _ir_measures(inputs: tuple[dict, dict]) -> Any:
    import ir_measures

    qrels, run = inputs
    return ir_measures.calc_aggregate(_ir_measures_list(), qrels, run)


def _ir_measures_parquet(directory: Path) -> Any:
    # Its fastest input is dicts (a pandas DataFrame is several times slower), so the Parquet
    # files are read with pyarrow into dicts.
    import pyarrow.parquet as pq

    qrels: dict[str, dict[str, int]] = {}
    table = pq.read_table(directory / "qrels.parquet").to_pydict()
    for query_id, memory_id, grade in zip(*table.values(), strict=True):
        qrels.setdefault(query_id, {})[memory_id] = grade
    run: dict[str, dict[str, float]] = {}
    columns = ["query_id", "memory_id", "score"]
    table = pq.read_table(directory / "results.parquet", columns=columns).to_pydict()
    for query_id, memory_id, score in zip(*table.values(), strict=True):
        run.setdefault(query_id, {})[memory_id] = score
    return _ir_measures((qrels, run))


Steps = tuple[Callable[[Path], Any], Callable[[Any], Any], Callable[[Path], Any]]
#: engine -> (load a Parquet directory into its input, compute in memory, compute from Parquet)
ENGINE_STEPS: dict[str, Steps] = {
    # From Parquet, results is scanned lazily: the engine's rank <= k filter reaches the scan.
    "polars": (read, _polars, lambda d: _polars(scan(d))),
    "duckdb_sql": (
        lambda d: {name: frame.to_arrow() for name, frame in read(d).items()},
        _duckdb,
        lambda d: _duckdb({name: d / f"{name}.parquet" for name in TABLES}),
    ),
    "ranx": (lambda d: _as_dicts(read(d)), _ranx, _ranx_parquet),
    "ir_measures": (lambda d: _as_dicts(read(d)), _ir_measures, _ir_measures_parquet),
}


def _peak_rss_mb() -> float:
    """This process's peak resident memory. Linux's VmHWM, which restarts at exec; ru_maxrss
    does not (a child spawned by a large parent inherits the parent's peak)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(engine: str, source: str, directory: Path, warmup: Path, repeats: int) -> dict:
    """Time one engine on one fixture, in this process; the result is one JSON-able dict."""
    load, compute, from_parquet = ENGINE_STEPS[engine]
    # A first call compiles (ranx's numba) or warms caches; it is not what is measured.
    if source == "memory":
        compute(load(warmup))
        inputs = load(directory)

        def call() -> None:
            compute(inputs)
    else:
        from_parquet(warmup)

        def call() -> None:
            from_parquet(directory)

    before = _peak_rss_mb()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return {"seconds": best, "peak_rss_mb": _peak_rss_mb(), "rss_rise_mb": _peak_rss_mb() - before}


def agreement(directory: Path) -> dict[str, Any]:
    """Max per-query |polars - ir_measures| over positive queries, and |SQL - polars|."""
    import ir_measures
    from ir_measures import R, Success, nDCG

    data = read(directory)
    per_query, aggregate = _polars(data)
    sql_per_query, sql_aggregate = _duckdb(data)
    pairs = {
        f"nDCG@{K}": (nDCG @ K, "ndcg_at_k"),
        f"R(rel=2)@{K}": (R(rel=2) @ K, "recall_at_k"),
        "R(rel=2)@1": (R(rel=2) @ 1, "recall_at_1"),
        f"Success(rel=2)@{K}": (Success(rel=2) @ K, "success_at_k"),
        f"RR(rel=2)@{K}": (ir_measures.RR(rel=2) @ K, "mrr_at_k"),
    }
    qrels, run = _as_dicts(data)
    theirs: dict[tuple[str, str], float] = {
        (str(m.measure), m.query_id): m.value
        for m in ir_measures.iter_calc([measure for measure, _ in pairs.values()], qrels, run)
    }
    out: dict[str, Any] = {}
    for label, (measure, metric) in pairs.items():
        ours = per_query.filter((pl.col("metric") == metric) & pl.col("applicable"))
        diffs = [
            abs(v - theirs[(str(measure), q)])
            for q, v in ours.select("query_id", "value").iter_rows()
        ]
        out[label] = {"queries": len(diffs), "max_abs_diff": max(diffs)}
    joined = per_query.join(sql_per_query, on=["query_id", "metric"], suffix="_sql")
    out["sql_vs_polars_per_query"] = joined.select(
        (pl.col("value") - pl.col("value_sql")).abs().max()
    ).item()
    joined = aggregate.join(sql_aggregate, on=["category", "metric"], suffix="_sql")
    out["sql_vs_polars_aggregate"] = joined.select(
        (pl.col("value") - pl.col("value_sql")).abs().max()
    ).item()
    return out


# -- orchestration -------------------------------------------------------------------------------


def _available(engine: str) -> str | None:
    """None if the engine can run here, else why not."""
    module = {"ranx": "ranx", "ir_measures": "ir_measures"}.get(engine)
    if module is None:
        return None
    try:
        __import__(module)
    except ImportError as error:
        return f"not installed ({error}); run with: uv run --with ranx --with ir-measures ..."
    return None


def _spawn(*args: str) -> dict:
    command = [sys.executable, __file__, "--worker", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per cell (best kept)")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        engine, source, directory, warmup, repeats = args.worker
        print(json.dumps(worker(engine, source, Path(directory), Path(warmup), int(repeats))))
        return

    missing = {engine: why for engine in ENGINES if (why := _available(engine))}
    with tempfile.TemporaryDirectory(prefix="metrics-bench-") as temporary:
        root = Path(temporary)
        write(synthetic(10), root / "warmup")
        for size in sorted({1000, *args.sizes}):
            write(synthetic(size), root / str(size))
        print(f"# Metric engines: top-{K}, {DEPTH} results per query\n")
        print(f"python {sys.version.split()[0]}, polars {pl.__version__}, {_versions()}\n")
        for engine, why in missing.items():
            print(f"- {engine}: {why}")
        _speed_table(root, args.sizes, args.repeats, missing)
        _fixed_cost_table(root, missing)
        if "ir_measures" not in missing:
            _agreement_table(root / str(min(args.sizes)))


def _versions() -> str:
    import importlib.metadata as metadata

    found = []
    for package in ("duckdb", "pyarrow", "ranx", "ir-measures", "pytrec-eval-terrier"):
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"{package} (absent)")
    return ", ".join(found)


def _speed_table(root: Path, sizes: list[int], repeats: int, missing: dict[str, str]) -> None:
    print("\n## Time and memory\n")
    print("| queries | input | engine | seconds | polars speed-up | peak RSS MB | RSS rise MB |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for size in sizes:
        for source in ("memory", "parquet"):
            cells: dict[str, dict] = {}
            for engine in ENGINES:
                if engine in missing:
                    continue
                slow = engine in {"ranx", "ir_measures"} and size >= 100_000
                runs = 1 if slow else repeats
                cells[engine] = _spawn(
                    engine, source, str(root / str(size)), str(root / "warmup"), str(runs)
                )
            polars_seconds = cells.get("polars", {}).get("seconds")
            for engine, cell in cells.items():
                if "error" in cell:
                    print(f"| {size:,} | {source} | {engine} | error: {cell['error']} | | | |")
                    continue
                ratio = cell["seconds"] / polars_seconds if polars_seconds else float("nan")
                print(
                    f"| {size:,} | {source} | {engine} | {cell['seconds']:.3f} | {ratio:.1f}x "
                    f"| {cell['peak_rss_mb']:.0f} | {cell['rss_rise_mb']:.0f} |"
                )
    print(
        "\n'polars speed-up' is the engine's time over the polars engine's, same size and input. "
        "Peak RSS is the worker process's high-water mark (data loading included); "
        "RSS rise is how far the timed calls raised it.\n"
    )


def _fixed_cost_table(root: Path, missing: dict[str, str]) -> None:
    print("## Fixed cost per call, 1,000 queries\n")
    print("| engine | input | ms per call (best of 20) |")
    print("|---|---|---:|")
    for engine in ENGINES:
        if engine in missing:
            continue
        cell = _spawn(engine, "memory", str(root / "1000"), str(root / "warmup"), "20")
        shown = f"{1000 * cell['seconds']:.2f}" if "seconds" in cell else cell["error"]
        print(f"| {engine} | memory | {shown} |")
    print()


def _agreement_table(directory: Path) -> None:
    result = agreement(directory)
    print(f"## Agreement, {directory.name} queries\n")
    print("| ir_measures measure | positive queries compared | max abs diff vs polars |")
    print("|---|---:|---:|")
    for label, cell in result.items():
        if isinstance(cell, dict):
            print(f"| {label} | {cell['queries']:,} | {cell['max_abs_diff']:.1e} |")
    print(
        f"\nSQL files vs polars engine: max abs diff {result['sql_vs_polars_per_query']:.1e} "
        f"per query, {result['sql_vs_polars_aggregate']:.1e} per category."
    )


if __name__ == "__main__":
    main()
