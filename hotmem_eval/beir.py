"""Read a BEIR directory into a ``Fixture``.

The layout BEIR's ``GenericDataLoader`` reads::

    corpus.jsonl        one document a line: _id, title, text (other keys ignored)
    queries.jsonl       one query a line: _id, text (other keys ignored)
    qrels/<split>.tsv   a header line, then query-id<TAB>corpus-id<TAB>score, one a line

Documents become memories by the rule of ``collection_tables`` (title and text joined by a
newline). Only the queries that ``qrels/<split>.tsv`` names are evaluated; the others are read
and checked, and left out. The qrels file's first line is a header (BEIR writes
``query-id<TAB>corpus-id<TAB>score``): three tab-separated column names, its third not an integer,
since a judgement there would be skipped by BEIR's own reader. A score is an integer
0..``MAX_ANY_GRADE`` written in ASCII digits; grade 0 is kept (judged, not relevant). Every
problem of the three files is reported at once, as ``path:line: reason``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from hotmem_eval.collection_files import (
    Judgement,
    parse_grade,
    read_documents,
    read_text_lines,
    read_topics,
)
from hotmem_eval.collection_tables import ReadCollection, collection_fixture
from hotmem_eval.errors import Problem, UsageError
from hotmem_eval.file_digests import recording
from hotmem_eval.fixture_schema import COLLECTION_RELEVANT_GRADE, MAX_ANY_GRADE
from hotmem_eval.fixtures import Fixture, checked_relevant_grade

__all__ = ["DEFAULT_SPLIT", "QRELS_COLUMNS", "beir_qrels_path", "load_beir", "read_beir_qrels"]

#: The split evaluated unless another is asked for.
DEFAULT_SPLIT: Final = "test"
#: The columns of a BEIR qrels file, in order.
QRELS_COLUMNS: Final = ("query-id", "corpus-id", "score")
_COLUMNS_TEXT = ", ".join(QRELS_COLUMNS)


def beir_qrels_path(directory: str | os.PathLike[str], split: str) -> Path:
    """``directory/qrels/<split>.tsv``.

    Raises:
        UsageError: ``split`` is not a plain file name (empty, ``.``, ``..`` or with a slash).
    """
    if split in ("", ".", "..") or "/" in split or "\\" in split or os.sep in split:
        raise UsageError(
            f"expected split as the name of a file of qrels/ without '.tsv', such as "
            f"{DEFAULT_SPLIT!r}, found split={split!r}"
        )
    return Path(directory) / "qrels" / f"{split}.tsv"


def load_beir(
    directory: str | os.PathLike[str],
    *,
    split: str = DEFAULT_SPLIT,
    relevant_grade: int | None = None,
) -> Fixture:
    """Read, check and tabulate a BEIR directory.

    Parameters:
        directory: holds ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.
        split: the qrels file to evaluate, by name.
        relevant_grade: the lowest grade that counts as relevant; None for the field's rule,
            ``COLLECTION_RELEVANT_GRADE`` (1).

    Returns:
        A fixture of format ``"beir"``: every non-blank document a memory, the queries the
        qrels name, their judgements; no categories, no near-duplicate groups.

    Raises:
        FixtureError: at least one error in any of the three files; ``problems`` lists every
            error and warning, file by file.
        UsageError: ``split`` or ``relevant_grade`` cannot be used.
    """
    root = Path(directory)
    grade = checked_relevant_grade(relevant_grade, COLLECTION_RELEVANT_GRADE)
    corpus_path, queries_path = root / "corpus.jsonl", root / "queries.jsonl"
    qrels_path = beir_qrels_path(root, split)
    with recording() as digests:
        documents, corpus_problems = read_documents(corpus_path)
        topics, query_problems = read_topics(queries_path, (("_id", "text"),))
        missing = _missing_split(qrels_path, split)
        judgements, qrels_problems = ([], [missing]) if missing else read_beir_qrels(qrels_path)
        read = ReadCollection(
            format="beir",
            sources=(corpus_path, queries_path, qrels_path),
            documents=documents,
            topics=topics,
            judgements=judgements,
            problems=(corpus_problems, query_problems, qrels_problems),
            labels=(QRELS_COLUMNS[0], QRELS_COLUMNS[1]),
        )
    return collection_fixture(read, relevant_grade=grade, digests=digests)


def _missing_split(qrels_path: Path, split: str) -> Problem | None:
    """The problem of a split without a qrels file, naming the splits there are."""
    if qrels_path.exists():
        return None
    folder = qrels_path.parent
    splits = sorted(p.stem for p in folder.glob("*.tsv")) if folder.is_dir() else []
    there = f"splits there: {', '.join(splits)}" if splits else f"no qrels in {folder}"
    return Problem(
        str(qrels_path),
        None,
        f"expected the qrels of split={split!r}, found no such file ({there})",
    )


def read_beir_qrels(path: Path) -> tuple[list[Judgement], list[Problem]]:
    """Every judgement of a BEIR qrels file, in line order, and every problem of its format.

    Ids are not checked here (``check_judgements`` does, against the corpus and queries).
    """
    judgements: list[Judgement] = []
    problems: list[Problem] = []
    header: int | None = None
    lines = 0
    for item in read_text_lines(path, "a qrels TSV file"):
        if isinstance(item, Problem):
            problems.append(item)
            continue
        line, text = item
        columns = text.split("\t")
        if header is None:
            header = line
            reason = _header_reason(columns)
        else:
            lines += 1
            reason = _judgement(line, columns, judgements)
        if reason is not None:
            problems.append(Problem(str(path), line, reason))
    if not any(p.line is None for p in problems) and lines == 0:
        found = "only a header" if header is not None else "no lines"
        problems.append(
            Problem(
                str(path),
                None,
                f"expected a header line, then one judgement a line ({_COLUMNS_TEXT}), "
                f"found {found}",
            )
        )
    return judgements, problems


def _header_reason(columns: list[str]) -> str | None:
    if len(columns) != len(QRELS_COLUMNS):
        return (
            f"expected a header line of {len(QRELS_COLUMNS)} tab-separated columns "
            f"({_COLUMNS_TEXT}), found {len(columns)} column{'s' * (len(columns) != 1)}"
        )
    if parse_grade(columns[2]) is not None:
        return (
            f"expected a header line ({_COLUMNS_TEXT}) first, found a judgement: "
            "BEIR's readers skip the first line"
        )
    return None


def _judgement(line: int, columns: list[str], judgements: list[Judgement]) -> str | None:
    """Append the judgement of a line to ``judgements``, or return why it is not one."""
    if len(columns) != len(QRELS_COLUMNS):
        return (
            f"expected {len(QRELS_COLUMNS)} tab-separated columns ({_COLUMNS_TEXT}), "
            f"found {len(columns)}"
        )
    query_id, doc_id, score = columns
    grade = parse_grade(score)
    if grade is None:
        return f"expected score as an integer 0..{MAX_ANY_GRADE}, found score={score!r}"
    judgements.append(Judgement(line, query_id, doc_id, grade))
    return None
