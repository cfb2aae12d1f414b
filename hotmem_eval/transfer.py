"""Transfer invariance: snapshot, verify, hydrate into a clean target, and compare retrieval.

Also times each step and a cold start (a fresh process opens the hydrated store and answers
one query), as local diagnostics. A run of several profiles makes one package and one
hydrated store (``transfer_package``) and re-runs each profile's queries there
(``rerun_transfer``): the package does not depend on the profile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

import hotmem
from hotmem_eval.errors import EvalError
from hotmem_eval.runner import rows_by_query, run_queries

__all__ = [
    "TRANSFER_SCHEMA",
    "Package",
    "TransferOutcome",
    "compare_results",
    "rerun_transfer",
    "run_transfer",
    "transfer_package",
]

#: One row per (query, rank) present in either run: the transfer comparison export.
_TRANSFER_FIELDS: list[pa.Field[Any]] = [
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("rank", pa.int32(), nullable=False),
    pa.field("source_memory_id", pa.string(), nullable=True),
    pa.field("hydrated_memory_id", pa.string(), nullable=True),
    pa.field("source_score", pa.float64(), nullable=True),
    pa.field("hydrated_score", pa.float64(), nullable=True),
    pa.field("same_memory", pa.bool_(), nullable=False),
    pa.field("same_score", pa.bool_(), nullable=False),
]
TRANSFER_SCHEMA = pa.schema(_TRANSFER_FIELDS)

_COLD_START = """
import sys
import hotmem
with hotmem.open_store(sys.argv[1]) as store:
    found = hotmem.search_memories(store, sys.argv[2], limit=5)
print(len(found), flush=True)
"""


def _drift(query_id: str, a: list[Any], b: list[Any]) -> dict[str, object]:
    """How the results of ``query_id`` differ: other ids, the same in another order, or other
    scores, and the largest score difference."""
    ids_a, ids_b = [r["memory_id"] for r in a], [r["memory_id"] for r in b]
    kind = ("order" if sorted(ids_a) == sorted(ids_b) else "ids") if ids_a != ids_b else "score"
    worst = max((abs(x["score"] - y["score"]) for x, y in zip(a, b, strict=False)), default=0.0)
    return {
        "query_id": query_id,
        "kind": kind,
        "source_ids": ids_a,
        "hydrated_ids": ids_b,
        "max_score_difference": worst,
    }


def _slotted(run: pa.Table, query_ids: list[str]) -> pl.DataFrame:
    """The rows of ``run`` for ``query_ids``, each with its slot (its place in its query's
    ranking, from 1) and its query's place in ``query_ids``."""
    order = pl.DataFrame(
        {"query_id": query_ids, "_query": range(len(query_ids))},
        schema={"query_id": pl.String, "_query": pl.Int64},
    )
    return (
        pl.DataFrame(run)
        .join(order, on="query_id")
        .sort("_query", "rank")
        .with_columns(_slot=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("_query"))
    )


def _equal(slots: pl.DataFrame, column: str) -> pl.Expr:
    """Whether ``column`` holds the same value in both runs, as Python's ``==`` says it (two
    nulls are equal, a NaN equals nothing; polars would call two NaN equal)."""
    equal = pl.col(column).eq_missing(pl.col(f"{column}_h"))
    if slots.schema[column].is_float():
        return equal & ~pl.col(column).is_nan().fill_null(False)
    return equal


def compare_results(
    source: pa.Table, hydrated: pa.Table, query_ids: list[str]
) -> tuple[pa.Table, tuple[dict[str, object], ...], int]:
    """Compare two runs slot by slot; return the comparison rows (one per slot of either run,
    in ``query_ids`` order), per-query drift, and the number of queries whose ordered ids,
    scores and components are identical."""
    before, after = _slotted(source, query_ids), _slotted(hydrated, query_ids)
    columns = [c for c in before.columns if c not in ("query_id", "_query", "_slot")]
    slots = before.join(after, on=["_query", "_slot"], how="full", suffix="_h", coalesce=True).sort(
        "_query", "_slot"
    )
    both = pl.col("memory_id").is_not_null() & pl.col("memory_id_h").is_not_null()
    slots = slots.with_columns(
        same=pl.all_horizontal([both, *(_equal(slots, c) for c in columns)]),
        same_memory=both & (pl.col("memory_id") == pl.col("memory_id_h")),
        same_score=both & _equal(slots, "score"),
    )
    found = slots.select(
        query_id=pl.coalesce("query_id", "query_id_h"),
        rank="_slot",
        source_memory_id="memory_id",
        hydrated_memory_id="memory_id_h",
        source_score="score",
        hydrated_score="score_h",
        same_memory="same_memory",
        same_score="same_score",
    ).to_dict(as_series=False)
    comparison = pa.table(
        {f.name: pa.array(found[f.name], type=f.type) for f in TRANSFER_SCHEMA},
        schema=TRANSFER_SCHEMA,
    )
    drifted = set(slots.filter(~pl.col("same"))["_query"].to_list())
    wanted = [query_ids[q] for q in sorted(drifted)]
    a, b = _by_query(source, wanted), _by_query(hydrated, wanted)
    drift = tuple(_drift(q, a.get(q, []), b.get(q, [])) for q in wanted)
    return comparison, drift, len(query_ids) - len(drift)


