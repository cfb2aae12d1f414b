"""Collections in the field's formats (BEIR, TREC) and free-form native fixtures."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pytest

import hotmem
from hotmem_eval.collection import detect_format, load_collection
from hotmem_eval.errors import FixtureError, Problem, UsageError
from hotmem_eval.fixture_schema import (
    CATEGORIES,
    CORPUS_SCHEMA,
    GROUPS_SCHEMA,
    MAX_ANY_GRADE,
    QRELS_SCHEMA,
    QUERIES_SCHEMA,
)
from hotmem_eval.fixtures import Fixture, load_fixture

RETRIEVAL = Path(__file__).resolve().parents[2] / "benchmarks" / "retrieval"
BLANK = (
    "has a blank title and text, so it cannot be a memory: left out (its judgements still count)"
)
HEADER = "query-id\tcorpus-id\tscore"


def write_lines(path: Path, lines: Sequence[object]) -> Path:
    """Each mapping as JSON, each string as it is, one a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


def documents() -> list[object]:
    return [
        {"_id": "d1", "title": "Alpha", "text": "alpha beta", "metadata": {"url": "x"}},
        {"_id": "d2", "title": "", "text": "gamma delta"},
        {"_id": "d3", "text": "epsilon"},
    ]


def beir_queries() -> list[object]:
    return [
        {"_id": "q1", "text": "alpha"},
        {"_id": "q2", "text": "gamma"},
        {"_id": "q3", "text": "x"},
    ]


def beir(
    root: Path,
    *,
    corpus: Sequence[object] | None = None,
    queries: Sequence[object] | None = None,
    qrels: Mapping[str, Sequence[str]] | None = None,
) -> Path:
    """A BEIR directory: the default corpus, queries and a test split judging q1 and q2."""
    write_lines(root / "corpus.jsonl", documents() if corpus is None else corpus)
    write_lines(root / "queries.jsonl", beir_queries() if queries is None else queries)
    splits = qrels or {"test": [HEADER, "q1\td1\t2", "q1\td2\t1", "q2\td2\t0"]}
    for split, lines in splits.items():
        write_lines(root / "qrels" / f"{split}.tsv", lines)
    return root


def trec(
    root: Path,
    *,
    corpus: Sequence[object] | None = None,
    topics: tuple[str, Sequence[object]] = ("topics.tsv", ["1\talpha", "2\tgamma", "3\tunused"]),
    qrels: tuple[str, Sequence[str]] = ("qrels.txt", ["1 0 d1 3", "1 0 d2 1", "2 Q0 d2 7"]),
) -> Path:
    """A TREC collection: the default corpus, a topics file and a qrels file."""
    write_lines(root / "corpus.jsonl", documents() if corpus is None else corpus)
    write_lines(root / topics[0], topics[1])
    write_lines(root / qrels[0], qrels[1])
    return root


def problems(call: object, *args: object, **kwargs: object) -> list[str]:
    """Every problem the call raises, as text; warnings marked."""
    assert callable(call)
    with pytest.raises(FixtureError) as caught:
        call(*args, **kwargs)
    return [str(p) if p.severity == "error" else f"{p} [warning]" for p in caught.value.problems]


def rows(table: pa.Table, *names: str) -> list[tuple[object, ...]]:
    return [tuple(row[name] for name in names) for row in table.to_pylist()]


# Detection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"], "beir"),
        (["corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "README.md"], "beir"),
        (["corpus.jsonl", "topics.tsv", "qrels.txt"], "trec"),
        (["corpus.jsonl", "topics.jsonl", "robust.qrels"], "trec"),
        (["corpus.jsonl", "queries.jsonl"], "native"),
        (["corpus.jsonl", "queries.jsonl", "qrels.txt"], "native"),
        (["corpus.jsonl", "queries.jsonl", "topics.tsv"], "native"),
    ],
)
def test_format_is_detected_from_the_files(tmp_path: Path, files: list[str], expected: str) -> None:
    for name in files:
        write_lines(tmp_path / name, ["x"])
    assert detect_format(tmp_path) == expected


