"""``hotmem-eval query``: ad-hoc SQL over the Parquet exports of one or more runs.

Each export table becomes a DuckDB view of the same name, with a ``run`` column (the export
directory's name) so several runs can be compared in one query: a run's tables
(``EXPORT_TABLES``, and ``channels`` when its manifest lists it) or a ``hotmem-eval tune``
export's (``channels``, ``per_query_metrics``); over several, those all of them have. The
metric registry is the table ``metrics`` (the SQL files' input of that name). With exactly
one run, every versioned SQL file whose tables and columns that run has is also a view,
``sql_<name>`` (for example ``sql_category_metrics``), computed over that run's tables with
its top-k and relevant grade; for a run of several profiles, only the files whose inputs have
a ``profile`` column (``sql_paired_deltas``).

By default the SQL runs as it would in ``duckdb`` itself: with the user's full file and network
access (``COPY ... TO`` any file, ``read_csv('/etc/passwd')``, ``ATTACH``, ``INSTALL``/``LOAD``,
``http(s)://`` URLs). ``safe=True`` (``--safe``) first copies every run table into memory, then
turns external access off and locks the configuration (``SAFE_SETTINGS``), so the SQL can read
those tables and nothing else, and cannot turn the settings back.

Ctrl-C during a query stops it at once (``_Interrupts``) and raises ``KeyboardInterrupt``
(exit 130), though DuckDB reports the stopped query as an error of its own (a ``RuntimeError``
"Query interrupted", or an ``InterruptException``). ``timeout`` (``--timeout SECONDS``) stops
it the same way once it has run that long (a timer thread interrupts the connection), and
raises ``EvalError`` (exit 1) saying so: a query over runs given by someone else cannot hold
the terminal for ever.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import duckdb

from hotmem_eval.errors import EvalError, UsageError
from hotmem_eval.fixture_schema import RELEVANT_GRADE
from hotmem_eval.metric_registry import metrics_frame
from hotmem_eval.outputs import CHANNELS, EXPORT_TABLES, MANIFEST
from hotmem_eval.query_format import Format, format_rows
from hotmem_eval.sqlfiles import sql_files

__all__ = [
    "MAX_TIMEOUT",
    "SAFE_SETTINGS",
    "Format",
    "format_rows",
    "open_runs",
    "read_manifest",
    "run_query",
]

#: The longest ``timeout`` a query may be given, in seconds (a day).
MAX_TIMEOUT = 86_400.0
#: What ``safe`` mode sets, in order, once the run tables are in memory; the last locks them.
SAFE_SETTINGS = (
    "SET python_enable_replacements = false",  # no scans of Python variables by name
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET allow_community_extensions = false",
    "SET enable_external_access = false",  # no files, no network, no ATTACH, no extensions
    # Also off by name (after the line above: DuckDB 2.0 refuses that setting once its
    # local file system is disabled).
    "SET disabled_filesystems = 'LocalFileSystem,HTTPFileSystem'",
    "SET lock_configuration = true",  # and no SET that would undo any of it
)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _run_names(directories: Sequence[Path]) -> list[str]:
    names: list[str] = []
    for directory in directories:
        name = directory.resolve().name or str(directory)
        names.append(name if name not in names else f"{name}#{len(names) + 1}")
    return names


#: The largest run manifest read, in bytes (one is a few kilobytes).
MAX_MANIFEST_BYTES = 2**22


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _manifest_breach(manifest: object) -> str | None:
    """What is wrong with a run manifest's shape (the fields this module reads), or None."""
    if not isinstance(manifest, dict):
        return f"a JSON object, found {type(manifest).__name__}"
    if not _positive_int(manifest.get("top_k")):
        return f"top_k an integer >= 1, found top_k={manifest.get('top_k')!r}"
    grade = manifest.get("relevant_grade", RELEVANT_GRADE)
    if not _positive_int(grade):
        return f"relevant_grade an integer >= 1, found relevant_grade={grade!r}"
    profiles = manifest.get("profiles", ["default"])
    if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
        return f"profiles a list of names, found profiles={str(profiles)[:80]}"
    if manifest.get("kind", "run") not in ("run", "tune"):
        return f"kind 'run' or 'tune', found kind={str(manifest.get('kind'))[:80]!r}"
    return None


