"""The near-duplicate group statistics of group recall and alpha-nDCG, for ``metric_statistics``.

A memory in no group is a group of its own, named by its ``memory_id``.

On the ranking side ``metric_statistics.per_slots`` lists, per query, the group and rank of each
relevant top-k slot; ``slot_groups`` explodes those lists, sorts them by (query_id, group, rank)
and counts each slot's earlier relevant slots of its group from its position in that run.

On the ideal side, a query's relevant groups are its relevant memories, minus the relevant
memories of real groups (listed in ``groups``), plus those groups: only the real groups are
joined and counted (``grouped_members``), a small share of the rows, and the ideal alpha-DCG
follows from how many groups have more than 1, 2, ... relevant memories (``ideal_groups``).
Grouping and sorting every relevant memory instead made the per-query metrics up to twice as
slow at 100k queries.

``index_in_run`` and ``count_in_run`` number a frame's rows within runs of equal keys (a slot
among its group's, an ideal position among its query's); ``metric_statistics`` uses them too.
"""

from __future__ import annotations

import functools
import math
from typing import Final

import polars as pl

from hotmem_eval.metric_registry import ALPHA

__all__ = [
    "GROUPED_SLOT_COLUMNS",
    "count_in_run",
    "discounts",
    "grouped_members",
    "ideal_groups",
    "index_in_run",
    "slot_groups",
]

_QID = "query_id"
_MID = "memory_id"
#: The list columns ``per_slots`` adds for ``slot_groups``: the group and the rank of each
#: relevant top-k slot.
GROUPED_SLOT_COLUMNS: Final = ("relevant_slot_groups", "relevant_slot_ranks")


def grouped_members(
    qrels: pl.LazyFrame, groups: pl.LazyFrame, *, relevant_grade: int
) -> pl.LazyFrame:
    """Per (query, real group holding a relevant memory): its relevant memories, ``members``.

    A relevant memory (graded ``relevant_grade`` or more) is in a real group when it has a
    ``groups`` row, or when it has none and its id names a group of its query (it is the group
    named by its id, so it shares it); any other relevant memory is alone in its group.
    """
    relevant = qrels.filter(pl.col("grade") >= relevant_grade)
    with_row = relevant.join(groups, on=[_QID, _MID], how="inner").select(_QID, "group_id")
    namesakes = (
        relevant.join(
            groups.select(_QID, pl.col("group_id").alias(_MID)), on=[_QID, _MID], how="semi"
        )
        .join(groups, on=[_QID, _MID], how="anti")
        .select(_QID, pl.col(_MID).alias("group_id"))
    )
    return pl.concat([with_row, namesakes]).group_by(_QID, "group_id").agg(members=pl.len())


def slot_groups(slot_counts: pl.LazyFrame) -> pl.LazyFrame:
    """Per query with a relevant top-k slot: ``relevant_groups_at_k`` and ``alpha_dcg``.

    ``slot_counts`` is ``per_slots``, whose ``GROUPED_SLOT_COLUMNS`` list the group and rank of
    each relevant slot.
    """
    group, rank = GROUPED_SLOT_COLUMNS
    earlier = pl.col("earlier_relevant")
    return (
        slot_counts.select(_QID, group, rank)
        .filter(pl.col(rank).list.len() > 0)
        .explode(group, rank)
        # A group's relevant slots are neighbours, in rank order; its first finds the group.
        # The sort fixes the order the gains are summed in: the same bits in any input order.
        .sort(_QID, group, rank)
        .with_columns(earlier_relevant=index_in_run(_QID, group))
        .group_by(_QID)
        .agg(
            relevant_groups_at_k=earlier.filter(earlier == 0).len(),
            alpha_dcg=(pl.lit(1.0 - ALPHA).pow(earlier) / (pl.col(rank) + 1).log(2)).sum(),
        )
    )


