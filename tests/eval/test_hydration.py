"""The transfer check's other side in a child process (``hotmem_eval.hydration``): what it
answers, its failures as answers, and a run searching the source store while it works."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

import hotmem
from hotmem_eval import hydration, transfer
from hotmem_eval.errors import EvalError
from hotmem_eval.evaluate import evaluate_profiles, metrics_at
from hotmem_eval.fixtures import Fixture, load_fixture
from hotmem_eval.hydration import Job, Searches, hydrated_answer, runs_apart, start_hydration
from hotmem_eval.ingest import open_fixture_store
from hotmem_eval.runner import run_queries

FIXTURE = Path(__file__).resolve().parents[2] / "benchmarks" / "retrieval"
HASHED = [hotmem.PROFILES[name] for name in ("default", "bm25-only")]


@pytest.fixture(scope="module")
def fixture() -> Fixture:
    return load_fixture(FIXTURE / "corpus.jsonl", FIXTURE / "queries.jsonl")


def _job(store: hotmem.MemoryStore, fixture: Fixture, workdir: Path) -> Job:
    workdir.mkdir()
    store.snapshot(workdir / "transfer.hotmem")
    return Job(
        workdir / "transfer.hotmem",
        workdir / "hydrated.db",
        workdir,
        "a first query",
        Searches(fixture.queries, 10, (HASHED[0], None, HASHED[1])),
    )


@pytest.mark.parametrize(
    ("name", "apart"),
    [
        ("default", True),
        ("cosine-only", True),
        ("bm25-only", True),
        ("rrf", True),
        ("default+mmr", True),
        ("semantic", False),
        ("semantic-only", False),
        ("semantic+mmr", False),
    ],
)
def test_the_child_reruns_the_profiles_reading_no_model_space(name: str, apart: bool) -> None:
    assert runs_apart(hotmem.PROFILES[name]) is apart


def test_the_answer_is_what_the_run_would_find(fixture: Fixture, tmp_path: Path) -> None:
    with open_fixture_store(tmp_path / "source.db", fixture.corpus) as store:
        job = _job(store, fixture, tmp_path / "transfer")
        answer = hydrated_answer(job)
        expected = [
            run_queries(store, fixture.queries, top_k=10, profile=p).results for p in HASHED
        ]
    assert {k: v for k, v in answer.items() if not k.endswith("_s")} == {
        "verify_ok": True,
        "verify_problems": [],
        "hydrated_rows": 155,
        "hydrated_fts_integrity": "ok",
    }
    assert sorted(k for k in answer if k.endswith("_s")) == [
        "cold_start_s",
        "hydrate_s",
        "verify_s",
    ]
    assert sorted(p.name for p in job.workdir.glob("*.arrow")) == [
        "reruns-0.arrow",
        "reruns-2.arrow",
    ]
    for number, results in ((0, expected[0]), (2, expected[1])):
        with pa.OSFile(str(job.results_path("reruns", number)), "rb") as source:
            found = pa.ipc.open_file(source).read_all()
        assert found.num_rows == results.num_rows > 0
        assert found.equals(results)  # the same ids, order and score bits in the copy


def test_the_child_snapshots_a_store_in_a_file_as_the_run_would(
    fixture: Fixture, tmp_path: Path
) -> None:
    with open_fixture_store(tmp_path / "source.db", fixture.corpus) as store:
        job = _job(store, fixture, tmp_path / "transfer")  # the run's own snapshot
        made = job.package.read_bytes()
        job.package.unlink()
        child = dataclasses.replace(job, source=tmp_path / "source.db")
        answer = hydrated_answer(child)
    assert job.package.read_bytes() == made  # the same package, byte for byte
    source = answer["source"]
    assert isinstance(source, dict)
    assert sorted(source) == ["snapshot_s", "source_fts_integrity", "source_rows"]
    assert (source["source_rows"], source["source_fts_integrity"]) == (155, "ok")
    assert answer["hydrated_rows"] == 155
    assert "source" not in hydrated_answer(dataclasses.replace(job, target=tmp_path / "h2.db"))


def test_the_child_process_gives_the_answer_and_the_reruns(
    fixture: Fixture, tmp_path: Path
) -> None:
    with open_fixture_store(tmp_path / "source.db", fixture.corpus) as store:
        expected = run_queries(store, fixture.queries, top_k=10, profile=HASHED[1]).results
        hydrating = start_hydration(_job(store, fixture, tmp_path / "transfer"))
    found = hydrating.wait()
    assert (found.verify_ok, found.hydrated_rows, found.hydrated_fts_integrity) == (True, 155, "ok")
    assert found.reruns[1] is None
    assert found.reruns[2] is not None
    assert found.reruns[2].equals(expected)
    assert hydrating.wait() is found  # one answer, read once
    hydrating.close()


def test_a_package_that_fails_is_an_answer_then_an_error(fixture: Fixture, tmp_path: Path) -> None:
    with open_fixture_store(tmp_path / "source.db", fixture.corpus) as store:
        job = _job(store, fixture, tmp_path / "transfer")
    data = job.package.read_bytes()
    job.package.write_bytes(data[: len(data) // 2])  # cut in the middle
    answer = hydrated_answer(job)
    assert list(answer) == ["error"]
    assert str(answer["error"]).startswith(("SnapshotError: ", "VerificationError: "))
    assert not job.target.exists()
    with pytest.raises(EvalError, match=r"^the transfer check's child process failed: "):
        start_hydration(job).wait()


def test_close_stops_a_child_still_working(fixture: Fixture, tmp_path: Path) -> None:
    with open_fixture_store(tmp_path / "source.db", fixture.corpus) as store:
        hydrating = start_hydration(_job(store, fixture, tmp_path / "transfer"))
    hydrating.close()  # at once: the child is still starting
    assert hydrating._process.returncode is not None


def test_a_run_searches_the_source_while_the_child_works(
    fixture: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child starts before the first search of the source store, and the run waits for
    it only after the last (the ablation's included); it re-runs the profiles reading no
    model space, the run none of them (it opens the hydrated copy for no search)."""
    events: list[str] = []
    start, wait, search = transfer.start_hydration, hydration.Hydrating.wait, hotmem.search_memories
    opened: list[str] = []
    open_store = hotmem.open_store

    def starting(job: Job) -> hydration.Hydrating:
        events.append("start")
        return start(job)

    def waiting(self: hydration.Hydrating) -> hydration.Hydrated:
        events.append("wait")
        return wait(self)

    def searching(*arguments: Any, **options: Any) -> list[hotmem.SearchResult]:
        events.append("search")
        return search(*arguments, **options)

    def opening(path: Any, *arguments: Any, **options: Any) -> hotmem.MemoryStore:
        opened.append(Path(path).name)
        return open_store(path, *arguments, **options)

    monkeypatch.setattr(transfer, "start_hydration", starting)
    monkeypatch.setattr(hydration.Hydrating, "wait", waiting)
    monkeypatch.setattr(hotmem, "search_memories", searching)
    monkeypatch.setattr(hotmem, "open_store", opening)
    progress: list[tuple[int, int]] = []
    runs, ablation, _ = evaluate_profiles(
        fixture,
        tmp_path,
        HASHED,
        cutoffs=(5, 10),
        ablation=True,
        progress=lambda done, total: progress.append((done, total)),
    )
    assert ablation is not None
    assert [name for name, _ in ablation.variants] == ["vector", "lexical", "importance"]
    assert events[:197] == ["start"] + ["search"] * 196  # the profiles' searches, here
    assert set(events[197:]) == {"wait"}  # the variants' and the re-runs: the child's
    assert progress[-4:] == [(196, 490), (294, 490), (392, 490), (490, 490)]
    assert "hydrated.db" not in opened
    assert sorted(p.name for p in (tmp_path / "transfer").glob("*.arrow")) == [
        "reruns-0.arrow",
        "reruns-1.arrow",
        "variants-0.arrow",
        "variants-1.arrow",
        "variants-2.arrow",
    ]
    for run in runs:
        assert run.transfer.equivalent_queries == run.transfer.total_queries == 98
        assert run.transfer.comparison.num_rows == run.results.height
    with hotmem.open_store(tmp_path / "source.db") as store:  # the variants searched here
        for _, variant in ablation.variants:
            results = run_queries(store, fixture.queries, top_k=5, profile=variant).results
            per_query, _ = metrics_at(pl.DataFrame(results), fixture, (5,))
            expected = per_query.with_columns(profile=pl.lit(variant.name))
            found = ablation.per_query.filter(pl.col("profile") == variant.name)
            assert found.height == expected.height > 0
            assert found.equals(expected)


