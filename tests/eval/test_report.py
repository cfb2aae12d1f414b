"""The Markdown report: narrow metrics tables, the worst queries with their text and facts,
every decision rule with whether it applies, the negatives that returned something."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from hotmem_eval.cli import main
from hotmem_eval.decision import RULES
from hotmem_eval.report import render_markdown
from hotmem_eval.report_metrics import COLUMNS, TABLES
from hotmem_eval.report_queries import text_cell, worst
from hotmem_eval.report_rules import CONDITIONS, evidence
from hotmem_eval.result_document import profile_view

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("report") / "result.json"
    assert main(["--output", str(path)]) == 0
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def section(markdown: str, heading: str) -> list[str]:
    """The non-blank lines of a section: from ``## heading`` to the next heading, or of the
    appendix's folded section whose summary is ``heading``."""
    lines = markdown.splitlines()
    if heading.startswith("## "):
        start = lines.index(heading) + 1
        end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    else:
        start = lines.index(f"<summary>{heading}</summary>") + 1
        end = lines.index("</details>", start)
    return [line for line in lines[start:end] if line]


def test_the_report_reads_top_down(result: dict[str, Any]) -> None:
    markdown = render_markdown(result)
    lines = markdown.splitlines()
    assert lines[2].startswith("**Next retrieval investment (rule 2, `evaluate_semantic_profile`)")
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == ["## Decision", "## By category", "## Appendix"]
    summaries = [line for line in lines if line.startswith("<summary>")]
    assert summaries == [
        "<summary>Configuration</summary>",
        "<summary>Decision rules on default</summary>",
        "<summary>Every metric of default, by category</summary>",
        "<summary>Five worst queries of default (by nDCG@5)</summary>",
        "<summary>Negative queries that returned something</summary>",
        "<summary>Why relevant memories were missed (default)</summary>",
        "<summary>Transfer: snapshot → verify → hydrate</summary>",
        "<summary>Timings</summary>",
        "<summary>What this benchmark does not prove</summary>",
    ]
    decision = section(markdown, "## Decision")
    assert decision[:3] == [
        "155 memories, 98 queries; profile **default**.",
        "| profile | nDCG@5 (95% CI) | R@5 | MRR@5 | failed queries | transfer |",
        "|---|---:|---:|---:|---:|---|",
    ]
    [entry] = result["profiles"]
    overall = entry["intervals"][0]
    assert decision[3] == (
        f"| default | {overall['value']:.3f} ({overall['ci_low']:.3f}–{overall['ci_high']:.3f}) "
        f"| 0.865 (134/166) | {entry['metrics']['overall']['mrr_at_k']['value']:.3f} "
        f"| {len(entry['failed_query_ids'])} | 98/98 |"
    )


def test_the_tables_show_every_report_column_once_in_registry_order() -> None:
    assert [m for columns in TABLES.values() for m in columns] == list(COLUMNS)


def test_no_metrics_table_is_wider_than_seven_columns(result: dict[str, Any]) -> None:
    rows = [
        line
        for line in section(render_markdown(result), "Every metric of default, by category")
        if line[0] == "|"
    ]
    assert max(row.count("|") - 1 for row in rows) <= 7


def test_every_rule_has_its_condition() -> None:
    assert set(CONDITIONS) == {rule.code for rule in RULES}


def test_every_rule_is_listed_with_whether_it_applies(result: dict[str, Any]) -> None:
    lines = section(render_markdown(result), "Decision rules on default")
    table = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert table == [
        "| 1 `fix_transfer_compatibility` | snapshot/hydrate equivalence below 100% "
        "(now 98/98) | no |",
        "| 2 `evaluate_semantic_profile` | semantic_paraphrase recall@5 at least 0.15 below "
        "exact_lexical (now 0.700 below) | **yes: the recommendation** |",
        "| 3 `deterministic_reranking` | near_duplicate_diversity duplicate-slot rate above 0.20 "
        "(now 0.404) | yes (rule 2 comes first) |",
        "| 4 `retain_and_expand_fixtures` | always: the fallback when rules 1 to 3 do not apply "
        "| yes (rule 2 comes first) |",
    ]
    assert [rule.number for rule in RULES if rule.applies(evidence(profile_view(result)))] == [
        2,
        3,
        4,
    ]


def test_a_broken_transfer_fires_rule_1(result: dict[str, Any]) -> None:
    broken = copy.deepcopy(result)
    broken["profiles"][0]["transfer"]["equivalent_queries"] = 97
    broken["profiles"][0]["recommendation"]["rule"] = 1
    lines = section(render_markdown(broken), "Decision rules on default")
    [rule_1] = [line for line in lines if line.startswith("| 1 ")]
    assert rule_1.endswith("(now 97/98) | **yes: the recommendation** |")