def ideal_groups(members: pl.DataFrame, depth: int) -> tuple[pl.LazyFrame, pl.Expr, pl.Expr]:
    """The ideal side: per query with a real group, its counts, and the two statistics on them.

    Returns ``(counts, relevant_groups, ideal_alpha_dcg)``: ``counts`` has per query
    ``grouped_memories`` and ``grouped_groups`` (the relevant memories of its real groups, and
    those groups) and ``more_than_{c}`` (its groups with more than c relevant memories); the two
    expressions compute the statistics once ``counts`` is left-joined to the per-query counts
    (``ideal_alpha_dcg`` reads ``relevant_groups``, the first's column).

    The greedy ideal ranking (each rank takes the largest gain left) takes one relevant memory
    of every relevant group (gain 1), then a second of every group with two (gain 1 - ALPHA),
    and so on: level c of a group with n relevant memories (c < n) gains (1 - ALPHA)^c, and
    the levels fill the ranks in increasing order. So with m_c groups having more than c
    relevant memories (m_0 = relevant_groups) and P_c = m_0 + ... + m_(c-1),
    ideal = sum over c of (1 - ALPHA)^c * (D(min(P_c + m_c, depth)) - D(min(P_c, depth))).
    Which memory of a level takes which rank (ties by memory_id) does not change the sum. Only
    levels below ``depth`` (where the ideal ranking is cut: k, or less when no query can have k
    graded memories) and below the largest group's size can gain, so ``members`` (materialised
    ``grouped_members``) bounds the columns.
    """
    largest = members["members"].max()
    levels = range(1, min(depth, int(largest) if isinstance(largest, int) else 0))
    member_count = pl.col("members")
    counts = (
        members.lazy()
        .group_by(_QID)
        .agg(
            grouped_memories=member_count.sum(),
            grouped_groups=pl.len(),
            **{f"more_than_{c}": member_count.filter(member_count > c).len() for c in levels},
        )
    )
    relevant_groups = (
        pl.col("relevant_total")
        - pl.col("grouped_memories").fill_null(0)
        + pl.col("grouped_groups").fill_null(0)
    )
    table = pl.lit(discounts(depth))

    def reached(position: pl.Expr) -> pl.Expr:
        return table.gather(position.clip(upper_bound=depth))

    placed = pl.col("relevant_groups")
    ideal = reached(placed)
    for c in levels:
        filled = pl.col(f"more_than_{c}").fill_null(0)
        ideal = ideal + (1.0 - ALPHA) ** c * (reached(placed + filled) - reached(placed))
        placed = placed + filled
    return counts, relevant_groups, ideal


@functools.lru_cache(maxsize=16)
def discounts(depth: int) -> pl.Series:
    """D(n) for n in 0 .. depth: the sum over positions 1 .. n of 1 / log2(position + 1)."""
    table = [0.0]
    for position in range(1, depth + 1):
        table.append(table[-1] + 1.0 / math.log2(position + 1))
    return pl.Series("discount", table, pl.Float64)


def _run_starts(*keys: str) -> pl.Expr:
    """Per row of a frame sorted by ``keys``: whether it is the first of its run of equal keys."""
    return functools.reduce(
        lambda left, right: left | right,
        (pl.col(key).ne_missing(pl.col(key).shift(1)) for key in keys),
    )


def index_in_run(*keys: str) -> pl.Expr:
    """Per row of a frame sorted by ``keys``: its 0-based index among the rows of equal keys."""
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    return row - pl.when(_run_starts(*keys)).then(row).forward_fill()


def count_in_run(condition: pl.Expr, *keys: str) -> pl.Expr:
    """Per row of a frame sorted by ``keys``: the rows of its run up to it where ``condition``.

    One running sum over the whole frame, less its value before the run began: no window per
    run (a hundred thousand small windows are slow). ``condition`` must not be null.
    """
    hits = condition.cast(pl.Int64)
    running = hits.cum_sum()
    return running - pl.when(_run_starts(*keys)).then(running - hits).forward_fill()
