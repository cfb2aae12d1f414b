"""Per-query statistics and input checks: the lazy plans under ``hotmem_eval.metrics``.

``per_qrels`` and ``per_slots`` reduce the inputs to one row per graded query and per query that
returned something; ``statistics`` joins those, and the group statistics of
``hotmem_eval.group_statistics``, to the queries, one row per query holding the counts and gains
of ``metric_registry.STATISTICS``; ``InputRules`` checks the inputs' key and value rules on the
same per-query counts, so no input is scanned twice.

The per-query aggregates are computed by one group-by over the top k, sorted by
(query_id, rank); nothing runs group by group inside ``group_by().agg()`` (a window, a sort,
``is_first_distinct``), which is slow with a hundred thousand groups. So a duplicate slot is
counted as "slots minus distinct groups", a repeated rank as equal sorted neighbours, the
relevant slots at or above a rank (average precision) as one running count over the sorted
slots, and an ideal position (IDCG) as a row's index among its query's sorted qrels.

Relevant means graded ``relevant_grade`` or more, a keyword of each plan that needs it; grades
are any integers >= 0 (``qrels.grade`` is cast to Int32).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import polars as pl
import pyarrow as pa

from hotmem_eval.errors import EvalError
from hotmem_eval.group_statistics import (
    GROUPED_SLOT_COLUMNS,
    count_in_run,
    ideal_groups,
    index_in_run,
    slot_groups,
)
from hotmem_eval.metric_registry import OVERALL

__all__ = [
    "GROUPS_COLUMNS",
    "QRELS_COLUMNS",
    "QUERIES_COLUMNS",
    "RESULTS_COLUMNS",
    "FrameLike",
    "InputRules",
    "canonical",
    "canonical_lazy",
    "per_qrels",
    "per_slots",
    "statistics",
]

FrameLike = pl.DataFrame | pl.LazyFrame | pa.Table

RESULTS_COLUMNS: Final[dict[str, pl.DataType]] = {
    "query_id": pl.String(),
    "rank": pl.Int32(),
    "memory_id": pl.String(),
    "identifier": pl.String(),
}
QRELS_COLUMNS: Final[dict[str, pl.DataType]] = {
    "query_id": pl.String(),
    "memory_id": pl.String(),
    "grade": pl.Int32(),
}
QUERIES_COLUMNS: Final[dict[str, pl.DataType]] = {
    "query_id": pl.String(),
    "category": pl.String(),
    "identifier": pl.String(),
}
GROUPS_COLUMNS: Final[dict[str, pl.DataType]] = {
    "query_id": pl.String(),
    "memory_id": pl.String(),
    "group_id": pl.String(),
}

_QID = "query_id"
_MID = "memory_id"


def canonical(data: FrameLike, columns: Mapping[str, pl.DataType], name: str) -> pl.DataFrame:
    """The canonical ``columns`` of ``data`` (polars DataFrame or LazyFrame, or Arrow), cast.

    Raises:
        EvalError: ``data`` is none of those, misses a column, or a column does not cast.
    """
    if isinstance(data, pl.LazyFrame):
        data = canonical_lazy(data, columns, name).collect(engine="in-memory")
    if isinstance(data, pa.Table):
        data = pl.DataFrame(data)
    if not isinstance(data, pl.DataFrame):
        raise EvalError(
            f"expected {name} as a polars DataFrame or LazyFrame or a pyarrow Table, "
            f"found {type(data).__name__}"
        )
    _check_columns(data.schema, columns, name)
    casts = {c: dtype for c, dtype in columns.items() if data.schema[c] != dtype}
    if casts:
        # Cast eagerly, so a column that does not cast is reported here and not mid-plan.
        try:
            data = data.with_columns(pl.col(c).cast(dtype) for c, dtype in casts.items())
        except pl.exceptions.PolarsError as error:
            expected = {c: str(dtype) for c, dtype in columns.items()}
            found = {c: str(data.schema[c]) for c in columns}
            raise EvalError(
                f"expected {name} columns castable to {expected}, found {found}"
            ) from error
    return data.select(list(columns))


def canonical_lazy(data: FrameLike, columns: Mapping[str, pl.DataType], name: str) -> pl.LazyFrame:
    """Like ``canonical``, but a LazyFrame stays lazy (a cast that fails does so at collect).

    A lazy ``results`` lets the ``rank <= k`` filter reach a Parquet scan, so rows beyond k
    are never materialised.
    """
    if not isinstance(data, pl.LazyFrame):
        return canonical(data, columns, name).lazy()
    _check_columns(data.collect_schema(), columns, name)
    return data.select(pl.col(c).cast(dtype) for c, dtype in columns.items())


def _check_columns(
    schema: Mapping[str, pl.DataType], columns: Mapping[str, pl.DataType], name: str
) -> None:
    missing = [column for column in columns if column not in schema]
    if missing:
        raise EvalError(
            f"expected {name} to have columns {list(columns)}, found {list(schema)} "
            f"(missing {missing})"
        )


def per_qrels(qrels: pl.LazyFrame, *, relevant_grade: int, k: int) -> pl.LazyFrame:
    """Per graded query: qrel rows, distinct memories, graded/relevant counts, and IDCG@k."""
    grade = pl.col("grade")
    counts = qrels.group_by(_QID).agg(
        qrel_rows=pl.len(),
        qrel_memories=pl.col(_MID).n_unique(),
        negative_grades=_rows_where(grade < 0),
        graded_total=_rows_where(grade >= 1),
        relevant_total=_rows_where(grade >= relevant_grade),
    )
    return counts.join(_ideal_dcg(qrels, k), on=_QID, how="left")


def _ideal_dcg(qrels: pl.LazyFrame, k: int) -> pl.LazyFrame:
    """Per query with a graded memory: IDCG@k, its graded memories sorted by grade descending.

    IDCG@k = sum over ideal positions p <= k of grade_p / log2(p + 1). One sort of the graded
    qrels numbers the positions (equal grades are interchangeable, so ties need no order) and
    fixes the order the gains are summed in.
    """
    grade = pl.col("grade")
    position = pl.col("position")
    return (
        qrels.filter(grade >= 1)
        .select(_QID, grade)
        .sort(_QID, "grade", descending=[False, True])
        .with_columns(position=index_in_run(_QID) + 1)
        .filter(position <= k)
        .group_by(_QID)
        .agg(ideal_dcg=(grade / (position + 1).log(2)).sum())
    )


def _rows_where(condition: pl.Expr) -> pl.Expr:
    """The number of a group's rows where ``condition`` holds (null counts as false).

    Written as filter-then-length rather than ``condition.sum()``: with a hundred thousand
    groups polars 2.1 aggregates the sum of a computed expression about five times slower.
    """
    return condition.filter(condition).len()


def per_slots(
    results: pl.LazyFrame,
    qrels: pl.LazyFrame,
    queries: pl.LazyFrame,
    groups: pl.LazyFrame,
    k: int,
    *,
    relevant_grade: int,
) -> pl.LazyFrame:
    """Per query that returned something: counts and gains over its top-k slots."""
    rank = pl.col("rank")
    grade = pl.col("grade")
    # An unjudged slot has a null grade: not relevant.
    relevant = (grade >= relevant_grade).fill_null(value=False)
    group = pl.coalesce("group_id", _MID)
    slots = (
        results.filter(rank <= k)
        .join(qrels.filter(grade >= 1), on=[_QID, _MID], how="left")
        .join(groups, on=[_QID, _MID], how="left")
        .join(queries.select(_QID, scope=pl.col("identifier")), on=_QID, how="left")
        .sort(_QID, "rank")
        # After the sort a repeated (query_id, rank) is two equal neighbours. This shift also
        # makes the plan observe the order, so the optimiser keeps the sort and DCG below sums
        # its gains in rank order: the same bits whatever the input row order.
        .with_columns(
            repeated_rank=(pl.col(_QID) == pl.col(_QID).shift(1)) & (rank == rank.shift(1)),
            relevant_so_far=count_in_run(relevant, _QID),
        )
    )
    group_ids, group_ranks = GROUPED_SLOT_COLUMNS
    return slots.group_by(_QID).agg(
        filled_slots=pl.len(),
        ranks_below_1=_rows_where(rank < 1),
        repeated_ranks=_rows_where(pl.col("repeated_rank")),
        slot_memories=pl.col(_MID).n_unique(),
        relevant_at_1=_rows_where(relevant & (rank == 1)),
        relevant_at_k=_rows_where(relevant),
        first_relevant_rank=rank.filter(relevant).min(),
        # Precision at each relevant slot, summed in rank order (average precision's sum).
        precision_sum=(pl.col("relevant_so_far") / rank).filter(relevant).sum(),
        # Only graded slots gain (the qrels joined are graded >= 1); a group with none sums to 0.
        dcg=(grade / (rank + 1).log(2)).filter(grade.is_not_null()).sum(),
        # Each group's first slot is not a duplicate, every later one is.
        duplicate_slots=pl.len() - group.n_unique(),
        leaked_slots=_rows_where(
            pl.col("scope").is_not_null() & pl.col("identifier").ne_missing(pl.col("scope"))
        ),
        # The group and rank of each relevant slot, for group_statistics.slot_groups.
        **{group_ids: group.filter(relevant), group_ranks: rank.filter(relevant)},
    )


_COUNTS: Final = (
    "graded_total",
    "relevant_total",
    "filled_slots",
    "relevant_at_1",
    "relevant_at_k",
    "duplicate_slots",
    "relevant_groups_at_k",
    "leaked_slots",
)
_GAINS: Final = ("dcg", "ideal_dcg", "alpha_dcg", "precision_sum")


def statistics(
    queries: pl.LazyFrame,
    qrel_counts: pl.LazyFrame,
    slot_counts: pl.LazyFrame,
    members: pl.DataFrame,
    *,
    k: int,
    depth: int,
) -> pl.LazyFrame:
    """One row per query of ``queries``, sorted by ``query_id``, with every statistic.

    ``members`` is ``group_statistics.grouped_members``, materialised. ``depth`` is where the
    ideal alpha-DCG ranking is cut: k, or less when no query can have k graded memories (any
    bound on the graded count per query gives the same ideal).
    """
    group_counts, relevant_groups, ideal_alpha_dcg = ideal_groups(members, depth)
    return (
        queries.join(qrel_counts, on=_QID, how="left")
        .join(slot_counts.drop(GROUPED_SLOT_COLUMNS), on=_QID, how="left")
        .join(slot_groups(slot_counts), on=_QID, how="left")
        .join(group_counts, on=_QID, how="left")
        .with_columns(
            pl.col(_COUNTS).fill_null(0),
            pl.col(_GAINS).fill_null(0.0),
            k=pl.lit(k, pl.Int32),
        )
        .with_columns(relevant_groups=relevant_groups)
        .with_columns(ideal_alpha_dcg=ideal_alpha_dcg)
        .sort(_QID)
    )


@dataclass(frozen=True, slots=True)
class InputRules:
    """The inputs' key and value rules, checked on the materialised per-query counts.

    Rules are listed so that a broken key is reported before the counts it would distort. Each
    frame is scanned once, by one ``select`` of its rules' breach counts (``count_plans``); the
    smallest query_id breaking a rule is looked up only once a rule is known to be broken.
    """

    rules: tuple[tuple[pl.DataFrame, tuple[tuple[str, pl.Expr], ...]], ...]

    @classmethod
    def of(
        cls,
        queries: pl.DataFrame,
        groups: pl.DataFrame,
        qrel_counts: pl.DataFrame,
        slot_counts: pl.DataFrame,
    ) -> InputRules:
        """The rules over canonical ``queries`` and ``groups`` and the two per-query counts."""
        category = pl.col("category")
        unknown = ~pl.col(_QID).is_in(queries[_QID].implode())
        return cls(
            (
                (
                    queries,
                    (
                        ("queries: query_id unique", pl.col(_QID).is_duplicated()),
                        (f"queries: no category named {OVERALL!r}", category == OVERALL),
                    ),
                ),
                (
                    qrel_counts,
                    (
                        ("qrels: grade >= 0", pl.col("negative_grades") > 0),
                        (
                            "qrels: (query_id, memory_id) unique",
                            pl.col("qrel_memories") != pl.col("qrel_rows"),
                        ),
                        ("qrels: query_id present in queries", unknown),
                    ),
                ),
                (
                    groups,
                    (
                        (
                            "groups: (query_id, memory_id) unique",
                            pl.struct(_QID, _MID).is_duplicated(),
                        ),
                    ),
                ),
                (
                    slot_counts,
                    (
                        ("results: rank >= 1", pl.col("ranks_below_1") > 0),
                        (
                            "results: (query_id, rank) unique in the top k",
                            pl.col("repeated_ranks") > 0,
                        ),
                        (
                            "results: a memory at most once in a query's top k",
                            pl.col("slot_memories") != pl.col("filled_slots"),
                        ),
                        ("results: query_id present in queries", unknown),
                    ),
                ),
            )
        )

    def count_plans(self) -> list[pl.LazyFrame]:
        """Per frame, one row: the number of rows breaking each of its rules, in rule order."""
        return [
            frame.lazy().select(broken.sum().alias(str(i)) for i, (_, broken) in enumerate(rules))
            for frame, rules in self.rules
        ]

    def raise_on_breach(self, counts: list[pl.DataFrame]) -> None:
        """Raise EvalError for the first broken rule, given ``count_plans`` collected."""
        for (frame, rules), found in zip(self.rules, counts, strict=True):
            for (rule, broken), count in zip(rules, found.row(0), strict=True):
                if count:
                    example = frame.filter(broken)[_QID].min()
                    raise EvalError(
                        f"expected {rule}, found {count} breach(es), e.g. query_id={example!r}"
                    )