def _by_query(run: pa.Table, query_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """``rows_by_query`` of the rows of ``query_ids`` alone."""
    if not query_ids:
        return {}
    frame = pl.DataFrame(run)
    return rows_by_query(frame.filter(pl.col("query_id").is_in(query_ids)))


def _fts_integrity(store: hotmem.MemoryStore) -> str:
    """``ok``, or the first problem the store's integrity check reports (a finding, not a crash)."""
    problems = store.check_integrity()
    return f"failed: {problems[0]}" if problems else "ok"


def _cold_start(database: Path, query: str, workdir: Path) -> float:
    """Seconds from spawning a fresh Python to its first search result."""
    environment = {**os.environ, "HOTMEM_HOME": str(workdir / "home")}
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", _COLD_START, str(database), query],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise EvalError(f"cold-start process failed: {completed.stderr.strip()[-500:]}")
    return elapsed


@dataclass(frozen=True, slots=True)
class Package:
    """A store snapshotted, verified and hydrated once (``transfer_package``): what every
    profile's re-run reads."""

    path: Path
    hydrated: Path
    package_bytes: int
    source_rows: int
    hydrated_rows: int
    source_fts_integrity: str
    hydrated_fts_integrity: str
    verify_ok: bool
    verify_problems: tuple[str, ...]
    snapshot_s: float
    verify_s: float
    hydrate_s: float
    cold_start_s: float


@dataclass(frozen=True, slots=True)
class TransferOutcome:
    """What snapshot -> verify -> hydrate did to one profile's retrieval: its queries re-run
    in ``package``'s hydrated store (the package, its checks and timings, shared by every
    profile of the run)."""

    comparison: pa.Table
    drift: tuple[dict[str, object], ...]
    equivalent_queries: int
    total_queries: int
    package: Package


def transfer_package(store: hotmem.MemoryStore, workdir: Path, first_query: str) -> Package:
    """Snapshot ``store`` into ``workdir``, verify the package and hydrate it into a new store
    there; time each step and a cold start (a fresh process searching ``first_query`` in the
    hydrated store), and check both stores' integrity."""
    package = workdir / "transfer.hotmem"
    target = workdir / "hydrated.db"
    started = time.perf_counter()
    store.snapshot(package)
    snapshot_s = time.perf_counter() - started
    started = time.perf_counter()
    report = hotmem.verify_snapshot(package)
    verify_s = time.perf_counter() - started
    started = time.perf_counter()
    hotmem.hydrate(package, target)
    hydrate_s = time.perf_counter() - started
    cold_start_s = _cold_start(target, first_query, workdir)
    with hotmem.open_store(target) as hydrated:
        hydrated_rows, hydrated_integrity = hydrated.count(), _fts_integrity(hydrated)
    return Package(
        path=package,
        hydrated=target,
        package_bytes=package.stat().st_size,
        source_rows=store.count(),
        hydrated_rows=hydrated_rows,
        source_fts_integrity=_fts_integrity(store),
        hydrated_fts_integrity=hydrated_integrity,
        verify_ok=bool(report.ok),
        verify_problems=tuple(str(p) for p in report.problems),
        snapshot_s=snapshot_s,
        verify_s=verify_s,
        hydrate_s=hydrate_s,
        cold_start_s=cold_start_s,
    )


def rerun_transfer(
    package: Package,
    queries: pa.Table,
    source_results: pa.Table,
    *,
    top_k: int,
    profile: hotmem.Profile | None = None,
) -> TransferOutcome:
    """Re-run every query in ``package``'s hydrated store under ``profile`` (``default`` when
    None) and compare with ``source_results``, slot by slot."""
    with hotmem.open_store(package.hydrated) as hydrated:
        rerun = run_queries(hydrated, queries, top_k=top_k, profile=profile)
    comparison, drift, equivalent = compare_results(
        source_results, rerun.results, [str(q) for q in queries.column("query_id").to_pylist()]
    )
    return TransferOutcome(
        comparison=comparison,
        drift=drift,
        equivalent_queries=equivalent,
        total_queries=queries.num_rows,
        package=package,
    )


def run_transfer(
    store: hotmem.MemoryStore,
    queries: pa.Table,
    source_results: pa.Table,
    workdir: Path,
    *,
    top_k: int,
    profile: hotmem.Profile | None = None,
) -> TransferOutcome:
    """Snapshot ``store``, verify and hydrate the package into a new store in ``workdir``,
    re-run every query there under ``profile`` (``default`` when None) and compare with
    ``source_results`` (``transfer_package`` then ``rerun_transfer``)."""
    first_query = queries.column("query")[0].as_py() if queries.num_rows else ""
    package = transfer_package(store, workdir, first_query)
    return rerun_transfer(package, queries, source_results, top_k=top_k, profile=profile)
