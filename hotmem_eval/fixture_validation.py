"""Validation of parsed fixture records: every problem found, never just the first.

The checks are pure: they take ``(line, object)`` records already read from a JSON Lines file
and return ``Problem``s located as ``path:line``. Reading the files is ``fixtures.py``'s job.

Each field is checked by the checker registered for it in ``CORPUS_FIELDS`` or
``QUERY_FIELDS``; checks that need more than one field or more than one record (unique ids,
references to memories, grading rules, category counts) follow in ``check_corpus`` and
``check_queries``.

Which query rules apply depends on the fixture (``is_suite``). A fixture whose queries use the
built-in categories is the built-in suite and gets every check: ``QUERY_FIELDS``, all eight
categories with at least ``MIN_QUERIES_PER_CATEGORY`` queries each, negatives without grades,
every other query with a memory graded ``RELEVANT_GRADE`` or more. A fixture none of whose
queries names a built-in category is free-form (``FREE_FORM_QUERY_FIELDS``): the category is
optional and any label but ``OVERALL``, grades are any integers 0..``MAX_ANY_GRADE``, no
category needs a minimum, and an empty relevance object is a query with no answer.

One query naming a built-in category is enough to make the fixture the suite, so a misspelt
category in the suite is reported as unknown rather than turning the fixture free-form.
"""

from __future__ import annotations

import difflib
import sys
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import hotmem
from hotmem_eval.errors import Problem
from hotmem_eval.fixture_schema import (
    CATEGORIES,
    MAX_ANY_GRADE,
    MAX_GRADE,
    MIN_QUERIES_PER_CATEGORY,
    NEGATIVE_CATEGORY,
    OVERALL,
    RELEVANT_GRADE,
)

__all__ = [
    "CORPUS_FIELDS",
    "DEFAULT_IMPORTANCE",
    "DEFAULT_TAGS",
    "FREE_FORM_QUERY_FIELDS",
    "QUERY_FIELDS",
    "Record",
    "check_corpus",
    "check_queries",
    "is_suite",
]

#: One non-blank line of a JSON Lines file: its 1-based number and the object it holds.
Record = tuple[int, Mapping[str, Any]]
#: A field checker takes the field's name and value and yields one reason per problem.
Checker = Callable[[str, object], Iterator[str]]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """How one field of a record is checked."""

    required: bool
    check: Checker


def _memory_field(name: str, value: object) -> Iterator[str]:
    """A memory's field, by the store's own rule (``hotmem.field_breach``)."""
    breach = hotmem.field_breach(name, value)
    if breach is not None:
        yield str(breach)


def _text(name: str, value: object) -> Iterator[str]:
    """Any other text field, by the store's text rule (``hotmem.text_breach``)."""
    breach = hotmem.text_breach(name, value)
    if breach is not None:
        yield str(breach)


def _string(name: str, value: object) -> Iterator[str]:
    if not isinstance(value, str):
        yield f"expected {name} to be a string, found {name}={value!r}"


def _category(name: str, value: object) -> Iterator[str]:
    if not isinstance(value, str) or value in CATEGORIES:
        yield from _text(name, value)
    else:
        hint = _suggest(value, CATEGORIES) or f", expected one of {', '.join(CATEGORIES)}"
        yield f"unknown {name}={value!r}{hint}"


def _free_category(name: str, value: object) -> Iterator[str]:
    if value == OVERALL:
        yield (
            f"expected {name} other than {OVERALL!r} (the row over all queries), "
            f"found {name}={value!r}"
        )
    else:
        yield from _text(name, value)


def _relevance(max_grade: int) -> Checker:
    """The checker of a relevance object whose grades run 0..``max_grade``."""

    def check(name: str, value: object) -> Iterator[str]:
        if not isinstance(value, dict):
            yield f"expected {name} to be an object of memory_id -> grade, found {name}={value!r}"
            return
        for memory_id, grade in value.items():
            if not _is_grade(grade, max_grade):
                yield (
                    f"expected an integer grade 0..{max_grade}, "
                    f"found {name}[{memory_id!r}]={grade!r}"
                )

    return check


def _duplicate_groups(name: str, value: object) -> Iterator[str]:
    if not isinstance(value, list):
        yield f"expected {name} to be a list of lists of memory_ids, found {name}={value!r}"
        return
    for index, group in enumerate(value):
        label = f"{name}[{index}]"
        if not isinstance(group, list) or not all(isinstance(m, str) for m in group):
            yield f"expected {label} to be a list of memory_ids, found {label}={group!r}"
        elif len(set(group)) < 2:
            yield f"expected {label} to name 2 or more distinct memory_ids, found {label}={group!r}"


