"""Cosine distributions of each vector space on both committed fixtures: the floor's evidence.

Run: ``uv run python benchmarks/semantic_probe.py [--space all-minilm-l6-v2 ...] [--model-dir DIR]``

Not a test and not the product: it embeds every memory and query of a fixture with a registered
embedder (``hotmem.get_embedder``) and measures, as ``benchmarks/floor_calibration.py`` does for
hotmem-hash-v1:

1. the cosine of every query with every memory it does not grade (**unrelated**), with the
   memories it grades 1 (**partial**) and >= 2 (**relevant**), and the relevant pairs of the
   ``semantic_paraphrase`` queries alone; quantiles and the suggested floor, the smallest
   multiple of 0.05 above the 99th percentile of unrelated cosines;
2. for candidate floors: unrelated and relevant pairs at or above the floor, positive queries
   with a relevant memory at or above it in their scope (an upper bound on what the cosine
   channel can admit), and negative queries (no graded memory) with any memory at or above it;
3. per category, the relevant pairs' median cosine and the queries whose best-cosine memory in
   scope is relevant, top 1 and top 5 by cosine alone (an indicator, not the product's ranking).

Cosine is the dot product of the stored (unit, float32) vectors, in float64.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import hotmem  # noqa: E402
from hotmem_eval.fixtures import load_fixture  # noqa: E402

FIXTURES = {
    "ours": ROOT / "benchmarks" / "retrieval",
    "kgh (held out)": ROOT / "benchmarks" / "retrieval" / "external" / "kgh-retrieval",
}
FLOORS = (0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60)
QUANTILES = (1, 5, 50, 90, 95, 99)
PARAPHRASE = "semantic_paraphrase"


def quantiles(values: list[float]) -> list[float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return [cuts[q - 1] for q in QUANTILES] + [max(values)]


def floor_above(value: float) -> float:
    """The smallest multiple of 0.05 strictly above ``value``."""
    steps = math.floor(round(value / 0.05, 9)) + 1
    return round(steps * 0.05, 2)


def matrix(embedder: hotmem.Embedder, texts: list[str]) -> np.ndarray:
    blobs = embedder.embed_many(texts)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(texts), -1).astype(np.float64)


def probe(name: str, directory: Path, embedder: hotmem.Embedder) -> float:
    fixture = load_fixture(directory / "corpus.jsonl", directory / "queries.jsonl")
    corpus = fixture.corpus.select(["memory_id", "identifier", "fact"]).to_pylist()
    queries = fixture.queries.to_pylist()
    grades: dict[str, dict[str, int]] = defaultdict(dict)
    for row in fixture.qrels.to_pylist():
        grades[row["query_id"]][row["memory_id"]] = row["grade"]
    cosines = (
        matrix(embedder, [q["query"] for q in queries])
        @ matrix(embedder, [m["fact"] for m in corpus]).T
    )

    pairs: dict[str, list[float]] = defaultdict(list)
    for row, query in zip(cosines, queries, strict=True):
        graded = grades[query["query_id"]]
        for value, memory in zip(row.tolist(), corpus, strict=True):
            grade = graded.get(memory["memory_id"], 0)
            kind = "unrelated" if memory["memory_id"] not in graded else None
            kind = kind or ("relevant (grade >= 2)" if grade >= 2 else "partial (grade 1)")
            pairs[kind].append(value)
            if grade >= 2 and query["category"] == PARAPHRASE:
                pairs["relevant, semantic_paraphrase"].append(value)

    print(f"\n### {name}: {len(corpus)} memories, {len(queries)} queries\n")
    print("| pairs | n | " + " | ".join(f"p{q}" for q in QUANTILES) + " | max |")
    print("|---|---:|" + "---:|" * (len(QUANTILES) + 1))
    for kind in ("unrelated", "partial (grade 1)", "relevant (grade >= 2)"):
        values = pairs[kind]
        print(
            f"| {kind} | {len(values)} | "
            + " | ".join(f"{v:.3f}" for v in quantiles(values))
            + " |"
        )
    values = pairs["relevant, semantic_paraphrase"]
    print(
        f"| relevant, {PARAPHRASE} | {len(values)} | "
        + " | ".join(f"{v:.3f}" for v in quantiles(values))
        + " |"
    )
    p99 = quantiles(pairs["unrelated"])[QUANTILES.index(99)]
    print(
        f"\n99th percentile of unrelated cosines: {p99:.4f}; floor above it: {floor_above(p99):.2f}"
    )

    in_scope = [
        [q["identifier"] is None or m["identifier"] == q["identifier"] for m in corpus]
        for q in queries
    ]
    print(
        "\n| floor | unrelated pairs >= floor | relevant pairs >= floor "
        "| paraphrase relevant >= floor | positives with a relevant memory >= floor "
        "| negatives with any memory >= floor |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for floor in FLOORS:
        positives = hits = negatives = false_positives = 0
        for row, query, scope in zip(cosines, queries, in_scope, strict=True):
            graded = grades[query["query_id"]]
            above = [
                m["memory_id"]
                for value, m, inside in zip(row.tolist(), corpus, scope, strict=True)
                if inside and value >= floor
            ]
            if any(g >= 2 for g in graded.values()):
                positives += 1
                hits += any(graded.get(memory_id, 0) >= 2 for memory_id in above)
            elif not any(g >= 1 for g in graded.values()):
                negatives += 1
                false_positives += bool(above)
        counts = [
            sum(v >= floor for v in pairs[kind])
            for kind in ("unrelated", "relevant (grade >= 2)", "relevant, semantic_paraphrase")
        ]
        totals = [
            len(pairs[k])
            for k in ("unrelated", "relevant (grade >= 2)", "relevant, semantic_paraphrase")
        ]
        cells = " | ".join(f"{c}/{t}" for c, t in zip(counts, totals, strict=True))
        print(f"| {floor:.2f} | {cells} | {hits}/{positives} | {false_positives}/{negatives} |")

    print("\n| category | positive queries | median relevant cosine | cosine-only top 1 | top 5 |")
    print("|---|---:|---:|---:|---:|")
    by_category: dict[str, list[tuple[float, bool, bool]]] = defaultdict(list)
    for row, query, scope in zip(cosines, queries, in_scope, strict=True):
        graded = grades[query["query_id"]]
        relevant = [
            value
            for value, m in zip(row.tolist(), corpus, strict=True)
            if graded.get(m["memory_id"], 0) >= 2
        ]
        if not relevant:
            continue
        ranked = sorted(
            (i for i, inside in enumerate(scope) if inside),
            key=lambda i: (-row[i], corpus[i]["memory_id"]),
        )
        top = [graded.get(corpus[i]["memory_id"], 0) >= 2 for i in ranked[:5]]
        by_category[query["category"]].append((statistics.median(relevant), top[0], any(top)))
    for category in sorted(by_category):
        rows = by_category[category]
        print(
            f"| {category} | {len(rows)} | {statistics.median(r[0] for r in rows):.3f} "
            f"| {sum(r[1] for r in rows)}/{len(rows)} | {sum(r[2] for r in rows)}/{len(rows)} |"
        )
    return p99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--space", action="append", choices=sorted(hotmem.EMBEDDERS), help="default: both"
    )
    parser.add_argument("--model-dir", type=Path, help="model files for the semantic space")
    args = parser.parse_args()
    for model_id in args.space or [hotmem.MODEL_NAME, hotmem.SEMANTIC_MODEL]:
        model_dir = args.model_dir if model_id == hotmem.SEMANTIC_MODEL else None
        embedder = hotmem.get_embedder(model_id, model_dir=model_dir)
        print(f"\n## {model_id} (digest {embedder.digest[:12]}…, dimension {embedder.dimension})")
        p99 = max(probe(name, directory, embedder) for name, directory in FIXTURES.items())
        print(f"\n**{model_id}: floor above the larger 99th percentile: {floor_above(p99):.2f}**")


if __name__ == "__main__":
    main()