def test_a_directory_of_two_formats_is_refused_until_the_format_is_named(tmp_path: Path) -> None:
    root = trec(tmp_path)
    write_lines(root / "queries.jsonl", [{"_id": "1", "text": "alpha"}])
    assert problems(load_collection, root) == [
        f"{root}: expected the files of one collection format, found those of "
        "trec (corpus.jsonl, topics.jsonl or topics.tsv, qrels.txt or *.qrels) and "
        "native (corpus.jsonl, queries.jsonl); name the format"
    ]
    assert load_collection(root, format="trec").format == "trec"


EXPECTED_FILES = (
    "beir: corpus.jsonl, queries.jsonl, qrels/; "
    "trec: corpus.jsonl, topics.jsonl or topics.tsv, qrels.txt or *.qrels; "
    "native: corpus.jsonl, queries.jsonl"
)


@pytest.mark.parametrize(
    ("files", "found"),
    [
        ([], "an empty directory"),
        (["queries.jsonl", "qrels/test.tsv"], "qrels/, queries.jsonl"),
        (["corpus.jsonl", "topics.tsv"], "corpus.jsonl, topics.tsv"),
        (
            [f"f{n:02d}.txt" for n in range(14)],
            ", ".join(f"f{n:02d}.txt" for n in range(12)) + " and 2 more",
        ),
    ],
)
def test_an_unrecognised_directory_names_the_files_expected(
    tmp_path: Path, files: list[str], found: str
) -> None:
    for name in files:
        write_lines(tmp_path / name, ["x"])
    assert problems(load_collection, tmp_path) == [
        f"{tmp_path}: expected a collection directory ({EXPECTED_FILES}), found {found}"
    ]


@pytest.mark.parametrize(("name", "found"), [("absent", "no such directory"), ("file", "a file")])
def test_a_path_that_is_not_a_directory_is_refused(tmp_path: Path, name: str, found: str) -> None:
    (tmp_path / "file").write_text("x")
    path = tmp_path / name
    for fmt in ("auto", "beir"):
        assert problems(load_collection, path, format=fmt) == [
            f"{path}: expected a collection directory, found {found}"
        ]


def test_a_named_format_reports_the_files_it_misses(tmp_path: Path) -> None:
    write_lines(tmp_path / "corpus.jsonl", documents())
    assert problems(load_collection, tmp_path, format="beir") == [
        f"{tmp_path / 'queries.jsonl'}: expected a JSON Lines file, found no such file",
        f"{tmp_path / 'qrels' / 'test.tsv'}: expected the qrels of split='test', found no such "
        f"file (no qrels in {tmp_path / 'qrels'})",
    ]
    assert problems(load_collection, tmp_path, format="trec") == [
        f"{tmp_path}: expected a topics file (topics.jsonl or topics.tsv), found 0: none",
        f"{tmp_path}: expected a qrels file (qrels.txt or one *.qrels), found 0: none",
    ]


def test_an_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(
        UsageError, match=r"expected format one of auto, native, beir, trec, found format='csv'"
    ):
        load_collection(beir(tmp_path), format="csv")  # type: ignore[arg-type]


# BEIR ------------------------------------------------------------------------------------


def test_beir_directory_loads_into_the_native_tables(tmp_path: Path) -> None:
    root = beir(tmp_path)
    fixture = load_collection(root)
    assert (fixture.format, fixture.suite, fixture.relevant_grade) == ("beir", False, 1)
    assert fixture.sources == (
        root / "corpus.jsonl",
        root / "queries.jsonl",
        root / "qrels" / "test.tsv",
    )
    assert (fixture.corpus_path, fixture.queries_path, fixture.qrels_path) == fixture.sources
    assert fixture.warnings == ()
    assert fixture.corpus.schema == CORPUS_SCHEMA
    assert fixture.queries.schema == QUERIES_SCHEMA
    assert fixture.qrels.schema == QRELS_SCHEMA
    assert fixture.groups == GROUPS_SCHEMA.empty_table()
    assert fixture.corpus.to_pylist() == [
        {
            "memory_id": memory_id,
            "identifier": "collection",
            "fact": fact,
            "importance": 0.5,
            "tags": [],
            "created_at": None,
            "namespace": None,
            "duplicate_of": None,
            "line": line,
        }
        for memory_id, fact, line in [
            ("d1", "Alpha\nalpha beta", 1),
            ("d2", "gamma delta", 2),
            ("d3", "epsilon", 3),
        ]
    ]
    # q3 is in queries.jsonl but not in the split's qrels: it is not evaluated.
    assert fixture.queries.to_pylist() == [
        {
            "query_id": "q1",
            "category": None,
            "query": "alpha",
            "identifier": None,
            "notes": "",
            "line": 1,
        },
        {
            "query_id": "q2",
            "category": None,
            "query": "gamma",
            "identifier": None,
            "notes": "",
            "line": 2,
        },
    ]
    assert rows(fixture.qrels, "query_id", "memory_id", "grade") == [
        ("q1", "d1", 2),
        ("q1", "d2", 1),
        ("q2", "d2", 0),
    ]


