"""Writing a run's outputs: JSON, Markdown, and the Parquet/CSV export directory.

Every file is written to a temporary sibling and renamed into place, so an interrupted run
never leaves a half-written output; nothing is written until the run has succeeded. An output
path that exists must be a regular file: the rename would replace a directory entry that is a
symbolic link, a FIFO, a socket or a device (run as root, ``--output /dev/null`` would delete
the device), so those are refused, before the run (``check_outputs``) and again at the rename.
"""

from __future__ import annotations

import functools
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from hotmem_eval.attribution import misses_table
from hotmem_eval.errors import UsageError
from hotmem_eval.evaluate import EvalRun
from hotmem_eval.plot_data import frames_of
from hotmem_eval.plot_frames import SCHEMAS as PLOT_SCHEMAS
from hotmem_eval.sqlfiles import sql_files

__all__ = [
    "CHANNELS",
    "CHANNELS_ROW",
    "EXPORT_TABLES",
    "MANIFEST",
    "PLOTS",
    "PROFILE_TABLES",
    "QRELS_FILE",
    "RUNS",
    "Staged",
    "atomic_write",
    "check_outputs",
    "commit_staged",
    "discard_staged",
    "export_paths",
    "export_tables",
    "write_exports",
]

MANIFEST = "manifest.json"
#: table name -> what one row is. Column names are the canonical ones the SQL files read.
EXPORT_TABLES = {
    "results": "one returned slot of a profile: profile, query_id, rank, memory_id, identifier, "
    "grade, score, components",
    "queries": "one fixture query: query_id, category, query, identifier (scope), notes",
    "qrels": "one graded (query_id, memory_id) pair, grade (a non-negative integer)",
    "groups": "one (query_id, memory_id) in a near-duplicate group, group_id",
    "memories": "one corpus memory: memory_id, identifier, fact, importance, tags, created_at",
    "per_query_metrics": "one (profile, k, query_id, metric): value, numerator, denominator, "
    "applicable",
    "category_metrics": "one (profile, k, category, metric) incl. overall: value, n/d, query_count",
    "misses": "one relevant memory missed from a query's top k under a profile, with the reason",
    "transfer": "one (profile, query_id, rank) compared before/after snapshot -> verify -> hydrate",
}
#: The tables with one block of rows per profile: their first column is ``profile``.
PROFILE_TABLES = ("results", "per_query_metrics", "category_metrics", "misses", "transfer")
#: The table ``--export-channels`` adds (``channel_frame.channel_table``), and what a row is.
CHANNELS = "channels"
CHANNELS_ROW = (
    "one candidate of a query: query_id, memory_id, importance, bm25_raw, bm25_best, and "
    "cosine:<space> for each space (the spaces and min_cosine in the Parquet metadata)"
)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _refuse_unless_regular(path: Path) -> None:
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise UsageError(f"cannot write {str(path)!r}: it is {kind}, not a regular file")


def check_outputs(files: Iterable[Path], directories: Iterable[Path] = ()) -> None:
    """Refuse, before any work, output files that exist and are not regular files, and
    output directories that exist and are not directories.

    Raises:
        UsageError: naming the first such path and what it is.
    """
    for directory in directories:
        if directory.exists() and not directory.is_dir():
            raise UsageError(f"cannot write into {str(directory)!r}: it is not a directory")
    for path in files:
        _refuse_unless_regular(path)


#: Files written beside their targets and not renamed yet: (temporary, target), in order.
Staged = list[tuple[Path, Path]]


