"""The committed retrieval fixtures: ours honours its contract, the public one loads unchanged."""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from hotmem_eval.fixture_schema import (
    CATEGORIES,
    DUPLICATE_CATEGORY,
    NEGATIVE_CATEGORY,
    RELEVANT_GRADE,
)
from hotmem_eval.fixtures import Fixture, load_fixture
from hotmem_eval.metrics import per_query_metrics

RETRIEVAL = Path(__file__).resolve().parents[2] / "benchmarks" / "retrieval"
CORPUS = RETRIEVAL / "corpus.jsonl"
QUERIES = RETRIEVAL / "queries.jsonl"
EXTERNAL = RETRIEVAL / "external" / "kgh-retrieval"
ID_PREFIXES = {
    "exact_lexical": "exact",
    "semantic_paraphrase": "para",
    "identifier_or_entity_name": "ent",
    "temporal_or_revision": "temp",
    "near_duplicate_diversity": "dup",
    "negative_or_no_answer": "neg",
    "cross_project_isolation": "iso",
    "snapshot_hydration_equivalence": "snap",
}


@pytest.fixture(scope="module")
def fixture() -> Fixture:
    return load_fixture(CORPUS, QUERIES)


def frames(fixture: Fixture) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    return (
        pl.from_arrow(fixture.corpus),
        pl.from_arrow(fixture.queries),
        pl.from_arrow(fixture.qrels),
    )


def test_committed_fixture_meets_the_minimum_counts(fixture: Fixture) -> None:
    counts = Counter(fixture.queries.column("category").to_pylist())
    assert fixture.warnings == ()
    assert fixture.corpus.num_rows >= 80
    assert set(counts) == set(CATEGORIES)
    assert min(counts.values()) >= 8


