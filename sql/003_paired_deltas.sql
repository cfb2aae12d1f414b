-- name: paired_deltas
-- version: 2
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
-- Version 2: a query with no category (null, per_query_metrics version 5) pairs with itself,
-- its category null in the output (version 1 found its rows in neither profile and stopped).
-- Other rows and values are those of version 1. One k at a time: filter per_query_metrics on
-- k first when it holds several.
WITH

params AS (
    SELECT
        CASE
            WHEN getvariable('baseline') IS NULL THEN error(
                'paired_deltas needs the baseline profile: SET VARIABLE baseline = ''default'''
            )
            ELSE CAST(getvariable('baseline') AS VARCHAR)
        END AS baseline,
        CASE
            WHEN getvariable('candidate') IS NULL THEN error(
                'paired_deltas needs the candidate profile: SET VARIABLE candidate = ''rrf'''
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

-- A full join on every key column, so that a row of one profile only is seen.
pairs AS (
    SELECT
        coalesce(baseline_rows.query_id, candidate_rows.query_id) AS query_id,
        coalesce(baseline_rows.category, candidate_rows.category) AS category,
        coalesce(baseline_rows.metric, candidate_rows.metric) AS metric,
        baseline_rows.applicable,
        baseline_rows.value AS baseline_value,
        candidate_rows.value AS candidate_value,
        baseline_rows.query_id IS NULL AS only_candidate,
        candidate_rows.query_id IS NULL AS only_baseline
    FROM baseline_rows
    FULL JOIN candidate_rows
        ON candidate_rows.query_id = baseline_rows.query_id
        AND candidate_rows.metric = baseline_rows.metric
        AND candidate_rows.category IS NOT DISTINCT FROM baseline_rows.category
        AND candidate_rows.applicable = baseline_rows.applicable
),

-- The checks, as one aggregate row, so that an error stops the query whatever rows the filter
-- below keeps. The example named is the smallest (query_id, metric) breaking the rule.
checks AS (
    SELECT
        count(*) FILTER (WHERE NOT only_candidate) AS baseline_count,
        count(*) FILTER (WHERE NOT only_baseline) AS candidate_count,
        min(metric) FILTER (WHERE metric NOT IN (SELECT metric FROM metrics)) AS unknown_metric,
        count(*) FILTER (WHERE only_candidate) AS only_candidate,
        min(query_id || ''' metric=''' || metric) FILTER (WHERE only_candidate) AS candidate_example,
        count(*) FILTER (WHERE only_baseline) AS only_baseline,
        min(query_id || ''' metric=''' || metric) FILTER (WHERE only_baseline) AS baseline_example
    FROM pairs
),

checked AS (
    SELECT
        CASE
            WHEN checks.baseline_count = 0 THEN error(
                'paired_deltas: expected rows of profile ''' || params.baseline
                || ''' in per_query_metrics, found none'
            )
            WHEN checks.candidate_count = 0 THEN error(
                'paired_deltas: expected rows of profile ''' || params.candidate
                || ''' in per_query_metrics, found none'
            )
            WHEN checks.unknown_metric IS NOT NULL THEN error(
                'paired_deltas: expected per_query_metrics metrics of the input metrics, found metric='''
                || checks.unknown_metric || ''''
            )
            WHEN checks.only_candidate > 0 THEN error(
                'paired_deltas: expected both profiles to have the same (query_id, category, metric, applicable) rows, found '
                || checks.only_candidate || ' only in the candidate, e.g. query_id='''
                || checks.candidate_example || ''''
            )
            WHEN checks.only_baseline > 0 THEN error(
                'paired_deltas: expected both profiles to have the same (query_id, category, metric, applicable) rows, found '
                || checks.only_baseline || ' only in the baseline, e.g. query_id='''
                || checks.baseline_example || ''''
            )
            ELSE true
        END AS ok
    FROM checks
    CROSS JOIN params
)

SELECT
    params.baseline,
    params.candidate,
    pairs.query_id,
    pairs.category,
    pairs.metric,
    CAST(pairs.baseline_value AS DOUBLE) AS baseline_value,
    CAST(pairs.candidate_value AS DOUBLE) AS candidate_value,
    CAST(pairs.candidate_value AS DOUBLE) - CAST(pairs.baseline_value AS DOUBLE) AS delta
FROM pairs
CROSS JOIN params
CROSS JOIN checked
JOIN metrics ON metrics.metric = pairs.metric
WHERE checked.ok
    AND pairs.applicable
    AND pairs.baseline_value IS NOT NULL
    AND pairs.candidate_value IS NOT NULL
ORDER BY metrics.metric_order, pairs.query_id