def atomic_write(
    path: Path, write: Callable[[Path], None], *, staged: Staged | None = None
) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it onto ``path`` (with
    ``staged``: append the pair there instead, for ``commit_staged`` to rename with the rest).

    Raises:
        UsageError: ``path`` exists and is not a regular file (checked before writing and
            again just before the rename); nothing is left behind.
    """
    _refuse_unless_regular(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    try:
        write(Path(temporary))
        # mkstemp creates the file 0600; an output gets the usual permissions (umask applied).
        os.chmod(temporary, 0o666 & ~_umask())
        if staged is not None:
            staged.append((Path(temporary), path))
            return
        _refuse_unless_regular(path)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def commit_staged(staged: Staged, manifest: Path, *, stale: Sequence[Path] = ()) -> None:
    """Rename every staged file onto its target, ``manifest`` (one of them) last, after
    removing the old manifest first: while the set is swapped in, the directory has no
    manifest, so a reader refuses it (``not a run export``) rather than mix two sets. The
    ``stale`` files (of a previous set, not of this one) are removed meanwhile.

    Raises:
        UsageError: a target is no longer a regular file (nothing was renamed).
    """
    for _, target in staged:
        _refuse_unless_regular(target)
    manifest.unlink(missing_ok=True)
    for path in stale:
        path.unlink(missing_ok=True)
    for temporary, target in sorted(staged, key=lambda pair: pair[1] == manifest):
        os.replace(temporary, target)


def discard_staged(staged: Staged) -> None:
    """Remove every staged file (the targets are left as they were)."""
    for temporary, _ in staged:
        temporary.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    """Write UTF-8 text atomically."""
    atomic_write(path, lambda target: _write_utf8(target, text))


def write_parquet(path: Path, table: pa.Table) -> None:
    """Write an Arrow table to Parquet atomically (its schema metadata kept)."""
    atomic_write(path, lambda target: _write_parquet(table, target))


def _write_utf8(target: Path, text: str) -> None:
    target.write_text(text, encoding="utf-8")


def _write_parquet(table: pa.Table, target: Path) -> None:
    pq.write_table(table, target)


def _runs(runs: EvalRun | Sequence[EvalRun]) -> list[EvalRun]:
    return [runs] if isinstance(runs, EvalRun) else list(runs)


def _profile_table(run: EvalRun) -> dict[str, pl.DataFrame]:
    """The tables of one profile's run, without the profile column."""
    grades = pl.DataFrame(run.fixture.qrels).select("query_id", "memory_id", "grade")
    results = (
        run.results.join(grades, on=["query_id", "memory_id"], how="left")
        .with_columns(pl.col("grade").fill_null(0).cast(pl.Int32))
        .select(
            "query_id",
            "rank",
            "memory_id",
            "identifier",
            "grade",
            "score",
            "cosine",
            "bm25_raw",
            "bm25_normalised",
            "importance",
        )
        .sort("query_id", "rank")
    )
    return {
        "results": results,
        "per_query_metrics": run.per_query if run.per_query_by_k is None else run.per_query_by_k,
        "category_metrics": run.aggregate if run.aggregate_by_k is None else run.aggregate_by_k,
        "misses": pl.DataFrame(misses_table(run.misses)),
        "transfer": pl.DataFrame(run.transfer.comparison),
    }


def export_tables(runs: EvalRun | Sequence[EvalRun]) -> dict[str, pa.Table]:
    """The tables of one run or of several profiles' runs (on one fixture), as Arrow, in the
    canonical column names; ``PROFILE_TABLES`` stack every profile's rows, in run order,
    behind a first column ``profile``."""
    chosen = _runs(runs)
    fixture = chosen[0].fixture
    blocks = [_profile_table(run) for run in chosen]
    stacked = {
        name: pl.concat(
            [
                block[name].select(pl.lit(run.profile.name).alias("profile"), pl.all())
                for run, block in zip(chosen, blocks, strict=True)
            ]
        ).to_arrow()
        for name in PROFILE_TABLES
    }
    return {
        "results": stacked["results"],
        "queries": fixture.queries.drop_columns(["line"]),
        "qrels": fixture.qrels,
        "groups": fixture.groups,
        "memories": fixture.corpus.drop_columns(["line"]),
        "per_query_metrics": stacked["per_query_metrics"],
        "category_metrics": stacked["category_metrics"],
        "misses": stacked["misses"],
        "transfer": stacked["transfer"],
    }


#: The TREC files of the export: the qrels as read, and a run per profile in ``RUNS``.
QRELS_FILE = "qrels.trec"
RUNS = "runs"
#: The plots' data (``plot_data.plot_frames``), one Parquet file a plot, in this subdirectory.
PLOTS = "plots"


def export_paths(
    directory: Path, profiles: Sequence[str] = (), channels: bool = False
) -> list[Path]:
    """Every file ``write_exports`` writes into ``directory`` (the runs of ``profiles``, and
    the channel table with ``channels``)."""
    names = [*EXPORT_TABLES, *([CHANNELS] if channels else [])]
    tables = [directory / f"{name}.parquet" for name in names]
    runs = [directory / RUNS / f"{name}.trec" for name in profiles]
    plots = [directory / PLOTS / f"{name}.parquet" for name in PLOT_SCHEMAS]
    return [
        *tables,
        *plots,
        directory / "category_metrics.csv",
        directory / QRELS_FILE,
        *runs,
        directory / MANIFEST,
    ]


def trec_refusal(chosen: Sequence[EvalRun]) -> str | None:
    """Why the TREC files cannot be written for these runs (a profile name that is not a
    safe file name, an id with whitespace, ...), or None."""
    from hotmem_eval.trec_output import check_run_names, check_trec_ids

    fixture = chosen[0].fixture
    try:
        check_run_names([run.profile.name for run in chosen])
        check_trec_ids(
            [str(q) for q in fixture.queries.column("query_id").to_pylist()],
            [str(m) for m in fixture.corpus.column("memory_id").to_pylist()],
        )
    except UsageError as exc:
        return str(exc)
    return None