def _tables(manifest: dict[str, Any]) -> list[str]:
    """An export's tables: a run's ``EXPORT_TABLES``, then the others its manifest lists."""
    listed = manifest.get("tables")
    listed = listed if isinstance(listed, dict) else {}
    required = list(EXPORT_TABLES) if manifest.get("kind", "run") == "run" else []
    optional = [t for t in (*EXPORT_TABLES, CHANNELS) if t in listed and t not in required]
    return [*required, *optional]


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of a run export, checked for the fields read here (a JSON object with
    ``top_k``, and ``relevant_grade`` and ``profiles`` of their kinds when present).

    Raises:
        UsageError: the directory has no manifest, or it cannot be read, is larger than
            ``MAX_MANIFEST_BYTES``, nested too deeply for JSON, or not of that shape.
    """
    path = directory / MANIFEST
    try:
        with path.open("rb") as file:
            data = file.read(MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            raise UsageError(
                f"{path}: expected a manifest of at most {MAX_MANIFEST_BYTES} bytes, found more"
            )
        manifest = json.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"{directory}: not a run export (no {MANIFEST}); create one with --export-dir"
        ) from None
    except RecursionError:
        raise UsageError(f"{path}: cannot read the manifest: nested too deeply") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read the manifest: {exc}") from None
    breach = _manifest_breach(manifest)
    if breach is not None:
        raise UsageError(f"{path}: expected a run manifest with {breach}; export the run again")
    checked: dict[str, Any] = manifest
    return checked


def _plot_views(
    con: duckdb.DuckDBPyConnection,
    directories: Sequence[Path],
    names: Sequence[str],
    manifests: Sequence[dict[str, Any]],
    kind: str,
) -> None:
    """``plot_<name>``: each plot's data (``plots/<name>.parquet``) where every run has it (an
    export made before the HTML report has none)."""
    listed = [manifest.get("plots") for manifest in manifests]
    found = [set(plots) for plots in listed if isinstance(plots, dict)]
    if len(found) != len(listed):
        return
    for plot in sorted(set.intersection(*found)):
        paths = [directory / f"plots/{plot}.parquet" for directory in directories]
        if not plot.isidentifier() or not all(path.is_file() for path in paths):
            continue
        parts = [
            f"SELECT {_quote(name)} AS run, * FROM read_parquet({_quote(str(path))})"
            for path, name in zip(paths, names, strict=True)
        ]
        con.execute(f"CREATE {kind} plot_{plot} AS " + " UNION ALL BY NAME ".join(parts))


def _table_views(
    con: duckdb.DuckDBPyConnection,
    directories: Sequence[Path],
    names: Sequence[str],
    manifests: Sequence[dict[str, Any]],
    kind: str,
) -> None:
    """A view (or table) of each export table every run has (``_tables``)."""
    tables = [_tables(manifest) for manifest in manifests]
    for table in [t for t in tables[0] if all(t in other for other in tables[1:])]:
        parts = []
        for directory, name in zip(directories, names, strict=True):
            path = directory / f"{table}.parquet"
            if not path.is_file():
                raise UsageError(f"{directory}: missing {path.name} (its manifest lists it)")
            parts.append(f"SELECT {_quote(name)} AS run, * FROM read_parquet({_quote(str(path))})")
        con.execute(f"CREATE {kind} {table} AS " + " UNION ALL BY NAME ".join(parts))


def open_runs(directories: Sequence[Path], *, safe: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with every export table of ``directories`` as a view.

    With ``safe`` each table is copied into memory instead, and the connection then reads
    nothing else (``SAFE_SETTINGS``).

    Raises:
        UsageError: a directory is not a run export or misses a table.
    """
    if not directories:
        raise UsageError("expected at least one run directory")
    manifests = [read_manifest(directory) for directory in directories]
    names = _run_names(directories)
    con = duckdb.connect()
    kind = "TABLE" if safe else "VIEW"
    _table_views(con, directories, names, manifests, kind)
    _plot_views(con, directories, names, manifests, kind)
    # A table copied from the registry, so the connection does not hold a Python object.
    con.register("metric_registry", metrics_frame())
    con.execute("CREATE TABLE metrics AS FROM metric_registry")
    con.unregister("metric_registry")
    if len(directories) == 1:
        con.execute("SET VARIABLE k = ?", [int(manifests[0]["top_k"])])
        # A run exported before collections had a relevant grade of their own used 2.
        grade = int(manifests[0].get("relevant_grade", RELEVANT_GRADE))
        con.execute("SET VARIABLE relevant_grade = ?", [grade])
        several = len(manifests[0].get("profiles", [None])) > 1
        for name, file in sql_files().items():
            if several and "profile" not in file.inputs:
                # Its inputs have no profile column: over several profiles' rows it would
                # mix them. No view, rather than a wrong one.
                continue
            body = file.text.strip().rstrip(";")
            try:
                con.execute(f"CREATE VIEW sql_{name} AS {body}")
            except (duckdb.BinderException, duckdb.CatalogException):
                # The file reads a column these exports lack (paired_deltas needs a profile
                # column), or a table (a tune export has two): no view, rather than no query.
                continue
    if safe:
        for setting in SAFE_SETTINGS:
            con.execute(setting)
    return con