#: What a memory without ``importance`` or ``tags`` gets: ``hotmem import``'s defaults.
DEFAULT_IMPORTANCE = 0.5
DEFAULT_TAGS: tuple[str, ...] = ()

#: A memory's own fields follow the store's rules, so a fixture the validator accepts always
#: loads into a store; like ``hotmem import``, a fixture may leave out importance and tags
#: (``DEFAULT_IMPORTANCE``, ``DEFAULT_TAGS``).
CORPUS_FIELDS: Mapping[str, FieldSpec] = {
    "memory_id": FieldSpec(required=True, check=_memory_field),
    "identifier": FieldSpec(required=True, check=_memory_field),
    "fact": FieldSpec(required=True, check=_memory_field),
    "importance": FieldSpec(required=False, check=_memory_field),
    "tags": FieldSpec(required=False, check=_memory_field),
    "created_at": FieldSpec(required=False, check=_memory_field),
    "namespace": FieldSpec(required=False, check=_text),
    "duplicate_of": FieldSpec(required=False, check=_text),
}
#: The built-in suite's queries.
QUERY_FIELDS: Mapping[str, FieldSpec] = {
    "query_id": FieldSpec(required=True, check=_text),
    "category": FieldSpec(required=True, check=_category),
    "query": FieldSpec(required=True, check=_text),
    "relevance": FieldSpec(required=True, check=_relevance(MAX_GRADE)),
    "notes": FieldSpec(required=True, check=_string),
    "identifier": FieldSpec(required=False, check=_text),
    "duplicate_groups": FieldSpec(required=False, check=_duplicate_groups),
}
#: A free-form fixture's queries: an optional category of its own, grades of any size, notes
#: optional (empty when absent).
FREE_FORM_QUERY_FIELDS: Mapping[str, FieldSpec] = {
    **QUERY_FIELDS,
    "category": FieldSpec(required=False, check=_free_category),
    "relevance": FieldSpec(required=True, check=_relevance(MAX_ANY_GRADE)),
    "notes": FieldSpec(required=False, check=_string),
}


def is_suite(records: Sequence[Record]) -> bool:
    """Whether the query records are the built-in suite: at least one names a built-in category.

    A fixture that loads is then the suite exactly when every query's category is built in.
    """
    return any(record.get("category") in CATEGORIES for _, record in records)


def check_corpus(path: str, records: Sequence[Record]) -> list[Problem]:
    """Return every problem of the corpus records, ordered by line.

    Parameters:
        path: the corpus file, as it appears in messages.
        records: the parsed ``(line, object)`` records of the file.
    """
    problems: list[Problem] = []
    first_lines = _first_lines(records, "memory_id")
    for line, record in records:
        problems.extend(_check_fields(path, line, record, CORPUS_FIELDS))
        problems.extend(_repeats(path, line, record, "memory_id", first_lines))
        target = record.get("duplicate_of")
        if not _is_text(target):
            continue
        if target not in first_lines:
            problems.append(Problem(path, line, f"duplicate_of names unknown memory_id={target!r}"))
        elif target == record.get("memory_id"):
            problems.append(
                Problem(
                    path,
                    line,
                    f"expected duplicate_of to name another memory, found "
                    f"duplicate_of={target!r} (the memory itself)",
                )
            )
    return _by_line(problems)


def check_queries(
    path: str, records: Sequence[Record], *, corpus: Sequence[Record]
) -> list[Problem]:
    """Return every problem of the query records, ordered by line (file-wide ones last).

    The built-in suite's rules apply when ``is_suite(records)``; otherwise the free-form ones.
    References to memories are checked against ``corpus``; when it holds no records (the
    corpus file is missing or empty, itself an error) they are not checked, so one missing
    file does not bury the report under unknown-memory errors.

    Parameters:
        path: the queries file, as it appears in messages.
        records: the parsed ``(line, object)`` records of the file.
        corpus: the parsed records of the corpus file.
    """
    problems: list[Problem] = []
    suite = is_suite(records)
    fields = QUERY_FIELDS if suite else FREE_FORM_QUERY_FIELDS
    first_lines = _first_lines(records, "query_id")
    memory_ids = {r["memory_id"] for _, r in corpus if _is_text(r.get("memory_id"))}
    identifiers = {r["identifier"] for _, r in corpus if _is_text(r.get("identifier"))}
    counts: Counter[str] = Counter()
    for line, record in records:
        problems.extend(_check_fields(path, line, record, fields))
        problems.extend(_repeats(path, line, record, "query_id", first_lines))
        reasons = list(_unknown_memories(record, memory_ids)) if corpus else []
        if suite:
            reasons.extend(_grading_rules(record, counts))
        problems.extend(Problem(path, line, reason) for reason in reasons)
        if corpus:
            reasons = list(_unknown_identifier(record, identifiers))
            problems.extend(Problem(path, line, reason, "warning") for reason in reasons)
    # A free-form fixture has no minimum; with no records at all it is not the suite, and the
    # reader's "no records" error already says it all.
    if suite:
        problems.extend(Problem(path, None, reason) for reason in _category_counts(counts))
    return _by_line(problems)


