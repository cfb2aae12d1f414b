"""Transfer invariance: snapshot, verify, hydrate into a clean target, and compare retrieval.

Also times each step and a cold start (a fresh process opens the hydrated store and answers
one query), as local diagnostics. A run of several profiles makes one package and one
hydrated store (``transfer_package``) and re-runs each profile's queries there
(``rerun_transfer``): the package does not depend on the profile. ``PendingPackage`` has a
child process (``hydration``) verify and hydrate the package and re-run the profiles' queries
while the run searches the source store; the comparison is the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

import hotmem
from hotmem_eval.errors import EvalError
from hotmem_eval.hydration import Job, Searches, runs_apart, snapshotted, start_hydration
from hotmem_eval.runner import rows_by_query, run_queries

__all__ = [
    "TRANSFER_SCHEMA",
    "Package",
    "PendingPackage",
    "TransferOutcome",
    "compare_results",
    "rerun_transfer",
    "run_transfer",
    "sampled_queries",
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


class PendingPackage:
    """A store snapshotted, its package being verified and hydrated, and the queries re-run
    in the copy under each of ``profiles`` the child runs apart (``runs_apart``), then the
    ``variants`` searched in the store (all queries, to depth ``variant_k``), by a child
    process (``hydration``) while the run goes on; ``made`` waits for it and completes the
    package, ``reran`` and ``variant`` give the results of a search it did."""

    def __init__(
        self,
        store: hotmem.MemoryStore,
        workdir: Path,
        queries: pa.Table,
        *,
        top_k: int,
        profiles: Sequence[hotmem.Profile] = (),
        variants: Sequence[hotmem.Profile] = (),
        all_queries: pa.Table | None = None,
        variant_k: int = 0,
    ) -> None:
        first_query = queries.column("query")[0].as_py() if queries.num_rows else ""
        package = workdir / "transfer.hotmem"
        # A store in a file is read by the child too (SQLite lets it read meanwhile).
        in_memory = store.path == ":memory:"
        self._source = snapshotted(store, package) if in_memory else None
        apart = [None if in_memory or not runs_apart(v) else v for v in variants]
        self.job = Job(
            package,
            workdir / "hydrated.db",
            workdir,
            first_query,
            Searches(queries, top_k, tuple(p if runs_apart(p) else None for p in profiles)),
            None if in_memory else Path(store.path),
            Searches(queries if all_queries is None else all_queries, variant_k, tuple(apart)),
        )
        self._hydrating = start_hydration(self.job)
        self._package: Package | None = None

    def made(self) -> Package:
        """The package, once the child verified and hydrated it (and re-ran the queries).

        Raises:
            EvalError: the child failed or refused the package, or its cold start failed.
        """
        if self._package is None:
            found = self._hydrating.wait()
            source = self._source or found.source
            if source is None:  # never seen: the job names the store when the run did not
                raise EvalError("the hydration process made no snapshot")
            self._package = Package(
                path=self.job.package,
                hydrated=self.job.target,
                package_bytes=self.job.package.stat().st_size,
                source_rows=source.source_rows,
                hydrated_rows=found.hydrated_rows,
                source_fts_integrity=source.source_fts_integrity,
                hydrated_fts_integrity=found.hydrated_fts_integrity,
                verify_ok=found.verify_ok,
                verify_problems=found.verify_problems,
                snapshot_s=source.snapshot_s,
                verify_s=found.verify_s,
                hydrate_s=found.hydrate_s,
                cold_start_s=found.cold_start_s,
            )
        return self._package

    def reran(self, number: int) -> pa.Table | None:
        """The results of the queries re-run in the copy under ``profiles[number]`` (``None``
        for a profile the child left to the run)."""
        return self._hydrating.wait().reruns[number]

    def searches_variant(self, number: int) -> bool:
        """Whether the child searches ``variants[number]`` (else the run does)."""
        variants = self.job.variants
        return variants is not None and variants.profiles[number] is not None

    def variant(self, number: int) -> pa.Table:
        """The results of ``variants[number]``, which the child searched in the store.

        Raises:
            EvalError: as ``made``; or the child does not search that variant.
        """
        if not self.searches_variant(number):
            raise EvalError(f"the child process did not search variant {number}")
        table = self._hydrating.wait().variants[number]
        if table is None:  # never seen: the job's profile is set
            raise EvalError(f"the child process did not search variant {number}")
        return table

    def close(self) -> None:
        """Stop the child if the run no longer waits for it."""
        self._hydrating.close()


def transfer_package(store: hotmem.MemoryStore, workdir: Path, first_query: str) -> Package:
    """Snapshot ``store`` into ``workdir``, verify the package and hydrate it into a new store
    there; time each step and a cold start (a fresh process searching ``first_query`` in the
    hydrated store), and check both stores' integrity (``PendingPackage``, waited for)."""
    queries = pa.table({"query": [first_query]})
    pending = PendingPackage(store, workdir, queries, top_k=1)
    try:
        return pending.made()
    finally:
        pending.close()


def rerun_transfer(
    package: Package,
    queries: pa.Table,
    source_results: pa.Table,
    *,
    top_k: int,
    profile: hotmem.Profile | None = None,
    rerun: pa.Table | None = None,
) -> TransferOutcome:
    """Re-run every query in ``package``'s hydrated store under ``profile`` (``default`` when
    None) and compare with ``source_results``, slot by slot; ``rerun``: that re-run's results,
    when it was done already (``PendingPackage.reran``)."""
    if rerun is None:
        with hotmem.open_store(package.hydrated) as hydrated:
            rerun = run_queries(hydrated, queries, top_k=top_k, profile=profile).results
    comparison, drift, equivalent = compare_results(
        source_results, rerun, [str(q) for q in queries.column("query_id").to_pylist()]
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


def sampled_queries(queries: pa.Table, sample: int | None) -> pa.Table:
    """The queries the transfer check re-runs: all of them, or ``sample`` of them, those whose
    ``query_id`` has the smallest sha256 (a choice that depends on the ids alone, spread over
    the collection), in ``query_id`` order."""
    if sample is None or sample >= queries.num_rows:
        return queries
    ids = [str(value) for value in queries.column("query_id").to_pylist()]
    chosen = set(sorted(ids, key=lambda i: hashlib.sha256(i.encode("utf-8")).digest())[:sample])
    mask = pa.array([i in chosen for i in ids])
    return queries.filter(mask)
