"""Load a retrieval fixture (``corpus.jsonl`` + ``queries.jsonl``) into sorted Arrow tables.

``load_fixture`` reads both files, validates them (``fixture_validation``) and either raises
one ``FixtureError`` listing every problem of both files, or returns a ``Fixture`` whose tables
follow the schemas of ``fixture_schema``. Every table is sorted by its ids, so the order of
the lines in a file never changes a result; only the ``line`` columns, kept for messages,
record where a row came from.

``Fixture`` is also what a BEIR or TREC collection loads into (``hotmem_eval.collection``);
``format`` says which, and ``relevant_grade`` which grades count as relevant.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

import hotmem
from hotmem_eval.errors import FixtureError, Problem, UsageError
from hotmem_eval.file_digests import digest_of, open_hashed, recording
from hotmem_eval.fixture_schema import (
    CORPUS_SCHEMA,
    GROUPS_SCHEMA,
    MAX_ANY_GRADE,
    QRELS_SCHEMA,
    QUERIES_SCHEMA,
    RELEVANT_GRADE,
)
from hotmem_eval.fixture_validation import (
    DEFAULT_IMPORTANCE,
    DEFAULT_TAGS,
    Record,
    check_corpus,
    check_queries,
    is_suite,
)

__all__ = ["Fixture", "FixtureFormat", "checked_relevant_grade", "load_fixture", "read_records"]

#: Where a fixture came from: the native JSON Lines pair, a BEIR directory, a TREC collection.
FixtureFormat = Literal["native", "beir", "trec"]

_Object = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Fixture:
    """A validated retrieval fixture.

    Attributes:
        corpus: one row a memory (``CORPUS_SCHEMA``), sorted by ``memory_id``.
        queries: one row a query (``QUERIES_SCHEMA``), sorted by ``query_id``.
        qrels: one row per graded (query, memory) pair, grade 0 included
            (``QRELS_SCHEMA``), sorted by ``(query_id, memory_id)``.
        groups: for every query, one row per memory in a near-duplicate group
            (``GROUPS_SCHEMA``), sorted by ``(query_id, memory_id)``.
        warnings: problems that did not refuse the fixture (unknown fields, an
            identifier no memory has), in file and line order.
        corpus_path: the corpus file it was read from.
        queries_path: the queries file it was read from (a TREC collection's topics file).
        format: ``"native"``, ``"beir"`` or ``"trec"``.
        suite: whether it is the built-in 8-category suite (every query's category is one
            of ``CATEGORIES``), whose own rules and decision rules apply.
        relevant_grade: a memory graded at least this counts as relevant (>= 1).
        sources: every file read, in a fixed order (corpus, queries or topics, then qrels).
        digests: the SHA-256 of each of ``sources``, of the bytes read (``file_digests``).
        qrels_path: the qrels file of a BEIR or TREC collection; None for a native fixture,
            whose grades are in its queries file.
    """

    corpus: pa.Table = field(repr=False)
    queries: pa.Table = field(repr=False)
    qrels: pa.Table = field(repr=False)
    groups: pa.Table = field(repr=False)
    warnings: tuple[Problem, ...]
    corpus_path: Path
    queries_path: Path
    format: FixtureFormat
    suite: bool
    relevant_grade: int
    sources: tuple[Path, ...]
    qrels_path: Path | None
    digests: tuple[str, ...] = ()


def checked_relevant_grade(given: int | None, default: int) -> int:
    """``given``, or ``default`` when it is None, as a rule of relevance.

    Raises:
        UsageError: ``given`` is not an integer 1..``MAX_ANY_GRADE``.
    """
    if given is None:
        return default
    if isinstance(given, bool) or not isinstance(given, int) or not 1 <= given <= MAX_ANY_GRADE:
        raise UsageError(
            f"expected relevant_grade as an integer 1..{MAX_ANY_GRADE}, "
            f"found relevant_grade={given!r}"
        )
    return given


def load_fixture(
    corpus_path: str | os.PathLike[str],
    queries_path: str | os.PathLike[str],
    *,
    relevant_grade: int | None = None,
) -> Fixture:
    """Read, validate and tabulate a retrieval fixture.

    Parameters:
        corpus_path: JSON Lines file with one memory an object.
        queries_path: JSON Lines file with one evaluated query an object.
        relevant_grade: the lowest grade that counts as relevant; None for the native rule,
            ``RELEVANT_GRADE`` (2).

    Returns:
        The fixture, its tables sorted by id and its warnings kept; ``suite`` is true when
        every query's category is one of the built-in ``CATEGORIES``.

    Raises:
        FixtureError: at least one error in either file; ``problems`` lists every error and
            warning of both files, each as ``path:line: reason``.
        UsageError: ``relevant_grade`` is not an integer of at least 1.
    """
    grade = checked_relevant_grade(relevant_grade, RELEVANT_GRADE)
    corpus_name, queries_name = os.fspath(corpus_path), os.fspath(queries_path)
    with recording() as digests:
        corpus_records, corpus_read = read_records(corpus_name)
        query_records, queries_read = read_records(queries_name)
    problems = [
        *_by_line(corpus_read + check_corpus(corpus_name, corpus_records)),
        *_by_line(queries_read + check_queries(queries_name, query_records, corpus=corpus_records)),
    ]
    if any(problem.severity == "error" for problem in problems):
        raise FixtureError(tuple(problems))
    memories = sorted((record for _, record in corpus_records), key=lambda r: r["memory_id"])
    queries = sorted((record for _, record in query_records), key=lambda r: r["query_id"])
    corpus_lines = {record["memory_id"]: line for line, record in corpus_records}
    query_lines = {record["query_id"]: line for line, record in query_records}
    return Fixture(
        corpus=_corpus_table(memories, corpus_lines),
        queries=_queries_table(queries, query_lines),
        qrels=_qrels_table(queries),
        groups=_groups_table(memories, queries),
        warnings=tuple(problems),
        corpus_path=Path(corpus_name),
        queries_path=Path(queries_name),
        format="native",
        suite=is_suite(query_records),
        relevant_grade=grade,
        sources=(Path(corpus_name), Path(queries_name)),
        qrels_path=None,
        digests=(digest_of(digests, corpus_name), digest_of(digests, queries_name)),
    )


def read_records(path: str | os.PathLike[str]) -> tuple[list[Record], list[Problem]]:
    """Every object of a JSON Lines file and every problem, by ``hotmem.read_jsonl``'s policy
    (the one ``hotmem import`` applies: UTF-8, one leading BOM, no repeated keys, bounded
    nesting and numbers).

    Returns:
        The ``(line, object)`` records in line order, and the problems of the file (a
        missing, unreadable or empty file is one problem without a line).
    """
    records: list[Record] = []
    problems: list[Problem] = []
    try:  # through the digest (file_digests); hotmem.read_jsonl names a file it cannot open
        stream = open_hashed(path)
    except OSError:
        items = list(hotmem.read_jsonl(path))
    else:
        with stream:
            items = list(hotmem.read_jsonl(stream, name=os.fspath(path)))
    for item in items:
        if isinstance(item, hotmem.JsonlProblem):
            problems.append(Problem(item.path, item.line, item.reason))
        else:
            records.append((item.line, item.value))
    return records, problems


def _corpus_table(memories: Sequence[_Object], lines: Mapping[str, int]) -> pa.Table:
    def column(name: str) -> list[Any]:
        return [memory.get(name) for memory in memories]

    created = [
        None if value is None else hotmem.parse_timestamp(value) for value in column("created_at")
    ]
    return pa.Table.from_pydict(
        {
            "memory_id": column("memory_id"),
            "identifier": column("identifier"),
            "fact": column("fact"),
            "importance": [
                DEFAULT_IMPORTANCE if value is None else float(value)
                for value in column("importance")
            ],
            "tags": [list(DEFAULT_TAGS) if value is None else value for value in column("tags")],
            "created_at": created,
            "namespace": column("namespace"),
            "duplicate_of": column("duplicate_of"),
            "line": [lines[memory["memory_id"]] for memory in memories],
        },
        schema=CORPUS_SCHEMA,
    )


def _queries_table(queries: Sequence[_Object], lines: Mapping[str, int]) -> pa.Table:
    return pa.Table.from_pydict(
        {
            name: [query.get(name) for query in queries]
            for name in ("query_id", "category", "query", "identifier")
        }
        | {"notes": [query.get("notes") or "" for query in queries]}  # optional when free-form
        | {"line": [lines[query["query_id"]] for query in queries]},
        schema=QUERIES_SCHEMA,
    )


def _qrels_table(queries: Sequence[_Object]) -> pa.Table:
    rows = [
        (query["query_id"], memory_id, grade)
        for query in queries
        for memory_id, grade in sorted(query["relevance"].items())
    ]
    return pa.Table.from_pylist(
        [dict(zip(QRELS_SCHEMA.names, row, strict=True)) for row in rows], schema=QRELS_SCHEMA
    )


def _groups_table(memories: Sequence[_Object], queries: Sequence[_Object]) -> pa.Table:
    shared = [
        (memory["memory_id"], memory["duplicate_of"])
        for memory in memories
        if memory.get("duplicate_of") is not None
    ]
    rows = []
    for query in queries:
        own = [
            (group[0], other) for group in query.get("duplicate_groups") or () for other in group
        ]
        for memory_id, group_id in sorted(_group_ids([*shared, *own]).items()):
            rows.append(
                {"query_id": query["query_id"], "memory_id": memory_id, "group_id": group_id}
            )
    return pa.Table.from_pylist(rows, schema=GROUPS_SCHEMA)


def _group_ids(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Union-find over "is a near-duplicate of" pairs: each memory -> its group's smallest id.

    Memories that pair only with themselves are left out, so a lone memory is in no group.
    """
    parent: dict[str, str] = {}

    def root(node: str) -> str:
        top = node
        while parent.setdefault(top, top) != top:
            top = parent[top]
        while parent[node] != top:
            parent[node], node = top, parent[node]
        return top

    for left, right in pairs:
        low, high = sorted((root(left), root(right)))
        # The smaller root always wins, so every root is the smallest id of its group.
        parent[high] = low
    groups = {node: root(node) for node in parent}
    sizes = Counter(groups.values())
    return {node: top for node, top in groups.items() if sizes[top] > 1}


def _by_line(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (p.line is None, p.line or 0))
