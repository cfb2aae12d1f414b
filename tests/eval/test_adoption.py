"""The adoption decision: a candidate that beats the baseline on nDCG@k (Holm across the
candidates) and loses Recall@k significantly in no category is adopted, with its command."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

import hotmem
from hotmem_eval.adoption import adoption_block, decide_adoption
from hotmem_eval.comparison import COMPARISON_COLUMNS

PROFILES = [hotmem.PROFILES[name] for name in ("default", "bm25-only", "semantic")]


def _row(candidate: str, scope: str, metric: str, mean: float, delta: float, p: float) -> dict:
    row: dict[str, Any] = dict.fromkeys(COMPARISON_COLUMNS)
    row.update(
        baseline="default",
        candidate=candidate,
        scope=scope,
        metric=metric,
        n=100,
        baseline_mean=mean - delta,
        candidate_mean=mean,
        delta=delta,
        wins=0,
        losses=0,
        ties=100,
        p_value=p,
        p_adjusted=p,
    )
    return row


def _frame(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=COMPARISON_COLUMNS)


def test_the_best_eligible_candidate_is_adopted_with_its_command() -> None:
    comparisons = _frame(
        _row("bm25-only", "overall", "ndcg_at_k", 0.68, 0.08, 0.001),
        _row("semantic", "overall", "ndcg_at_k", 0.73, 0.13, 0.002),
    )
    adoption = decide_adoption(comparisons, PROFILES, k=10)
    assert adoption.profile == "semantic"
    assert adoption.command == (
        "hotmem --db STORE reindex --space all-minilm-l6-v2 && "
        "hotmem --db STORE profiles --set-default semantic"
    )
    assert adoption.text == (
        "Adopt semantic: nDCG@10 0.730, +0.130 over default (Holm-adjusted p = 0.002), and no "
        "category loses Recall@10 significantly. `hotmem --db STORE reindex --space "
        "all-minilm-l6-v2 && hotmem --db STORE profiles --set-default semantic`."
    )
    # Holm over the two: 0.001 * 2, then max(0.002, 0.002 * 1)
    assert [(c.name, c.p_adjusted, c.eligible) for c in adoption.candidates] == [
        ("bm25-only", 0.002, True),
        ("semantic", 0.002, True),
    ]
    block = adoption_block(adoption)
    assert (block["objective"], block["baseline"], block["profile"]) == (
        "ndcg_at_k@10",
        "default",
        "semantic",
    )


def test_a_profile_without_a_model_space_needs_only_set_default() -> None:
    comparisons = _frame(_row("bm25-only", "overall", "ndcg_at_k", 0.68, 0.08, 0.001))
    adoption = decide_adoption(comparisons, PROFILES[:2], k=10)
    assert adoption.command == "hotmem --db STORE profiles --set-default bm25-only"


def test_holm_across_candidates_can_keep_the_baseline() -> None:
    """Each p is below 0.05 alone, but not once adjusted for two candidates."""
    comparisons = _frame(
        _row("bm25-only", "overall", "ndcg_at_k", 0.60, 0.02, 0.03),
        _row("semantic", "overall", "ndcg_at_k", 0.61, 0.03, 0.04),
    )
    adoption = decide_adoption(comparisons, PROFILES, k=5)
    assert (adoption.profile, adoption.command) == (None, None)
    assert [c.p_adjusted for c in adoption.candidates] == [0.06, 0.06]
    assert adoption.text == (
        "No profile beats default on nDCG@5 with a Holm-adjusted p below 0.05 without losing "
        "Recall@5 significantly in a category: keep default."
    )


@pytest.mark.parametrize(
    ("recall", "eligible"),
    [((-0.2, 0.01), False), ((-0.2, 0.2), True), ((0.1, 0.01), True)],
    ids=["significant-loss", "loss-not-significant", "gain"],
)
def test_a_significant_recall_loss_in_a_category_bars_adoption(
    recall: tuple[float, float], eligible: bool
) -> None:
    delta, p = recall
    comparisons = _frame(
        _row("semantic", "overall", "ndcg_at_k", 0.8, 0.1, 0.001),
        _row("semantic", "exact_lexical", "recall_at_k", 0.7, delta, p),
    )
    adoption = decide_adoption(comparisons, [PROFILES[0], PROFILES[2]], k=5)
    assert adoption.candidates[0].eligible is eligible
    assert adoption.candidates[0].recall_losses == (() if eligible else ("exact_lexical",))
    assert adoption.profile == ("semantic" if eligible else None)


def test_a_loss_is_never_adopted() -> None:
    comparisons = _frame(_row("bm25-only", "overall", "ndcg_at_k", 0.4, -0.1, 0.001))
    assert decide_adoption(comparisons, PROFILES[:2], k=10).profile is None


def test_a_profile_of_ones_own_is_imported_from_the_runs_file() -> None:
    mine = hotmem.Profile("mine", lexical=hotmem.LexicalChannel(weight=1.0), importance=0.0)
    comparisons = _frame(_row("mine", "overall", "ndcg_at_k", 0.7, 0.1, 0.001))
    adoption = decide_adoption(comparisons, [PROFILES[0], mine], k=10, profiles_file="my p.toml")
    assert adoption.command == "hotmem --db STORE profiles --import 'my p.toml' --set-default mine"
    # given in Python, without a file, it has no command
    adoption = decide_adoption(comparisons, [PROFILES[0], mine], k=10)
    assert (adoption.profile, adoption.command) == ("mine", None)
    assert adoption.text.endswith(
        "search with it (`profile=`), or write it in a TOML file for `hotmem profiles --import`."
    )


def test_another_objective_is_decided_and_named() -> None:
    comparisons = _frame(
        _row("bm25-only", "overall", "ndcg_at_k", 0.5, -0.1, 0.001),
        _row("bm25-only", "overall", "recall_at_k", 0.9, 0.2, 0.001),
    )
    adoption = decide_adoption(comparisons, PROFILES[:2], k=100, objective="recall_at_k")
    assert adoption.profile == "bm25-only"
    assert adoption.text.startswith("Adopt bm25-only: R@100 0.900, +0.200 over default")
    assert adoption_block(adoption)["objective"] == "recall_at_k@100"
