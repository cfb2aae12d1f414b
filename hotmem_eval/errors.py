"""The evaluation toolkit's error hierarchy.

::

    EvalError                  every error hotmem_eval raises on purpose
    ├── FixtureError           a retrieval fixture is malformed (carries every Problem found)
    └── UsageError             other input from the user cannot be used: a run directory that
                               is not an export, SQL that DuckDB rejects

``Problem`` is not an exception: it is one finding of fixture validation, located as
``path:line`` and graded ``error`` (the fixture is refused) or ``warning`` (it loads, and the
warning is kept on the ``Fixture``).

Messages say what was expected and what was found, with ``name=value!r``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["EvalError", "FixtureError", "Problem", "Severity", "UsageError"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding of fixture validation.

    Attributes:
        path: the file, as the caller named it.
        line: 1-based line number, or None for a finding about the whole file.
        reason: what was expected and what was found.
        severity: ``"error"`` refuses the fixture; ``"warning"`` does not.
    """

    path: str
    line: int | None
    reason: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.reason}"


class EvalError(Exception):
    """Base class of every error the evaluation toolkit raises on purpose."""


class FixtureError(EvalError):
    """A fixture has at least one error; ``problems`` holds every error and warning found.

    ``str()`` lists one problem a line, in the order found (files, then lines); warnings
    read ``path:line: warning: reason`` so they stand apart from the errors.
    """

    def __init__(self, problems: tuple[Problem, ...]) -> None:
        self.problems = tuple(problems)
        super().__init__(self.problems)

    @property
    def errors(self) -> tuple[Problem, ...]:
        """The problems that refuse the fixture."""
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """The problems that alone would not refuse the fixture."""
        return tuple(p for p in self.problems if p.severity == "warning")

    def __str__(self) -> str:
        return "\n".join(_render(problem) for problem in self.problems)


def _render(problem: Problem) -> str:
    if problem.severity == "warning":
        return str(Problem(problem.path, problem.line, f"warning: {problem.reason}"))
    return str(problem)


class UsageError(EvalError):
    """Input from the user other than a fixture cannot be used (the CLI exits 2)."""
