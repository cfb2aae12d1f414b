"""Reading the files of BEIR and TREC collections: documents, queries, lines of text.

Both formats keep their documents in a BEIR-style ``corpus.jsonl`` (``read_documents``) and may
keep their queries in JSON Lines (``read_topics``); their qrels and TSV topics are text files
of one record a line (``read_text_lines``, by the policy of ``hotmem.read_jsonl``). Each reader
returns what it could read and every problem, by line; ``collection_tables`` checks the
judgements against the documents and queries and builds the ``Fixture``.

A document's ``_id`` follows the store's ``memory_id`` rule (``hotmem.field_breach``: a
non-blank string of at most ``hotmem.MAX_ID_LENGTH`` characters, no NUL); an id the store would
refuse is an error of its line. Its fact is its title and text joined by a newline, or the one
of them that is not blank; a document whose title and text are both blank cannot be a memory
and is kept with ``fact=None`` and a warning, so that judgements may still name it.
"""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import hotmem
from hotmem_eval.errors import Problem
from hotmem_eval.file_digests import open_hashed
from hotmem_eval.fixture_schema import MAX_ANY_GRADE
from hotmem_eval.fixtures import read_records

__all__ = [
    "Document",
    "Judgement",
    "Topic",
    "by_line",
    "parse_grade",
    "read_documents",
    "read_text_lines",
    "read_topics",
]

_INTEGER = re.compile(r"-?([0-9]+)")


@dataclass(frozen=True, slots=True)
class Document:
    """One document of ``corpus.jsonl``; ``fact`` is None when its title and text are blank."""

    line: int
    doc_id: str
    fact: str | None


@dataclass(frozen=True, slots=True)
class Topic:
    """One query of a queries or topics file."""

    line: int
    query_id: str
    text: str


@dataclass(frozen=True, slots=True)
class Judgement:
    """One line of a qrels file: ``doc_id`` graded ``grade`` for ``query_id``."""

    line: int
    query_id: str
    doc_id: str
    grade: int


def read_text_lines(path: Path, kind: str) -> Iterator[tuple[int, str] | Problem]:
    """The non-blank lines of a UTF-8 text file, numbered from 1, without their line ending.

    The policy of ``hotmem.read_jsonl``: one byte-order mark at the start is skipped, ``\\r\\n``
    reads as ``\\n``, a line that is not UTF-8 is a problem naming the byte and its column, a
    file that cannot be read is one problem without a line (``kind`` names what was expected).
    """
    try:
        stream = open_hashed(path)  # closed below, problems yielded as found
    except FileNotFoundError:
        yield Problem(str(path), None, f"expected {kind}, found no such file")
        return
    except IsADirectoryError:
        yield Problem(str(path), None, f"expected {kind}, found a directory")
        return
    except OSError as exc:
        yield Problem(str(path), None, f"expected a readable {kind}, found {exc.strerror or exc}")
        return
    with stream:
        for number, raw in enumerate(stream, start=1):
            if number == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            raw = raw.removesuffix(b"\n").removesuffix(b"\r")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield Problem(
                    str(path),
                    number,
                    f"expected UTF-8 text, found byte 0x{raw[exc.start]:02x} at column "
                    f"{exc.start + 1} ({exc.reason})",
                )
                continue
            if text.strip():
                yield number, text


def parse_grade(text: str, *, negative: bool = False) -> int | None:
    """``text`` as a grade: ASCII digits (after a ``-`` when ``negative``), at most
    ``MAX_ANY_GRADE`` in size; None when it is not one."""
    match = _INTEGER.fullmatch(text)
    if match is None or (text.startswith("-") and not negative):
        return None
    # Checked by length first: int() refuses thousands of digits, and a grade has at most 10.
    digits = match.group(1).lstrip("0") or "0"
    if len(digits) > len(str(MAX_ANY_GRADE)) or int(digits) > MAX_ANY_GRADE:
        return None
    return int(text)


