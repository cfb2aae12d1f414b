"""Deterministic synthetic memories and queries for the speed benchmarks (no I/O)."""

from __future__ import annotations

import itertools
import random

__all__ = ["heavy_memories", "heavy_queries", "synthetic_memories", "synthetic_queries"]

_SUBJECTS = (
    "vendor invoices",
    "password rotation",
    "database backups",
    "expense reports",
    "production deploys",
    "refund requests",
    "the public API",
    "laptop provisioning",
    "incident reviews",
    "the on-call rota",
    "customer onboarding",
    "release notes",
    "security audits",
    "travel bookings",
    "office badges",
    "data retention",
    "the staging cluster",
    "payroll runs",
    "contract renewals",
    "support tickets",
)
_VERBS = (
    "require",
    "happen",
    "run",
    "need",
    "are reviewed",
    "are archived",
    "are approved",
    "are rotated",
    "are scheduled",
    "are escalated",
)
_DETAILS = (
    "every {n} days",
    "above EUR {n},000",
    "within {n} hours",
    "on the {n}th of each month",
    "for at least {n} weeks",
    "by two people when over {n} items",
    "before {n}:00 UTC",
    "in region eu-{n}",
    "with {n} percent sampling",
    "after {n} failed attempts",
)
_WORDS = (
    "atlas borealis cobalt dynamo ember falcon granite harbor iris juniper kestrel lumen "
    "meridian nimbus onyx pioneer quartz raven sierra tundra umber vortex willow xenon yonder "
    "zephyr amber basalt cedar delta"
).split()


def synthetic_memories(count: int, *, seed: int = 7, identifiers: int = 50) -> list[dict]:
    """``count`` memories spread over ``identifiers`` organisations, reproducible by ``seed``."""
    rng = random.Random(seed)
    memories = []
    for i in range(count):
        detail = rng.choice(_DETAILS).format(n=rng.randint(2, 99))
        extra = " ".join(rng.sample(_WORDS, 3))
        fact = f"{rng.choice(_SUBJECTS).capitalize()} {rng.choice(_VERBS)} {detail} ({extra})."
        memories.append(
            {
                "memory_id": f"mem-{i:07d}",
                "identifier": f"org-{rng.randrange(identifiers):03d}",
                "fact": fact,
                "importance": round(rng.random(), 3),
                "tags": [rng.choice(_WORDS)],
                "created_at": "2026-01-01T00:00:00Z",
            }
        )
    return memories


def synthetic_queries(count: int, *, seed: int = 11) -> list[str]:
    """``count`` natural-language questions over the synthetic vocabulary."""
    rng = random.Random(seed)
    questions = []
    for _ in range(count):
        subject, verb, word = rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_WORDS)
        questions.append(f"When do {subject} {verb.split()[-1]} for {word}?")
    return questions


# The heavy-overlap workload: a Zipf-distributed vocabulary (exponent 1.1 over 5,000 invented
# words), 12 words a fact, so that the few most common words are in most facts and a query of
# two to four words matches about 60 % of the store lexically (measured: mean 0.61, median 0.69
# on 50 queries), as stores of real notes do; synthetic_queries match about 23 %.
_SYLLABLES = "ka ri to mo ne su la vi de po ga shi ru fe no ta mi ko be ra".split()
_HEAVY_VOCABULARY = 5_000
_HEAVY_EXPONENT = 1.1
_HEAVY_FACT_WORDS = 12


def _heavy_vocabulary() -> tuple[list[str], list[float]]:
    """The invented words, most common first, and their cumulative Zipf weights."""
    rng = random.Random(3)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < _HEAVY_VOCABULARY:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    weights = [1.0 / (rank + 1) ** _HEAVY_EXPONENT for rank in range(_HEAVY_VOCABULARY)]
    return words, list(itertools.accumulate(weights))


def heavy_memories(count: int, *, seed: int = 5, identifiers: int = 50) -> list[dict]:
    """``count`` memories whose words follow the Zipf vocabulary (reproducible by ``seed``)."""
    words, cumulative = _heavy_vocabulary()
    rng = random.Random(seed)
    memories = []
    for i in range(count):
        text = " ".join(rng.choices(words, cum_weights=cumulative, k=_HEAVY_FACT_WORDS))
        memories.append(
            {
                "memory_id": f"mem-{i:07d}",
                "identifier": f"org-{rng.randrange(identifiers):03d}",
                "fact": text.capitalize() + ".",
                "importance": round(rng.random(), 3),
                "tags": [],
                "created_at": "2026-01-01T00:00:00Z",
            }
        )
    return memories


def heavy_queries(*, keyword: int = 25, question: int = 25, seed: int = 9) -> list[str]:
    """``keyword`` queries of two or three Zipf words, then ``question`` questions of three or
    four ("What is the A of the B C?"), reproducible by ``seed``."""
    words, cumulative = _heavy_vocabulary()
    rng = random.Random(seed)
    queries = [
        " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(2, 3)))
        for _ in range(keyword)
    ]
    for _ in range(question):
        first, *rest = rng.choices(words, cum_weights=cumulative, k=rng.randint(3, 4))
        queries.append(f"What is the {first} of the {' '.join(rest)}?")
    return queries


def public_record(memory: dict) -> dict:
    """``memory`` as a line of the public HotMem 0.2.3's bulk load (``hotmem.swap.hydrate``)."""
    return {
        "id": memory["memory_id"],
        "identifier": memory["identifier"],
        "fact_text": memory["fact"],
        "importance": memory["importance"],
        "created_at": memory["created_at"],
        "source": "bench",
    }
