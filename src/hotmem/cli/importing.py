"""The ``hotmem import`` command: a JSON Lines file into the store, all or nothing.

Every line is read and validated before the store is written (``jsonl_memories``); an id the
store already holds is refused with its ``FILE:LINE`` (``--skip-existing`` leaves it,
``--upsert`` writes over it), and memories without an id that repeat a stored fact are
counted in a warning. An import that fails leaves the store as it was, and creates none.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from array import array
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, suppress
from itertools import chain, islice
from pathlib import Path

from hotmem.cli.support import UserInputError, created_store, db_path
from hotmem.errors import DuplicateMemoryError, ValidationError
from hotmem.jsonl import JsonlProblem, JsonlRecord, read_jsonl
from hotmem.models import count_of, memories_from_mappings, memory_from_mapping
from hotmem.progress import Progress
from hotmem.store.updates import CHECKED_BATCH, Existing, ImportCounts, Item

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["MAX_REPORTED_PROBLEMS", "cmd_import", "configure_import", "jsonl_memories"]

EXIT_OK = 0

#: Problems of an import file printed one per line; past this many, only their number.
MAX_REPORTED_PROBLEMS = 20


def _checked(record: JsonlRecord, position: int) -> Item | str:
    """The record's memory validated (what the store's ``validated`` gives), or its problem."""
    try:
        memory = memory_from_mapping(record.value)
    except ValidationError as exc:
        return f"{record.path}:{record.line}: {exc}"
    return Item(position, memory, *_given(record.value))


def _batches(
    items: Iterable[JsonlRecord | JsonlProblem],
) -> Iterator[list[JsonlRecord | JsonlProblem]]:
    """``items`` in lists of at most ``CHECKED_BATCH``."""
    iterator = iter(items)
    while batch := list(islice(iterator, CHECKED_BATCH)):
        yield batch


def _checked_batch(
    items: list[JsonlRecord | JsonlProblem], position: int
) -> list[tuple[JsonlRecord | JsonlProblem, Item | str]]:
    """Each item with its validated memory (positions from ``position``) or its problem: the
    records checked a column at a time when the batch has no problem, else one by one."""
    values = [item.value for item in items if isinstance(item, JsonlRecord)]
    memories = memories_from_mappings(values) if len(values) == len(items) else None
    if memories is None:
        found: list[tuple[JsonlRecord | JsonlProblem, Item | str]] = []
        for item in items:
            checked = str(item) if isinstance(item, JsonlProblem) else _checked(item, position)
            position += not isinstance(checked, str)
            found.append((item, checked))
        return found
    return [
        (item, Item(position + i, memory, *_given(item.value)))
        for i, (item, memory) in enumerate(zip(items, memories, strict=True))
        if isinstance(item, JsonlRecord)
    ]


def _given(value: object) -> tuple[bool, bool]:
    """Whether a record gave its ``memory_id`` and its ``created_at``."""
    assert isinstance(value, dict)  # a record memories_from_mappings accepted
    return value.get("memory_id") is not None, value.get("created_at") is not None


def jsonl_memories(
    source: str | BinaryIO, problems: list[str], *, name: str | None = None
) -> Iterator[tuple[JsonlRecord, Item]]:
    """The memories of a JSONL file (a path, or a binary stream called ``name``), read and
    validated a line at a time (once: the store takes the items as they are), each with its
    record.

    Each problem is appended to ``problems`` as ``FILE:LINE: reason`` (``hotmem.read_jsonl``'s
    policy, then the memory's field rules), and nothing is yielded after the first one; at the
    end, any problem raises :class:`UserInputError` listing them (at most
    ``MAX_REPORTED_PROBLEMS``, then their count), so a consumer writing in one transaction
    rolls back.

    Raises:
        UserInputError: the file has at least one problem.
    """
    total = 0
    position = 0
    for items in _batches(read_jsonl(source, name=name)):
        for item, checked in _checked_batch(items, position):
            if isinstance(checked, str):
                total += 1
                if len(problems) < MAX_REPORTED_PROBLEMS:
                    problems.append(checked)
            elif not total and isinstance(item, JsonlRecord):
                position += 1
                yield item, checked
    if total:
        more = total - len(problems)
        tail = [f"... and {more} more problem{'s' if more != 1 else ''}"] if more else []
        raise UserInputError("\n".join([*problems, *tail]))


def _opened(path: str, stack: ExitStack) -> tuple[str | BinaryIO, int | None]:
    """What to read (stdin, the file opened, or the path when it cannot be opened, so that
    ``read_jsonl`` says why) and its size in bytes when it is a regular file."""
    if path == "-":
        return sys.stdin.buffer, None
    try:
        stream = stack.enter_context(open(path, "rb"))  # noqa: SIM115 (closed by the stack)
    except OSError:
        return path, None
    with suppress(OSError):
        status = os.fstat(stream.fileno())
        return stream, status.st_size if stat.S_ISREG(status.st_mode) else None
    return stream, None


def _read(
    records: Iterator[tuple[JsonlRecord, Item]],
    lines: array[int],
    stream: object,
    size: int | None,
    progress: Progress,
) -> Iterator[Item]:
    """The records' validated items; each line number noted in ``lines`` (by position), the
    bytes read so far (of ``size``) shown by ``progress``, or the records read when the size
    is not known (stdin)."""
    if not progress.enabled:  # no terminal: no position asked of the file a line
        for record, item in records:
            lines.append(record.line)
            yield item
        return
    tell = getattr(stream, "tell", None) if size is not None else None
    for record, item in records:
        lines.append(record.line)
        if tell is not None:
            progress(tell(), size)
        else:
            progress(len(lines))
        yield item


def _summary(counts: ImportCounts) -> str:
    parts = [f"imported {count_of(counts.added, 'memory', 'memories')}"]
    if counts.skipped:
        parts.append(f"skipped {counts.skipped} already stored")
    if counts.updated:
        parts.append(f"updated {counts.updated}")
    return ", ".join(parts)


def _repeated_warning(repeated: int) -> str:
    return (
        f"hotmem: warning: {count_of(repeated, 'memory', 'memories')} without a memory_id "
        f"repeat{'s' if repeated == 1 else ''} a fact already stored under the same identifier "
        "(stored again under a new id; give memory_id to import a file once, and "
        "--skip-existing to import it again)"
    )


def cmd_import(args: argparse.Namespace) -> int:
    existing: Existing = "skip" if args.skip_existing else "update" if args.upsert else "refuse"
    name = "<stdin>" if args.file == "-" else args.file
    lines: array[int] = array("q")
    created = not db_path(args).exists()
    with ExitStack() as stack:
        source, size = _opened(args.file, stack)
        records = jsonl_memories(source, [], name=name)
        # A file that fails from its first line fails before the store is opened (or created).
        first = next(records)
        unit = "bytes" if size is not None else "memories read"
        progress = stack.enter_context(Progress("hotmem: importing", unit=unit))
        try:
            with created_store(args) as store:
                counts = store._import_items(
                    _read(chain([first], records), lines, source, size, progress), existing=existing
                )
        except DuplicateMemoryError as exc:
            _remove_new_store(args, created)
            if exc.position is None:
                raise
            stored = exc.reason.endswith("already exists in the store")
            hint = " (--skip-existing leaves it, --upsert updates it)" * stored
            raise UserInputError(f"{name}:{lines[exc.position]}: {exc.reason}{hint}") from None
        except BaseException:
            _remove_new_store(args, created)
            raise
    print(_summary(counts))
    if counts.repeated:
        print(_repeated_warning(counts.repeated), file=sys.stderr)
    return EXIT_OK


def _remove_new_store(args: argparse.Namespace, created: bool) -> None:
    """Remove the store this import created (rolled back, it holds nothing), and the files
    SQLite keeps beside it."""
    if not created:
        return
    path = db_path(args)
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def configure_import(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="JSONL file of memories ('-' for stdin); all or nothing")
    existing = p.add_mutually_exclusive_group()
    existing.add_argument(
        "--skip-existing",
        action="store_true",
        help="leave a memory whose memory_id the store holds as it is (default: refuse the "
        "import, naming its line)",
    )
    existing.add_argument(
        "--upsert",
        action="store_true",
        help="write over a memory whose memory_id the store holds (its created_at kept when "
        "the line has none)",
    )
