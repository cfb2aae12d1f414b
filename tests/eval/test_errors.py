"""The evaluation toolkit's errors: how a problem reads, and what a FixtureError carries."""

from __future__ import annotations

import pickle

import pytest

from hotmem_eval.errors import EvalError, FixtureError, Problem


@pytest.mark.parametrize(
    ("problem", "text"),
    [
        (Problem("corpus.jsonl", 3, "bad"), "corpus.jsonl:3: bad"),
        (Problem("corpus.jsonl", None, "empty"), "corpus.jsonl: empty"),
        (Problem("q.jsonl", 1, "odd", "warning"), "q.jsonl:1: odd"),
    ],
)
def test_problem_reads_path_line_reason(problem: Problem, text: str) -> None:
    assert str(problem) == text


def test_problem_is_frozen() -> None:
    with pytest.raises(AttributeError):
        Problem("a", 1, "r").line = 2  # type: ignore[misc]


def test_fixture_error_lists_every_problem_and_marks_warnings() -> None:
    bad, odd = Problem("a.jsonl", 3, "bad"), Problem("b.jsonl", None, "odd", "warning")
    error = FixtureError((bad, odd))
    assert isinstance(error, EvalError)
    assert str(error) == "a.jsonl:3: bad\nb.jsonl: warning: odd"
    assert (error.problems, error.errors, error.warnings) == ((bad, odd), (bad,), (odd,))


def test_fixture_error_survives_pickling() -> None:
    error = FixtureError((Problem("a.jsonl", 3, "bad"),))
    assert pickle.loads(pickle.dumps(error)).problems == error.problems