def _unknown_identifier(
    record: Mapping[str, object], identifiers: Collection[str]
) -> Iterator[str]:
    identifier = record.get("identifier")
    if _is_text(identifier) and identifier not in identifiers:
        yield (
            f"identifier={identifier!r} matches no memory's identifier, so the scoped "
            f"search can return nothing{_suggest(identifier, identifiers)}"
        )


def _category_counts(counts: Counter[str]) -> Iterator[str]:
    """The built-in suite's rule: every category with ``MIN_QUERIES_PER_CATEGORY`` queries."""
    for category in CATEGORIES:
        found = counts[category]
        if found < MIN_QUERIES_PER_CATEGORY:
            what = "missing category" if found == 0 else "too few queries in category"
            yield (
                f"{what} {category!r}: expected at least {MIN_QUERIES_PER_CATEGORY} "
                f"queries, found {found}"
            )


def _grading_rules(record: Mapping[str, object], counts: Counter[str]) -> Iterator[str]:
    """Count the query's category and check the grades it requires."""
    category = record.get("category")
    if category not in CATEGORIES:
        return
    counts[category] += 1
    relevance = record.get("relevance")
    if not isinstance(relevance, dict):
        return
    if category == NEGATIVE_CATEGORY:
        if relevance:
            yield f"expected empty relevance (category={category!r}), found relevance={relevance!r}"
    elif not any(_is_grade(g) and g >= RELEVANT_GRADE for g in relevance.values()):
        yield (
            f"expected at least one memory graded >= {RELEVANT_GRADE} (category={category!r}), "
            f"found relevance={relevance!r}"
        )


def _unknown_memories(record: Mapping[str, object], memory_ids: Collection[str]) -> Iterator[str]:
    relevance = record.get("relevance")
    if isinstance(relevance, dict):
        for memory_id in relevance:
            if memory_id not in memory_ids:
                yield f"relevance names unknown memory_id={memory_id!r}"
    groups = record.get("duplicate_groups")
    if isinstance(groups, list):
        for index, group in enumerate(groups):
            if isinstance(group, list):
                for memory_id in group:
                    if isinstance(memory_id, str) and memory_id not in memory_ids:
                        yield f"duplicate_groups[{index}] names unknown memory_id={memory_id!r}"


def _check_fields(
    path: str, line: int, record: Mapping[str, object], fields: Mapping[str, FieldSpec]
) -> Iterator[Problem]:
    for name, spec in fields.items():
        if name not in record:
            if spec.required:
                yield Problem(path, line, f"missing required field {name!r}")
        # An optional field set to null is absent; a required one is checked, and refused.
        elif spec.required or record[name] is not None:
            yield from (Problem(path, line, reason) for reason in spec.check(name, record[name]))
    for name in record:
        if name not in fields:
            hint = _suggest(name, fields) or f", expected only {', '.join(sorted(fields))}"
            yield Problem(path, line, f"unknown field {name!r} is ignored{hint}", "warning")


def _first_lines(records: Sequence[Record], key: str) -> dict[str, int]:
    """Map each id to the line it first appears on."""
    first: dict[str, int] = {}
    for line, record in records:
        value = record.get(key)
        if _is_text(value):
            first.setdefault(value, line)
    return first


def _repeats(
    path: str, line: int, record: Mapping[str, object], key: str, first: Mapping[str, int]
) -> Iterator[Problem]:
    value = record.get(key)
    if _is_text(value) and first[value] != line:
        yield Problem(path, line, f"duplicate {key}={value!r}, first on line {first[value]}")


def _by_line(problems: list[Problem]) -> list[Problem]:
    # Stable: problems on one line keep the order they were found in.
    return sorted(problems, key=lambda p: sys.maxsize if p.line is None else p.line)


def _is_text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value.strip())


def _is_grade(value: object, max_grade: int = MAX_GRADE) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= max_grade


def _did_you_mean(value: str, choices: Collection[str]) -> str | None:
    matches = difflib.get_close_matches(value, list(choices), n=1)
    return matches[0] if matches else None


def _suggest(value: str, choices: Collection[str]) -> str:
    match = _did_you_mean(value, choices)
    return f", did you mean {match!r}?" if match else ""