def test_worst_queries_show_the_query_and_the_facts(result: dict[str, Any]) -> None:
    lines = section(render_markdown(result), "Five worst queries of default (by nDCG@5)")
    first = lines.index(
        "**q-para-001** (semantic_paraphrase), nDCG@5 0.000: "
        "Who has to okay a big bill before it gets paid?"
    )
    assert lines[first + 1 : first + 5] == [
        "| slot | memory (grade) | fact |",
        "|---|---|---|",
        "| expected | mem-invoice-001 (3) | Acme invoices require two-person approval above "
        "EUR 5,000. |",
        "| expected | mem-invoice-002 (1) | Invoices below EUR 5,000 can be approved by a single "
        "budget owner. |",
    ]
    assert lines[first + 5].startswith("| 1 | mem-atlas-acme-001 (0) | ")


def test_ties_at_the_bottom_of_the_worst_list_are_named(result: dict[str, Any]) -> None:
    shown, ties = worst(profile_view(result))
    assert [q["query_id"] for q in shown] == [f"q-para-00{i}" for i in range(1, 6)]
    assert ties == ["q-para-006", "q-para-010"]
    lines = section(render_markdown(result), "Five worst queries of default (by nDCG@5)")
    assert lines[-1] == (
        "2 more queries tie with the last at nDCG@5 0.000, not shown: q-para-006, q-para-010."
    )


def test_no_tie_line_when_the_next_query_is_better(result: dict[str, Any]) -> None:
    better = copy.deepcopy(result)
    for query in better["profiles"][0]["queries"]:
        if query["query_id"] in {"q-para-006", "q-para-010"}:
            query["metrics"]["ndcg_at_k"] = 0.5
    assert worst(profile_view(better))[1] == []
    assert "not shown" not in render_markdown(better)


def test_negative_queries_that_returned_something_are_listed(result: dict[str, Any]) -> None:
    lines = section(render_markdown(result), "Negative queries that returned something")
    answered = [
        q["query_id"]
        for q in result["profiles"][0]["queries"]
        if q["category"] == "negative_or_no_answer" and q["results"]
    ]
    assert lines[0] == (
        f"{len(answered)} of 11 negative queries returned something (their corpus holds no "
        "answer, so every result is a false positive)."
    )
    assert [line.split(" | ")[0][2:] for line in lines[3:]] == answered
    assert lines[3].startswith("| q-neg-001 | What is the boiling point of tungsten? | 3 | ")


def test_a_result_without_a_fact_still_renders(result: dict[str, Any]) -> None:
    older = {**result, "facts": {}}
    lines = section(render_markdown(older), "Five worst queries of default (by nDCG@5)")
    assert "| expected | mem-invoice-001 (3) | – |" in lines


@pytest.mark.parametrize(
    ("text", "width", "cell"),
    [
        ("short", 10, "short"),
        ("exactly10!", 10, "exactly10!"),
        ("one two three four", 10, "one two t…"),
        ("a | b", 10, "a | b"),
        ("line\nbreak  and   spaces", 40, "line break and spaces"),
    ],
)
def test_text_cell(text: str, width: int, cell: str) -> None:
    assert text_cell(text, width) == cell


def test_the_result_carries_the_facts_the_report_quotes(result: dict[str, Any]) -> None:
    corpus = {
        row["memory_id"]: row["fact"]
        for row in map(
            json.loads,
            (ROOT / "benchmarks" / "retrieval" / "corpus.jsonl").read_text().splitlines(),
        )
    }
    queries = result["profiles"][0]["queries"]
    referenced = {m for q in queries for m in q["relevance"]}
    referenced |= {r["memory_id"] for q in queries for r in q["results"]}
    assert result["facts"] == {m: corpus[m] for m in sorted(referenced)}


def test_the_timings_show_the_query_embedding(result: dict[str, Any]) -> None:
    """The baseline's query embedding before its searches, and "–" in a result of an earlier
    version that has no such stage."""
    stages = result["profiles"][0]["stages_s"]
    assert list(stages) == ["metrics", "misses", "query_embedding", "search", "transfer"]
    rows = [r for r in section(render_markdown(result), "Timings") if r.startswith("| query emb")]
    assert rows == [
        f"| query embedding, before the searches (s) | {stages['query_embedding']:.3f} |"
    ]
    earlier = copy.deepcopy(result)
    del earlier["profiles"][0]["stages_s"]["query_embedding"]
    rows = [r for r in section(render_markdown(earlier), "Timings") if r.startswith("| query emb")]
    assert rows == ["| query embedding, before the searches (s) | – |"]
