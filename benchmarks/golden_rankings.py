"""Golden rankings: every search result, bit for bit, over a fixed set of stores and queries.

Run: ``uv run python benchmarks/golden_rankings.py --suite SUITE --record PATH`` records,
``--check PATH`` compares (exit 1 on the first differences, printed row by row).

The suites use the public API only, so one recording made at one commit checks another:
``PYTHONPATH=<other checkout>/src uv run python benchmarks/golden_rankings.py ...``.

- ``fixtures``: the committed fixture and the public kgh fixture under every built-in profile
  (the semantic ones with the ``all-minilm-l6-v2`` space), a gated custom profile, overrides of
  the floor and the weights; every query unscoped and in its identifier, limits 1, 5 and 20,
  and ``explain`` of each query's first relevant memory. ``tests/hotmem/test_golden.py`` checks
  this suite and ``edges`` against ``tests/hotmem/data/golden_rankings.jsonl.gz``.
- ``edges``: CJK facts and queries, zero-vector facts and queries, all-equal scores, a term in
  every memory, a deleted memory, an empty scope.
- ``heavy-10k``, ``heavy-100k``, ``synthetic-10k``, ``synthetic-100k``: the speed benchmarks'
  stores (``synthetic.py``), 50 queries unscoped and in four identifiers, limits 5 and 50,
  under ``default``, ``bm25-only``, ``cosine-only``, ``rrf``, ``default+mmr`` and the gated
  profile.

A row is ``case`` (suite, store, profile, scope, limit, query) and its results: memory_id,
score and every component as ``float.hex``, ``fused_rank``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import heavy_memories, heavy_queries, synthetic_memories, synthetic_queries

import hotmem

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = {
    "committed": ROOT / "benchmarks" / "retrieval",
    "kgh": ROOT / "benchmarks" / "retrieval" / "external" / "kgh-retrieval",
}
GATED = hotmem.Profile(
    "gated",
    vector=hotmem.VectorChannel(weight=0.5, floor=0.5),
    lexical=hotmem.LexicalChannel(weight=0.3, gate=0.1),
    importance=0.2,
)
RRF_SHALLOW = hotmem.Profile(
    "rrf-shallow",
    vector=hotmem.VectorChannel(weight=0.7, floor=0.2),
    lexical=hotmem.LexicalChannel(weight=1.3),
    importance=0.0,
    fusion="rrf",
    rrf_k=10,
    depth=7,
)
SPEED_PROFILES: tuple[str | hotmem.Profile, ...] = (
    "default",
    "bm25-only",
    "cosine-only",
    "rrf",
    "default+mmr",
    GATED,
)
Row = dict[str, object]


def _hex(value: float | None) -> str | None:
    return None if value is None else float(value).hex()


def _result(r: hotmem.SearchResult) -> list[object]:
    c = r.components
    return [
        r.memory_id,
        _hex(r.score),
        _hex(c.cosine),
        _hex(c.bm25_raw),
        _hex(c.bm25_normalised),
        _hex(c.importance),
        r.fused_rank,
    ]


def _name(profile: str | hotmem.Profile) -> str:
    return profile if isinstance(profile, str) else profile.name


def _searches(
    store: hotmem.MemoryStore,
    label: str,
    queries: list[tuple[str, str | None]],
    profiles: tuple[str | hotmem.Profile, ...],
    limits: tuple[int, ...],
    **overrides: object,
) -> Iterator[Row]:
    for profile in profiles:
        for query, scope in queries:
            for identifier in dict.fromkeys((None, scope)):
                for limit in limits:
                    found = hotmem.search_memories(
                        store,
                        query,
                        identifier=identifier,
                        limit=limit,
                        profile=profile,
                        **overrides,  # type: ignore[arg-type]
                    )
                    case = [label, _name(profile), identifier, limit, query, sorted(overrides)]
                    yield {"case": case, "results": [_result(r) for r in found]}


def _explained(
    store: hotmem.MemoryStore, label: str, query: str, memory_id: str, profile: str | hotmem.Profile
) -> Row:
    e = hotmem.explain(store, query, memory_id, profile=profile)
    c = e.components
    return {
        "case": [label, _name(profile), "explain", memory_id, query],
        "results": [
            _hex(e.score),
            e.passes_floor,
            _hex(c.cosine),
            _hex(c.bm25_raw),
            _hex(c.bm25_normalised),
            e.vector_rank,
            e.lexical_rank,
            e.pre_rerank_rank,
            e.post_rerank_rank,
        ],
    }


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def fixtures_suite(directory: Path) -> Iterator[Row]:
    profiles: tuple[str | hotmem.Profile, ...] = (*hotmem.PROFILES, GATED, RRF_SHALLOW)
    for label, folder in FIXTURES.items():
        corpus = _jsonl(folder / "corpus.jsonl")
        fields = ("memory_id", "identifier", "fact", "importance", "tags")
        memories = [{k: m[k] for k in fields if k in m} for m in corpus]
        queries = _jsonl(folder / "queries.jsonl")
        asked = [(str(q["query"]), q.get("identifier")) for q in queries]
        clock = hotmem.fixed_clock("2026-01-01T00:00:00Z")
        with hotmem.open_store(directory / f"{label}.db", clock=clock) as store:
            store.add_space(hotmem.SEMANTIC_MODEL)
            store.add_many(memories)
            yield from _searches(store, label, asked, profiles, (1, 5, 20))  # type: ignore[arg-type]
            yield from _searches(store, label, asked, ("default",), (5,), min_similarity=0.25)
            weights = hotmem.Weights(cosine=0.3, bm25=0.5, importance=0.2)
            yield from _searches(store, label, asked, ("default",), (5,), weights=weights)
            for q in queries:
                relevant = sorted(q.get("relevance") or {})
                if relevant:
                    for profile in ("default", "rrf", "default+mmr", "semantic", GATED):
                        yield _explained(store, label, str(q["query"]), relevant[0], profile)


EDGE_FACTS = [
    ("e-tokyo", "cjk", "東京オフィスは月曜日に休みです。"),
    ("e-osaka", "cjk", "大阪オフィスは火曜日に休みです。"),
    ("e-mixed", "cjk", "The release東京 happens on 月曜日 at noon."),
    ("e-korean", "cjk", "회의는 매주 월요일에 있습니다."),
    ("e-bang", "zero", "!!!"),
    ("e-dash", "zero", "— … —"),
    ("e-same-1", "same", "alpha beta gamma"),
    ("e-same-2", "same", "alpha beta gamma"),
    ("e-same-3", "same", "alpha beta gamma"),
    ("e-cafe", "latin", "The café serves naïve coffee to deploys."),
    ("e-deploy", "latin", "Production deploys happen on Tuesdays."),
    ("e-gone", "latin", "This memory is deleted before any search."),
]
EDGE_QUERIES = [
    ("月曜日", "cjk"),
    ("東京", None),
    ("What does the 雪 bot do?", None),
    ("release東京", "cjk"),
    ("월요일 회의", None),
    ("!!!", "zero"),
    ("", None),
    ("？？", None),
    ("alpha", "same"),
    ("alpha beta gamma", "same"),
    ("cafe naive", "latin"),
    ("deploy deploys deployed", "latin"),
    ("deleted memory", "latin"),
    ("nothing here matches", "nobody"),
]


def edges_suite(directory: Path) -> Iterator[Row]:
    clock = hotmem.fixed_clock("2026-01-01T00:00:00Z")
    with hotmem.open_store(directory / "edges.db", clock=clock) as store:
        store.add_many(
            [
                {"memory_id": m, "identifier": i, "fact": f, "importance": 0.5}
                for m, i, f in EDGE_FACTS
            ]
        )
        store.add("Every fact says alpha.", identifier="same", memory_id="e-alpha", importance=0.9)
        store.delete("e-gone")
        profiles: tuple[str | hotmem.Profile, ...] = (
            "default",
            "bm25-only",
            "cosine-only",
            "rrf",
            "default+mmr",
            GATED,
            RRF_SHALLOW,
        )
        yield from _searches(store, "edges", EDGE_QUERIES, profiles, (1, 3, 20))
        yield from _searches(store, "edges", EDGE_QUERIES, ("default",), (20,), min_similarity=-1.0)
        for query, memory_id in (("月曜日", "e-tokyo"), ("!!!", "e-bang"), ("alpha", "e-same-2")):
            for profile in ("default", "rrf", GATED):
                yield _explained(store, "edges", query, memory_id, profile)


def speed_suite(
    directory: Path, make: Callable[[int], list[dict]], queries: list[str], size: int, label: str
) -> Iterator[Row]:
    with hotmem.open_store(directory / f"{label}.db") as store:
        memories = make(size)
        for start in range(0, size, 10_000):
            store.add_many(memories[start : start + 10_000])
        asked: list[tuple[str, str | None]] = []
        for i, query in enumerate(queries):
            asked.append((query, f"org-{i % 4:03d}"))
        yield from _searches(store, label, asked, SPEED_PROFILES, (5, 50))


SUITES: dict[str, Callable[[Path], Iterator[Row]]] = {
    "fixtures": fixtures_suite,
    "edges": edges_suite,
    "heavy-10k": lambda d: speed_suite(d, heavy_memories, heavy_queries(), 10_000, "heavy-10k"),
    "heavy-100k": lambda d: speed_suite(d, heavy_memories, heavy_queries(), 100_000, "heavy-100k"),
    "synthetic-10k": lambda d: speed_suite(
        d, synthetic_memories, synthetic_queries(50), 10_000, "synthetic-10k"
    ),
    "synthetic-100k": lambda d: speed_suite(
        d, synthetic_memories, synthetic_queries(50), 100_000, "synthetic-100k"
    ),
}


def rows(suite: str) -> list[Row]:
    """Every row of ``suite``, computed in a temporary directory."""
    with tempfile.TemporaryDirectory() as tmp:
        return list(SUITES[suite](Path(tmp)))


def differences(expected: list[Row], found: list[Row], most: int = 20) -> list[str]:
    """The first ``most`` differing rows, one line each."""
    lines = []
    if len(expected) != len(found):
        lines.append(f"expected {len(expected)} rows, found {len(found)}")
    for old, new in zip(expected, found, strict=False):
        if old != new:
            lines.append(
                f"case {old['case']}:\n  expected {old['results']}\n  found    {new['results']}"
            )
            if len(lines) >= most:
                break
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=sorted(SUITES), nargs="+", required=True)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--record", type=Path, metavar="PATH")
    action.add_argument("--check", type=Path, metavar="PATH")
    args = parser.parse_args()
    found = [row for suite in args.suite for row in rows(suite)]
    if args.record:
        text = "\n".join(json.dumps(row, ensure_ascii=False) for row in found)
        args.record.write_text(text + "\n", encoding="utf-8")
        print(f"recorded {len(found)} rows to {args.record}")
        return 0
    expected = [json.loads(line) for line in args.check.read_text(encoding="utf-8").splitlines()]
    problems = differences(expected, found)
    print("\n".join(problems) if problems else f"identical: {len(found)} rows")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
