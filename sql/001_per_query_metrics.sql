-- name: per_query_metrics
-- version: 5
-- inputs: metrics(metric, metric_order, applies_to) (the metric registry, hotmem_eval.metric_registry.metrics_frame()), results(query_id, rank, memory_id, identifier), qrels(query_id, memory_id, grade), queries(query_id, category, identifier), groups(query_id, memory_id, group_id); variables k and relevant_grade, set first with SET VARIABLE k = 5; SET VARIABLE relevant_grade = 2
-- output: one row per (query_id, metric): k, query_id, category, metric, value, numerator, denominator, applicable; ordered by metric (registry order), then query_id
--
-- The SQL twin of hotmem_eval.metrics.per_query_metrics; docs/metrics.md has every formula.
-- Version 5: a leading column k (INTEGER, the variable k); relevance is grade >= the variable
-- relevant_grade (version 4: grade >= 2), grades may be any non-negative integer; a query's
-- category may be null (it has none, and is not a near-duplicate query); adds precision_at_k
-- and ap_at_k. With relevant_grade = 2 the other metrics' rows and values are those of
-- version 4.
-- Version 4: adds group_recall_at_k and alpha_ndcg_at_k (alpha = 0.5, metric_registry.ALPHA),
-- which read the group of every relevant memory, returned or not; a memory in no group is its
-- own group. The other metrics' rows and values are those of version 3.
-- Version 3: reads the metric registry as the input metrics; each metric's order and the queries
-- it applies to come from there, and a block here holds only a metric's name and formula. A
-- metric of metrics with no formula here, or a formula for a metric not in metrics, is an error.
-- Rows and values are those of version 2. Exports record the version in manifest.json.
-- Version 2: rows ordered by metric, then query_id (version 1: by query_id, then metric).
-- Relevant means grade >= relevant_grade, graded means grade >= 1. Only slots with rank <= k count.
-- Inputs are assumed valid (the Python engine checks them): keys unique, one slot per rank,
-- a memory at most once in a query's top k, every query_id present in queries.
WITH

params AS (
    SELECT
        CASE
            WHEN getvariable('k') IS NULL THEN error('per_query_metrics needs the top-k: SET VARIABLE k = 5')
            ELSE CAST(getvariable('k') AS BIGINT)
        END AS k,
        CASE
            WHEN getvariable('relevant_grade') IS NULL THEN error(
                'per_query_metrics needs the relevant grade: SET VARIABLE relevant_grade = 2'
            )
            ELSE CAST(getvariable('relevant_grade') AS BIGINT)
        END AS relevant_grade
),

graded AS (
    SELECT query_id, memory_id, CAST(grade AS INTEGER) AS grade
    FROM qrels
    WHERE grade >= 1
),

qrel_counts AS (
    SELECT
        graded.query_id,
        count(*) AS graded_total,
        count(*) FILTER (WHERE graded.grade >= params.relevant_grade) AS relevant_total
    FROM graded
    CROSS JOIN params
    GROUP BY graded.query_id
),

-- The ideal ranking: every graded memory, highest grade first.
ideal_positions AS (
    SELECT
        query_id,
        grade,
        row_number() OVER (PARTITION BY query_id ORDER BY grade DESC) AS position
    FROM graded
),

ideal AS (
    SELECT ideal_positions.query_id, sum(grade / log2(position + 1)) AS ideal_dcg
    FROM ideal_positions
    CROSS JOIN params
    WHERE position <= params.k
    GROUP BY ideal_positions.query_id
),

-- Each relevant memory with its near-duplicate group (its own id when it is in none).
relevant_members AS (
    SELECT
        graded.query_id,
        graded.memory_id,
        coalesce(groups.group_id, graded.memory_id) AS group_id
    FROM graded
    CROSS JOIN params
    LEFT JOIN groups
        ON groups.query_id = graded.query_id AND groups.memory_id = graded.memory_id
    WHERE graded.grade >= params.relevant_grade
),

group_sizes AS (
    SELECT query_id, group_id, count(*) AS members
    FROM relevant_members
    GROUP BY query_id, group_id
),

-- The greedy ideal ranking for alpha-nDCG: one relevant memory of every relevant group (level 0,
-- gain 1), then a second of every group with two (level 1, gain 0.5), and so on; the levels
-- fill the positions in increasing order. Which memory of a level comes first (ties by
-- memory_id) does not change the sum, so a level's rows are numbered in any order.
ideal_levels AS (
    SELECT query_id, unnest(range(members)) AS level
    FROM group_sizes
),

ideal_level_positions AS (
    SELECT
        query_id,
        level,
        row_number() OVER (PARTITION BY query_id ORDER BY level) AS position
    FROM ideal_levels
),

