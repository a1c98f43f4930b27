-- sessions: one row per session. Side requests count in n_side and the totals, not in n_main.
-- n_turns: user turns (requests.turn_index counts them; 0 when the user typed nothing, e.g. only
-- start-up probes). input_tokens: the requests' input including cache reads, as reported, else
-- estimated (n_input_estimated requests had no reported usage); input_tokens_reported and
-- input_tokens_estimated are the two series apart. cache_hit_rate = cache reads / reported input,
-- over requests that reported usage (null when none did).
CREATE OR REPLACE VIEW sessions AS
SELECT
    capture_id,
    session_id,
    any_value(client) AS client,
    count(*) AS n_requests,
    count(*) FILTER (WHERE thread_kind = 'main') AS n_main,
    count(*) FILTER (WHERE thread_kind = 'subagent') AS n_subagent,
    count(*) FILTER (WHERE thread_kind = 'side') AS n_side,
    count(DISTINCT thread_id) AS n_threads,
    coalesce(max(turn_index), 0) AS n_turns,
    min(ts_start) AS first_ts,
    max(coalesce(ts_end, ts_start)) AS last_ts,
    sum(input_tokens) AS input_tokens,
    count(*) FILTER (WHERE input_basis = 'estimated') AS n_input_estimated,
    sum(input_tokens_reported) AS input_tokens_reported,
    sum(input_tokens_estimated) AS input_tokens_estimated,
    sum(cache_read_tokens) AS cache_read_tokens,
    sum(cache_write_tokens) AS cache_write_tokens,
    sum(output_tokens) AS output_tokens,
    sum(reasoning_tokens) AS reasoning_tokens,
    sum(cost_usd) AS cost_usd,
    count(*) FILTER (WHERE cost_usd IS NULL AND output_tokens IS NOT NULL) AS n_unpriced,
    sum(cache_read_tokens) FILTER (WHERE input_tokens_reported IS NOT NULL AND cache_read_tokens IS NOT NULL)
      / nullif(sum(input_tokens_reported) FILTER (WHERE cache_read_tokens IS NOT NULL), 0) AS cache_hit_rate,
    count(*) FILTER (WHERE error_layer IS NOT NULL) AS n_errors
FROM requests
GROUP BY capture_id, session_id;
