-- name: category_metrics
-- version: 1
-- inputs: per_query_metrics (the output of 001_per_query_metrics, as a table or view of that name)
-- output: one row per (category, metric) for 'overall' and every category present: category, metric, value, numerator, denominator, query_count; 'overall' first, then categories in byte order, metrics in registry order
--
-- The SQL twin of hotmem_eval.metrics.aggregate_metrics. value is the mean over applicable
-- queries (macro), except for the pooled slot rates: sum(numerator) / sum(denominator).
-- numerator/denominator are pooled sums for the metrics that carry a ratio, else null.
-- A category with no applicable query has value, numerator and denominator null, count 0.
WITH

-- The metric registry: name, order, aggregation, whether it carries an integer ratio.
metrics (metric, metric_order, pooled, has_ratio) AS (
    VALUES
        ('recall_at_1', 1, false, true),
        ('recall_at_k', 2, false, true),
        ('success_at_1', 3, false, true),
        ('success_at_k', 4, false, true),
        ('mrr_at_k', 5, false, false),
        ('ndcg_at_k', 6, false, false),
        ('negative_fpr_at_k', 7, false, true),
        ('negative_returned_at_k', 8, false, true),
        ('duplicate_slot_rate_at_k', 9, true, true),
        ('scope_leak_rate_at_k', 10, true, true)
),

categories AS (
    SELECT 'overall' AS category, 0 AS category_order
    UNION ALL
    SELECT DISTINCT category, 1 AS category_order
    FROM per_query_metrics
),

-- Per (category, metric), and per metric over every category (the overall row).
sums AS (
    SELECT
        CASE WHEN grouping(category) = 1 THEN 'overall' ELSE category END AS category,
        metric,
        count(*) FILTER (WHERE applicable) AS query_count,
        sum(numerator) FILTER (WHERE applicable) AS numerator,
        sum(denominator) FILTER (WHERE applicable) AS denominator,
        sum(value) FILTER (WHERE applicable) AS value_sum
    FROM per_query_metrics
    GROUP BY GROUPING SETS ((category, metric), (metric))
),

grid AS (
    SELECT
        categories.category,
        categories.category_order,
        metrics.metric,
        metrics.metric_order,
        metrics.pooled,
        metrics.has_ratio,
        coalesce(sums.query_count, 0) AS query_count,
        sums.numerator,
        sums.denominator,
        sums.value_sum
    FROM categories
    CROSS JOIN metrics
    LEFT JOIN sums
        ON sums.category = categories.category AND sums.metric = metrics.metric
)

SELECT
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
ORDER BY category_order, category, metric_order
