"""How the relevance floor (``min_similarity``) was chosen: a measurement, not a guess.

Run: ``uv run python benchmarks/floor_calibration.py [--space MODEL_ID] [--model-dir DIR]``

For each fixture (ours, and the public kgh fixture as a held-out check) it prints:

1. the distribution of cosine between unrelated texts (every query against every memory it
   does not grade) and between queries and their relevant memories (grade >= 2);
2. for candidate floors, what search returns: positive queries with a relevant memory in the
   top 5 (success@5), negative queries that return anything, and results admitted by cosine
   alone (no lexical match).

The default floor is the smallest multiple of 0.05 above the 99th percentile of unrelated
cosines on both fixtures; docs/ranking.md records the figures.

``--space`` calibrates another vector space (``hotmem.EMBEDDERS``, e.g. ``all-minilm-l6-v2``):
cosines are the float64 dot products of the space's stored vectors, the searches run a hybrid
profile over that space (``0.6 * cosine + 0.2 * bm25 + 0.2 * importance``, lexical matches gated),
and it ends with the two values a profile over the space takes, by rule:

- **floor**: the smallest multiple of 0.05 above the larger 99th percentile of unrelated cosines
  (as for hash-v1);
- **gate** (a lexical match needs this cosine): the largest multiple of 0.05 at most the smaller
  95th percentile of unrelated cosines, so that a lexical match as unrelated in meaning as
  19 unrelated pairs in 20 is dropped, while a relevant lexical match is kept (the gate's
  relevant pairs kept are printed).

The built-in profiles over the space (``hotmem.PROFILES``) must hold these values;
docs/semantic.md records the run.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import hotmem  # noqa: E402
from hotmem.retrieval.rerank import cosine  # noqa: E402
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


def multiple_above(value: float) -> float:
    """The smallest multiple of 0.05 strictly above ``value``."""
    return round((math.floor(round(value / 0.05, 9)) + 1) * 0.05, 2)


def multiple_at_most(value: float) -> float:
    """The largest multiple of 0.05 at most ``value``."""
    return round(math.floor(round(value / 0.05, 9)) * 0.05, 2)


def _matrix(embedder: hotmem.Embedder, texts: list[str]) -> np.ndarray:
    blobs = embedder.embed_many(texts)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(texts), -1).astype(np.float64)


@dataclass
class SpacePairs:
    """One fixture's cosines in a space: its queries, grades, unrelated and relevant pairs."""

    fixture: Any
    queries: list[dict[str, Any]]
    grades: dict[str, dict[str, int]]
    unrelated: list[float]
    relevant: list[float]

    def quantile(self, q: int) -> float:
        return statistics.quantiles(self.unrelated, n=100, method="inclusive")[q - 1]


def space_pairs(directory: Path, embedder: hotmem.Embedder) -> SpacePairs:
    fixture = load_fixture(directory / "corpus.jsonl", directory / "queries.jsonl")
    corpus = fixture.corpus.select(["memory_id", "fact"]).to_pylist()
    grades: dict[str, dict[str, int]] = {}
    for row in fixture.qrels.to_pylist():
        grades.setdefault(row["query_id"], {})[row["memory_id"]] = row["grade"]
    queries = fixture.queries.to_pylist()
    cosines = (
        _matrix(embedder, [q["query"] for q in queries])
        @ _matrix(embedder, [m["fact"] for m in corpus]).T
    )
    unrelated, relevant = [], []
    for row, query in zip(cosines.tolist(), queries, strict=True):
        graded = grades.get(query["query_id"], {})
        for value, memory in zip(row, corpus, strict=True):
            if graded.get(memory["memory_id"], 0) >= 2:
                relevant.append(value)
            elif memory["memory_id"] not in graded:
                unrelated.append(value)
    return SpacePairs(fixture, queries, grades, unrelated, relevant)


