"""The ``hotmem`` command line: add, import, search and inspect a store; snapshot it.

Exit codes come from one table, ``EXIT_CODES`` (documented in ``docs/cli.md``): 0 success;
1 the store or an operation failed; 2 invalid input or usage; 130 interrupted. User mistakes
print one line per problem on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from pathlib import Path

from hotmem import __version__
from hotmem.db import MemoryStore, open_store
from hotmem.errors import HotmemError, ValidationError
from hotmem.jsonl import JsonlProblem, JsonlRecord, read_jsonl
from hotmem.models import memory_from_mapping
from hotmem.search import MAX_LIMIT, search_memories
from hotmem.snapshot import hydrate, verify_snapshot
from hotmem.snapshot._files import output_refusal, store_file_names
from hotmem.storage import BUSY_TIMEOUT

__all__ = ["EXIT_CODES", "default_db_path", "exit_code", "main"]

EXIT_OK, EXIT_FAILURE, EXIT_INVALID, EXIT_INTERRUPTED = 0, 1, 2, 130


class UserInputError(Exception):
    """Invalid input from the command line or a file; every line is one problem."""


#: error class -> (exit code, prefix of its one-line message). The most specific class of an
#: error's MRO found here decides; an error of no class here is a bug and propagates.
EXIT_CODES: dict[type[BaseException], tuple[int, str]] = {
    UserInputError: (EXIT_INVALID, ""),  # its lines already say where: FILE:LINE or hotmem:
    ValidationError: (EXIT_INVALID, "hotmem: "),
    HotmemError: (EXIT_FAILURE, "hotmem: "),
    KeyboardInterrupt: (EXIT_INTERRUPTED, "hotmem: "),
}


def exit_code(error: BaseException) -> tuple[int, str]:
    """``(code, prefix)`` of the most specific class of ``error`` in ``EXIT_CODES``.

    Raises:
        KeyError: no class of the error is in the table.
    """
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    raise KeyError(type(error).__name__)


def default_db_path(environ: os._Environ[str] | dict[str, str] = os.environ) -> Path:
    """``$HOTMEM_HOME/hotmem.db``, with ``HOTMEM_HOME`` defaulting to ``~/.hotmem``."""
    home = environ.get("HOTMEM_HOME") or str(Path("~/.hotmem").expanduser())
    return Path(home) / "hotmem.db"


def _open(args: argparse.Namespace) -> MemoryStore:
    path = Path(args.db) if args.db else default_db_path()
    if not args.db:
        path.parent.mkdir(parents=True, exist_ok=True)
    return open_store(path, busy_timeout=args.busy_timeout)


def _print_json(payload: object) -> None:
    print(json.dumps(payload, ensure_ascii=False, indent=2, sort_keys=True))


def cmd_add(args: argparse.Namespace) -> int:
    with _open(args) as store:
        memory = store.add(
            args.fact,
            identifier=args.identifier,
            importance=args.importance,
            tags=args.tag,
            memory_id=args.id,
        )
    if args.json:
        _print_json(memory.to_dict())
    else:
        print(memory.memory_id)
    return EXIT_OK


#: Problems of an import file printed one per line; past this many, only their number.
MAX_REPORTED_PROBLEMS = 100


def _invalid(record: JsonlRecord) -> str | None:
    try:
        memory_from_mapping(record.value)
    except ValidationError as exc:
        return f"{record.path}:{record.line}: {exc}"
    return None


def jsonl_memories(path: str, problems: list[str]) -> Iterator[dict[str, object]]:
    """The memories of a JSONL file (``-``: stdin), read and validated a line at a time.

    Each problem is appended to ``problems`` as ``FILE:LINE: reason`` (``hotmem.read_jsonl``'s
    policy, then the memory's field rules), and nothing is yielded after the first one; at the
    end, any problem raises :class:`UserInputError` listing them (at most
    ``MAX_REPORTED_PROBLEMS``, then their count), so a consumer writing in one transaction
    rolls back.

    Raises:
        UserInputError: the file has at least one problem.
    """
    source = sys.stdin.buffer if path == "-" else path
    total = 0
    for item in read_jsonl(source, name="<stdin>" if path == "-" else path):
        problem = str(item) if isinstance(item, JsonlProblem) else _invalid(item)
        if problem is not None:
            total += 1
            if len(problems) < MAX_REPORTED_PROBLEMS:
                problems.append(problem)
        elif not total and isinstance(item, JsonlRecord):
            yield item.value
    if total:
        more = total - len(problems)
        tail = [f"... and {more} more problem{'s' if more != 1 else ''}"] if more else []
        raise UserInputError("\n".join([*problems, *tail]))


def cmd_import(args: argparse.Namespace) -> int:
    records = jsonl_memories(args.file, [])
    # A file that fails from its first line fails before the store is opened (or created).
    first = next(records)
    with _open(args) as store:
        added = store.add_stream(chain([first], records))
    print(f"imported {added} memories")
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    with _open(args) as store:
        results = search_memories(store, args.query, identifier=args.identifier, limit=args.limit)
    if args.json:
        _print_json([r.to_dict() for r in results])
        return EXIT_OK
    if not results:
        print("no results")
    for r in results:
        print(f"{r.rank}. [{r.score:.4f}] {r.memory_id} ({r.identifier}): {r.fact}")
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    with _open(args) as store:
        path, memories, identifiers = store.path, store.count(), store.identifiers()
    if args.json:
        _print_json({"path": path, "memories": memories, "identifiers": identifiers})
        return EXIT_OK
    print(f"store: {path}")
    print(f"memories: {memories}")
    for identifier, count in identifiers.items():
        print(f"  {identifier}: {count}")
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    with _open(args) as store:
        store.delete(args.memory_id)
    print(f"deleted {args.memory_id}")
    return EXIT_OK


def _package(path: str) -> str:
    if not Path(path).exists():
        raise UserInputError(f"hotmem: cannot read package {path!r}: no such file")
    if not Path(path).is_file():
        raise UserInputError(f"hotmem: cannot read package {path!r}: not a regular file")
    return path


def cmd_snapshot(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if not out.absolute().parent.is_dir():
        raise UserInputError(f"hotmem: cannot write {args.out!r}: its directory does not exist")
    database = Path(args.db) if args.db else default_db_path()
    refusal = output_refusal(out, store_file_names(database))  # not a regular file, the store
    if refusal is not None:
        raise UserInputError(f"hotmem: {refusal}")
    if out.exists() and not args.force:
        raise UserInputError(f"hotmem: {args.out!r} already exists; pass --force to replace it")
    with _open(args) as store:
        report = store.snapshot(out, overwrite=args.force)
    if args.json:
        _print_json(
            {
                "path": report.path,
                "record_count": report.record_count,
                "size": report.size,
                "content_digest": report.content_digest,
            }
        )
    else:
        print(
            f"wrote {report.record_count} memories to {report.path} "
            f"({report.size} bytes, content digest {report.content_digest})"
        )
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    report = verify_snapshot(_package(args.package), recompute_vectors=args.recompute_vectors)
    if args.json:
        _print_json(report.to_dict())
    elif report.ok:
        print(f"ok: {report.record_count} memories, content digest {report.content_digest}")
    else:
        print(f"FAILED: {len(report.problems)} problem(s) in {report.path}")
        for problem in report.problems:
            print(f"  {problem}")
    return EXIT_OK if report.ok else EXIT_FAILURE


def cmd_hydrate(args: argparse.Namespace) -> int:
    package = _package(args.package)
    target = Path(args.db) if args.db else default_db_path()
    if not args.db:
        target.parent.mkdir(parents=True, exist_ok=True)
    report = hydrate(package, target, recompute_vectors=args.recompute_vectors)
    print(
        f"hydrated {report.record_count} memories into {report.target} "
        f"(content digest {report.content_digest})"
    )
    return EXIT_OK


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
    if not 1 <= value <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"expected 1..{MAX_LIMIT}, found {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, found {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= 86_400:
        raise argparse.ArgumentTypeError(f"expected 0..86400 seconds, found {text!r}")
    return value


def _configure_add(p: argparse.ArgumentParser) -> None:
    p.add_argument("fact", help="the text of the memory")
    p.add_argument("--identifier", required=True, help="organisation or project it belongs to")
    p.add_argument("--importance", type=float, default=0.5, help="0..1 (default 0.5)")
    p.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    p.add_argument("--id", help="memory_id (default: derived from the content)")
    p.add_argument("--json", action="store_true", help="print the stored memory as JSON")


def _configure_import(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="JSONL file of memories ('-' for stdin); all or nothing")


def _configure_search(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    p.add_argument("--identifier", help="search only this identifier's memories")
    p.add_argument("--limit", type=_limit, default=5, help="number of results (default 5)")
    p.add_argument("--json", action="store_true", help="print results with score components")


def _configure_stats(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")


def _configure_delete(p: argparse.ArgumentParser) -> None:
    p.add_argument("memory_id")


def _db_here(p: argparse.ArgumentParser, help_text: str) -> None:
    # Also accepted after the command; SUPPRESS keeps an absent option from hiding `hotmem --db`.
    p.add_argument("--db", default=argparse.SUPPRESS, help=help_text)


def _configure_snapshot(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", help="the package file to write (docs/snapshot-v2.md)")
    p.add_argument(
        "--force", action="store_true", help="replace OUT if it exists (a regular file only)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    _db_here(p, "the store to snapshot (default: $HOTMEM_HOME/hotmem.db)")


def _configure_verify(p: argparse.ArgumentParser) -> None:
    p.add_argument("package", help="the package file; exit 0 when it verifies, 1 when not")
    p.add_argument(
        "--recompute-vectors", action="store_true", help="re-embed every fact and compare"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def _configure_hydrate(p: argparse.ArgumentParser) -> None:
    p.add_argument("package", help="the package file (verified while hydrating)")
    p.add_argument(
        "--recompute-vectors",
        action="store_true",
        help="re-embed every fact; refuse the package if any vector differs",
    )
    _db_here(p, "the new or empty store to create (default: $HOTMEM_HOME/hotmem.db)")


# name -> (help, configure, handler): the command registry.
COMMANDS: dict[
    str,
    tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]],
] = {
    "add": ("add one memory", _configure_add, cmd_add),
    "import": ("import memories from a JSONL file", _configure_import, cmd_import),
    "search": ("search memories", _configure_search, cmd_search),
    "stats": ("show what the store holds", _configure_stats, cmd_stats),
    "delete": ("delete one memory", _configure_delete, cmd_delete),
    "snapshot": ("write the store to a portable package", _configure_snapshot, cmd_snapshot),
    "verify": ("verify a package without trusting it", _configure_verify, cmd_verify),
    "hydrate": ("create a store from a package", _configure_hydrate, cmd_hydrate),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hotmem", description="HotMem: a local-first memory store for software agents."
    )
    parser.add_argument("--version", action="version", version=f"hotmem {__version__}")
    parser.add_argument(
        "--db", help="store path (default: $HOTMEM_HOME/hotmem.db, HOTMEM_HOME=~/.hotmem)"
    )
    parser.add_argument(
        "--busy-timeout",
        type=_seconds,
        default=BUSY_TIMEOUT,
        metavar="SECONDS",
        help=f"how long a write waits for another process's write lock (default {BUSY_TIMEOUT:g})",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, configure, handler) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        configure(command)
        command.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    if isinstance(sys.stdout, io.TextIOWrapper):
        # A path given as non-UTF-8 bytes is printed back as the same bytes, not a traceback.
        sys.stdout.reconfigure(errors="surrogateescape")
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except tuple(EXIT_CODES) as exc:
        code, prefix = exit_code(exc)
        message = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
        print(f"{prefix}{message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