def test_blank_documents_are_left_out_but_their_judgements_count(tmp_path: Path) -> None:
    corpus = [
        *documents(),
        {"_id": "d4", "title": " ", "text": ""},
        {"_id": "d5", "title": None, "text": "\t"},
    ]
    qrels = {"test": [HEADER, "q1\td1\t1", "q1\td4\t2"]}
    fixture = load_collection(beir(tmp_path, corpus=corpus, qrels=qrels))
    corpus_path = tmp_path / "corpus.jsonl"
    assert fixture.corpus.column("memory_id").to_pylist() == ["d1", "d2", "d3"]
    assert rows(fixture.qrels, "memory_id", "grade") == [("d1", 1), ("d4", 2)]
    assert [str(w) for w in fixture.warnings] == [
        f"{corpus_path}:4: document _id='d4' {BLANK}",
        f"{corpus_path}:5: document _id='d5' {BLANK}",
    ]


def test_ids_of_any_length_the_store_accepts_are_kept(tmp_path: Path) -> None:
    long_id = "7" * hotmem.MAX_ID_LENGTH
    corpus = [{"_id": long_id, "title": "t", "text": "x"}, {"_id": "0042", "text": "y"}]
    qrels = {"test": [HEADER, f"q1\t{long_id}\t1", "q1\t0042\t1"]}
    fixture = load_collection(beir(tmp_path, corpus=corpus, qrels=qrels))
    assert fixture.corpus.column("memory_id").to_pylist() == ["0042", long_id]


CORPUS_ERRORS = [
    pytest.param({"title": "t", "text": "x"}, ["missing required field '_id'"], id="no-id"),
    pytest.param(
        {"_id": 7, "text": "x"},
        ["_id cannot be a memory_id: expected memory_id as a string, found a number 7"],
        id="id-number",
    ),
    pytest.param(
        {"_id": "x" * 600, "text": "x"},
        [
            f"_id cannot be a memory_id: expected memory_id of at most {hotmem.MAX_ID_LENGTH} "
            "characters, found 600 characters"
        ],
        id="id-too-long",
    ),
    pytest.param(
        {"_id": " ", "text": "x"},
        ["_id cannot be a memory_id: expected memory_id not blank, found memory_id=' '"],
        id="id-blank",
    ),
    pytest.param(
        {"_id": "d1", "text": "x"}, ["duplicate _id='d1', first on line 1"], id="id-twice"
    ),
    pytest.param({"_id": "d9", "title": "t"}, ["missing required field 'text'"], id="no-text"),
    pytest.param(
        {"_id": "d9", "text": None}, ["expected text as a string, found null"], id="text-null"
    ),
    pytest.param(
        {"_id": "d9", "title": 5, "text": "x"},
        ["expected title as a string, found a number 5"],
        id="title-number",
    ),
    pytest.param(
        {"_id": "d9", "text": "a\x00b"},
        ["expected text without NUL characters, found a NUL at position 1"],
        id="text-nul",
    ),
    pytest.param(
        '{"_id": "d9",',
        ["invalid JSON: Expecting property name enclosed in double quotes at column 14"],
        id="json",
    ),
]


@pytest.mark.parametrize(("line", "reasons"), CORPUS_ERRORS)
def test_bad_document_line(tmp_path: Path, line: object, reasons: list[str]) -> None:
    root = beir(tmp_path, corpus=[*documents(), line])
    assert problems(load_collection, root) == [f"{root / 'corpus.jsonl'}:4: {r}" for r in reasons]


