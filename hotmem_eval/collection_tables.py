"""The tables of a BEIR or TREC collection: its judgements checked, its ``Fixture`` built.

``collection_fixture`` takes what the readers of one collection found (``ReadCollection``),
checks every judgement against the documents and queries that exist (``check_judgements``),
and either raises one ``FixtureError`` listing every problem of every file, or returns the
``Fixture`` with the native tables:

- every document with a fact becomes one memory: ``memory_id`` its ``_id``, ``identifier``
  ``COLLECTION_IDENTIFIER`` (a collection has no scopes, and the identifier is not searched),
  importance ``COLLECTION_IMPORTANCE``, no tags, no ``created_at``;
- the queries evaluated are those the judgements name, with no category, scope or notes;
- the qrels are the judgements of grade 0 or more, one a (query, document); a document left
  out of the corpus (blank) keeps its judgements, so it counts as a relevant memory that is
  never retrieved (in ideal DCG and recall denominators);
- there are no near-duplicate groups, and the fixture is never the built-in suite.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pyarrow as pa

from hotmem_eval.collection_files import Document, Judgement, Topic, by_line
from hotmem_eval.errors import FixtureError, Problem, Severity
from hotmem_eval.file_digests import digest_of
from hotmem_eval.fixture_schema import CORPUS_SCHEMA, GROUPS_SCHEMA, QRELS_SCHEMA, QUERIES_SCHEMA
from hotmem_eval.fixtures import Fixture, FixtureFormat

__all__ = [
    "COLLECTION_IDENTIFIER",
    "COLLECTION_IMPORTANCE",
    "ReadCollection",
    "check_judgements",
    "collection_fixture",
]

#: The identifier of every memory of a collection.
COLLECTION_IDENTIFIER: Final = "collection"
#: The importance of every memory of a collection: the store's neutral value.
COLLECTION_IMPORTANCE: Final = 0.5


@dataclass(frozen=True, slots=True)
class ReadCollection:
    """What the readers of one collection found, file by file.

    Attributes:
        format: the collection's format.
        sources: the corpus, the queries or topics, and the qrels files.
        documents: every document, blank ones included.
        topics: every query of the queries or topics file.
        judgements: every judgement of the qrels file, in line order.
        problems: the problems of each source, in the order of ``sources``.
        labels: how the qrels file names its query and document columns, for messages.
    """

    format: FixtureFormat
    sources: tuple[Path, Path, Path]
    documents: Sequence[Document]
    topics: Sequence[Topic]
    judgements: Sequence[Judgement]
    problems: tuple[Sequence[Problem], Sequence[Problem], Sequence[Problem]]
    labels: tuple[str, str]


def check_judgements(
    path: Path,
    judgements: Iterable[Judgement],
    *,
    query_ids: Iterable[str] | None,
    doc_ids: Iterable[str] | None,
    labels: tuple[str, str],
) -> tuple[list[Judgement], list[Problem]]:
    """Judgements checked against the queries and documents that exist; one a (query, doc).

    A judgement naming an unknown query or document is an error. A (query, document) pair
    judged twice with the same grade is a warning and counted once; with two grades it is an
    error. ``query_ids`` or ``doc_ids`` None (their file could not be read) skips that check,
    so one missing file does not bury the report under unknown-id errors.

    Parameters:
        labels: how the file names its query and document columns, for messages.
    """
    queries = None if query_ids is None else set(query_ids)
    docs = None if doc_ids is None else set(doc_ids)
    query_label, doc_label = labels
    kept: dict[tuple[str, str], Judgement] = {}
    problems: list[Problem] = []

    def problem(judgement: Judgement, reason: str, severity: Severity = "error") -> None:
        problems.append(Problem(str(path), judgement.line, reason, severity))

    for judgement in judgements:
        pair = f"{doc_label}={judgement.doc_id!r} for {query_label}={judgement.query_id!r}"
        if queries is not None and judgement.query_id not in queries:
            problem(judgement, f"unknown {query_label}={judgement.query_id!r}: no such query")
        if docs is not None and judgement.doc_id not in docs:
            problem(judgement, f"unknown {doc_label}={judgement.doc_id!r}: no such document")
        earlier = kept.setdefault((judgement.query_id, judgement.doc_id), judgement)
        if earlier is judgement:
            continue
        if earlier.grade == judgement.grade:
            reason = f"repeated judgement of {pair}, first on line {earlier.line}: counted once"
            problem(judgement, reason, "warning")
        else:
            problem(
                judgement,
                f"conflicting judgement of {pair}: grade {judgement.grade} here, "
                f"{earlier.grade} on line {earlier.line}",
            )
    return list(kept.values()), problems


def collection_fixture(
    read: ReadCollection, *, relevant_grade: int, digests: Mapping[str, str]
) -> Fixture:
    """The collection's ``Fixture``, once its judgements are checked; ``digests`` are the
    ``file_digests.recording`` of its files' reads.

    Raises:
        FixtureError: at least one error in any of its files; ``problems`` lists every error
            and warning, file by file, each file's by line.
    """
    corpus_problems, topic_problems, qrels_problems = read.problems
    corpus_path, queries_path, qrels_path = read.sources
    # An unreadable file (no record read, problems found) is not checked against: one missing
    # file must not bury the report under unknown-id errors.
    kept, references = check_judgements(
        qrels_path,
        read.judgements,
        query_ids=[t.query_id for t in read.topics] if read.topics or not topic_problems else None,
        doc_ids=[d.doc_id for d in read.documents]
        if read.documents or not corpus_problems
        else None,
        labels=read.labels,
    )
    problems = (*corpus_problems, *topic_problems, *by_line([*qrels_problems, *references]))
    if any(problem.severity == "error" for problem in problems):
        raise FixtureError(problems)
    evaluated = {j.query_id for j in kept}
    return Fixture(
        corpus=_corpus_table(read.documents),
        queries=_queries_table(t for t in read.topics if t.query_id in evaluated),
        qrels=_qrels_table(j for j in kept if j.grade >= 0),
        groups=GROUPS_SCHEMA.empty_table(),
        warnings=problems,
        corpus_path=corpus_path,
        queries_path=queries_path,
        format=read.format,
        suite=False,
        relevant_grade=relevant_grade,
        sources=read.sources,
        qrels_path=qrels_path,
        digests=tuple(digest_of(digests, path) for path in read.sources),
    )


def _corpus_table(documents: Iterable[Document]) -> pa.Table:
    memories = sorted((d for d in documents if d.fact is not None), key=lambda d: d.doc_id)
    count = len(memories)
    return pa.Table.from_pydict(
        {
            "memory_id": [m.doc_id for m in memories],
            "identifier": [COLLECTION_IDENTIFIER] * count,
            "fact": [m.fact for m in memories],
            "importance": [COLLECTION_IMPORTANCE] * count,
            "tags": [[] for _ in memories],
            "created_at": [None] * count,
            "namespace": [None] * count,
            "duplicate_of": [None] * count,
            "line": [m.line for m in memories],
        },
        schema=CORPUS_SCHEMA,
    )


def _queries_table(topics: Iterable[Topic]) -> pa.Table:
    queries = sorted(topics, key=lambda t: t.query_id)
    count = len(queries)
    return pa.Table.from_pydict(
        {
            "query_id": [q.query_id for q in queries],
            "category": [None] * count,
            "query": [q.text for q in queries],
            "identifier": [None] * count,
            "notes": [""] * count,
            "line": [q.line for q in queries],
        },
        schema=QUERIES_SCHEMA,
    )


def _qrels_table(judgements: Iterable[Judgement]) -> pa.Table:
    qrels = sorted(judgements, key=lambda j: (j.query_id, j.doc_id))
    return pa.Table.from_pydict(
        {
            "query_id": [j.query_id for j in qrels],
            "memory_id": [j.doc_id for j in qrels],
            "grade": [j.grade for j in qrels],
        },
        schema=QRELS_SCHEMA,
    )
