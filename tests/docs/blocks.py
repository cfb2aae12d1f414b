"""The fenced blocks of a Markdown page: which run, how, and what output they promise.

Conventions (``tests/docs/README.md`` is the contributor's summary):

- Every fence names its language. ``bash`` (or ``sh``, ``shell``), ``console`` and ``python``
  blocks run; every other language (``text``, ``json``, ``sql``, ``toml``, ...) is shown only.
- A ``text`` block right after a runnable block (only blank lines between) is that block's
  expected output: stdout and stderr together, as a terminal shows them.
- A ``console`` block is a transcript: ``$ `` lines are commands (a line ending in ``\\``
  continues on the next), the lines after a command are its expected output. The commands run
  in one shell, so ``cd`` and variables carry over; a command that fails must be followed by
  ``$ echo $?`` showing its exit code.
- In expected output, ``...`` matches any text within a line, and a line of just ``...`` any
  number of lines. Trailing spaces and blank lines at the end do not count.
- ``<!-- doc-test: skip REASON -->`` on the line before a fence (blank lines allowed between)
  keeps a runnable block from running; the reason is required.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "RUNNABLE",
    "Block",
    "Command",
    "blocks_of",
    "commands_of",
    "matches",
    "problems_of",
]

#: fence language -> how it runs.
RUNNABLE = {
    "bash": "shell",
    "sh": "shell",
    "shell": "shell",
    "console": "console",
    "python": "python",
}

_FENCE = re.compile(r"^(?P<indent> *)(?P<ticks>`{3,})(?P<info>[^`]*)$")
_SKIP = re.compile(r"^\s*<!--\s*doc-test:\s*skip\b(?P<reason>.*?)-->\s*$")


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block.

    Attributes:
        page: the Markdown file.
        line: the 1-based line of its opening fence.
        language: the fence's first word ("" when it names none).
        code: its text, the fence's indentation removed.
        skip: the reason of a ``doc-test: skip`` marker, None without one.
        output: the expected output (the ``text`` block after it), None when none is shown.
    """

    page: Path
    line: int
    language: str
    code: str
    skip: str | None = None
    output: str | None = None
    output_line: int | None = field(default=None, compare=False)

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.language in RUNNABLE and self.skip is None


def _raw_blocks(page: Path) -> list[tuple[int, str, str, str | None, int]]:
    """(line, language, code, skip reason, closing line) of every fence, in page order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[tuple[int, str, str, str | None, int]] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, ticks = opening["indent"], opening["ticks"]
        language = (opening["info"].split() or [""])[0]
        skip = None
        before = index - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        if before >= 0 and (marker := _SKIP.match(lines[before])):
            skip = marker["reason"].strip()
        end = index + 1
        while end < len(lines) and lines[end].strip() != ticks:
            end += 1
        body = [
            line[len(indent) :] if line.startswith(indent) else line
            for line in lines[index + 1 : end]
        ]
        found.append((index + 1, language, "\n".join(body) + "\n" if body else "", skip, end + 1))
        index = end + 1
    return found


def blocks_of(page: Path) -> list[Block]:
    """The page's blocks in order, each runnable one with the output shown after it."""
    raw = _raw_blocks(page)
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    for position, (line, language, code, skip, closing) in enumerate(raw):
        output = output_line = None
        if language in RUNNABLE and position + 1 < len(raw):
            following = raw[position + 1]
            between = lines[closing : following[0] - 1]
            if following[1] == "text" and all(not text.strip() for text in between):
                output, output_line = following[2], following[0]
        blocks.append(Block(page, line, language, code, skip, output, output_line))
    return blocks


def problems_of(page: Path) -> list[str]:
    """What breaks the conventions: a fence without a language, a skip without a reason, a
    transcript hidden in a block that does not run."""
    problems = []
    blocks = blocks_of(page)
    outputs = {b.output_line for b in blocks if b.output_line is not None}
    for block in blocks:
        where = block.where
        if not block.language:
            problems.append(
                f"{where}: a fence without a language (bash, console, python, text, ...)"
            )
        if block.skip == "":
            problems.append(f"{where}: a doc-test: skip marker without its reason")
        if block.skip is not None and block.language not in RUNNABLE:
            problems.append(f"{where}: a skip marker on a block that does not run")
        shown_only = block.language not in RUNNABLE and block.line not in outputs
        commands = any(line.startswith("$ ") for line in block.code.splitlines())
        if shown_only and block.language and commands:
            problems.append(f"{where}: a '$ ' command in a {block.language} block: use console")
    return problems


@dataclass(frozen=True, slots=True)
class Command:
    """One command of a console transcript and the output shown after it."""

    line: int
    text: str
    output: str


def commands_of(block: Block) -> list[Command]:
    """The commands of a ``console`` block, with continuation lines joined."""
    commands: list[Command] = []
    lines = block.code.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.startswith("$ "):
            raise ValueError(f"{block.where}: expected a '$ ' command, found {line!r}")
        start, text = index, line[2:]
        while text.endswith("\\") and index + 1 < len(lines):
            index += 1
            text += "\n" + lines[index]
        index += 1
        output = []
        while index < len(lines) and not lines[index].startswith("$ "):
            output.append(lines[index])
            index += 1
        commands.append(Command(block.line + 1 + start, text, "\n".join(output)))
    return commands


def _pattern(expected: str) -> re.Pattern[str]:
    parts = []
    for line in _normalised(expected).split("\n"):
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(re.escape(line).replace(r"\.\.\.", r"[^\n]*") + r"\n")
    return re.compile("".join(parts))


def _normalised(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n")).rstrip("\n")


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is the output ``expected`` shows (``...`` wildcards, trailing
    whitespace ignored)."""
    if not _normalised(expected):
        return not _normalised(actual)
    return _pattern(expected).fullmatch(_normalised(actual) + "\n") is not None