QUERY_ERRORS = [
    pytest.param({"text": "x"}, ["missing required field '_id'"], id="no-id"),
    pytest.param(
        {"_id": 4, "text": "x"}, ["expected _id as a string, found a number 4"], id="id-number"
    ),
    pytest.param({"_id": "q9"}, ["missing required field 'text'"], id="no-text"),
    pytest.param(
        {"_id": "q9", "text": " "}, ["expected text not blank, found text=' '"], id="text-blank"
    ),
    pytest.param(
        {"_id": "q1", "text": "again"}, ["duplicate _id='q1', first on line 1"], id="id-twice"
    ),
]


@pytest.mark.parametrize(("line", "reasons"), QUERY_ERRORS)
def test_bad_query_line(tmp_path: Path, line: object, reasons: list[str]) -> None:
    root = beir(tmp_path, queries=[*beir_queries(), line])
    assert problems(load_collection, root) == [f"{root / 'queries.jsonl'}:4: {r}" for r in reasons]


COLUMNS = "(query-id, corpus-id, score)"
QRELS_ERRORS = [
    pytest.param(
        ["q1\td1\t1", "q1\td2\t1"],
        [
            f"1: expected a header line {COLUMNS} first, found a judgement: "
            "BEIR's readers skip the first line"
        ],
        id="no-header",
    ),
    pytest.param(
        ["query-id corpus-id score", "q1\td1\t1"],
        [f"1: expected a header line of 3 tab-separated columns {COLUMNS}, found 1 column"],
        id="header-spaces",
    ),
    pytest.param(
        [HEADER, "q1\td1"],
        [f"2: expected 3 tab-separated columns {COLUMNS}, found 2"],
        id="two-columns",
    ),
    pytest.param(
        [HEADER, "q1\td1\t1\t0"],
        [f"2: expected 3 tab-separated columns {COLUMNS}, found 4"],
        id="four-columns",
    ),
    pytest.param(
        [HEADER, "q1\td1\t-1"],
        [f"2: expected score as an integer 0..{MAX_ANY_GRADE}, found score='-1'"],
        id="negative",
    ),
    pytest.param(
        [HEADER, "q1\td1\t1.0"],
        [f"2: expected score as an integer 0..{MAX_ANY_GRADE}, found score='1.0'"],
        id="float",
    ),
    pytest.param(
        [HEADER, "q1\td1\t2147483648"],
        [f"2: expected score as an integer 0..{MAX_ANY_GRADE}, found score='2147483648'"],
        id="too-large",
    ),
    pytest.param(
        [HEADER, "q1\td1\t" + "9" * 5000],
        [f"2: expected score as an integer 0..{MAX_ANY_GRADE}, found score='{'9' * 5000}'"],
        id="thousands-of-digits",
    ),
    pytest.param(
        [HEADER, "q1\td1\t1", "q7\td1\t1"],
        ["3: unknown query-id='q7': no such query"],
        id="unknown-query",
    ),
    pytest.param(
        [HEADER, "q1\td1\t1", "q1\td7\t1"],
        ["3: unknown corpus-id='d7': no such document"],
        id="unknown-document",
    ),
    pytest.param(
        [HEADER, "q1\td1\t1", "q1\td1\t2"],
        ["3: conflicting judgement of corpus-id='d1' for query-id='q1': grade 2 here, 1 on line 2"],
        id="conflict",
    ),
    pytest.param(
        [HEADER, "q1\td1\t1", "q1\td1\t1", "q2\td9\t1"],
        [
            "3: repeated judgement of corpus-id='d1' for query-id='q1', first on line 2: "
            "counted once [warning]",
            "4: unknown corpus-id='d9': no such document",
        ],
        id="repeated-and-unknown",
    ),
    pytest.param(
        [HEADER],
        [f"expected a header line, then one judgement a line {COLUMNS}, found only a header"],
        id="header-only",
    ),
    pytest.param(
        ["q1\tbad", "q1\td1\t1\n"],
        [f"1: expected a header line of 3 tab-separated columns {COLUMNS}, found 2 columns"],
        id="short-header",
    ),
]


@pytest.mark.parametrize(("lines", "reasons"), QRELS_ERRORS)
def test_bad_qrels(tmp_path: Path, lines: list[str], reasons: list[str]) -> None:
    root = beir(tmp_path, qrels={"test": lines})
    qrels = root / "qrels" / "test.tsv"
    expected = [f"{qrels}:{r}" if r[0].isdigit() else f"{qrels}: {r}" for r in reasons]
    assert problems(load_collection, root) == expected