def test_the_run_searches_what_the_child_would_embed_queries_for(
    fixture: Fixture, tmp_path: Path
) -> None:
    variants = [hotmem.PROFILES[name] for name in ("semantic-only", "default")]
    with open_fixture_store(tmp_path / "source.db", fixture.corpus) as store:
        (tmp_path / "a").mkdir()
        package = transfer.PendingPackage(
            store, tmp_path / "a", fixture.queries, top_k=5, variants=variants
        )
        package.close()
    assert [package.searches_variant(n) for n in (0, 1)] == [False, True]
    with pytest.raises(EvalError, match="did not search variant 0"):
        package.variant(0)
    with open_fixture_store(":memory:", fixture.corpus) as store:  # no file to read
        (tmp_path / "b").mkdir()
        package = transfer.PendingPackage(
            store, tmp_path / "b", fixture.queries, top_k=5, variants=variants
        )
        package.close()
    assert [package.searches_variant(n) for n in (0, 1)] == [False, False]


def test_a_failed_run_leaves_no_child(
    fixture: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    children: list[hydration.Hydrating] = []
    start = transfer.start_hydration

    def starting(job: Job) -> hydration.Hydrating:
        children.append(start(job))
        return children[-1]

    def failing(*arguments: Any, **options: Any) -> list[hotmem.SearchResult]:
        raise EvalError("a search failed")

    monkeypatch.setattr(transfer, "start_hydration", starting)
    monkeypatch.setattr(hotmem, "search_memories", failing)
    with pytest.raises(EvalError, match="a search failed"):
        evaluate_profiles(fixture, tmp_path, HASHED, top_k=5)
    assert len(children) == 1
    assert children[0]._process.returncode is not None  # stopped, and waited for


def test_an_in_memory_store_is_snapshotted_by_the_run(fixture: Fixture, tmp_path: Path) -> None:
    with open_fixture_store(":memory:", fixture.corpus) as store:
        package = transfer.transfer_package(store, tmp_path, "a first query")
    assert (package.source_rows, package.hydrated_rows) == (155, 155)
    assert (package.source_fts_integrity, package.hydrated_fts_integrity) == ("ok", "ok")
    assert (package.verify_ok, package.verify_problems) == (True, ())
    assert package.path.stat().st_size == package.package_bytes > 0


def test_a_child_that_crashes_is_an_error_with_what_it_said(
    fixture: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashing = tmp_path / "python"
    crashing.write_text("#!/bin/sh\necho 'something broke' >&2\nexit 3\n", encoding="utf-8")
    crashing.chmod(0o755)
    with open_fixture_store(tmp_path / "source.db", fixture.corpus) as store:
        job = _job(store, fixture, tmp_path / "transfer")
    monkeypatch.setattr(hydration.sys, "executable", str(crashing))
    hydrating = start_hydration(job)
    with pytest.raises(EvalError, match=r"^hydration process failed: something broke$"):
        hydrating.wait()
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    silent.chmod(0o755)
    monkeypatch.setattr(hydration.sys, "executable", str(silent))
    with pytest.raises(EvalError, match=r"^hydration process gave no answer: $"):
        start_hydration(job).wait()
