-- totals: one row over every capture the connection reads: counts, tokens, cost, errors and the
-- cache hit rate (cache reads / reported input, over requests that reported cache reads).
CREATE OR REPLACE VIEW totals AS
SELECT
    count(DISTINCT capture_id) AS captures,
    count(DISTINCT client) AS clients,
    count(DISTINCT capture_id || '/' || session_id) AS sessions,
    count(*) AS requests,
    count(*) FILTER (WHERE thread_kind = 'main') AS n_main,
    count(*) FILTER (WHERE thread_kind = 'subagent') AS n_subagent,
    count(*) FILTER (WHERE thread_kind = 'side') AS n_side,
    sum(input_tokens_reported) AS input_tokens_reported,
    sum(input_tokens_estimated) AS input_tokens_estimated,
    sum(cache_read_tokens) AS cache_read_tokens,
    sum(cache_write_tokens) AS cache_write_tokens,
    sum(output_tokens) AS output_tokens,
    sum(reasoning_tokens) AS reasoning_tokens,
    sum(cost_usd) AS cost_usd,
    count(*) FILTER (WHERE cost_usd IS NULL AND output_tokens IS NOT NULL) AS n_unpriced,
    count(*) FILTER (WHERE error_layer IS NOT NULL) AS n_errors,
    sum(cache_read_tokens) FILTER (WHERE input_tokens_reported IS NOT NULL AND cache_read_tokens IS NOT NULL)
      / nullif(sum(input_tokens_reported) FILTER (WHERE cache_read_tokens IS NOT NULL), 0) AS cache_hit_rate
FROM t_requests;