def _write_trec(chosen: Sequence[EvalRun], directory: Path, staged: Staged) -> list[Path]:
    """The qrels and one run a profile, in the TREC formats (``trec_output``)."""
    from hotmem_eval.trec_output import write_qrels, write_run

    qrels = pl.DataFrame(chosen[0].fixture.qrels)
    path = directory / QRELS_FILE
    atomic_write(path, lambda target: write_qrels(qrels, target), staged=staged)
    written = [path]
    for run in chosen:
        path = directory / RUNS / f"{run.profile.name}.trec"
        atomic_write(path, functools.partial(_write_run, run, write_run), staged=staged)
        written.append(path)
    return written


def _write_run(run: EvalRun, write_run: Callable[..., Any], target: Path) -> None:
    write_run(run.results, target, run.profile.name)


def write_exports(
    runs: EvalRun | Sequence[EvalRun],
    directory: Path,
    *,
    result: dict[str, Any],
    channels: pa.Table | None = None,
) -> list[Path]:
    """Write every export table as Parquet (and category_metrics as CSV), the channel table
    when given, plus a manifest, which names the profiles (baseline first), the fixture's
    digests and the tables.

    The files are written as a set: each to a temporary file beside it, and only once all
    are written renamed into place, the manifest last (``commit_staged``). A failure while
    writing (a full disk) leaves the previous export exactly as it was, and no temporary file.
    """
    staged: Staged = []
    extra = {} if channels is None else {CHANNELS: channels}
    # a previous export's channel table, which this one has not
    stale = [] if channels is not None else [directory / f"{CHANNELS}.parquet"]
    stale = [path for path in stale if path.is_file() and not path.is_symlink()]
    try:
        written = _write_set(_runs(runs), directory, result, staged, extra)
        commit_staged(staged, directory / MANIFEST, stale=stale)
    except BaseException:
        discard_staged(staged)
        raise
    return written


def _write_set(
    chosen: list[EvalRun],
    directory: Path,
    result: dict[str, Any],
    staged: Staged,
    extra: dict[str, pa.Table],
) -> list[Path]:
    """Stage every file of the export (``write_exports``), ``extra`` tables too; their
    targets."""
    tables = {**export_tables(chosen), **extra}
    written = []
    for name, table in tables.items():
        path = directory / f"{name}.parquet"
        atomic_write(path, functools.partial(_write_parquet, table), staged=staged)
        written.append(path)
    frames = frames_of(result)
    for name in PLOT_SCHEMAS:
        path = directory / PLOTS / f"{name}.parquet"
        frame: pl.DataFrame = getattr(frames, name)
        atomic_write(path, functools.partial(_write_parquet, frame.to_arrow()))
        written.append(path)
    csv = directory / "category_metrics.csv"
    category_metrics = pl.DataFrame(tables["category_metrics"])
    atomic_write(csv, lambda target: category_metrics.write_csv(target), staged=staged)
    written.append(csv)
    refusal = trec_refusal(chosen)
    if refusal is None:
        written.extend(_write_trec(chosen, directory, staged))
    else:  # the tables are written; the TREC files cannot hold these names
        print(f"hotmem-eval: warning: no TREC files: {refusal}", file=sys.stderr)
    fixture = result["fixture"]
    manifest = {
        "schema_version": result["schema_version"],
        "generated_at": result["generated_at"],
        "top_k": chosen[0].top_k,
        "cutoffs": result["configuration"]["cutoffs"],
        "relevant_grade": result["configuration"]["relevant_grade"],
        "profiles": [run.profile.name for run in chosen],
        "fixture": {
            key: fixture[key] for key in ("format", "corpus_sha256", "queries_sha256", "sources")
        },
        "tables": {name: f"{name}.parquet" for name in tables},
        "plots": {name: f"{PLOTS}/{name}.parquet" for name in PLOT_SCHEMAS},
        "trec": None
        if refusal is not None
        else {
            "qrels": QRELS_FILE,
            "runs": {run.profile.name: f"{RUNS}/{run.profile.name}.trec" for run in chosen},
        },
        "table_rows": {**EXPORT_TABLES, **({CHANNELS: CHANNELS_ROW} if extra else {})},
        "sql_files": {name: file.version for name, file in sql_files().items()},
        "recommendation": result["profiles"][0]["recommendation"]["code"],
    }
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    atomic_write(directory / MANIFEST, lambda target: _write_utf8(target, text), staged=staged)
    written.append(directory / MANIFEST)
    return written
