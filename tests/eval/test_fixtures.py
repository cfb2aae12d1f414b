"""Loading and validating retrieval fixtures: every problem, located and explained."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hotmem
from hotmem_eval.errors import FixtureError, Problem
from hotmem_eval.fixture_schema import (
    CATEGORIES,
    CORPUS_SCHEMA,
    GROUPS_SCHEMA,
    NEGATIVE_CATEGORY,
    QRELS_SCHEMA,
    QUERIES_SCHEMA,
)
from hotmem_eval.fixtures import Fixture, load_fixture

# The valid base fixture: 3 memories (lines 1-3) and 5 queries a category (lines 1-40).
# Each bad case appends one line, so it is line 4 of the corpus or line 41 of the queries.
CORPUS_LINE = 4
QUERY_LINE = 41
EXAMPLE = "'2025-01-31T09:00:00Z'"
NO_TIMEZONE = f"expected created_at with a timezone such as {EXAMPLE}"
NO_ANSWER = "expected at least one memory graded >= 2 (category='exact_lexical'), found relevance="
NOT_A_GROUP = (
    "expected duplicate_groups[{0}] to be a list of memory_ids, found duplicate_groups[{0}]"
)


def memory(memory_id: str = "mem-d", **fields: object) -> dict[str, object]:
    base = {
        "memory_id": memory_id,
        "identifier": "org-a",
        "fact": f"Fact of {memory_id}.",
        "importance": 0.5,
        "tags": ["t"],
    }
    return base | fields


def query(query_id: str = "q-extra", **fields: object) -> dict[str, object]:
    base = {
        "query_id": query_id,
        "category": "exact_lexical",
        "query": "What is a?",
        "relevance": {"mem-a": 3},
        "notes": "",
    }
    return base | fields


def base_corpus() -> list[object]:
    return [memory("mem-a"), memory("mem-b"), memory("mem-c", identifier="org-b")]


def base_queries() -> list[object]:
    return [
        query(
            f"q-{category}-{n}",
            category=category,
            relevance={} if category == NEGATIVE_CATEGORY else {"mem-a": 3},
        )
        for category in CATEGORIES
        for n in range(1, 6)
    ]


def write_jsonl(path: Path, lines: list[object]) -> Path:
    """Write each dict as JSON, each str and bytes as it is, one a line."""
    encoded = [
        line
        if isinstance(line, bytes)
        else (line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)).encode()
        for line in lines
    ]
    path.write_bytes(b"\n".join(encoded) + b"\n")
    return path


def load(tmp_path: Path, corpus: list[object], queries: list[object]) -> Fixture:
    return load_fixture(
        write_jsonl(tmp_path / "corpus.jsonl", corpus),
        write_jsonl(tmp_path / "queries.jsonl", queries),
    )


def problems_of(tmp_path: Path, corpus: list[object], queries: list[object]) -> list[str]:
    with pytest.raises(FixtureError) as caught:
        load(tmp_path, corpus, queries)
    return [str(p) if p.severity == "error" else f"{p} [warning]" for p in caught.value.problems]


def test_importance_and_tags_default_as_in_hotmem_import(tmp_path: Path) -> None:
    bare = {"memory_id": "mem-d", "identifier": "org-a", "fact": "A bare memory."}
    fixture = load(tmp_path, [*base_corpus(), bare], base_queries())
    row = fixture.corpus.filter(pc.field("memory_id") == "mem-d").to_pylist()[0]
    assert (row["importance"], row["tags"]) == (0.5, [])
    with hotmem.open_store(tmp_path / "s.db") as store:  # what hotmem import gives it
        [added] = store.add_many([bare])
    assert (added.importance, list(added.tags)) == (row["importance"], row["tags"])


def test_a_typo_of_an_optional_field_warns(tmp_path: Path) -> None:
    typo = {"memory_id": "mem-d", "identifier": "org-a", "fact": "x", "improtance": 0.9}
    fixture = load(tmp_path, [*base_corpus(), typo], base_queries())
    assert [str(w) for w in fixture.warnings] == [
        f"{tmp_path / 'corpus.jsonl'}:4: unknown field 'improtance' is ignored, "
        "did you mean 'importance'?"
    ]


def test_base_fixture_is_valid(tmp_path: Path) -> None:
    fixture = load(tmp_path, base_corpus(), base_queries())
    assert fixture.warnings == ()
    assert (fixture.corpus.num_rows, fixture.queries.num_rows) == (3, 40)


BAD_MEMORIES = [
    pytest.param("not json", ["invalid JSON: Expecting value at column 1"], id="not-json"),
    pytest.param(
        '{"memory_id": "mem-d",',
        ["invalid JSON: Expecting property name enclosed in double quotes at column 23"],
        id="truncated",
    ),
    pytest.param("[1, 2]", ["expected a JSON object, found an array"], id="array"),
    pytest.param('"mem-d"', ["expected a JSON object, found a string"], id="string"),
    pytest.param("null", ["expected a JSON object, found null"], id="null"),
    pytest.param(
        '{"memory_id": "mem-d", "identifier": "org-a", "fact": "x", "fact": "y", '
        '"importance": 0.5, "tags": []}',
        ["invalid JSON object: expected each key once, found 'fact' twice"],
        id="repeated-key",
    ),
    pytest.param(
        {"memory_id": "mem-d", "identifier": "org-a", "importance": 0.5, "tags": []},
        ["missing required field 'fact'"],
        id="missing-fact",
    ),
    pytest.param(
        {"memory_id": "mem-d", "identifier": "org-a", "facts": "x", "importance": 0.5, "tags": []},
        [
            "missing required field 'fact'",
            "unknown field 'facts' is ignored, did you mean 'fact'? [warning]",
        ],
        id="typo-of-required-field",
    ),
    pytest.param(
        memory(importance=True),
        ["expected importance as a number in [0, 1], found a boolean True"],
        id="importance-bool",
    ),
    pytest.param(
        memory(importance="0.5"),
        ["expected importance as a number in [0, 1], found a string '0.5'"],
        id="importance-str",
    ),
    pytest.param(
        memory(importance=1.5),
        ["expected importance in [0, 1], found importance=1.5"],
        id="importance-high",
    ),
    pytest.param(
        memory(importance=-0.1),
        ["expected importance in [0, 1], found importance=-0.1"],
        id="importance-low",
    ),
    pytest.param(
        '{"memory_id": "mem-d", "identifier": "org-a", "fact": "x", "importance": NaN, "tags": []}',
        ["expected importance in [0, 1], found importance=nan"],
        id="importance-nan",
    ),
    pytest.param(
        memory(tags="finance"),
        ["expected tags as a list of strings, found a string 'finance'"],
        id="tags-str",
    ),
    pytest.param(
        memory(tags=["a", 3]),
        ["expected every tag a non-blank string, found tag=3"],
        id="tags-int",
    ),
    pytest.param(
        memory(tags=["a", ""]),
        ["expected every tag a non-blank string, found tag=''"],
        id="tags-empty",
    ),
    pytest.param(memory(fact=""), ["expected fact not blank, found fact=''"], id="fact-empty"),
    pytest.param(
        memory(fact="  "),
        ["expected fact not blank, found fact='  '"],
        id="fact-blank",
    ),
    pytest.param(
        memory(fact="a\x00b"),
        ["expected fact without NUL characters, found a NUL at position 1"],
        id="fact-nul",
    ),
    pytest.param(
        memory(identifier=None),
        ["expected identifier as a string, found null"],
        id="identifier-null",
    ),
    pytest.param(
        memory(memory_id=7),
        ["expected memory_id as a string, found a number 7"],
        id="id-int",
    ),
    pytest.param(
        memory("mem-b"), ["duplicate memory_id='mem-b', first on line 2"], id="duplicate-id"
    ),
    pytest.param(
        memory(created_at="yesterday"),
        [f"expected created_at as ISO-8601 text such as {EXAMPLE}, found created_at='yesterday'"],
        id="created-not-iso",
    ),
    pytest.param(
        memory(created_at="2025-03-01T00:00:00"),
        [f"{NO_TIMEZONE}, found created_at='2025-03-01T00:00:00' (no timezone)"],
        id="created-naive",
    ),
    pytest.param(
        memory(created_at="2025-03-01"),
        [f"{NO_TIMEZONE}, found created_at='2025-03-01' (no timezone)"],
        id="created-date-only",
    ),
    pytest.param(
        memory("x" * 600),
        [f"expected memory_id of at most {hotmem.MAX_ID_LENGTH} characters, found 600 characters"],
        id="id-too-long",
    ),
    pytest.param(
        memory(identifier="o" * 513),
        ["expected identifier of at most 512 characters, found 513 characters"],
        id="identifier-too-long",
    ),
    pytest.param(
        '{"memory_id": "mem-d", "identifier": "org-a", "fact": "bad \\ud800 text", '
        '"importance": 0.5, "tags": []}',
        ["expected fact as valid Unicode text, found a lone surrogate U+D800 at position 4"],
        id="fact-lone-surrogate",
    ),
    pytest.param(
        memory(created_at="0001-01-01T00:00:00+01:00"),
        [
            "expected created_at within years 1..9999 once converted to UTC, "
            "found created_at='0001-01-01T00:00:00+01:00'"
        ],
        id="created-before-utc-range",
    ),
    pytest.param(
        memory(created_at=20250301),
        [
            f"expected created_at as a datetime or ISO-8601 text such as {EXAMPLE}, "
            "found a number 20250301"
        ],
        id="created-int",
    ),
    pytest.param(
        memory(namespace=""),
        ["expected namespace not blank, found namespace=''"],
        id="namespace-empty",
    ),
    pytest.param(
        memory(duplicate_of="mem-zzz"),
        ["duplicate_of names unknown memory_id='mem-zzz'"],
        id="duplicate-of-unknown",
    ),
    pytest.param(
        memory(duplicate_of="mem-d"),
        [
            "expected duplicate_of to name another memory, "
            "found duplicate_of='mem-d' (the memory itself)"
        ],
        id="duplicate-of-self",
    ),
]


@pytest.mark.parametrize(("line", "reasons"), BAD_MEMORIES)
def test_bad_memory_line(tmp_path: Path, line: object, reasons: list[str]) -> None:
    found = problems_of(tmp_path, [*base_corpus(), line], base_queries())
    assert found == [f"{tmp_path / 'corpus.jsonl'}:{CORPUS_LINE}: {r}" for r in reasons]


BAD_QUERIES = [
    pytest.param(
        query(relevance={"mem-zzz": 3}),
        ["relevance names unknown memory_id='mem-zzz'"],
        id="unknown-memory",
    ),
    pytest.param(
        query(relevance={"mem-a": 4}),
        [
            "expected an integer grade 0..3, found relevance['mem-a']=4",
            NO_ANSWER + "{'mem-a': 4}",
        ],
        id="grade-high",
    ),
    pytest.param(
        query(relevance={"mem-a": 3, "mem-b": -1}),
        ["expected an integer grade 0..3, found relevance['mem-b']=-1"],
        id="grade-negative",
    ),
    pytest.param(
        query(relevance={"mem-a": 3, "mem-b": True}),
        ["expected an integer grade 0..3, found relevance['mem-b']=True"],
        id="grade-bool",
    ),
    pytest.param(
        query(relevance={"mem-a": 3, "mem-b": 2.0}),
        ["expected an integer grade 0..3, found relevance['mem-b']=2.0"],
        id="grade-float",
    ),
    pytest.param(
        query(relevance=["mem-a"]),
        ["expected relevance to be an object of memory_id -> grade, found relevance=['mem-a']"],
        id="relevance-list",
    ),
    pytest.param(
        query(category=NEGATIVE_CATEGORY),
        [
            "expected empty relevance (category='negative_or_no_answer'), "
            "found relevance={'mem-a': 3}"
        ],
        id="negative-with-answer",
    ),
    pytest.param(
        query(relevance={"mem-a": 1, "mem-b": 0}),
        [NO_ANSWER + "{'mem-a': 1, 'mem-b': 0}"],
        id="no-relevant-memory",
    ),
    pytest.param(
        query(relevance={}),
        [NO_ANSWER + "{}"],
        id="empty-relevance",
    ),
    pytest.param(
        query(category="exact_lexicl"),
        ["unknown category='exact_lexicl', did you mean 'exact_lexical'?"],
        id="category-typo",
    ),
    pytest.param(
        query(category="vibes"),
        ["unknown category='vibes', expected one of " + ", ".join(CATEGORIES)],
        id="category-unknown",
    ),
    pytest.param(
        query(query=""),
        ["expected query not blank, found query=''"],
        id="query-empty",
    ),
    pytest.param(query(notes=5), ["expected notes to be a string, found notes=5"], id="notes-int"),
    pytest.param(
        query(identifier=""),
        ["expected identifier not blank, found identifier=''"],
        id="identifier-empty",
    ),
    pytest.param(
        {k: v for k, v in query().items() if k != "relevance"},
        ["missing required field 'relevance'"],
        id="missing-relevance",
    ),
    pytest.param(
        query("q-exact_lexical-2"),
        ["duplicate query_id='q-exact_lexical-2', first on line 2"],
        id="duplicate-id",
    ),
    pytest.param(
        query(duplicate_groups=[["mem-a", "mem-zzz"]]),
        ["duplicate_groups[0] names unknown memory_id='mem-zzz'"],
        id="group-unknown-memory",
    ),
    pytest.param(
        query(duplicate_groups=[["mem-a", "mem-b"], ["mem-a", "mem-a"]]),
        [
            "expected duplicate_groups[1] to name 2 or more distinct memory_ids, "
            "found duplicate_groups[1]=['mem-a', 'mem-a']"
        ],
        id="group-of-one",
    ),
    pytest.param(
        query(duplicate_groups=["mem-a", "mem-b"]),
        [
            f"{NOT_A_GROUP.format(0)}='mem-a'",
            f"{NOT_A_GROUP.format(1)}='mem-b'",
        ],
        id="groups-flat",
    ),
    pytest.param(
        query(duplicate_groups={"g": ["mem-a"]}),
        [
            "expected duplicate_groups to be a list of lists of memory_ids, "
            "found duplicate_groups={'g': ['mem-a']}"
        ],
        id="groups-object",
    ),
]


@pytest.mark.parametrize(("line", "reasons"), BAD_QUERIES)
def test_bad_query_line(tmp_path: Path, line: object, reasons: list[str]) -> None:
    found = problems_of(tmp_path, base_corpus(), [*base_queries(), line])
    assert found == [f"{tmp_path / 'queries.jsonl'}:{QUERY_LINE}: {r}" for r in reasons]


@pytest.mark.parametrize(
    ("kept", "reason"),
    [
        (0, "missing category 'temporal_or_revision': expected at least 5 queries, found 0"),
        (
            4,
            "too few queries in category 'temporal_or_revision': expected at least 5 queries, "
            "found 4",
        ),
    ],
)
def test_category_counts(tmp_path: Path, kept: int, reason: str) -> None:
    queries = [q for q in base_queries() if q["category"] != "temporal_or_revision"]
    queries += [query(f"q-t-{n}", category="temporal_or_revision") for n in range(kept)]
    assert problems_of(tmp_path, base_corpus(), queries) == [
        f"{tmp_path / 'queries.jsonl'}: {reason}"
    ]


def test_every_problem_of_both_files_is_reported_in_file_and_line_order(tmp_path: Path) -> None:
    corpus = [memory("mem-a"), memory("mem-a", importance=2), "{", memory("mem-b", colour="red")]
    queries = [*base_queries()[5:], query(relevance={"mem-x": 1}), query()]
    corpus_path, queries_path = tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl"
    known = "created_at, duplicate_of, fact, identifier, importance, memory_id, namespace, tags"
    expected = (
        Problem(
            str(corpus_path),
            2,
            "expected importance in [0, 1], found importance=2",
        ),
        Problem(str(corpus_path), 2, "duplicate memory_id='mem-a', first on line 1"),
        Problem(
            str(corpus_path),
            3,
            "invalid JSON: Expecting property name enclosed in double quotes at column 2",
        ),
        Problem(
            str(corpus_path),
            4,
            f"unknown field 'colour' is ignored, expected only {known}",
            "warning",
        ),
        Problem(str(queries_path), 36, "relevance names unknown memory_id='mem-x'"),
        Problem(
            str(queries_path),
            36,
            NO_ANSWER + "{'mem-x': 1}",
        ),
        Problem(str(queries_path), 37, "duplicate query_id='q-extra', first on line 36"),
        Problem(
            str(queries_path),
            None,
            "too few queries in category 'exact_lexical': expected at least 5 queries, found 2",
        ),
    )
    with pytest.raises(FixtureError) as caught:
        load(tmp_path, corpus, queries)
    assert caught.value.problems == expected
    assert str(caught.value).splitlines()[3] == (
        f"{corpus_path}:4: warning: unknown field 'colour' is ignored, expected only {known}"
    )


def test_missing_corpus_is_one_problem_and_skips_references(tmp_path: Path) -> None:
    queries_path = write_jsonl(tmp_path / "queries.jsonl", base_queries())
    with pytest.raises(FixtureError) as caught:
        load_fixture(tmp_path / "absent.jsonl", queries_path)
    assert [str(p) for p in caught.value.problems] == [
        f"{tmp_path / 'absent.jsonl'}: expected a JSON Lines file, found no such file"
    ]


def test_directory_is_reported(tmp_path: Path) -> None:
    queries_path = write_jsonl(tmp_path / "queries.jsonl", base_queries())
    with pytest.raises(FixtureError) as caught:
        load_fixture(tmp_path, queries_path)
    assert [str(p) for p in caught.value.problems] == [
        f"{tmp_path}: expected a JSON Lines file, found a directory"
    ]


def test_empty_file_is_reported_once(tmp_path: Path) -> None:
    assert problems_of(tmp_path, base_corpus(), ["", "  "]) == [
        f"{tmp_path / 'queries.jsonl'}: expected at least one JSON object, found no records"
    ]


def test_invalid_utf8_names_the_line_and_byte(tmp_path: Path) -> None:
    bad = b'{"memory_id": "mem-d", "fact": "caf\xe9"}'
    assert problems_of(tmp_path, [*base_corpus(), bad], base_queries()) == [
        f"{tmp_path / 'corpus.jsonl'}:4: expected UTF-8 text, found byte 0xe9 at column 36 "
        "(invalid continuation byte)"
    ]


def test_warnings_are_kept_with_did_you_mean(tmp_path: Path) -> None:
    corpus = [*base_corpus(), memory(tag=["x"])]
    queries = [*base_queries(), query(identifier="orga"), query("q-2", identifier="elsewhere")]
    fixture = load(tmp_path, corpus, queries)
    corpus_path, queries_path = str(tmp_path / "corpus.jsonl"), str(tmp_path / "queries.jsonl")
    scope = "matches no memory's identifier, so the scoped search can return nothing"
    assert fixture.warnings == (
        Problem(corpus_path, 4, "unknown field 'tag' is ignored, did you mean 'tags'?", "warning"),
        Problem(queries_path, 41, f"identifier='orga' {scope}, did you mean 'org-a'?", "warning"),
        Problem(queries_path, 42, f"identifier='elsewhere' {scope}", "warning"),
    )


def test_blank_lines_crlf_and_bom_are_accepted(tmp_path: Path) -> None:
    plain = load(tmp_path, base_corpus(), base_queries())
    first, *rest = (json.dumps(m).encode() + b"\r" for m in base_corpus())
    queries = [line for q in base_queries() for line in ("", json.dumps(q), "   \t")]
    (tmp_path / "other").mkdir()
    other = load(tmp_path / "other", [b"\xef\xbb\xbf" + first, b"\r", *rest], queries)
    for name in ("corpus", "queries", "qrels", "groups"):
        assert getattr(other, name).drop_columns(_line(name)) == getattr(plain, name).drop_columns(
            _line(name)
        )
    assert other.corpus.column("line").to_pylist() == [1, 3, 4]
    lines = dict(zip(*other.queries.select(["query_id", "line"]).to_pydict().values(), strict=True))
    assert (lines["q-exact_lexical-1"], lines["q-exact_lexical-2"]) == (2, 5)


def _line(name: str) -> list[str]:
    return ["line"] if name in ("corpus", "queries") else []


def test_tables_have_the_declared_schemas_and_values(tmp_path: Path) -> None:
    corpus = [
        memory("mem-b", tags=[], namespace="ns", created_at="2025-03-01T00:00:00Z"),
        # Any UTC offset is accepted, as the store accepts it, and converted to UTC.
        memory("mem-a", importance=1, created_at="2025-03-01T14:30:00.250+02:00"),
        memory("mem-c"),
    ]
    queries = [
        *base_queries(),
        query("q-0", relevance={"mem-c": 0, "mem-b": 2}, identifier="org-a"),
    ]
    fixture = load(tmp_path, corpus, queries)
    assert fixture.corpus.schema == CORPUS_SCHEMA
    assert fixture.queries.schema == QUERIES_SCHEMA
    assert fixture.qrels.schema == QRELS_SCHEMA
    assert fixture.groups.schema == GROUPS_SCHEMA
    assert fixture.corpus.to_pylist()[:2] == [
        {
            "memory_id": "mem-a",
            "identifier": "org-a",
            "fact": "Fact of mem-a.",
            "importance": 1.0,
            "tags": ["t"],
            "created_at": datetime(2025, 3, 1, 12, 30, 0, 250_000, tzinfo=UTC),
            "namespace": None,
            "duplicate_of": None,
            "line": 2,
        },
        {
            "memory_id": "mem-b",
            "identifier": "org-a",
            "fact": "Fact of mem-b.",
            "importance": 0.5,
            "tags": [],
            "created_at": datetime(2025, 3, 1, tzinfo=UTC),
            "namespace": "ns",
            "duplicate_of": None,
            "line": 1,
        },
    ]
    assert fixture.queries.slice(0, 1).to_pylist() == [
        {
            "query_id": "q-0",
            "category": "exact_lexical",
            "query": "What is a?",
            "identifier": "org-a",
            "notes": "",
            "line": 41,
        }
    ]
    assert fixture.qrels.slice(0, 2).to_pylist() == [
        {"query_id": "q-0", "memory_id": "mem-b", "grade": 2},
        {"query_id": "q-0", "memory_id": "mem-c", "grade": 0},
    ]
    assert fixture.qrels.num_rows == 2 + 35  # negatives contribute no rows
    assert fixture.groups == pa.Table.from_pylist([], schema=GROUPS_SCHEMA)


def test_groups_combine_duplicate_of_and_duplicate_groups_transitively(tmp_path: Path) -> None:
    corpus = [
        memory("mem-a"),
        memory("mem-c", duplicate_of="mem-b"),
        memory("mem-b", duplicate_of="mem-a"),
        memory("mem-d"),
        memory("mem-e"),
        memory("mem-f"),
        memory("mem-g"),
    ]
    queries = [
        *base_queries(),
        query(
            "q-own", duplicate_groups=[["mem-g", "mem-e"], ["mem-e", "mem-c"], ["mem-d", "mem-f"]]
        ),
    ]
    fixture = load(tmp_path, corpus, queries)
    rows = [tuple(r.values()) for r in fixture.groups.to_pylist()]
    shared = [("mem-a", "mem-a"), ("mem-b", "mem-a"), ("mem-c", "mem-a")]
    own = [
        ("mem-a", "mem-a"),
        ("mem-b", "mem-a"),
        ("mem-c", "mem-a"),
        ("mem-d", "mem-d"),
        ("mem-e", "mem-a"),
        ("mem-f", "mem-d"),
        ("mem-g", "mem-a"),
    ]
    other_ids = [q["query_id"] for q in base_queries()]
    expected = sorted(
        [(qid, m, g) for qid in other_ids for m, g in shared] + [("q-own", m, g) for m, g in own]
    )
    assert rows == expected