def test_repeated_judgement_with_one_grade_is_counted_once(tmp_path: Path) -> None:
    fixture = load_collection(beir(tmp_path, qrels={"test": [HEADER, "q1\td1\t1", "q1\td1\t1"]}))
    assert rows(fixture.qrels, "query_id", "memory_id", "grade") == [("q1", "d1", 1)]
    assert [w.line for w in fixture.warnings] == [3]


def test_every_problem_of_every_file_is_reported_in_file_and_line_order(tmp_path: Path) -> None:
    corpus = [{"_id": "d1", "text": "x"}, {"_id": "d1", "text": "y"}, {"_id": "d2", "text": ""}]
    queries = [{"_id": "q1", "text": "a"}, {"_id": "q2"}]
    root = beir(
        tmp_path, corpus=corpus, queries=queries, qrels={"test": [HEADER, "q1\td9\t1", "q2\td1\tx"]}
    )
    corpus_path, queries_path, qrels = (
        root / "corpus.jsonl",
        root / "queries.jsonl",
        root / "qrels" / "test.tsv",
    )
    with pytest.raises(FixtureError) as caught:
        load_collection(root)
    assert caught.value.problems == (
        Problem(str(corpus_path), 2, "duplicate _id='d1', first on line 1"),
        Problem(str(corpus_path), 3, f"document _id='d2' {BLANK}", "warning"),
        Problem(str(queries_path), 2, "missing required field 'text'"),
        Problem(str(qrels), 2, "unknown corpus-id='d9': no such document"),
        Problem(str(qrels), 3, f"expected score as an integer 0..{MAX_ANY_GRADE}, found score='x'"),
    )


def test_missing_corpus_skips_the_document_references(tmp_path: Path) -> None:
    root = beir(tmp_path)
    (root / "corpus.jsonl").unlink()
    assert problems(load_collection, root, format="beir") == [
        f"{root / 'corpus.jsonl'}: expected a JSON Lines file, found no such file"
    ]


def test_qrels_lines_read_by_the_jsonl_policy(tmp_path: Path) -> None:
    root = beir(tmp_path)
    qrels = root / "qrels" / "test.tsv"
    qrels.write_bytes(b"\xef\xbb\xbfquery-id\tcorpus-id\tscore\r\n\r\nq1\td1\t1\r\nq2\td\xe9\t1\n")
    assert problems(load_collection, root) == [
        f"{qrels}:4: expected UTF-8 text, found byte 0xe9 at column 5 (invalid continuation byte)"
    ]


# Splits and relevance ----------------------------------------------------------------------


def test_the_split_chooses_the_qrels_and_the_queries(tmp_path: Path) -> None:
    splits = {"test": [HEADER, "q1\td1\t1"], "dev": [HEADER, "q2\td2\t3", "q3\td3\t1"]}
    root = beir(tmp_path, qrels=splits)
    test, dev = load_collection(root), load_collection(root, split="dev")
    assert test.queries.column("query_id").to_pylist() == ["q1"]
    assert dev.queries.column("query_id").to_pylist() == ["q2", "q3"]
    assert dev.qrels_path == root / "qrels" / "dev.tsv"
    assert problems(load_collection, root, split="train") == [
        f"{root / 'qrels' / 'train.tsv'}: expected the qrels of split='train', found no such file "
        "(splits there: dev, test)"
    ]


@pytest.mark.parametrize("split", ["", ".", "..", "a/b", "../test"])
def test_a_split_must_be_a_file_name(tmp_path: Path, split: str) -> None:
    with pytest.raises(UsageError, match="expected split as the name of a file of qrels/"):
        load_collection(beir(tmp_path), split=split)


@pytest.mark.parametrize("fmt", ["trec", "native"])
def test_only_beir_has_splits(tmp_path: Path, fmt: str) -> None:
    root = trec(tmp_path) if fmt == "trec" else _native_pair(tmp_path)
    assert load_collection(root, split="test").format == fmt
    with pytest.raises(UsageError, match=f"expected no split for a {fmt} collection"):
        load_collection(root, split="dev")


