"""The ``hotmem list``, ``get`` and ``export`` commands: a store's memories as they are kept.

``export`` writes JSON Lines that ``import`` reads back (every field, ``created_at``
included), in ``memory_id`` order, so exporting, importing into a new store and exporting
again gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from hotmem.cli.support import UserInputError, existing_store, print_json
from hotmem.models import Memory, count_of

__all__ = [
    "cmd_export",
    "cmd_get",
    "cmd_list",
    "configure_export",
    "configure_get",
    "configure_list",
    "memory_line",
]

EXIT_OK = 0


def memory_line(memory: Memory) -> str:
    """One memory as one JSON Lines line (what ``import`` reads)."""
    return json.dumps(memory.to_dict(), ensure_ascii=False, separators=(", ", ": "))


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def cmd_list(args: argparse.Namespace) -> int:
    with existing_store(args) as store:
        memories = list(store.iter_memories(args.identifier))
    if args.json:
        print_json([memory.to_dict() for memory in memories])
        return EXIT_OK
    for memory in memories:
        print(f"{memory.memory_id} ({memory.identifier}): {_one_line(memory.fact)}")
    if not memories:
        where = f" with identifier {args.identifier!r}" if args.identifier else ""
        print(f"no memories{where}", file=sys.stderr)
    return EXIT_OK


def cmd_get(args: argparse.Namespace) -> int:
    with existing_store(args) as store:
        memory = store.get(args.memory_id)
    if args.json:
        print_json(memory.to_dict())
        return EXIT_OK
    fields = memory.to_dict()
    fields["tags"] = ", ".join(memory.tags)
    width = max(map(len, fields))
    for name, value in fields.items():
        print(f"{name:<{width}}  {_one_line(str(value))}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    with existing_store(args) as store, store.reading():
        lines = [memory_line(memory) + "\n" for memory in store.iter_memories(args.identifier)]
    text = "".join(lines)
    if args.file in (None, "-"):
        sys.stdout.write(text)
        return EXIT_OK
    from hotmem.snapshot._files import create_beside, output_refusal  # an export file only

    target = Path(args.file)
    refusal = output_refusal(target)
    if refusal is not None:
        raise UserInputError(f"hotmem: {refusal}")
    descriptor, temporary = create_beside(target, ".tmp")  # the usual permissions, locked
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    print(f"exported {count_of(len(lines), 'memory', 'memories')} to {args.file}", file=sys.stderr)
    return EXIT_OK


def configure_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("--identifier", help="only this identifier's memories")
    p.add_argument("--json", action="store_true", help="print the memories as a JSON list")


def configure_get(p: argparse.ArgumentParser) -> None:
    p.add_argument("memory_id", help="the memory to print")
    p.add_argument("--json", action="store_true", help="print it as JSON")


def configure_export(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        nargs="?",
        help="the JSON Lines file to write ('-' or none: stdout); replaced "
        "whole, never left half written",
    )
    p.add_argument("--identifier", help="only this identifier's memories")