class _Interrupts:
    """Ctrl-C while a query runs: interrupt it at once, and remember that it came.

    DuckDB checks for signals only between the tasks its calling thread runs, so one long task
    can hold a Ctrl-C back until the query ends. Here the signal's wakeup byte
    (``signal.set_wakeup_fd``, written by the C-level handler however busy the main thread
    is) wakes a watcher thread, which calls ``interrupt()`` on the DuckDB connection; the query
    then stops within moments. Nothing is installed outside the main thread (signals go there).
    """

    def __init__(self) -> None:
        self.database: duckdb.DuckDBPyConnection | None = None
        self._seen = False

    @property
    def seen(self) -> bool:
        """Whether a Ctrl-C came."""
        return self._seen

    def _record(self, signum: int, frame: FrameType | None) -> None:
        self._seen = True
        signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt

    def _watch(self, reader: socket.socket) -> None:
        while data := reader.recv(64):  # b"" once the writer closes
            if signal.SIGINT in data:
                self._seen = True
                if self.database is not None:
                    self.database.interrupt()

    @contextmanager
    def installed(self) -> Iterator[_Interrupts]:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        watcher = threading.Thread(target=self._watch, args=(reader,), daemon=True)
        previous_handler = signal.signal(signal.SIGINT, self._record)
        previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        watcher.start()
        try:
            yield self
        finally:
            signal.set_wakeup_fd(previous_fd)
            signal.signal(signal.SIGINT, previous_handler)
            writer.close()
            watcher.join()
            reader.close()


@contextmanager
def _deadline(con: duckdb.DuckDBPyConnection, timeout: float | None) -> Iterator[list[bool]]:
    """Interrupt ``con`` once ``timeout`` seconds have passed; yields ``[True]`` once it did."""
    fired: list[bool] = []
    if timeout is None:
        yield fired
        return

    def stop() -> None:
        fired.append(True)
        con.interrupt()

    timer = threading.Timer(timeout, stop)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()


def run_query(
    directories: Sequence[Path],
    sql: str,
    *,
    fmt: Format = "table",
    safe: bool = False,
    timeout: float | None = None,
) -> str:
    """Run ``sql`` over the runs in ``directories`` and format the result.

    Args:
        directories: the run export directories.
        sql: one or more SQL statements; the last one's result is formatted.
        fmt: ``"table"``, ``"csv"`` or ``"json"``.
        safe: read only the run tables: no other file, no network, no extension (the SQL
            otherwise runs with the user's full file and network access).
        timeout: stop the query once it has run this many seconds (``None``: no limit).

    Raises:
        UsageError: a directory is not a run export, or DuckDB rejects the SQL (in ``safe``
            mode, also SQL that would touch a file, the network or the settings).
        EvalError: the query ran past ``timeout``.
        KeyboardInterrupt: Ctrl-C while it ran.
    """
    hint = ""
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT:
        raise UsageError(f"expected a timeout in (0, {MAX_TIMEOUT:g}] seconds, found {timeout!r}")
    fired: list[bool] = []
    with _Interrupts().installed() as interrupts:
        try:
            con = open_runs(directories, safe=safe)
            interrupts.database = con
            try:
                with _deadline(con, timeout) as fired:
                    relation = con.sql(sql)
                    if relation is None:
                        return ""
                    return format_rows(list(relation.columns), relation.fetchall(), fmt)
            except duckdb.CatalogException as exc:
                hint = _missing_table_hint(con, str(exc), directories)
                raise
            finally:
                interrupts.database = None
                con.close()
        except (duckdb.Error, RuntimeError) as exc:
            # DuckDB reports a query stopped by Ctrl-C (or the timer) as an error of its own.
            if interrupts.seen:
                raise KeyboardInterrupt from None
            if fired:
                raise EvalError(
                    f"query stopped after its --timeout of {timeout:g} s; nothing was printed"
                ) from None
            if not isinstance(exc, duckdb.Error):
                raise
            first = str(exc).strip().splitlines()[0]
            if safe and isinstance(exc, duckdb.PermissionException):
                first = f"refused by --safe (only the run tables can be read): {first}"
            raise UsageError(f"query failed: {first}{hint}") from None


_MISSING = re.compile(r"with name (\S+) does not exist")


def _missing_table_hint(
    con: duckdb.DuckDBPyConnection, message: str, directories: Sequence[Path]
) -> str:
    """Why a table the SQL names is not there, and which are: ``sql_<name>`` is left out of
    an export of several profiles when the file's inputs have no ``profile`` column (it would
    mix the profiles' rows), and out of a query over several runs."""
    found = _MISSING.search(message)
    if found is None:
        return ""
    name = found.group(1).strip("\"'")
    rows = con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()
    known = ", ".join(str(row[0]) for row in rows)
    why = ""
    if name.startswith("sql_") and name[4:] in sql_files():
        profiles = read_manifest(directories[0]).get("profiles", [])
        if len(directories) > 1:
            why = f"; {name} is a view of one run only (this query reads {len(directories)})"
        elif len(profiles) > 1:
            why = (
                f"; {name} is not a view of a run of several profiles ({', '.join(profiles)}): "
                f"the file {sql_files()[name[4:]].path.name} has no profile column, so it would "
                "mix their rows (the tables have one: add WHERE profile = '...' to a query of "
                "your own, or export each profile's run alone)"
            )
    return f"{why}; the tables and views here: {known}"