def _native_pair(root: Path) -> Path:
    write_lines(root / "corpus.jsonl", [memory("m1")])
    write_lines(root / "queries.jsonl", [query("a", relevance={"m1": 1})])
    return root


@pytest.mark.parametrize(
    ("fmt", "given", "expected"),
    [
        ("native", None, 2),
        ("beir", None, 1),
        ("trec", None, 1),
        ("native", 1, 1),
        ("beir", 3, 3),
        ("trec", 5, 5),
    ],
)
def test_relevant_grade_defaults_to_the_formats_rule(
    tmp_path: Path, fmt: str, given: int | None, expected: int
) -> None:
    build = {"native": _native_pair, "beir": beir, "trec": trec}[fmt]
    assert load_collection(build(tmp_path), relevant_grade=given).relevant_grade == expected


@pytest.mark.parametrize("given", [0, -1, True, 2.0, MAX_ANY_GRADE + 1])
def test_relevant_grade_must_be_a_positive_integer(tmp_path: Path, given: object) -> None:
    with pytest.raises(
        UsageError,
        match=rf"expected relevant_grade as an integer 1\.\.{MAX_ANY_GRADE}, found relevant_grade=",
    ):
        load_collection(beir(tmp_path), relevant_grade=given)  # type: ignore[arg-type]


# TREC --------------------------------------------------------------------------------------


def test_trec_collection_loads_with_tsv_topics_and_header(tmp_path: Path) -> None:
    root = trec(tmp_path, topics=("topics.tsv", ["QID\ttext", "1\talpha", "2\tgamma", "3\tunused"]))
    fixture = load_collection(root)
    assert (fixture.format, fixture.suite, fixture.relevant_grade) == ("trec", False, 1)
    assert fixture.sources == (root / "corpus.jsonl", root / "topics.tsv", root / "qrels.txt")
    assert fixture.qrels_path == root / "qrels.txt"
    assert rows(fixture.queries, "query_id", "query", "category", "line") == [
        ("1", "alpha", None, 2),
        ("2", "gamma", None, 3),
    ]
    assert rows(fixture.qrels, "query_id", "memory_id", "grade") == [
        ("1", "d1", 3),
        ("1", "d2", 1),
        ("2", "d2", 7),
    ]
    assert fixture.corpus.column("memory_id").to_pylist() == ["d1", "d2", "d3"]


def test_trec_topics_jsonl_in_either_form(tmp_path: Path) -> None:
    topics = [
        {"_id": "1", "text": "alpha", "title": "ignored"},
        {"query_id": "2", "query": "gamma"},
    ]
    fixture = load_collection(
        trec(
            tmp_path, topics=("topics.jsonl", topics), qrels=("run.qrels", ["1 0 d1 1", "2 0 d2 1"])
        )
    )
    assert rows(fixture.queries, "query_id", "query") == [("1", "alpha"), ("2", "gamma")]
    assert fixture.queries_path == tmp_path / "topics.jsonl"


def test_negative_grades_are_left_out_with_one_warning(tmp_path: Path) -> None:
    qrels = ["1 0 d1 1", "1 0 d2 -2", "2 0 d2 -1", "2 0 d3 -1"]
    fixture = load_collection(trec(tmp_path, qrels=("qrels.txt", qrels)))
    assert rows(fixture.qrels, "query_id", "memory_id", "grade") == [("1", "d1", 1)]
    # Query 2 has only negative judgements: it is still evaluated, as a query with no answer.
    assert fixture.queries.column("query_id").to_pylist() == ["1", "2"]
    assert [str(w) for w in fixture.warnings] == [
        f"{tmp_path / 'qrels.txt'}:2: 3 judgements with a negative grade left out (this line is "
        "the first): trec_eval reads a negative grade as pooled but not judged, never relevant"
    ]


