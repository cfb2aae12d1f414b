"""Deterministic synthetic memories and queries for the speed benchmarks (no I/O)."""

from __future__ import annotations

import random

__all__ = ["synthetic_memories", "synthetic_queries"]

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