ideal_alpha AS (
    SELECT
        ideal_level_positions.query_id,
        count(*) FILTER (WHERE level = 0) AS relevant_groups,
        sum(power(0.5, level) / log2(position + 1)) FILTER (WHERE position <= params.k)
            AS ideal_alpha_dcg
    FROM ideal_level_positions
    CROSS JOIN params
    GROUP BY ideal_level_positions.query_id
),

top_slots AS (
    SELECT
        results.query_id,
        results.rank,
        results.memory_id,
        results.identifier,
        coalesce(graded.grade, 0) AS grade,
        coalesce(graded.grade, 0) >= params.relevant_grade AS relevant,
        coalesce(groups.group_id, results.memory_id) AS group_id,
        queries.identifier AS scope
    FROM results
    CROSS JOIN params
    LEFT JOIN graded
        ON graded.query_id = results.query_id AND graded.memory_id = results.memory_id
    LEFT JOIN groups
        ON groups.query_id = results.query_id AND groups.memory_id = results.memory_id
    LEFT JOIN queries
        ON queries.query_id = results.query_id
    WHERE results.rank <= params.k
),

slot_counts AS (
    SELECT
        query_id,
        count(*) AS filled_slots,
        count(*) FILTER (WHERE relevant AND rank = 1) AS relevant_at_1,
        count(*) FILTER (WHERE relevant) AS relevant_at_k,
        min(rank) FILTER (WHERE relevant) AS first_relevant_rank,
        sum(grade / log2(rank + 1)) AS dcg,
        -- Each near-duplicate group's first slot is not a duplicate; every later one is.
        count(*) - count(DISTINCT group_id) AS duplicate_slots,
        count(*) FILTER (WHERE scope IS NOT NULL AND identifier IS DISTINCT FROM scope) AS leaked_slots
    FROM top_slots
    GROUP BY query_id
),

-- Each relevant top-k slot with the number of relevant slots of its group ranked above it,
-- and the number of relevant slots at or above its rank (for average precision).
relevant_slots AS (
    SELECT
        query_id,
        rank,
        group_id,
        row_number() OVER (PARTITION BY query_id, group_id ORDER BY rank) - 1 AS earlier_relevant,
        row_number() OVER (PARTITION BY query_id ORDER BY rank) AS relevant_so_far
    FROM top_slots
    WHERE relevant
),

relevant_slot_counts AS (
    SELECT
        query_id,
        count(DISTINCT group_id) AS relevant_groups_at_k,
        sum(power(0.5, earlier_relevant) / log2(rank + 1)) AS alpha_dcg,
        sum(relevant_so_far / rank) AS precision_sum
    FROM relevant_slots
    GROUP BY query_id
),

statistics AS (
    SELECT
        params.k,
        queries.query_id,
        queries.category,
        queries.identifier,
        coalesce(qrel_counts.graded_total, 0) AS graded_total,
        coalesce(qrel_counts.relevant_total, 0) AS relevant_total,
        coalesce(ideal.ideal_dcg, 0.0) AS ideal_dcg,
        coalesce(slot_counts.filled_slots, 0) AS filled_slots,
        coalesce(slot_counts.relevant_at_1, 0) AS relevant_at_1,
        coalesce(slot_counts.relevant_at_k, 0) AS relevant_at_k,
        slot_counts.first_relevant_rank,
        coalesce(slot_counts.dcg, 0.0) AS dcg,
        coalesce(slot_counts.duplicate_slots, 0) AS duplicate_slots,
        coalesce(slot_counts.leaked_slots, 0) AS leaked_slots,
        coalesce(ideal_alpha.relevant_groups, 0) AS relevant_groups,
        coalesce(ideal_alpha.ideal_alpha_dcg, 0.0) AS ideal_alpha_dcg,
        coalesce(relevant_slot_counts.relevant_groups_at_k, 0) AS relevant_groups_at_k,
        coalesce(relevant_slot_counts.alpha_dcg, 0.0) AS alpha_dcg,
        coalesce(relevant_slot_counts.precision_sum, 0.0) AS precision_sum
    FROM queries
    CROSS JOIN params
    LEFT JOIN qrel_counts ON qrel_counts.query_id = queries.query_id
    LEFT JOIN ideal ON ideal.query_id = queries.query_id
    LEFT JOIN slot_counts ON slot_counts.query_id = queries.query_id
    LEFT JOIN ideal_alpha ON ideal_alpha.query_id = queries.query_id
    LEFT JOIN relevant_slot_counts ON relevant_slot_counts.query_id = queries.query_id
),

