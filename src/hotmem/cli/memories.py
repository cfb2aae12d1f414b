"""The ``hotmem`` commands on memories: add, update, search, explain, stats, delete."""

from __future__ import annotations

import argparse
import difflib
import sys

from hotmem.cli.render import diagnosis_lines, result_lines
from hotmem.cli.spaces import space_lines
from hotmem.cli.support import (
    UserInputError,
    created_store,
    existing_store,
    limit_value,
    print_json,
    similarity_value,
)
from hotmem.errors import MemoryNotFoundError
from hotmem.retrieval.fusion import MIN_SIMILARITY
from hotmem.retrieval.profiles import PROFILES, Profile
from hotmem.retrieval.request import SearchRequest
from hotmem.retrieval.search import search_memories
from hotmem.store.memory_store import MemoryStore

__all__ = [
    "cmd_add",
    "cmd_delete",
    "cmd_explain",
    "cmd_search",
    "cmd_stats",
    "cmd_update",
    "configure_add",
    "configure_delete",
    "configure_explain",
    "configure_search",
    "configure_stats",
    "configure_update",
]

EXIT_OK = 0


def _fact(text: str) -> str:
    """The fact argument; ``-`` reads it from stdin (UTF-8, trailing line breaks dropped)."""
    if text != "-":
        return text
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise UserInputError(
            f"hotmem: expected the fact on stdin as UTF-8 text, found byte "
            f"0x{data[exc.start]:02x} at offset {exc.start}"
        ) from None


def cmd_add(args: argparse.Namespace) -> int:
    fact = _fact(args.fact)
    with created_store(args) as store:
        memory = store.add(
            fact,
            identifier=args.identifier,
            importance=args.importance,
            tags=args.tag,
            memory_id=args.id,
        )
    if args.json:
        print_json(memory.to_dict())
    else:
        print(memory.memory_id)
    return EXIT_OK


def cmd_update(args: argparse.Namespace) -> int:
    if args.fact is None and args.importance is None and args.tags is None:
        raise UserInputError(
            "hotmem: nothing to update: give --fact, --importance or --tags (see hotmem update -h)"
        )
    fact = None if args.fact is None else _fact(args.fact)
    with existing_store(args) as store:
        try:
            memory = store.update(
                args.memory_id, fact=fact, importance=args.importance, tags=args.tags
            )
        except MemoryNotFoundError:
            raise UserInputError(
                f"hotmem: no memory with memory_id={args.memory_id!r} (hotmem list shows the ids)"
            ) from None
    if args.json:
        print_json(memory.to_dict())
    else:
        print(f"updated {memory.memory_id}")
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    with existing_store(args) as store:
        request = SearchRequest(
            args.query, args.identifier, args.limit, args.profile, args.min_similarity
        )
        profile = request.profile_for(store)
        results = search_memories(
            store, args.query, identifier=args.identifier, limit=args.limit, profile=profile
        )
        why = "" if results else _why_empty(store, args, profile)
    if args.json:
        print_json([r.to_dict() for r in results])
        if why:
            print(f"hotmem: {why}", file=sys.stderr)
        return EXIT_OK
    if not results:
        print("no results")
        if why:
            print(f"hotmem: {why}", file=sys.stderr)
    for r in results:
        print("\n".join(result_lines(r, explain=args.explain, profile=profile)))
    return EXIT_OK