def report_space(name: str, pairs: SpacePairs, model_id: str, gate: float) -> None:
    print(f"\n### {name}: {pairs.fixture.corpus.num_rows} memories, {len(pairs.queries)} queries\n")
    print("| pairs | n | p50 | p90 | p95 | p99 | max |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, values in (
        ("unrelated", pairs.unrelated),
        ("relevant (grade >= 2)", pairs.relevant),
    ):
        cells = " | ".join(f"{v:.3f}" for v in quantiles(values))
        print(f"| {label} | {len(values)} | {cells} |")
    kept = sum(1 for v in pairs.relevant if v >= gate)
    print(f"\nrelevant pairs at or above the gate {gate:.2f}: {kept}/{len(pairs.relevant)}")
    print(
        f"\nSearch with 0.6 * cosine + 0.2 * bm25 + 0.2 * importance over {model_id}, "
        f"lexical gate {gate:.2f}:\n"
    )
    print(
        "| floor | unrelated pairs >= floor | success@5 | negatives returning anything "
        "| results admitted by cosine alone |"
    )
    print("|---:|---:|---:|---:|---:|")
    with open_fixture_store(":memory:", pairs.fixture.corpus, spaces=(model_id,)) as store:
        for floor in FLOORS:
            profile = hotmem.Profile(
                "calibration",
                vector=hotmem.VectorChannel(space=model_id, weight=0.6, floor=floor),
                lexical=hotmem.LexicalChannel(weight=0.2, gate=gate),
            )
            print(_search_row(store, pairs, profile, floor))


def _search_row(
    store: hotmem.MemoryStore, pairs: SpacePairs, profile: hotmem.Profile, floor: float
) -> str:
    successes = positives = negatives = false_positives = cosine_only = 0
    for query in pairs.queries:
        results = hotmem.search_memories(
            store, query["query"], identifier=query["identifier"], profile=profile
        )
        cosine_only += sum(1 for r in results if not r.components.lexical_match)
        graded = pairs.grades.get(query["query_id"], {})
        if any(g >= 2 for g in graded.values()):
            positives += 1
            successes += any(graded.get(r.memory_id, 0) >= 2 for r in results)
        elif not any(g >= 1 for g in graded.values()):
            negatives += 1
            false_positives += bool(results)
    admitted = sum(1 for v in pairs.unrelated if v >= floor)
    return (
        f"| {floor:.2f} | {admitted}/{len(pairs.unrelated)} | {successes}/{positives} "
        f"| {false_positives}/{negatives} | {cosine_only} |"
    )


def main_space(model_id: str, model_dir: str | None) -> None:
    """Calibrate the floor and gate of the space ``model_id`` on both fixtures."""
    embedder = hotmem.get_embedder(model_id, model_dir=model_dir)
    print(f"## {model_id} (digest {embedder.digest[:12]}..., dimension {embedder.dimension})")
    found = {name: space_pairs(directory, embedder) for name, directory in FIXTURES.items()}
    p99 = max(pairs.quantile(99) for pairs in found.values())
    p95 = min(pairs.quantile(95) for pairs in found.values())
    floor, gate = multiple_above(p99), multiple_at_most(p95)
    for name, pairs in found.items():
        report_space(name, pairs, model_id, gate)
    print(
        f"\n**{model_id}: floor {floor:.2f} (above the larger unrelated p99, {p99:.4f}); "
        f"gate {gate:.2f} (at most the smaller unrelated p95, {p95:.4f})**\n"
    )
    for profile in hotmem.PROFILES.values():
        if profile.vector is not None and profile.vector.space == model_id:
            gate_of = None if profile.lexical is None else profile.lexical.gate
            agrees = profile.vector.floor == floor and gate_of in (None, gate)
            verdict = "as calibrated" if agrees else "DIFFERS FROM THE CALIBRATION"
            print(
                f"- built-in profile {profile.name!r}: floor {profile.vector.floor:.2f}, "
                f"gate {gate_of}: {verdict}"
            )


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default=hotmem.MODEL_NAME, help="the vector space's model id")
    parser.add_argument("--model-dir", help="model files for the space (default: the package)")
    args = parser.parse_args()
    if args.space != hotmem.MODEL_NAME:
        main_space(args.space, args.model_dir)
        return
    print(f"Current default: min_similarity = {hotmem.MIN_SIMILARITY}")
    for name, directory in FIXTURES.items():
        calibrate(name, directory)


if __name__ == "__main__":
    main()
