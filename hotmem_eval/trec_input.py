"""Read a TREC collection (a corpus, a topics file, qrels) into a ``Fixture``.

The directory holds::

    corpus.jsonl              BEIR-style documents: _id, title, text (``collection_files``)
    topics.jsonl | topics.tsv the queries (exactly one of the two)
    qrels.txt | <name>.qrels  the judgements (exactly one such file)

``topics.jsonl`` holds one object a line, either ``_id`` with ``text`` or ``query_id`` with
``query`` (other keys ignored). ``topics.tsv`` holds ``id<TAB>text`` a line; a first line whose
id is one of ``TSV_HEADER_IDS`` (any case) is a header and skipped.

The qrels hold ``query_id iteration doc_id grade`` a line, separated by any whitespace; the
iteration is ignored (trec_eval ignores it too). A grade is an integer. A negative grade is
what trec_eval reads as "in the pool but not judged": never relevant, and no part of any
relevance level, so for nDCG, P, R, RR and AP it is the same as no judgement. Such judgements
are therefore left out of the qrels, with one warning for the file; their queries are still
evaluated. Only the queries the qrels name are evaluated.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import hotmem
from hotmem_eval.collection_files import (
    Judgement,
    Topic,
    by_line,
    parse_grade,
    read_documents,
    read_text_lines,
    read_topics,
)
from hotmem_eval.collection_tables import ReadCollection, collection_fixture
from hotmem_eval.errors import FixtureError, Problem
from hotmem_eval.file_digests import recording
from hotmem_eval.fixture_schema import COLLECTION_RELEVANT_GRADE, MAX_ANY_GRADE
from hotmem_eval.fixtures import Fixture, checked_relevant_grade

__all__ = [
    "QRELS_COLUMNS",
    "TOPIC_FORMS",
    "TSV_HEADER_IDS",
    "TrecFiles",
    "load_trec",
    "read_topics_tsv",
    "read_trec_qrels",
    "trec_files",
]

#: The columns of a TREC qrels line, in order.
QRELS_COLUMNS: Final = ("query_id", "iteration", "doc_id", "grade")
#: The two forms of a ``topics.jsonl`` object: (id field, text field).
TOPIC_FORMS: Final = (("_id", "text"), ("query_id", "query"))
#: The first column of a ``topics.tsv`` header line, compared in lower case.
TSV_HEADER_IDS: Final = frozenset(
    {"_id", "id", "num", "qid", "query-id", "query_id", "queryid", "topic", "topic_id"}
)
_TOPICS_NAMES: Final = ("topics.jsonl", "topics.tsv")
_QRELS_NAME: Final = "qrels.txt"
_QRELS_SUFFIX: Final = ".qrels"
_COLUMNS_TEXT = ", ".join(QRELS_COLUMNS)


@dataclass(frozen=True, slots=True)
class TrecFiles:
    """The files of a directory that a TREC collection may use; a complete collection has the
    corpus and exactly one topics and one qrels file."""

    corpus: Path
    topics: tuple[Path, ...]
    qrels: tuple[Path, ...]

    @property
    def present(self) -> bool:
        """Whether the directory has a corpus, a topics file and a qrels file."""
        return self.corpus.exists() and bool(self.topics) and bool(self.qrels)


def trec_files(directory: str | os.PathLike[str]) -> TrecFiles:
    """The corpus, topics and qrels files ``directory`` holds, by name, sorted."""
    root = Path(directory)
    topics = tuple(root / name for name in _TOPICS_NAMES if (root / name).exists())
    qrels = [root / _QRELS_NAME] if (root / _QRELS_NAME).exists() else []
    if root.is_dir():
        qrels += sorted(p for p in root.iterdir() if p.name.endswith(_QRELS_SUFFIX))
    return TrecFiles(root / "corpus.jsonl", topics, tuple(qrels))


def load_trec(directory: str | os.PathLike[str], *, relevant_grade: int | None = None) -> Fixture:
    """Read, check and tabulate a TREC collection.

    Parameters:
        directory: holds ``corpus.jsonl``, ``topics.jsonl`` or ``topics.tsv``, and
            ``qrels.txt`` or one ``*.qrels`` file.
        relevant_grade: the lowest grade that counts as relevant; None for the field's rule,
            ``COLLECTION_RELEVANT_GRADE`` (1, trec_eval's default).

    Returns:
        A fixture of format ``"trec"``: every non-blank document a memory, the topics the
        qrels name, their judgements of grade 0 or more; no categories, no groups.

    Raises:
        FixtureError: the directory lacks a topics or qrels file or has two, or at least one
            error in any of the files; ``problems`` lists every error and warning.
        UsageError: ``relevant_grade`` cannot be used.
    """
    grade = checked_relevant_grade(relevant_grade, COLLECTION_RELEVANT_GRADE)
    files = trec_files(directory)
    root = Path(directory)
    topics_path = _one(root, files.topics, "a topics file (topics.jsonl or topics.tsv)")
    qrels_path = _one(root, files.qrels, f"a qrels file ({_QRELS_NAME} or one *{_QRELS_SUFFIX})")
    if isinstance(topics_path, Problem) or isinstance(qrels_path, Problem):
        raise FixtureError(tuple(p for p in (topics_path, qrels_path) if isinstance(p, Problem)))
    with recording() as digests:
        documents, corpus_problems = read_documents(files.corpus)
        if topics_path.suffix == ".tsv":
            topics, topic_problems = read_topics_tsv(topics_path)
        else:
            topics, topic_problems = read_topics(topics_path, TOPIC_FORMS)
        judgements, qrels_problems = read_trec_qrels(qrels_path)
        read = ReadCollection(
            format="trec",
            sources=(files.corpus, topics_path, qrels_path),
            documents=documents,
            topics=topics,
            judgements=judgements,
            problems=(corpus_problems, topic_problems, qrels_problems),
            labels=(QRELS_COLUMNS[0], QRELS_COLUMNS[2]),
        )
    return collection_fixture(read, relevant_grade=grade, digests=digests)


def _one(root: Path, found: Sequence[Path], what: str) -> Path | Problem:
    if len(found) == 1:
        return found[0]
    names = ", ".join(p.name for p in found) if found else "none"
    return Problem(str(root), None, f"expected {what}, found {len(found)}: {names}")


def read_topics_tsv(path: Path) -> tuple[list[Topic], list[Problem]]:
    """Every topic of a ``topics.tsv`` file (``id<TAB>text``), and every problem, by line."""
    topics: list[Topic] = []
    problems: list[Problem] = []
    first: dict[str, int] = {}
    lines = 0
    for item in read_text_lines(path, "a topics TSV file"):
        if isinstance(item, Problem):
            problems.append(item)
            continue
        line, text = item
        columns = text.split("\t")
        lines += 1
        if lines == 1 and columns[0].lower() in TSV_HEADER_IDS:
            continue
        reason = _topic_reason(columns, first, line)
        if reason is None:
            topics.append(Topic(line, columns[0], columns[1]))
        else:
            problems.append(Problem(str(path), line, reason))
    if not topics and not problems:
        found = "only a header" if lines else "no lines"
        problems.append(Problem(str(path), None, f"expected at least one topic, found {found}"))
    return topics, by_line(problems)


def _topic_reason(columns: list[str], first: dict[str, int], line: int) -> str | None:
    if len(columns) != 2:
        return f"expected 2 tab-separated columns (id, text), found {len(columns)}"
    for name, value in zip(("id", "text"), columns, strict=True):
        breach = hotmem.text_breach(name, value)
        if breach is not None:
            return str(breach)
    if first.setdefault(columns[0], line) != line:
        return f"duplicate id={columns[0]!r}, first on line {first[columns[0]]}"
    return None


def negative_grades(path: Path, count: int, first_line: int) -> Problem:
    """The warning for ``count`` judgements of a qrels file with a negative grade, left out."""
    return Problem(
        str(path),
        first_line,
        f"{count} judgement{'s' * (count != 1)} with a negative grade left out (this line is "
        "the first): trec_eval reads a negative grade as pooled but not judged, never relevant",
        "warning",
    )


def read_trec_qrels(path: Path) -> tuple[list[Judgement], list[Problem]]:
    """Every judgement of a TREC qrels file, negative grades included, in line order, and
    every problem of its format, with one warning when some grades are negative.

    Ids are not checked here (``check_judgements`` does, against the corpus and topics).
    """
    judgements: list[Judgement] = []
    problems: list[Problem] = []
    for item in read_text_lines(path, "a TREC qrels file"):
        if isinstance(item, Problem):
            problems.append(item)
            continue
        line, text = item
        columns = text.split()
        grade = parse_grade(columns[-1], negative=True)
        if len(columns) != len(QRELS_COLUMNS):
            reason = (
                f"expected {len(QRELS_COLUMNS)} whitespace-separated columns ({_COLUMNS_TEXT}), "
                f"found {len(columns)}"
            )
        elif grade is None:
            reason = (
                f"expected grade as an integer up to {MAX_ANY_GRADE}, found grade={columns[3]!r}"
            )
        else:
            judgements.append(Judgement(line, columns[0], columns[2], grade))
            continue
        problems.append(Problem(str(path), line, reason))
    if not judgements and not problems:
        problems.append(Problem(str(path), None, "expected at least one judgement, found none"))
    negative = [j for j in judgements if j.grade < 0]
    if negative:
        problems.append(negative_grades(path, len(negative), negative[0].line))
    return judgements, problems
