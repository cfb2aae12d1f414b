-- name: paired_deltas
-- version: 1
-- inputs: metrics(metric, metric_order) (the metric registry, hotmem_eval.metric_registry.metrics_frame()), per_query_metrics(profile, query_id, category, metric, value, applicable) (the output of 001_per_query_metrics for two or more profiles, stacked, with a profile column); variables baseline and candidate (profile names), set first with SET VARIABLE baseline = 'default'; SET VARIABLE candidate = 'rrf'
-- output: one row per (query_id, metric) paired between the two profiles: baseline, candidate, query_id, category, metric, baseline_value, candidate_value, delta (= candidate_value - baseline_value); ordered by metric (registry order), then query_id
--
-- The SQL twin of hotmem_eval.comparison.paired_deltas, for ad-hoc use over exported Parquet.
-- A (query_id, metric) is paired where the metric applies and both profiles' values are
-- non-null (a slot rate is null where a query filled no slot). The two profiles must have the
-- same (query_id, category, metric, applicable) rows, as profiles run on one fixture do: a row
-- of one profile with no match in the other stops the query with an error naming it, and so
-- does a profile with no rows or a metric absent from metrics. Every metric is paired; filter
-- on metric for the compared ones (docs/retrieval-quality.md).
WITH

params AS (
    SELECT
        CASE
            WHEN getvariable('baseline') IS NULL THEN error(
                'paired_deltas needs two profiles: SET VARIABLE baseline = ''...''; SET VARIABLE candidate = ''...'''
            )
            ELSE CAST(getvariable('baseline') AS VARCHAR)
        END AS baseline,
        CASE
            WHEN getvariable('candidate') IS NULL THEN error(
                'paired_deltas needs two profiles: SET VARIABLE baseline = ''...''; SET VARIABLE candidate = ''...'''
            )
            ELSE CAST(getvariable('candidate') AS VARCHAR)
        END AS candidate
),

baseline_rows AS (
    SELECT per_query_metrics.query_id, per_query_metrics.category, per_query_metrics.metric,
        per_query_metrics.value, per_query_metrics.applicable
    FROM per_query_metrics
    CROSS JOIN params
    WHERE per_query_metrics.profile = params.baseline
),

candidate_rows AS (
    SELECT per_query_metrics.query_id, per_query_metrics.category, per_query_metrics.metric,
        per_query_metrics.value, per_query_metrics.applicable
    FROM per_query_metrics
    CROSS JOIN params
    WHERE per_query_metrics.profile = params.candidate
),

-- Each profile must have rows at all: a misspelt name would otherwise pair nothing.
present AS (
    SELECT
        CASE
            WHEN NOT EXISTS (SELECT 1 FROM baseline_rows) THEN error(
                'paired_deltas: expected rows of profile ''' || params.baseline
                || ''' in per_query_metrics, found none'
            )
            WHEN NOT EXISTS (SELECT 1 FROM candidate_rows) THEN error(
                'paired_deltas: expected rows of profile ''' || params.candidate
                || ''' in per_query_metrics, found none'
            )
            ELSE true
        END AS ok
    FROM params
),

-- A full join on every key column, so that a row of one profile only stops the query.
pairs AS (
    SELECT
        CASE
            WHEN baseline_rows.query_id IS NULL THEN error(
                'paired_deltas: expected both profiles to cover the same queries, found query_id='''
                || candidate_rows.query_id || ''' metric=''' || candidate_rows.metric
                || ''' only in the candidate'
            )
            WHEN candidate_rows.query_id IS NULL THEN error(
                'paired_deltas: expected both profiles to cover the same queries, found query_id='''
                || baseline_rows.query_id || ''' metric=''' || baseline_rows.metric
                || ''' only in the baseline'
            )
            ELSE baseline_rows.query_id
        END AS query_id,
        baseline_rows.category,
        baseline_rows.metric,
        baseline_rows.applicable,
        baseline_rows.value AS baseline_value,
        candidate_rows.value AS candidate_value
    FROM baseline_rows
    FULL JOIN candidate_rows
        ON candidate_rows.query_id = baseline_rows.query_id
        AND candidate_rows.metric = baseline_rows.metric
        AND candidate_rows.category = baseline_rows.category
        AND candidate_rows.applicable = baseline_rows.applicable
    CROSS JOIN present
    WHERE present.ok
),

ordered AS (
    SELECT
        pairs.*,
        CASE
            WHEN metrics.metric IS NULL THEN error(
                'paired_deltas: expected per_query_metrics metrics of the input metrics, found metric='''
                || pairs.metric || ''''
            )
            ELSE metrics.metric_order
        END AS metric_order
    FROM pairs
    LEFT JOIN metrics ON metrics.metric = pairs.metric
)

SELECT
    params.baseline,
    params.candidate,
    ordered.query_id,
    ordered.category,
    ordered.metric,
    CAST(ordered.baseline_value AS DOUBLE) AS baseline_value,
    CAST(ordered.candidate_value AS DOUBLE) AS candidate_value,
    CAST(ordered.candidate_value AS DOUBLE) - CAST(ordered.baseline_value AS DOUBLE) AS delta
FROM ordered
CROSS JOIN params
WHERE ordered.applicable
    AND ordered.baseline_value IS NOT NULL
    AND ordered.candidate_value IS NOT NULL
ORDER BY ordered.metric_order, ordered.query_id
