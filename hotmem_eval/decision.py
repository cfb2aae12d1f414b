"""The deterministic recommendation for the next retrieval investment.

Six rules from the retrieval-evaluation ticket. Rules 1-4 are tried in order and the first
that applies is the recommendation (rule 2 recommends evaluating the ``semantic`` profile,
which exists now, instead of building one; a run of several profiles decides first whether
to adopt one, ``adoption.py``); rules 5 and 6 are standing guards reported with every
recommendation. They are prioritisation rules for the next change, not release thresholds.
A rule that reads a category the collection does not have (rules 2 and 3 read the built-in
suite's categories) is *not applicable*: it is skipped, and the recommendation says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["GUARDS", "RULES", "Evidence", "Recommendation", "Rule", "recommend"]

SEMANTIC, LEXICAL = "semantic_paraphrase", "exact_lexical"
DUPLICATE = "near_duplicate_diversity"
#: Rule 2 fires when paraphrase recall trails exact-lexical recall by at least this much.
RECALL_GAP = 0.15
#: Rule 3 fires when more than this share of near-duplicate top-k slots repeat a group.
DUPLICATE_SLOT_LIMIT = 0.20


@dataclass(frozen=True, slots=True)
class Evidence:
    """The numbers the rules read.

    Attributes:
        top_k: the run's k.
        equivalent_queries: queries whose top k survived snapshot -> verify -> hydrate intact.
        total_queries: queries compared after hydration.
        recall_at_k: per-category macro recall@k (None when the category has no positives).
        duplicate_slots: duplicate top-k slots of near_duplicate_diversity queries.
        filled_slots: filled top-k slots of those queries.
        categories: the categories the collection's queries have (None: every category, as
            evidence built by hand before categories were optional assumes).
    """

    top_k: int
    equivalent_queries: int
    total_queries: int
    recall_at_k: dict[str, float | None]
    duplicate_slots: int
    filled_slots: int
    categories: frozenset[str] | None = None

    @property
    def duplicate_slot_rate(self) -> float | None:
        return self.duplicate_slots / self.filled_slots if self.filled_slots else None


@dataclass(frozen=True, slots=True)
class Rule:
    """A numbered rule: when it applies, and what it says (with the numbers that fired it);
    ``needs`` are the categories it reads (without one of them it is not applicable)."""

    number: int
    code: str
    applies: Callable[[Evidence], bool]
    explain: Callable[[Evidence], str]
    needs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The chosen rule, its text, the standing guards, and the rules skipped as not
    applicable: ``(number, code, why)``."""

    rule: int
    code: str
    text: str
    guards: tuple[str, ...]
    not_applicable: tuple[tuple[int, str, str], ...] = ()


def _gap(e: Evidence) -> float | None:
    semantic, lexical = e.recall_at_k.get(SEMANTIC), e.recall_at_k.get(LEXICAL)
    if semantic is None or lexical is None:
        return None
    return lexical - semantic


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


RULES: tuple[Rule, ...] = (
    Rule(
        1,
        "fix_transfer_compatibility",
        lambda e: e.equivalent_queries != e.total_queries,
        lambda e: (
            f"Snapshot/hydration logical equivalence is {e.equivalent_queries}/"
            f"{e.total_queries}, not 100%: fix clone/index compatibility before any retrieval "
            "feature."
        ),
    ),
    Rule(
        2,
        "evaluate_semantic_profile",
        lambda e: (gap := _gap(e)) is not None and gap >= RECALL_GAP - 1e-12,
        lambda e: (
            f"semantic_paraphrase Recall@{e.top_k} ({_fmt(e.recall_at_k.get(SEMANTIC))}) is "
            f"{_fmt(_gap(e))} below exact_lexical Recall@{e.top_k} "
            f"({_fmt(e.recall_at_k.get(LEXICAL))}), at least {RECALL_GAP:.2f}: evaluate the "
            "semantic profile on this collection (--profile default --profile semantic, with "
            "the semantic extra) and adopt it where the report says it wins."
        ),
        (SEMANTIC, LEXICAL),
    ),
    Rule(
        3,
        "deterministic_reranking",
        lambda e: (rate := e.duplicate_slot_rate) is not None and rate > DUPLICATE_SLOT_LIMIT,
        lambda e: (
            f"near_duplicate_diversity duplicate-slot rate at {e.top_k} is "
            f"{_fmt(e.duplicate_slot_rate)} ({e.duplicate_slots}/{e.filled_slots} slots), above "
            f"{DUPLICATE_SLOT_LIMIT:.2f}: try the deterministic MMR reranker, gated by evidence: "
            "run --profile default --profile default+mmr and turn it on only where it raises "
            "group recall or alpha-nDCG in near_duplicate_diversity without a significant Recall "
            "loss in the other categories (the report's Diversity section says whether it does)."
        ),
        (DUPLICATE,),
    ),
    Rule(
        4,
        "retain_and_expand_fixtures",
        lambda e: True,
        lambda e: _fallback(e),
    ),
)


def _fallback(e: Evidence) -> str:
    """Rule 4's text: the figures of rules 1 to 3 that apply to the collection."""
    parts = [f"Transfer is {e.equivalent_queries}/{e.total_queries}"]
    if e.categories is None or {SEMANTIC, LEXICAL} <= e.categories:
        parts.append(f"the paraphrase gap is {_fmt(_gap(e))} (< {RECALL_GAP:.2f})")
    if e.categories is None or DUPLICATE in e.categories:
        rate = _fmt(e.duplicate_slot_rate)
        parts.append(f"the duplicate-slot rate is {rate} (<= {DUPLICATE_SLOT_LIMIT:.2f})")
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return (
        f"{joined}: retain the current stack and expand the fixtures before adding retrieval "
        "complexity."
    )


GUARDS: tuple[str, ...] = (
    "Rule 5: entity extraction is never recommended from this benchmark alone; entity "
    "enrichment needs a separate product and schema decision.",
    "Rule 6: no hosted or learned reranker until a first-stage retrieval benchmark shows a "
    "candidate-ranking problem that fusion or MMR cannot address.",
)


def _missing(rule: Rule, evidence: Evidence) -> list[str]:
    if evidence.categories is None:
        return []
    return [category for category in rule.needs if category not in evidence.categories]


def recommend(evidence: Evidence) -> Recommendation:
    """Apply rules 1-4 in order, skipping those not applicable; the first that applies is
    the recommendation."""
    skipped: list[tuple[int, str, str]] = []
    for rule in RULES:
        missing = _missing(rule, evidence)
        if missing:
            why = f"not applicable: the collection has no {' and no '.join(missing)} queries"
            skipped.append((rule.number, rule.code, why))
            continue
        if rule.applies(evidence):
            text = rule.explain(evidence)
            return Recommendation(rule.number, rule.code, text, GUARDS, tuple(skipped))
    raise AssertionError("rule 4 always applies")  # pragma: no cover