@pytest.mark.parametrize("path", [CORPUS, QUERIES], ids=["corpus", "queries"])
def test_lines_are_canonical_json(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert text.endswith("\n")
    assert lines == [
        json.dumps(json.loads(line), sort_keys=True, ensure_ascii=False) for line in lines
    ]


def test_ids_are_stable_and_name_their_category(fixture: Fixture) -> None:
    _, queries, _ = frames(fixture)
    memory_ids = fixture.corpus.column("memory_id").to_pylist()
    assert [m for m in memory_ids if not re.fullmatch(r"mem-[a-z0-9-]+-\d{3}", m)] == []
    wrong = [
        (q, c)
        for q, c in queries.select("query_id", "category").iter_rows()
        if not re.fullmatch(rf"q-{ID_PREFIXES[c]}-\d{{3}}", q)
    ]
    assert wrong == []


def test_isolation_queries_are_scoped_and_only_in_scope_memories_count(fixture: Fixture) -> None:
    corpus, queries, qrels = frames(fixture)
    isolation = queries.filter(pl.col("category") == "cross_project_isolation")
    assert isolation.filter(pl.col("identifier").is_null()).height == 0
    graded = (
        isolation.select("query_id", scope="identifier")
        .join(qrels, on="query_id")
        .join(corpus.select("memory_id", "identifier"), on="memory_id")
    )
    leaks = graded.filter((pl.col("identifier") != pl.col("scope")) & (pl.col("grade") > 0))
    assert leaks.height == 0
    # The trap must exist: each scoped query also grades (0) a same-named memory out of scope.
    trapped = graded.filter(pl.col("identifier") != pl.col("scope"))["query_id"].unique()
    assert sorted(trapped) == sorted(isolation["query_id"])


def test_revision_queries_grade_only_dated_memories(fixture: Fixture) -> None:
    corpus, queries, qrels = frames(fixture)
    graded = (
        queries.filter(pl.col("category") == "temporal_or_revision")
        .join(qrels, on="query_id")
        .join(corpus, on="memory_id")
    )
    assert graded.filter(pl.col("created_at").is_null()).height == 0
    dated_per_query = graded.group_by("query_id").agg(pl.col("created_at").n_unique())
    assert dated_per_query["created_at"].min() >= 2


def test_duplicate_queries_have_a_group_of_relevant_duplicates(fixture: Fixture) -> None:
    _, queries, qrels = frames(fixture)
    crowded = (
        pl.from_arrow(fixture.groups)
        .join(qrels.filter(pl.col("grade") >= RELEVANT_GRADE), on=["query_id", "memory_id"])
        .group_by("query_id", "group_id")
        .len()
        .filter(pl.col("len") >= 2)["query_id"]
        .unique()
    )
    duplicates = queries.filter(pl.col("category") == DUPLICATE_CATEGORY)["query_id"]
    assert sorted(crowded) == sorted(duplicates)


#: The near-duplicate queries whose answer spans groups: the cases for diversity metrics.
SPANNING = [f"q-dup-{n:03d}" for n in range(11, 22)]


def _relevant_groups(fixture: Fixture) -> pl.DataFrame:
    """Per (query, relevant group): its relevant memories, sorted; a lone memory is a group."""
    _, _, qrels = frames(fixture)
    return (
        qrels.filter(pl.col("grade") >= RELEVANT_GRADE)
        .join(pl.from_arrow(fixture.groups), on=["query_id", "memory_id"], how="left")
        .with_columns(group_id=pl.coalesce("group_id", "memory_id"))
        .group_by("query_id", "group_id")
        .agg(pl.col("memory_id").sort())
        .sort("query_id", "group_id")
    )


def test_spanning_queries_have_two_or_more_groups_of_near_duplicates(fixture: Fixture) -> None:
    groups = _relevant_groups(fixture)
    spans = groups.group_by("query_id").agg(
        groups=pl.len(), smallest=pl.col("memory_id").list.len().min()
    )
    spanning = spans.filter((pl.col("groups") >= 2) & (pl.col("smallest") >= 2))
    assert sorted(spanning["query_id"]) == SPANNING
    _, queries, _ = frames(fixture)
    categories = queries.filter(pl.col("query_id").is_in(SPANNING))["category"].unique()
    assert categories.to_list() == [DUPLICATE_CATEGORY]


def test_one_of_each_group_beats_every_copy_of_one(fixture: Fixture) -> None:
    """On each spanning query, ranking the copies of its largest group does at least as well on
    recall@5 as one memory of each group, and worse on group recall and alpha-nDCG."""
    rankings: dict[str, list[str]] = {}
    relevant = _relevant_groups(fixture).filter(pl.col("query_id").is_in(SPANNING))
    for (query_id,), block in relevant.group_by("query_id", maintain_order=True):
        members = block["memory_id"].to_list()
        rankings[f"{query_id}/crowded"] = max(members, key=len)
        rankings[f"{query_id}/diverse"] = [group[0] for group in members]
    # Each ranking is a query of its own ("q-dup-011/crowded"), with its query's qrels and groups.
    runs = pl.DataFrame({"run": list(rankings)}).with_columns(
        query_id=pl.col("run").str.extract(r"^([^/]+)")
    )

    def per_run(table: pl.DataFrame) -> pl.DataFrame:
        return runs.join(table, on="query_id").drop("query_id").rename({"run": "query_id"})

    _, queries, qrels = frames(fixture)
    results = pl.DataFrame(
        [
            {"query_id": run, "rank": rank, "memory_id": memory, "identifier": None}
            for run, ranked in rankings.items()
            for rank, memory in enumerate(ranked, start=1)
        ]
    )
    per_query = per_query_metrics(
        results,
        per_run(qrels),
        per_run(queries.select("query_id", "category", identifier=pl.lit(None, pl.String))),
        per_run(pl.from_arrow(fixture.groups)),
        k=5,
    )
    value = {(q, m): v for q, m, v in per_query.select("query_id", "metric", "value").iter_rows()}
    for query_id in SPANNING:
        crowded, diverse = f"{query_id}/crowded", f"{query_id}/diverse"
        assert value[crowded, "recall_at_k"] >= value[diverse, "recall_at_k"], query_id
        for metric in ("group_recall_at_k", "alpha_ndcg_at_k"):
            assert value[crowded, metric] < value[diverse, metric], (query_id, metric)
        assert value[diverse, "group_recall_at_k"] == 1.0


def test_negative_queries_have_no_graded_memory(fixture: Fixture) -> None:
    _, queries, qrels = frames(fixture)
    negatives = queries.filter(pl.col("category") == NEGATIVE_CATEGORY)
    assert negatives.join(qrels, on="query_id").height == 0


def test_non_neutral_importance_is_always_a_declared_importance_case(fixture: Fixture) -> None:
    corpus, queries, qrels = frames(fixture)
    unusual = corpus.filter(pl.col("importance") != 0.5)["memory_id"]
    declared = (
        queries.filter(pl.col("notes").str.contains("importance"))
        .join(qrels, on="query_id")["memory_id"]
        .unique()
    )
    assert unusual.len() >= 3
    assert set(unusual) <= set(declared)


def test_corpus_carries_unicode_text(fixture: Fixture) -> None:
    facts = "".join(fixture.corpus.column("fact").to_pylist())
    assert [c for c in "éãßİıü東京雪🚀🐛ÆøïZë" if c not in facts] == []


def test_external_fixture_loads_unchanged() -> None:
    external = load_fixture(EXTERNAL / "corpus.jsonl", EXTERNAL / "queries.jsonl")
    counts = Counter(external.queries.column("category").to_pylist())
    groups = pl.from_arrow(external.groups)
    assert external.warnings == ()
    assert (external.corpus.num_rows, external.queries.num_rows) == (60, 48)
    assert counts == dict.fromkeys(CATEGORIES, 6)
    assert external.corpus.column("namespace").null_count == 0
    assert external.corpus.column("created_at").null_count == 54
    assert groups.height == 48 * 9
    assert sorted(groups["group_id"].unique()) == [
        "mem-cache-001",
        "mem-handbook-001",
        "mem-travel-001",
    ]


LINES = {path.name: path.read_text(encoding="utf-8").splitlines() for path in (CORPUS, QUERIES)}


@pytest.mark.slow
@given(
    corpus=st.permutations(LINES["corpus.jsonl"]),
    queries=st.permutations(LINES["queries.jsonl"]),
    blanks=st.lists(st.integers(min_value=0, max_value=200), max_size=5),
)
@example(corpus=LINES["corpus.jsonl"][::-1], queries=LINES["queries.jsonl"][::-1], blanks=[])
def test_line_order_and_blank_lines_never_change_the_tables(
    fixture: Fixture, corpus: list[str], queries: list[str], blanks: list[int]
) -> None:
    corpus = list(corpus)
    for position in blanks:
        corpus.insert(position % (len(corpus) + 1), "")
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "c.jsonl").write_text("\n".join(corpus) + "\n", encoding="utf-8")
        (root / "q.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
        shuffled = load_fixture(root / "c.jsonl", root / "q.jsonl")
    assert shuffled.corpus.drop_columns("line") == fixture.corpus.drop_columns("line")
    assert shuffled.queries.drop_columns("line") == fixture.queries.drop_columns("line")
    assert shuffled.qrels == fixture.qrels
    assert shuffled.groups == fixture.groups
