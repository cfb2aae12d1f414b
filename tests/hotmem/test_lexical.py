"""The lexical channel: stemmed words, CJK grams, and the derived-index rule (issue 11)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import hotmem
from hotmem.retrieval.query import LexicalQuery, lexical_query
from hotmem.store import migrations, schema
from hotmem.store.fts import cjk_grams, cjk_index_text

DATA = Path(__file__).parent / "data"

# (facts, query, identifier): the first fact must rank first. Each was a miss before stemming
# and CJK grams: no lexical match, and a hash cosine below the floor.
FOUND = [
    pytest.param(
        ["Production deploys happen on Tuesdays."],
        "When can we deploy?",
        "acme-infra",
        id="readme-deploy",
    ),
    pytest.param(
        [
            "Production deploys happen on Tuesdays.",
            "Acme invoices above EUR 5,000 need two approvals.",
        ],
        "deploy day",
        "acme-infra",
        id="tutorial-deploy-day",
    ),
    pytest.param(
        ["Acme invoices above EUR 5,000 need two approvals.", "The kitchen is cleaned daily."],
        "large invoice",
        None,
        id="large-invoice",
    ),
    pytest.param(
        ["東京オフィスは月曜日に休みです", "大阪の倉庫は土曜日に閉まります"],
        "月曜日",
        None,
        id="cjk-word-inside-a-run",
    ),
    pytest.param(
        ["東京オフィスは月曜日に休みです", "The Osaka warehouse closes on Saturdays."],
        "東京",
        None,
        id="cjk-two-characters",
    ),
    pytest.param(
        ["差旅报销须在出差结束后三十天内提交。", "年假须提前两周申请。"],
        "报销期限",
        None,
        id="chinese",
    ),
    pytest.param(
        ["서울 스튜디오의 주간 회의는 월요일 오전 9시에 열립니다.", "점심은 12시입니다."],
        "회의 시간",
        None,
        id="korean-particle",
    ),
    pytest.param(
        ["大雪の日は在宅勤務です。", "晴れの日は出社します。"],
        "雪",
        None,
        id="cjk-one-character-inside-a-run",
    ),
]


@pytest.mark.parametrize(("facts", "query", "identifier"), FOUND)
def test_inflected_and_cjk_queries_find_their_memory(
    facts: list[str], query: str, identifier: str | None
) -> None:
    with hotmem.open_store(":memory:") as store:
        first = store.add(facts[0], identifier="acme-infra")
        for fact in facts[1:]:
            store.add(fact, identifier="acme-infra")
        results = hotmem.search_memories(store, query, identifier=identifier)
    assert results, f"{query!r} found nothing"
    assert results[0].memory_id == first.memory_id
    assert results[0].components.lexical_match


def test_the_readme_example_prints_a_result() -> None:
    with hotmem.open_store(":memory:") as store:
        store.add("Production deploys happen on Tuesdays.", identifier="acme-infra")
        found = hotmem.search_memories(store, "When can we deploy?", identifier="acme-infra")
    assert [(r.rank, r.fact) for r in found] == [(1, "Production deploys happen on Tuesdays.")]


GRAMS = [
    ("月", ["月"]),
    ("月曜日", ["月曜", "曜日"]),
    ("회의는", ["회의", "의는"]),
]


@pytest.mark.parametrize(("run", "grams"), GRAMS)
def test_query_grams(run: str, grams: list[str]) -> None:
    assert cjk_grams(run) == grams


INDEX_TEXT = [
    ("Production deploys happen on Tuesdays.", None),
    ("", None),
    ("月曜日 at 東京", "月 曜 日 月曜 曜日 東 京 東京"),
    ("雪 (Yuki) posts in #release-東京.", "雪 東 京 東京"),
    # NFKC first: half-width katakana become full-width; the middle dot separates runs.
    ("ｶﾀｶﾅ・ロシア", "カ タ カ ナ カタ タカ カナ ロ シ ア ロシ シア"),
    ("회의는 9시", "회 의 는 회의 의는 시"),
]


@pytest.mark.parametrize(("fact", "text"), INDEX_TEXT)
def test_cjk_index_text(fact: str, text: str | None) -> None:
    assert cjk_index_text(fact) == text


QUERIES = [
    ("When can we deploy?", ("deploy",), (), '"deploy"', None),
    ("月曜日", (), ("月曜", "曜日"), None, '"月曜" OR "曜日"'),
    ("What does the 雪 bot do?", ("bot",), ("雪",), '"bot"', '"雪"'),
    # The Latin part of a mixed-script term is a word; a repeated gram is asked once.
    ("release東京 東京", ("release",), ("東京",), '"release"', '"東京"'),
    ("회의 시간", (), ("회의", "시간"), None, '"회의" OR "시간"'),
    ("the of and", (), (), None, None),
]


@pytest.mark.parametrize(("query", "words", "grams", "words_match", "grams_match"), QUERIES)
def test_lexical_query(
    query: str,
    words: tuple[str, ...],
    grams: tuple[str, ...],
    words_match: str | None,
    grams_match: str | None,
) -> None:
    found = lexical_query(query)
    assert found == LexicalQuery(words, grams)
    assert (found.words_expression, found.grams_expression) == (words_match, grams_match)
    assert bool(found) == bool(words or grams)


def test_bm25_of_words_and_grams_add_up() -> None:
    with hotmem.open_store(":memory:") as store:
        mixed = store.add("Tokyo office 東京 opens at nine.", identifier="a")
        store.add("Tokyo office closes at six.", identifier="a")
        store.add("東京の天気", identifier="a")
        words = hotmem.explain(store, "office", mixed.memory_id).components.bm25_raw
        grams = hotmem.explain(store, "東京", mixed.memory_id).components.bm25_raw
        both = hotmem.explain(store, "office 東京", mixed.memory_id).components.bm25_raw
    assert words is not None
    assert grams is not None
    assert both == words + grams


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copyfile(DATA / name, target)
    return target


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT * FROM memories ORDER BY rowid").fetchall()


def _meta(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as connection:
        return dict(connection.execute("SELECT key, value FROM hotmem_meta"))


def test_a_version_1_store_migrates_on_open(tmp_path: Path) -> None:
    path = _copy("store-v1.db", tmp_path)
    assert _meta(path)["fts_tokenizer"] == "unicode61 remove_diacritics 2"
    with hotmem.open_store(path) as store:
        assert store.check_integrity() == ()
        assert len(store) == 4
        deploy = hotmem.search_memories(store, "When can we deploy?")
        monday = hotmem.search_memories(store, "月曜日")
        store.add("大阪オフィスは土曜日に休みです", identifier="fjord-analytics")
        saturday = hotmem.search_memories(store, "土曜日")
    assert _meta(path) == {
        "embedding_dimension": "64",
        "embedding_model": "hotmem-hash-v1",
        "fts_tokenizer": hotmem.LEXICAL_INDEX,
        "schema_version": str(schema.SCHEMA_VERSION),
    }
    assert [r.memory_id for r in deploy] == ["mem-deploy-001"]
    assert [r.memory_id for r in monday][:1] == ["mem-tokyo-001"]
    assert [r.fact for r in saturday][:1] == ["大阪オフィスは土曜日に休みです"]
    with hotmem.open_store(path) as store:  # a second open finds nothing to migrate
        assert store.check_integrity() == ()


def test_a_failed_migration_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _copy("store-v1.db", tmp_path)
    before = _meta(path), _rows(path)
    original = migrations.MIGRATIONS[2]

    def half_done(connection: sqlite3.Connection) -> None:
        original(connection)
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(migrations.MIGRATIONS, 2, half_done)
    with pytest.raises(RuntimeError, match="disk on fire"):
        hotmem.open_store(path)
    # Version 1 still, with the same memories (only the journal mode is WAL's already).
    assert (_meta(path), _rows(path)) == before
    monkeypatch.setitem(migrations.MIGRATIONS, 2, original)
    with hotmem.open_store(path) as store:
        assert store.check_integrity() == ()


def test_a_store_of_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = _copy("store-v1.db", tmp_path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE hotmem_meta SET value = '99' WHERE key = 'schema_version'")
    expected = (
        rf"expected schema_version at most {schema.SCHEMA_VERSION}, found schema_version='99'"
    )
    with pytest.raises(hotmem.StoreError, match=expected):
        hotmem.open_store(path)


def test_a_package_of_the_previous_tokenizer_verifies_and_hydrates(tmp_path: Path) -> None:
    package = DATA / "unicode61-v1.hotmem"
    report = hotmem.verify_snapshot(package)
    assert report.ok, report.problems
    assert report.record_count == 4
    target = tmp_path / "hydrated.db"
    hotmem.hydrate(package, target)
    assert _meta(target)["fts_tokenizer"] == hotmem.LEXICAL_INDEX
    with hotmem.open_store(target) as store:
        assert store.check_integrity() == ()
        assert [r.memory_id for r in hotmem.search_memories(store, "月曜日")] == ["mem-tokyo-001"]
        deploy = hotmem.search_memories(store, "When can we deploy?")
        assert [r.memory_id for r in deploy] == ["mem-deploy-001"]
        store.snapshot(tmp_path / "again.hotmem")
    # Facts and vectors are data and travel unchanged; only the index name is this HotMem's.
    again = hotmem.verify_snapshot(tmp_path / "again.hotmem")
    assert again.ok
    assert again.record_count == report.record_count


def test_deleting_a_memory_removes_its_grams() -> None:
    with hotmem.open_store(":memory:") as store:
        tokyo = store.add("東京オフィスは月曜日に休みです", identifier="a")
        store.add("The Osaka warehouse closes on Saturdays.", identifier="a")
        store.delete(tokyo.memory_id)
        assert store.connection.execute("SELECT count(*) FROM memories_cjk").fetchone() == (0,)
        assert hotmem.search_memories(store, "月曜日") == []
        assert store.check_integrity() == ()


TAMPERING = [
    ("DELETE FROM memories_cjk", "CJK index: 1 row(s) missing"),
    (
        "INSERT INTO memories_cjk (rowid, grams) VALUES (99, '東')",
        "CJK index: 1 row(s) not memories",
    ),
    ("UPDATE memories_cjk SET grams = '東'", "CJK index: 1 row(s) other grams"),
]


@pytest.mark.parametrize(("sql", "problem"), TAMPERING)
def test_integrity_check_compares_the_cjk_index_with_the_facts(sql: str, problem: str) -> None:
    with hotmem.open_store(":memory:") as store:
        store.add("東京オフィスは月曜日に休みです", identifier="a")
        store.add("Production deploys happen on Tuesdays.", identifier="a")
        store.connection.execute(sql)
        problems = store.check_integrity()
        assert len(problems) == 1
        assert problems[0].startswith(problem)
        store.rebuild_lexical_index()
        assert store.check_integrity() == ()
        assert [r.fact for r in hotmem.search_memories(store, "月曜日")][:1] == [
            "東京オフィスは月曜日に休みです"
        ]