def read_documents(path: Path) -> tuple[list[Document], list[Problem]]:
    """Every document of a BEIR-style ``corpus.jsonl`` (``_id``, ``title``, ``text``; other
    keys ignored), blank ones included, and every problem, by line.

    ``_id`` and ``text`` are required, ``title`` optional (null or absent is empty). A document
    whose title and text are both blank is kept with ``fact=None`` and a warning.
    """
    records, problems = read_records(path)
    name = str(path)
    documents: list[Document] = []
    first: dict[str, int] = {}
    for line, record in records:
        reasons = list(_document_reasons(record, first, line))
        problems.extend(Problem(name, line, reason) for reason in reasons)
        doc_id = record.get("_id")
        if reasons or not isinstance(doc_id, str):
            continue
        fact = "\n".join(
            part
            for part in (record.get("title") or "", record["text"])
            if isinstance(part, str) and part.strip()
        )
        if not fact:
            problems.append(
                Problem(
                    name,
                    line,
                    f"document _id={doc_id!r} has a blank title and text, so it cannot be a "
                    "memory: left out (its judgements still count)",
                    "warning",
                )
            )
        documents.append(Document(line, doc_id, fact or None))
    return documents, by_line(problems)


def _document_reasons(
    record: Mapping[str, object], first: dict[str, int], line: int
) -> Iterator[str]:
    doc_id = record.get("_id")
    if "_id" not in record:
        yield "missing required field '_id'"
    else:
        breach = hotmem.field_breach("memory_id", doc_id)
        if breach is not None:
            yield f"_id cannot be a memory_id: {breach}"
        elif isinstance(doc_id, str) and first.setdefault(doc_id, line) != line:
            yield f"duplicate _id={doc_id!r}, first on line {first[doc_id]}"
    for name, required in (("title", False), ("text", True)):
        if name not in record:
            if required:
                yield f"missing required field {name!r}"
            continue
        value = record[name]
        if value is None and not required:
            continue
        if not isinstance(value, str):
            yield str(hotmem.text_breach(name, value))
        elif value.strip():  # a blank part is left out of the fact; any other must be storable
            breach = hotmem.text_breach(name, value)
            if breach is not None:
                yield str(breach)


def read_topics(path: Path, forms: Sequence[tuple[str, str]]) -> tuple[list[Topic], list[Problem]]:
    """Every query of a JSON Lines queries file, and every problem, by line.

    Each object holds one of ``forms``, an (id field, text field) pair such as
    ``("_id", "text")``: the form is the one whose id field the object has. Both fields are
    non-blank text; other keys are ignored; an id appears once.
    """
    records, problems = read_records(path)
    name = str(path)
    topics: list[Topic] = []
    first: dict[str, int] = {}
    for line, record in records:
        found = [form for form in forms if form[0] in record]
        if len(found) != 1:
            problems.append(Problem(name, line, _form_reason(forms, found)))
            continue
        (id_field, text_field), reasons = found[0], []
        for field_name in (id_field, text_field):
            if field_name not in record:
                reasons.append(f"missing required field {field_name!r}")
            elif (breach := hotmem.text_breach(field_name, record[field_name])) is not None:
                reasons.append(str(breach))
        query_id = record[id_field]
        if not reasons and isinstance(query_id, str):
            if first.setdefault(query_id, line) != line:
                reasons.append(
                    f"duplicate {id_field}={query_id!r}, first on line {first[query_id]}"
                )
            else:
                topics.append(Topic(line, query_id, str(record[text_field])))
        problems.extend(Problem(name, line, reason) for reason in reasons)
    return topics, by_line(problems)


def _form_reason(forms: Sequence[tuple[str, str]], found: Sequence[tuple[str, str]]) -> str:
    """Why an object holds none, or more than one, of the forms' id fields."""
    if len(forms) == 1:
        return f"missing required field {forms[0][0]!r}"
    expected = " or ".join(f"{id_field!r} with {text_field!r}" for id_field, text_field in forms)
    if found:
        return f"expected {expected}, found {' and '.join(repr(f[0]) for f in found)}"
    return f"expected {expected}, found none of {', '.join(repr(f[0]) for f in forms)}"


def by_line(problems: Iterable[Problem]) -> list[Problem]:
    """One file's problems by line, file-wide ones last; problems of one line keep their order."""
    return sorted(problems, key=lambda p: sys.maxsize if p.line is None else p.line)
