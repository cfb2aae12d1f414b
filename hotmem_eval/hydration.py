"""The transfer check's other side in a process of its own, beside the run: the store
snapshotted, the package verified and hydrated, a cold start timed, and the profiles' queries
re-run in the copy; then the ablation's variants searched in the source store.

All of it reads files alone (the source store through its own connection, which SQLite lets
read while the run searches it), so it can go on while the evaluator searches the source
store: on another core, in a fresh Python (``start_hydration``), whose answer the run waits
for when it first needs it (``Hydrating.wait``). The child does what the run did in its own
process (the same public calls and checks: ``MemoryStore.snapshot``, ``hotmem.verify_snapshot``,
``hotmem.hydrate``, both stores' count and integrity check, a cold start, ``run_queries``),
and writes each search's results as an Arrow file and its answer as one JSON line; a package
that fails is the child's answer too, never a crash. It searches only under profiles reading
no model space (``runs_apart``): with one it would embed every query again, where the run
keeps their vectors, so the run does those itself. Only the times differ: they are measured
in the child, while the run searches beside it.

Run as ``python -m hotmem_eval.hydration JOB`` (``JOB``: a ``Job`` pickled by the run into its
own temporary directory).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa

import hotmem
from hotmem_eval.errors import EvalError
from hotmem_eval.runner import run_queries

__all__ = [
    "Hydrated",
    "Hydrating",
    "Job",
    "Searches",
    "Snapshotted",
    "cold_start",
    "fts_integrity",
    "hydrated_answer",
    "main",
    "runs_apart",
    "snapshotted",
    "start_hydration",
]

_COLD_START = """
import sys
import hotmem
with hotmem.open_store(sys.argv[1]) as store:
    found = hotmem.search_memories(store, sys.argv[2], limit=5)
print(len(found), flush=True)
"""


@dataclass(frozen=True, slots=True)
class Searches:
    """``queries`` searched to depth ``top_k`` under each of ``profiles`` (``None``: a
    profile left to the run)."""

    queries: pa.Table
    top_k: int
    profiles: tuple[hotmem.Profile | None, ...]


@dataclass(frozen=True, slots=True)
class Job:
    """What the child does: snapshot the store at ``source`` into ``package`` (``None``: the
    run did), hydrate it into ``target``, time a cold start searching ``first_query``, do the
    ``reruns`` in the hydrated store, then the ``variants`` in the store at ``source`` (its
    files, and the HotMem home of its processes, in ``workdir``)."""

    package: Path
    target: Path
    workdir: Path
    first_query: str
    reruns: Searches
    source: Path | None = None
    variants: Searches | None = None

    def results_path(self, kind: str, number: int) -> Path:
        """The Arrow file of the results of the ``number``-th profile of ``kind``
        (``reruns`` or ``variants``)."""
        return self.workdir / f"{kind}-{number}.arrow"


@dataclass(frozen=True, slots=True)
class Snapshotted:
    """A store snapshotted: how long it took, its memories, and ``ok`` or the first problem
    its integrity check reports."""

    snapshot_s: float
    source_rows: int
    source_fts_integrity: str


def snapshotted(store: hotmem.MemoryStore, package: Path) -> Snapshotted:
    """Snapshot ``store`` into ``package``, timed, and check the store."""
    started = time.perf_counter()
    store.snapshot(package)
    snapshot_s = time.perf_counter() - started
    return Snapshotted(snapshot_s, store.count(), fts_integrity(store))


@dataclass(frozen=True, slots=True)
class Hydrated:
    """What verifying and hydrating a package found, how long each step took, and the
    results of the job's re-runs and variants (in their order; ``None``: left to the run).

    Attributes:
        verify_ok, verify_problems: ``hotmem.verify_snapshot``'s report.
        hydrated_rows: the memories of the hydrated store.
        hydrated_fts_integrity: ``ok``, or the first problem its integrity check reports.
        cold_start_s: seconds from spawning a fresh Python to its first search result there.
        source: the snapshot the child made (``None``: the run made it).
    """

    verify_ok: bool
    verify_problems: tuple[str, ...]
    hydrated_rows: int
    hydrated_fts_integrity: str
    verify_s: float
    hydrate_s: float
    cold_start_s: float
    reruns: tuple[pa.Table | None, ...] = ()
    source: Snapshotted | None = None
    variants: tuple[pa.Table | None, ...] = ()


def runs_apart(profile: hotmem.Profile) -> bool:
    """Whether the child re-runs ``profile``'s queries: when it reads no model's space. With
    one, the child would embed every query again where the run keeps their vectors
    (``hotmem.prepare_queries``: the same bytes), so the run re-runs those itself."""
    return set(profile.spaces) <= {hotmem.MODEL_NAME}


def fts_integrity(store: hotmem.MemoryStore) -> str:
    """``ok``, or the first problem the store's integrity check reports (a finding, not a crash)."""
    problems = store.check_integrity()
    return f"failed: {problems[0]}" if problems else "ok"


def cold_start(database: Path, query: str, workdir: Path) -> float:
    """Seconds from spawning a fresh Python to its first search result.

    Raises:
        EvalError: the process failed.
    """
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