-- One block per metric: its name and its formula over the statistics.
formulas AS (
    SELECT
        query_id, 'recall_at_1' AS metric,
        relevant_at_1 / nullif(relevant_total, 0) AS value,
        relevant_at_1 AS numerator, relevant_total AS denominator
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'recall_at_k',
        relevant_at_k / nullif(relevant_total, 0),
        relevant_at_k, relevant_total
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'success_at_1',
        CASE WHEN relevant_at_1 > 0 THEN 1.0 ELSE 0.0 END,
        CASE WHEN relevant_at_1 > 0 THEN 1 ELSE 0 END, 1
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'success_at_k',
        CASE WHEN relevant_at_k > 0 THEN 1.0 ELSE 0.0 END,
        CASE WHEN relevant_at_k > 0 THEN 1 ELSE 0 END, 1
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'mrr_at_k',
        coalesce(1 / first_relevant_rank, 0.0),
        NULL, NULL
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'ndcg_at_k',
        CASE WHEN ideal_dcg > 0 THEN dcg / ideal_dcg ELSE 0.0 END,
        NULL, NULL
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'precision_at_k',
        relevant_at_k / k,
        relevant_at_k, k
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'ap_at_k',
        CASE WHEN relevant_total > 0 THEN precision_sum / relevant_total ELSE 0.0 END,
        NULL, NULL
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'group_recall_at_k',
        relevant_groups_at_k / nullif(relevant_groups, 0),
        relevant_groups_at_k, relevant_groups
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'alpha_ndcg_at_k',
        CASE WHEN ideal_alpha_dcg > 0 THEN alpha_dcg / ideal_alpha_dcg ELSE 0.0 END,
        NULL, NULL
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'negative_fpr_at_k',
        CASE WHEN filled_slots > 0 THEN 1.0 ELSE 0.0 END,
        CASE WHEN filled_slots > 0 THEN 1 ELSE 0 END, 1
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'negative_returned_at_k',
        filled_slots,
        filled_slots, 1
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'duplicate_slot_rate_at_k',
        CASE WHEN filled_slots > 0 THEN duplicate_slots / filled_slots END,
        duplicate_slots, filled_slots
    FROM statistics
    UNION ALL
    SELECT
        query_id, 'scope_leak_rate_at_k',
        CASE WHEN filled_slots > 0 THEN leaked_slots / filled_slots END,
        leaked_slots, filled_slots
    FROM statistics
),

-- Each formula row with its registry entry. A full join on the metric alone, so that a name on
-- one side only stops the query instead of dropping rows.
metric_rows AS (
    SELECT
        formulas.query_id,
        statistics.category,
        formulas.metric,
        metrics.metric_order,
        CASE
            -- With no queries no formula row exists: the registry's rows give no row.
            WHEN formulas.metric IS NULL THEN CASE
                WHEN EXISTS (SELECT 1 FROM queries) THEN error(
                    'per_query_metrics: expected a formula for every metric of the input metrics, '
                    || 'found none for metric=''' || metrics.metric || ''''
                )
            END
            WHEN metrics.metric IS NULL THEN error(
                'per_query_metrics: expected every metric computed here in the input metrics, '
                || 'found metric=''' || formulas.metric || ''' missing from it'
            )
            WHEN metrics.applies_to = 'positive' THEN statistics.relevant_total > 0
            WHEN metrics.applies_to = 'negative' THEN statistics.graded_total = 0
            -- A query with no category (null) is not a near-duplicate query.
            WHEN metrics.applies_to = 'near_duplicate' THEN coalesce(
                statistics.category = 'near_duplicate_diversity', false
            )
            WHEN metrics.applies_to = 'scoped' THEN statistics.identifier IS NOT NULL
            ELSE error(
                'per_query_metrics: expected applies_to positive, negative, near_duplicate or scoped, '
                || 'found applies_to=' || coalesce('''' || metrics.applies_to || '''', 'NULL')
                || ' for metric=''' || metrics.metric || ''''
            )
        END AS applicable,
        formulas.value,
        formulas.numerator,
        formulas.denominator
    FROM formulas
    FULL JOIN metrics ON metrics.metric = formulas.metric
    LEFT JOIN statistics ON statistics.query_id = formulas.query_id
)

SELECT
    CAST(params.k AS INTEGER) AS k,
    query_id,
    category,
    metric,
    CAST(CASE WHEN applicable THEN value END AS DOUBLE) AS value,
    CAST(CASE WHEN applicable THEN numerator END AS BIGINT) AS numerator,
    CAST(CASE WHEN applicable THEN denominator END AS BIGINT) AS denominator,
    applicable
FROM metric_rows
CROSS JOIN params
-- Only a registry row unmatched for want of any query has a null applicable.
WHERE applicable IS NOT NULL
ORDER BY metric_order, query_id