def _why_empty(store: MemoryStore, args: argparse.Namespace, profile: Profile) -> str:
    """One line on why a search returned nothing: an identifier no memory has (with the
    closest ones), or every candidate below the profile's floor (with the closest memory)."""
    identifiers = store.identifiers()
    if args.identifier is not None and args.identifier not in identifiers:
        close = difflib.get_close_matches(args.identifier, list(identifiers), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        return f"no memory has identifier {args.identifier!r}{hint}"
    if profile.vector is None or not store.count(args.identifier):
        return ""
    closest = search_memories(
        store,
        args.query,
        identifier=args.identifier,
        limit=1,
        profile=profile,
        min_similarity=-1.0,
    )
    if not closest:
        return ""
    best = closest[0]
    other = next(
        (
            name
            for name, candidate in PROFILES.items()
            for space in store.spaces
            if candidate.vector is not None
            and candidate.vector.space == space.name != profile.vector.space
        ),
        None,
    )
    hint = f"; --profile {other} searches a space this store has too" if other else ""
    return (
        f"no memory passed the relevance floor of profile {profile.name!r} "
        f"({profile.vector.floor:g}); the closest is {best.memory_id} (cosine "
        f"{best.components.cosine:.4f}): `hotmem explain` says why, --min-similarity lowers "
        f"the floor{hint}"
    )


def cmd_explain(args: argparse.Namespace) -> int:
    from hotmem.retrieval.diagnosis import diagnose  # an explain's only

    with existing_store(args) as store, store.reading():
        request = SearchRequest(
            args.query, args.identifier, args.limit, args.profile, args.min_similarity
        )
        profile = request.profile_for(store)
        diagnosis = diagnose(
            store,
            args.query,
            args.memory_id,
            identifier=args.identifier,
            limit=args.limit,
            profile=profile,
        )
        fact = store.get(args.memory_id).fact
    if args.json:
        print_json({**diagnosis.to_dict(), "fact": fact})
    else:
        print("\n".join(diagnosis_lines(diagnosis, fact, profile)))
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    with existing_store(args) as store, store.reading():
        path, memories, identifiers = store.path, store.count(), store.identifiers()
        counts = store.vector_counts()
        spaces = [{**space.to_dict(), "vectors": counts[space.name]} for space in store.spaces]
    if args.json:
        print_json(
            {"path": path, "memories": memories, "identifiers": identifiers, "spaces": spaces}
        )
        return EXIT_OK
    print(f"store: {path}")
    print(f"memories: {memories}")
    for identifier, count in identifiers.items():
        print(f"  {identifier}: {count}")
    print("\n".join(space_lines(spaces)))
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    with existing_store(args) as store:
        store.delete(args.memory_id)
    print(f"deleted {args.memory_id}")
    return EXIT_OK


def configure_add(p: argparse.ArgumentParser) -> None:
    p.add_argument("fact", help="the text of the memory ('-': read it from stdin)")
    p.add_argument("--identifier", required=True, help="organisation or project it belongs to")
    p.add_argument("--importance", type=float, default=0.5, help="0..1 (default 0.5)")
    p.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    p.add_argument("--id", help="memory_id (default: derived from the content)")
    p.add_argument("--json", action="store_true", help="print the stored memory as JSON")


def _ranking_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--identifier", help="search only this identifier's memories")
    p.add_argument("--limit", type=limit_value, default=5, help="number of results (default 5)")
    p.add_argument(
        "--profile",
        metavar="NAME",
        help=f"the retrieval profile: one of {', '.join(PROFILES)} or one the store keeps "
        "(default: the store's default profile, see hotmem profiles; the semantic ones need "
        "the store's semantic space: hotmem reindex --space all-minilm-l6-v2)",
    )
    p.add_argument(
        "--min-similarity",
        type=similarity_value,
        default=None,
        metavar="COSINE",
        help="the relevance floor: a memory without a lexical match needs this cosine "
        f"(default: the profile's, {MIN_SIMILARITY:g} for default; docs/ranking.md says how "
        "it was chosen)",
    )


def configure_search(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    _ranking_options(p)
    p.add_argument("--explain", action="store_true", help="show how each score adds up")
    p.add_argument("--json", action="store_true", help="print results with score components")


def configure_explain(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    p.add_argument("memory_id")
    _ranking_options(p)
    p.add_argument("--json", action="store_true", help="print the diagnosis as JSON")


def configure_stats(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the counts as JSON")


def configure_update(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "memory_id", help="the memory to change (its id, identifier and created_at stay)"
    )
    p.add_argument("--fact", help="the new text ('-': read it from stdin)")
    p.add_argument("--importance", type=float, help="the new importance, 0..1")
    p.add_argument(
        "--tags",
        nargs="*",
        metavar="TAG",
        help="the new tags, replacing the old ones (--tags alone: no tags)",
    )
    p.add_argument("--json", action="store_true", help="print the updated memory as JSON")


def configure_delete(p: argparse.ArgumentParser) -> None:
    p.add_argument("memory_id")