def _searched(store: hotmem.MemoryStore, searches: Searches | None, kind: str, job: Job) -> None:
    """Do ``searches`` in ``store``, each profile's results written to ``job.results_path``."""
    if searches is None:
        return
    for number, profile in enumerate(searches.profiles):
        if profile is None:
            continue
        run = run_queries(store, searches.queries, top_k=searches.top_k, profile=profile)
        path, schema = str(job.results_path(kind, number)), run.results.schema
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            writer.write_table(run.results)


def hydrated_answer(job: Job) -> dict[str, object]:
    """Do ``job``: its answer as JSON values (``error``: why it could not be done), each
    search's results written to ``job.results_path``."""
    source: dict[str, object] = {}
    if job.source is not None:
        with hotmem.open_store(job.source) as store:
            source = {"source": asdict(snapshotted(store, job.package))}
    started = time.perf_counter()
    report = hotmem.verify_snapshot(job.package)
    verify_s = time.perf_counter() - started
    started = time.perf_counter()
    try:
        hotmem.hydrate(job.package, job.target)
    except hotmem.HotmemError as error:
        return {"error": f"{type(error).__name__}: {error}"}
    hydrate_s = time.perf_counter() - started
    try:
        cold_start_s = cold_start(job.target, job.first_query, job.workdir)
    except EvalError as error:
        return {"error": str(error)}
    with hotmem.open_store(job.target) as hydrated:
        rows, integrity = hydrated.count(), fts_integrity(hydrated)
        _searched(hydrated, job.reruns, "reruns", job)
    if job.source is not None and job.variants is not None:
        with hotmem.open_store(job.source) as store:
            _searched(store, job.variants, "variants", job)
    return {
        "verify_ok": bool(report.ok),
        "verify_problems": [str(p) for p in report.problems],
        "hydrated_rows": rows,
        "hydrated_fts_integrity": integrity,
        "verify_s": verify_s,
        "hydrate_s": hydrate_s,
        "cold_start_s": cold_start_s,
        **source,
    }


def main(arguments: Sequence[str] | None = None) -> int:
    """The child: ``JOB``; prints ``hydrated_answer`` as one JSON line."""
    (path,) = arguments if arguments is not None else sys.argv[1:]
    with open(path, "rb") as file:
        job = pickle.load(file)  # written by this run into its own temporary directory
    try:
        answer = hydrated_answer(job)
    except (hotmem.HotmemError, EvalError) as error:  # the snapshot or a search failed
        answer = {"error": f"{type(error).__name__}: {error}"}
    print(json.dumps(answer), flush=True)
    return 0


def _said(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _read(path: Path) -> pa.Table:
    with pa.OSFile(str(path), "rb") as source:
        return pa.ipc.open_file(source).read_all()


class Hydrating:
    """A job being done by a child process (``start_hydration``)."""

    def __init__(self, job: Job, process: subprocess.Popen[bytes]) -> None:
        self._job, self._process = job, process
        self._found: Hydrated | None = None

    def wait(self) -> Hydrated:
        """The child's answer, once it is done.

        Raises:
            EvalError: the child failed, or could not do its job (the reason).
        """
        if self._found is None:
            self._process.wait()
            stdout, stderr = (_said(self._job.workdir / f"child.{n}") for n in ("out", "err"))
            if self._process.returncode != 0:
                raise EvalError(f"hydration process failed: {stderr.strip()[-500:]}")
            try:  # the last line: the answer (a library may have printed before it)
                answer = json.loads(stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                said = stderr.strip()[-500:]
                raise EvalError(f"hydration process gave no answer: {said}") from None
            if "error" in answer:
                reason = answer["error"]
                raise EvalError(f"the transfer check's child process failed: {reason}")
            answer["verify_problems"] = tuple(answer["verify_problems"])
            source = answer.pop("source", None)
            self._found = Hydrated(
                **answer,
                reruns=self._results(self._job.reruns, "reruns"),
                source=None if source is None else Snapshotted(**source),
                variants=self._results(self._job.variants, "variants"),
            )
        return self._found

    def _results(self, searches: Searches | None, kind: str) -> tuple[pa.Table | None, ...]:
        if searches is None:
            return ()
        return tuple(
            None if profile is None else _read(self._job.results_path(kind, number))
            for number, profile in enumerate(searches.profiles)
        )

    def close(self) -> None:
        """Stop the child if it is still running (the run failed before it needed it)."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()


def start_hydration(job: Job) -> Hydrating:
    """Start doing ``job`` in a child process; ``Hydrating.wait`` gives its answer."""
    path = job.workdir / "job.pickle"
    with open(path, "wb") as file:
        pickle.dump(job, file)
    environment = {**os.environ, "HOTMEM_HOME": str(job.workdir / "home")}
    # Its output goes to files, read once it is done: a pipe nobody reads meanwhile could fill.
    with open(job.workdir / "child.out", "wb") as out, open(job.workdir / "child.err", "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "hotmem_eval.hydration", str(path)],
            stdout=out,
            stderr=err,
            env=environment,
        )
    return Hydrating(job, process)


if __name__ == "__main__":
    sys.exit(main())
