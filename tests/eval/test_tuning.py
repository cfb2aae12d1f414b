"""hotmem-eval tune: deterministic folds, choices made without the fold's queries, a search
space read from TOML, and a written profile that hotmem adopts end to end."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import hotmem
from hotmem.cli.app import main as hotmem_main
from hotmem_eval.channel_frame import channel_table
from hotmem_eval.cli import main
from hotmem_eval.errors import EvalError, UsageError
from hotmem_eval.fixtures import load_fixture
from hotmem_eval.ingest import open_fixture_store
from hotmem_eval.search_space import DEFAULT_SPACE, candidates, read_search_space
from hotmem_eval.tuning import OUT_OF_FOLD, fold_of, tune

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "benchmarks" / "retrieval"


def test_folds_are_stratified_deterministic_and_seeded() -> None:
    ids = [f"q{n}" for n in range(10)]
    categories = ["a"] * 6 + ["b"] * 4
    first = fold_of(ids, categories, 2, seed=0)
    assert first == fold_of(ids, categories, 2, seed=0)
    assert first != fold_of(ids, categories, 2, seed=1)
    for category, size in (("a", 6), ("b", 4)):
        members = [q for q, c in zip(ids, categories, strict=True) if c == category]
        assert sorted(first[q] for q in members).count(0) == size // 2  # dealt evenly
    with pytest.raises(EvalError, match=r"expected 2\.\.10 folds"):
        fold_of(ids, categories, 11, seed=0)


def test_the_search_space_reads_grids_and_ranges(tmp_path: Path) -> None:
    path = tmp_path / "space.toml"
    path.write_text(
        'fusion = ["weighted", "rrf"]\nvector_weight = { from = 0.5, to = 1.0, step = 0.25 }\n'
        'lexical_weight = ["none", 0.2]\n'
    )
    grid = read_search_space(path)
    assert grid == {
        "fusion": ["weighted", "rrf"],
        "vector_weight": [0.5, 0.75, 1.0],
        "lexical_weight": ["none", 0.2],
    }
    found = candidates(grid, source=str(path))
    # weighted: 3 weights x 2 lexical; rrf: the same 6, each a distinct profile
    assert [p.name for p in found] == [f"c{n:04d}" for n in range(1, 13)]
    assert found[0].lexical is None
    assert (found[0].fusion, found[-1].fusion) == ("weighted", "rrf")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('fusion = ["rrf"]\nvector_wieght = [1]\n', ":2: unknown key 'vector_wieght'; expected"),
        ('fusion = ["rrf"]\nvector_floor = [0.2,, 0.3]\n', ":2: invalid TOML: "),
        ("importance = []\n", ":1: importance has no value"),
        ("depth = { from = 1, to = inf, step = 1 }\n", ":1: depth: a range's from, to and step"),
        ("rrf_k = { from = 5, to = 1, step = 1 }\n", ":1: rrf_k: a range needs step > 0"),
        ("importance = 0.2\n", ":1: importance takes a list of values or a range"),
    ],
)
def test_a_bad_search_space_names_the_file_and_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "space.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as raised:
        read_search_space(path)
    assert str(raised.value).startswith(f"{path}{message}")


def test_a_combination_that_is_no_profile_is_named() -> None:
    with pytest.raises(UsageError, match=r"the combination .* is not a profile"):
        candidates({"vector_weight": [-1.0]}, source="space.toml")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--spaces", "nope"], "hotmem-eval: --spaces: expected distinct spaces of"),
        (["--folds", "1"], "hotmem-eval: --folds: expected 2 or more, found 1"),
        (["--objective", "ndcg"], "argument --objective: expected METRIC@K"),
    ],
)
def test_bad_tune_arguments_exit_2_with_one_line(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(["tune", "--collection", str(FIXTURE), *arguments])
    except SystemExit as stopped:  # argparse's own errors
        code = int(stopped.code or 0)
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert message in captured.err


def test_every_fold_choice_ignores_its_own_queries() -> None:
    fixture = load_fixture(FIXTURE / "corpus.jsonl", FIXTURE / "queries.jsonl")
    pool = candidates(DEFAULT_SPACE, source="default")[:12]
    with open_fixture_store(":memory:", fixture.corpus) as store:
        table = channel_table(store, fixture.queries, min_cosine=0.2)
    baselines = [hotmem.PROFILES["default"]]
    tuned = tune(
        table, fixture, pool, objective="ndcg_at_k", k=5, folds=4, seed=3, baselines=baselines
    )
    again = tune(
        table, fixture, pool, objective="ndcg_at_k", k=5, folds=4, seed=3, baselines=baselines
    )
    assert tuned.folds == again.folds
    assert tuned.out_of_fold_mean == again.out_of_fold_mean
    # recompute one fold's choice by hand from the candidates' per-query nDCG@5
    assigned = fold_of(
        [str(q) for q in fixture.queries.column("query_id").to_pylist()],
        fixture.queries.column("category").to_pylist(),
        4,
        3,
    )
    fold = tuned.folds[0]
    means = []
    for profile in pool:
        single = tune(
            table, fixture, [profile], objective="ndcg_at_k", k=5, folds=4, seed=3, baselines=[]
        )
        values = single.per_query.filter(
            pl.col("metric") == "ndcg_at_k",
            pl.col("applicable"),
            pl.col("query_id").map_elements(
                lambda q: assigned[q] != fold.fold, return_dtype=pl.Boolean
            ),
        )["value"]
        means.append(values.mean())
    assert pool[means.index(max(means))].name == fold.chosen
    oof = tuned.per_query.filter(pl.col("profile") == OUT_OF_FOLD)
    assert oof["query_id"].n_unique() == fixture.queries.num_rows


def test_a_tuned_profile_is_written_and_adopted_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile, result = tmp_path / "tuned.toml", tmp_path / "tune.json"
    code = main(
        [
            "tune",
            "--collection",
            str(FIXTURE),
            "--objective",
            "ndcg@5",
            "--folds",
            "3",
            "--write-profile",
            str(profile),
            "--output",
            str(result),
            "--report",
            str(tmp_path / "tune.md"),
            "--export-dir",
            str(tmp_path / "export"),
        ]
    )
    assert code == 0
    document = json.loads(result.read_text())
    assert document["candidates"] == 96
    assert document["adoption"]["profile"] is None  # 98 queries: no significant gain here
    channels = pl.read_parquet(tmp_path / "export" / "channels.parquet")
    assert channels.columns == [
        "query_id",
        "memory_id",
        "importance",
        "bm25_raw",
        "bm25_best",
        "cosine:hotmem-hash-v1",
    ]
    metrics = pl.read_parquet(tmp_path / "export" / "per_query_metrics.parquet")
    assert sorted(metrics["profile"].unique()) == [
        "bm25-only",
        "cosine-only",
        "default",
        "tuned (out-of-fold)",
    ]
    assert len(document["by_fold"]) == 3
    assert {c["baseline"] for c in document["comparisons"]} == {
        "default",
        "bm25-only",
        "cosine-only",
    }
    [tuned] = hotmem.read_profiles(profile)
    assert tuned.name == "tuned"
    assert {**tuned.to_dict(), "name": "x"} == {**document["chosen"], "name": "x"}
    report = (tmp_path / "tune.md").read_text()
    assert report.startswith(
        "# HotMem profile tuning\n\n**No profile beats default on nDCG@5 with a Holm-adjusted "
    )
    assert "\n**tuned: nDCG@5 " in report
    # adopt it: the store's searches now rank as the tuned profile does
    fixture = load_fixture(FIXTURE / "corpus.jsonl", FIXTURE / "queries.jsonl")
    store_path = tmp_path / "adopt.db"
    open_fixture_store(store_path, fixture.corpus).close()
    query = "who approves large invoices?"
    capsys.readouterr()
    assert hotmem_main(["--db", str(store_path), "search", query, "--json"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert (
        hotmem_main(
            [
                "--db",
                str(store_path),
                "profiles",
                "--import",
                str(profile),
                "--set-default",
                "tuned",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert hotmem_main(["--db", str(store_path), "search", query, "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    with hotmem.open_store(store_path) as store:
        expected = hotmem.search_memories(store, query, profile=tuned)
    assert [r["memory_id"] for r in after] == [r.memory_id for r in expected]
    assert [r["score"] for r in after] == [r.score for r in expected]
    assert after != before
