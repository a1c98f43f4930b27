-- client_summary: one row per client over the captures the connection reads: requests, tokens, cost, errors and cache
-- behaviour (hit rate as in sessions; miss causes and the most frequent prefix change in words).
CREATE OR REPLACE VIEW client_summary AS
WITH r AS (
    SELECT q.*, p.miss_cause, p.prefix_changed, p.divergence_label
    FROM t_requests q LEFT JOIN t_prefix p ON p.capture_id = q.capture_id AND p.request_id = q.request_id
),
causes AS (
    SELECT client,
           string_agg(replace(miss_cause, '_', ' ') || ' ×' || n, ', ' ORDER BY n DESC, miss_cause) AS miss_causes
    FROM (SELECT client, miss_cause, count(*) AS n FROM r WHERE miss_cause IS NOT NULL GROUP BY ALL)
    GROUP BY ALL
),
changes AS (
    SELECT client, arg_max(divergence_label || ' ×' || n, n * 1e6 - rank) AS top_divergence
    FROM (SELECT client, divergence_label, count(*) AS n,
                 row_number() OVER (PARTITION BY client ORDER BY min(ts_start)) AS rank
          FROM r WHERE prefix_changed AND divergence_label IS NOT NULL GROUP BY client, divergence_label)
    GROUP BY ALL
)
SELECT
    r.client,
    count(DISTINCT r.capture_id) AS n_captures,
    string_agg(DISTINCT r.client_version, ', ' ORDER BY r.client_version) AS client_versions,
    string_agg(DISTINCT r.api, ', ' ORDER BY r.api) AS apis,
    count(DISTINCT r.capture_id || '/' || r.session_id) AS n_sessions,
    count(*) AS n_requests,
    count(*) FILTER (WHERE r.thread_kind <> 'side') AS n_main,
    count(*) FILTER (WHERE r.thread_kind = 'side') AS n_side,
    count(*) FILTER (WHERE r.input_tokens_reported IS NOT NULL) AS n_with_usage,
    sum(r.input_tokens_reported) AS input_tokens_reported,
    sum(r.cache_read_tokens) FILTER (WHERE r.input_tokens_reported IS NOT NULL) AS cache_read_tokens,
    sum(r.cache_write_tokens) FILTER (WHERE r.input_tokens_reported IS NOT NULL) AS cache_write_tokens,
    sum(r.input_uncached_tokens) FILTER (WHERE r.input_tokens_reported IS NOT NULL) AS input_uncached_tokens,
    sum(r.output_tokens) AS output_tokens,
    sum(r.cost_usd) AS cost_usd,
    count(*) FILTER (WHERE r.error_layer IS NOT NULL) AS n_errors,
    sum(r.cache_read_tokens) FILTER (WHERE r.input_tokens_reported IS NOT NULL AND r.cache_read_tokens IS NOT NULL)
      / nullif(sum(r.input_tokens_reported) FILTER (WHERE r.cache_read_tokens IS NOT NULL), 0) AS cache_hit_rate,
    string_agg(DISTINCT r.cache_semantics, ', ' ORDER BY r.cache_semantics)
      FILTER (WHERE r.input_tokens_reported IS NOT NULL) AS cache_semantics,
    any_value(c.miss_causes) AS miss_causes,
    any_value(d.top_divergence) AS top_divergence
FROM r
LEFT JOIN causes c ON c.client = r.client
LEFT JOIN changes d ON d.client = r.client
GROUP BY r.client;
