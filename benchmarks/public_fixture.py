"""The figures of the public HotMem fixture in docs/retrieval-quality.md, made from a run.

``benchmarks/retrieval/external/kgh-retrieval/`` is the fixture the public HotMem project
published (MIT). Its section of the docs compares the published figures with ours; ours come
from a run of the evaluator, rendered here between the page's markers, so the page cannot
drift from what the code does (``tests/benchmarks/test_public_fixture.py`` runs the fixture
and checks the page)::

    uv run python benchmarks/public_fixture.py            # print the tables
    uv run python benchmarks/public_fixture.py --write    # rewrite them in the page
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "benchmarks" / "retrieval" / "external" / "kgh-retrieval"
PAGE = ROOT / "docs" / "retrieval-quality.md"
BEGIN = "<!-- public fixture: made by benchmarks/public_fixture.py --write; do not edit -->"
END = "<!-- public fixture: end -->"

#: figure -> (the published value, where ours is: (category or None, metric)).
PUBLISHED: dict[str, tuple[str, tuple[str | None, str]]] = {
    "overall Recall@5": ("0.690", (None, "recall_at_k")),
    "overall Recall@1": ("0.310", (None, "recall_at_1")),
    "MRR@5": ("0.537", (None, "mrr_at_k")),
    "nDCG@5": ("0.586", (None, "ndcg_at_k")),
    "negative false-positive rate": ("1.000", ("negative_or_no_answer", "negative_fpr_at_k")),
    "duplicate-slot rate (near-duplicate queries)": (
        "0.300",
        ("near_duplicate_diversity", "duplicate_slot_rate_at_k"),
    ),
    "semantic_paraphrase Recall@5": ("0.333", ("semantic_paraphrase", "recall_at_k")),
    "exact_lexical Recall@5": ("1.000", ("exact_lexical", "recall_at_k")),
}


def run(fixture: Path = FIXTURE) -> dict[str, Any]:
    """The evaluator's result on a fixture (top-k 5, profile ``default``): the public one by
    default."""
    from hotmem_eval.cli import main

    with tempfile.TemporaryDirectory() as directory:
        output = Path(directory) / "result.json"
        argv = ["--corpus", str(fixture / "corpus.jsonl"), "--queries"]
        argv += [str(fixture / "queries.jsonl"), "--output", str(output)]
        if main(argv) != 0:
            raise SystemExit("the evaluator failed on the public fixture")
        document: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
        return document


def _cell(block: dict[str, Any] | None) -> str:
    if not block or block["value"] is None:
        return ""
    text = f"{block['value']:.3f}"
    if block["numerator"] is not None and block["denominator"] != 1:
        text += f" ({block['numerator']}/{block['denominator']})"
    return text


def tables(result: dict[str, Any]) -> str:
    """The section's generated part: ours beside the published figures, then by category."""
    entry = result["profiles"][0]
    metrics = entry["metrics"]
    blocks = {None: metrics["overall"], **metrics["by_category"]}
    transfer = entry["transfer"]
    lines = ["| figure | published | ours |", "|---|---:|---:|"]
    for figure, (published, (scope, metric)) in PUBLISHED.items():
        lines.append(f"| {figure} | {published} | {_cell(blocks[scope].get(metric))} |")
    equivalence = f"{transfer['equivalent_queries']}/{transfer['total_queries']}"
    lines += [f"| snapshot/hydrate equivalence | 48/48 | {equivalence} |", ""]
    misses: dict[str, Counter[str]] = {}
    for query in entry["queries"]:
        for miss in query["missed"]:
            misses.setdefault(query["category"], Counter())[miss["reason"]] += 1
    lines += [
        "By category (ours; the publication gives only the overall figures and the two "
        "categories above):",
        "",
        "| category | R@1 | R@5 | MRR@5 | misses | other |",
        "|---|---:|---:|---:|---|---|",
    ]
    from hotmem_eval.fixture_schema import category_order

    by_category = metrics["by_category"]
    for category in category_order(by_category):
        block = by_category[category]
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(misses.get(category, {}).items()))
        other = []
        if block.get("negative_fpr_at_k", {}).get("value") is not None:
            other.append(f"FPR {_cell(block['negative_fpr_at_k'])}")
        if block.get("duplicate_slot_rate_at_k", {}).get("value") is not None:
            other.append(f"duplicate slots {_cell(block['duplicate_slot_rate_at_k'])}")
        mrr = block.get("mrr_at_k", {})
        lines.append(
            f"| {category} | {_cell(block.get('recall_at_1'))} | "
            f"{_cell(block.get('recall_at_k'))} | {'' if not mrr else _cell(mrr)} | "
            f"{reasons} | {'; '.join(other)} |"
        )
    recommendation = entry["recommendation"]
    lines += [
        "",
        f"The recommendation on that fixture: rule {recommendation['rule']} "
        f"(`{recommendation['code']}`): {recommendation['text']}",
    ]
    return "\n".join(lines)


def paraphrase_sentence(committed: dict[str, Any], public: dict[str, Any]) -> str:
    """docs/semantic.md's first figures: paraphrase against exact-wording Recall@5 of the
    committed fixture and of the public one."""

    def recall(result: dict[str, Any], category: str) -> str:
        block = result["profiles"][0]["metrics"]["by_category"][category]["recall_at_k"]
        return f"{block['value']:.2f}"

    exact = {recall(committed, "exact_lexical"), recall(public, "exact_lexical")}
    return (
        f"(Recall@5 {recall(committed, 'semantic_paraphrase')} on the committed fixture, "
        f"{recall(public, 'semantic_paraphrase')} on the KGH fixture,\nagainst "
        f"{' and '.join(sorted(exact))} for exact wording)"
    )


def section(page: str) -> str:
    """The generated part of ``page`` (between the markers)."""
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    return page[start:end].strip("\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite the tables in {PAGE}")
    args = parser.parse_args()
    generated = tables(run())
    if not args.write:
        print(generated)
        return 0
    page = PAGE.read_text(encoding="utf-8")
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    PAGE.write_text(page[:start] + "\n" + generated + "\n" + page[end:], encoding="utf-8")
    print(f"wrote {PAGE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
