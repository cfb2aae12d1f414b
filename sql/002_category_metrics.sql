-- name: category_metrics
-- version: 3
-- inputs: metrics(metric, metric_order, aggregation, has_ratio) (the metric registry, hotmem_eval.metric_registry.metrics_frame()), per_query_metrics (the output of 001_per_query_metrics, as a table or view of that name; outputs at several k may be stacked)
-- output: one row per (k, category, metric) for 'overall' and every non-null category present at that k: k, category, metric, value, numerator, denominator, query_count; k ascending, then 'overall' first, then categories in byte order, metrics in registry order
--
-- The SQL twin of hotmem_eval.metrics.aggregate_metrics. value is the mean over applicable
-- queries (macro), except for the pooled slot rates: sum(numerator) / sum(denominator).
-- numerator/denominator are pooled sums for the metrics that carry a ratio, else null.
-- A category with no applicable query has value, numerator and denominator null, count 0.
-- Version 3: reads and emits the column k, and aggregates each k on its own ('overall' rows
-- alone, with a null k, when per_query_metrics has no rows); a null k is an error. A query with
-- a null category (it has none) counts in 'overall' only (version 2 had no null category). On
-- one k with every category non-null, rows and values are those of version 2, plus k.
-- Version 2: the metric registry (order, aggregation, has_ratio) is the input metrics, no
-- longer a VALUES table restating it; a per-query metric not in metrics, or an aggregation
-- other than macro or pooled, is an error. Rows and values are those of version 1. Exports
-- record the version in manifest.json.
WITH

-- Each per-query row, its metric checked against the registry, its k non-null.
per_query AS (
    SELECT
        CASE
            WHEN k IS NULL THEN error('category_metrics: expected per_query_metrics k non-null, found a null k')
            ELSE k
        END AS k,
        category,
        CASE
            WHEN metric IN (SELECT metric FROM metrics) THEN metric
            ELSE error(
                'category_metrics: expected per_query_metrics of the input metrics, found metric='
                || coalesce('''' || metric || '''', 'NULL')
            )
        END AS metric,
        value,
        numerator,
        denominator,
        applicable
    FROM per_query_metrics
),

-- Every k present; with no rows at all, one null k, for the 'overall' rows.
cutoffs AS (
    SELECT DISTINCT k FROM per_query
    UNION ALL
    SELECT CAST(NULL AS INTEGER) AS k WHERE NOT EXISTS (SELECT 1 FROM per_query)
),

categories AS (
    SELECT k, 'overall' AS category, 0 AS category_order
    FROM cutoffs
    UNION ALL
    SELECT DISTINCT k, category, 1 AS category_order
    FROM per_query
    WHERE category IS NOT NULL
),

-- Per (k, category, metric), and per (k, metric) over every category (the overall row). The
-- group of a null category (queries with none) matches no row of categories: overall only.
sums AS (
    SELECT
        k,
        CASE WHEN grouping(category) = 1 THEN 'overall' ELSE category END AS category,
        metric,
        count(*) FILTER (WHERE applicable) AS query_count,
        sum(numerator) FILTER (WHERE applicable) AS numerator,
        sum(denominator) FILTER (WHERE applicable) AS denominator,
        sum(value) FILTER (WHERE applicable) AS value_sum
    FROM per_query
    GROUP BY GROUPING SETS ((k, category, metric), (k, metric))
),

grid AS (
    SELECT
        categories.k,
        categories.category,
        categories.category_order,
        metrics.metric,
        metrics.metric_order,
        CASE metrics.aggregation
            WHEN 'pooled' THEN true
            WHEN 'macro' THEN false
            ELSE error(
                'category_metrics: expected aggregation macro or pooled, found aggregation='
                || coalesce('''' || metrics.aggregation || '''', 'NULL')
                || ' for metric=''' || metrics.metric || ''''
            )
        END AS pooled,
        metrics.has_ratio,
        coalesce(sums.query_count, 0) AS query_count,
        sums.numerator,
        sums.denominator,
        sums.value_sum
    FROM categories
    CROSS JOIN metrics
    LEFT JOIN sums
        ON sums.k = categories.k
        AND sums.category = categories.category
        AND sums.metric = metrics.metric
)

SELECT
    CAST(k AS INTEGER) AS k,
    category,
    metric,
    CAST(
        CASE
            WHEN pooled THEN CASE WHEN query_count > 0 AND denominator > 0 THEN numerator / denominator END
            ELSE CASE WHEN query_count > 0 THEN value_sum / query_count END
        END AS DOUBLE
    ) AS value,
    CAST(CASE WHEN has_ratio AND query_count > 0 THEN numerator END AS BIGINT) AS numerator,
    CAST(CASE WHEN has_ratio AND query_count > 0 THEN denominator END AS BIGINT) AS denominator,
    CAST(query_count AS BIGINT) AS query_count
FROM grid
ORDER BY k, category_order, category, metric_order
