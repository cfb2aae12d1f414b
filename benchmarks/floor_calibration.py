"""How the relevance floor (``min_similarity``) was chosen: a measurement, not a guess.

Run: ``uv run python benchmarks/floor_calibration.py``

For each fixture (ours, and the public kgh fixture as a held-out check) it prints:

1. the distribution of cosine between unrelated texts (every query against every memory it
   does not grade) and between queries and their relevant memories (grade >= 2);
2. for candidate floors, what search returns: positive queries with a relevant memory in the
   top 5 (success@5), negative queries that return anything, and results admitted by cosine
   alone (no lexical match).

The default floor is the smallest multiple of 0.05 above the 99th percentile of unrelated
cosines on both fixtures; docs/ranking.md records the figures.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import hotmem  # noqa: E402
from hotmem.vectors import cosine  # noqa: E402
from hotmem_eval.fixtures import load_fixture  # noqa: E402
from hotmem_eval.ingest import open_fixture_store  # noqa: E402

FIXTURES = {
    "ours": ROOT / "benchmarks" / "retrieval",
    "kgh (held out)": ROOT / "benchmarks" / "retrieval" / "external" / "kgh-retrieval",
}
FLOORS = (0.30, 0.35, 0.40, 0.45, 0.50)
QUANTILES = (50, 90, 95, 99)


def quantiles(values: list[float]) -> list[float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return [cuts[q - 1] for q in QUANTILES] + [max(values)]


def calibrate(name: str, directory: Path) -> None:
    fixture = load_fixture(directory / "corpus.jsonl", directory / "queries.jsonl")
    facts = dict(
        zip(*fixture.corpus.select(["memory_id", "fact"]).to_pydict().values(), strict=True)
    )
    vectors = {memory_id: hotmem.embed(fact) for memory_id, fact in facts.items()}
    grades: dict[str, dict[str, int]] = {}
    for row in fixture.qrels.to_pylist():
        grades.setdefault(row["query_id"], {})[row["memory_id"]] = row["grade"]
    queries = fixture.queries.to_pylist()

    unrelated, relevant = [], []
    for query in queries:
        query_vector = hotmem.embed(query["query"])
        graded = grades.get(query["query_id"], {})
        for memory_id, vector in vectors.items():
            value = cosine(vector, query_vector)
            if graded.get(memory_id, 0) >= 2:
                relevant.append(value)
            elif memory_id not in graded:
                unrelated.append(value)

    print(f"\n### {name}: {len(facts)} memories, {len(queries)} queries\n")
    print("| pairs | n | p50 | p90 | p95 | p99 | max |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, values in (("unrelated", unrelated), ("relevant (grade >= 2)", relevant)):
        cells = " | ".join(f"{v:.3f}" for v in quantiles(values))
        print(f"| {label} | {len(values)} | {cells} |")

    print(
        "\n| floor | unrelated pairs >= floor | success@5 | negatives returning anything "
        "| results admitted by cosine alone |"
    )
    print("|---:|---:|---:|---:|---:|")
    with open_fixture_store(":memory:", fixture.corpus) as store:
        for floor in FLOORS:
            successes = positives = negatives = false_positives = cosine_only = 0
            for query in queries:
                results = hotmem.search_memories(
                    store, query["query"], identifier=query["identifier"], min_similarity=floor
                )
                cosine_only += sum(1 for r in results if not r.components.lexical_match)
                graded = grades.get(query["query_id"], {})
                if any(g >= 2 for g in graded.values()):
                    positives += 1
                    returned = {r.memory_id for r in results}
                    successes += any(graded.get(m, 0) >= 2 for m in returned)
                elif not any(g >= 1 for g in graded.values()):
                    negatives += 1
                    false_positives += bool(results)
            admitted = sum(1 for v in unrelated if v >= floor)
            print(
                f"| {floor:.2f} | {admitted}/{len(unrelated)} | {successes}/{positives} "
                f"| {false_positives}/{negatives} | {cosine_only} |"
            )


def main() -> None:
    print(f"Current default: min_similarity = {hotmem.MIN_SIMILARITY}")
    for name, directory in FIXTURES.items():
        calibrate(name, directory)


if __name__ == "__main__":
    main()