TREC_COLUMNS = "(query_id, iteration, doc_id, grade)"
FORMS = "'_id' with 'text' or 'query_id' with 'query'"
TREC_ERRORS = [
    pytest.param(
        ("topics.tsv", ["1\talpha\tnarrative"]),
        None,
        ["topics.tsv:1: expected 2 tab-separated columns (id, text), found 3"],
        id="topics-three-columns",
    ),
    pytest.param(
        ("topics.tsv", ["1\talpha", "1\tagain"]),
        None,
        ["topics.tsv:2: duplicate id='1', first on line 1"],
        id="topics-id-twice",
    ),
    pytest.param(
        ("topics.tsv", ["1\t "]),
        None,
        ["topics.tsv:1: expected text not blank, found text=' '"],
        id="topics-blank",
    ),
    pytest.param(
        ("topics.tsv", ["id\ttext"]),
        None,
        ["topics.tsv: expected at least one topic, found only a header"],
        id="topics-header-only",
    ),
    pytest.param(
        ("topics.jsonl", [{"_id": "1", "text": "a", "query_id": "1"}]),
        None,
        [f"topics.jsonl:1: expected {FORMS}, found '_id' and 'query_id'"],
        id="topics-both-forms",
    ),
    pytest.param(
        ("topics.jsonl", [{"id": "1", "text": "a"}]),
        None,
        [f"topics.jsonl:1: expected {FORMS}, found none of '_id', 'query_id'"],
        id="topics-neither-form",
    ),
    pytest.param(
        ("topics.jsonl", [{"query_id": "1", "text": "a"}]),
        None,
        ["topics.jsonl:1: missing required field 'query'"],
        id="topics-mixed-form",
    ),
    pytest.param(
        None,
        ["1 0 d1"],
        [f"qrels.txt:1: expected 4 whitespace-separated columns {TREC_COLUMNS}, found 3"],
        id="qrels-three-columns",
    ),
    pytest.param(
        None,
        ["1 0 d1 0.5"],
        [f"qrels.txt:1: expected grade as an integer up to {MAX_ANY_GRADE}, found grade='0.5'"],
        id="qrels-float",
    ),
    pytest.param(
        None,
        ["9 0 d1 1"],
        ["qrels.txt:1: unknown query_id='9': no such query"],
        id="qrels-unknown-topic",
    ),
    pytest.param(
        None,
        ["1 0 d9 1"],
        ["qrels.txt:1: unknown doc_id='d9': no such document"],
        id="qrels-unknown-doc",
    ),
    pytest.param(
        None, [""], ["qrels.txt: expected at least one judgement, found none"], id="qrels-empty"
    ),
]


@pytest.mark.parametrize(("topics", "qrels", "reasons"), TREC_ERRORS)
def test_bad_trec_files(
    tmp_path: Path,
    topics: tuple[str, list[object]] | None,
    qrels: list[str] | None,
    reasons: list[str],
) -> None:
    root = trec(
        tmp_path,
        topics=topics or ("topics.tsv", ["1\talpha", "2\tgamma"]),
        qrels=("qrels.txt", qrels or ["1 0 d1 1"]),
    )
    assert problems(load_collection, root) == [f"{root}/{r}" for r in reasons]


def test_two_topics_or_qrels_files_are_refused(tmp_path: Path) -> None:
    root = trec(tmp_path)
    write_lines(root / "topics.jsonl", [{"_id": "1", "text": "a"}])
    write_lines(root / "a.qrels", ["1 0 d1 1"])
    assert problems(load_collection, root) == [
        f"{root}: expected a topics file (topics.jsonl or topics.tsv), "
        "found 2: topics.jsonl, topics.tsv",
        f"{root}: expected a qrels file (qrels.txt or one *.qrels), found 2: qrels.txt, a.qrels",
    ]


# Native fixtures: the suite and free-form --------------------------------------------------


def memory(memory_id: str) -> dict[str, object]:
    return {
        "memory_id": memory_id,
        "identifier": "org",
        "fact": f"Fact {memory_id}.",
        "importance": 0.5,
        "tags": [],
    }


def query(query_id: str, **fields: object) -> dict[str, object]:
    return {"query_id": query_id, "query": "what?", "relevance": {}, "notes": ""} | fields


def native(tmp_path: Path, queries: list[object]) -> Fixture:
    corpus = write_lines(tmp_path / "corpus.jsonl", [memory("m1"), memory("m2")])
    return load_fixture(corpus, write_lines(tmp_path / "queries.jsonl", queries))


