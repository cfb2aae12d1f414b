"""The six decision rules on constructed evidence."""

from __future__ import annotations

import pytest

from hotmem_eval.decision import GUARDS, Evidence, Recommendation, recommend


def evidence(
    *,
    equivalent: int = 80,
    total: int = 80,
    semantic: float | None = 0.9,
    lexical: float | None = 1.0,
    duplicate: tuple[int, int] = (0, 40),
) -> Evidence:
    return Evidence(
        top_k=5,
        equivalent_queries=equivalent,
        total_queries=total,
        recall_at_k={"semantic_paraphrase": semantic, "exact_lexical": lexical},
        duplicate_slots=duplicate[0],
        filled_slots=duplicate[1],
    )


@pytest.mark.parametrize(
    ("case", "rule", "code", "text"),
    [
        (
            evidence(equivalent=79, semantic=0.0, duplicate=(40, 40)),
            1,
            "fix_transfer_compatibility",
            "Snapshot/hydration logical equivalence is 79/80, not 100%",
        ),
        (
            evidence(semantic=0.2, lexical=1.0, duplicate=(40, 40)),
            2,
            "evaluate_semantic_profile",
            "semantic_paraphrase Recall@5 (0.200) is 0.800 below exact_lexical Recall@5 (1.000)",
        ),
        # Exactly 15 points below still triggers rule 2 ("at least").
        (evidence(semantic=0.85, lexical=1.0), 2, "evaluate_semantic_profile", "0.150 below"),
        (
            evidence(semantic=0.86, lexical=1.0, duplicate=(9, 40)),
            3,
            "deterministic_reranking",
            "duplicate-slot rate at 5 is 0.225 (9/40 slots), above 0.20",
        ),
        # Exactly 20% is not "greater than 20%".
        (evidence(semantic=0.9, duplicate=(8, 40)), 4, "retain_and_expand_fixtures", "0.200"),
        (evidence(), 4, "retain_and_expand_fixtures", "Transfer is 80/80"),
        # A missing paraphrase category cannot trigger rule 2.
        (evidence(semantic=None), 4, "retain_and_expand_fixtures", "paraphrase gap is n/a"),
        # No filled near-duplicate slot cannot trigger rule 3.
        (evidence(duplicate=(0, 0)), 4, "retain_and_expand_fixtures", "duplicate-slot rate is n/a"),
    ],
)
def test_rules_fire_in_order(case: Evidence, rule: int, code: str, text: str) -> None:
    recommendation = recommend(case)
    assert (recommendation.rule, recommendation.code) == (rule, code)
    assert text in recommendation.text
    assert recommendation.guards == GUARDS


def test_guards_never_recommend_entities_or_learned_rerankers() -> None:
    assert GUARDS[0].startswith("Rule 5: entity extraction is never recommended")
    assert GUARDS[1].startswith("Rule 6: no hosted or learned reranker")
    for case in [evidence(), evidence(semantic=0.0), evidence(duplicate=(40, 40))]:
        text = recommend(case).text.lower()
        assert "entity" not in text
        assert "learned" not in text


def test_recommendation_is_the_whole_text_with_its_numbers() -> None:
    assert recommend(evidence(semantic=0.3)) == Recommendation(
        rule=2,
        code="evaluate_semantic_profile",
        text=(
            "semantic_paraphrase Recall@5 (0.300) is 0.700 below exact_lexical Recall@5 (1.000), "
            "at least 0.15: evaluate the semantic profile on this collection (--profile default "
            "--profile semantic, with the semantic extra) and adopt it where the report says it "
            "wins."
        ),
        guards=GUARDS,
    )