def test_free_form_fixture_without_categories(tmp_path: Path) -> None:
    fixture = native(
        tmp_path, [query("a", relevance={"m1": 7, "m2": 0}), query("b"), query("c", category=None)]
    )
    assert (fixture.format, fixture.suite, fixture.relevant_grade, fixture.qrels_path) == (
        "native",
        False,
        2,
        None,
    )
    assert fixture.sources == (tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl")
    assert fixture.queries.column("category").to_pylist() == [None, None, None]
    assert rows(fixture.qrels, "query_id", "memory_id", "grade") == [("a", "m1", 7), ("a", "m2", 0)]


def test_notes_are_optional_in_a_free_form_fixture_only(tmp_path: Path) -> None:
    bare = {"query_id": "a", "query": "what?", "relevance": {"m1": 1}}
    fixture = native(tmp_path, [bare, query("b", notes="kept")])
    assert fixture.queries.column("notes").to_pylist() == ["", "kept"]
    suite = dict(bare, category="exact_lexical")
    with pytest.raises(FixtureError) as raised:
        native(tmp_path, [suite])
    assert f"{tmp_path / 'queries.jsonl'}:1: missing required field 'notes'" in [
        str(p) for p in raised.value.problems
    ]


def test_free_form_fixture_with_its_own_labels(tmp_path: Path) -> None:
    queries = [
        query("a", category="Physics", relevance={"m1": MAX_ANY_GRADE}),
        query("b", category="aero dynamics"),
    ]
    fixture = native(tmp_path, queries)
    assert fixture.queries.column("category").to_pylist() == ["Physics", "aero dynamics"]
    assert fixture.qrels.column("grade").to_pylist() == [MAX_ANY_GRADE]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            query("x", category="overall"),
            "expected category other than 'overall' (the row over all queries), "
            "found category='overall'",
        ),
        (query("x", category=" "), "expected category not blank, found category=' '"),
        (query("x", category=3), "expected category as a string, found a number 3"),
        (
            query("x", relevance={"m1": -1}),
            f"expected an integer grade 0..{MAX_ANY_GRADE}, found relevance['m1']=-1",
        ),
        (
            query("x", relevance={"m1": 1.5}),
            f"expected an integer grade 0..{MAX_ANY_GRADE}, found relevance['m1']=1.5",
        ),
        (
            query("x", relevance={"m1": MAX_ANY_GRADE + 1}),
            f"expected an integer grade 0..{MAX_ANY_GRADE}, "
            f"found relevance['m1']={MAX_ANY_GRADE + 1}",
        ),
        (query("x", relevance={"m9": 1}), "relevance names unknown memory_id='m9'"),
    ],
)
def test_free_form_fixture_checks(tmp_path: Path, line: object, reason: str) -> None:
    assert problems(native, tmp_path, [query("a"), line]) == [
        f"{tmp_path / 'queries.jsonl'}:2: {reason}"
    ]


def test_one_built_in_category_makes_the_fixture_the_suite(tmp_path: Path) -> None:
    found = problems(
        native,
        tmp_path,
        [query("a", category="exact_lexical", relevance={"m1": 3}), query("b", category="mine")],
    )
    queries_path = tmp_path / "queries.jsonl"
    assert (
        found[0]
        == f"{queries_path}:2: unknown category='mine', expected one of {', '.join(CATEGORIES)}"
    )
    too_few = f"{queries_path}: too few queries in category 'exact_lexical'"
    assert found[1] == f"{too_few}: expected at least 5 queries, found 1"
    assert found[2:] == [
        f"{queries_path}: missing category {c!r}: expected at least 5 queries, found 0"
        for c in CATEGORIES[1:]
    ]


@pytest.mark.parametrize(
    "folder", [RETRIEVAL, RETRIEVAL / "external" / "kgh-retrieval"], ids=["ours", "kgh"]
)
def test_committed_fixtures_are_the_suite_and_load_as_before(folder: Path) -> None:
    fixture = load_collection(folder)
    direct = load_fixture(folder / "corpus.jsonl", folder / "queries.jsonl")
    assert (fixture.format, fixture.suite, fixture.relevant_grade, fixture.qrels_path) == (
        "native",
        True,
        2,
        None,
    )
    assert fixture.sources == (folder / "corpus.jsonl", folder / "queries.jsonl")
    for name in ("corpus", "queries", "qrels", "groups"):
        assert getattr(fixture, name) == getattr(direct, name)
    assert set(fixture.queries.column("category").to_pylist()) == set(CATEGORIES)
