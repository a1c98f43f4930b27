-- process_efficiency: one row per session: turns, model calls, tokens, latency of model calls
-- (time to first byte and total: p50/p95/max, with how many TTFB figures are approximate, i.e.
-- response-header times of imported captures) and of tools (p50/p95/max of tool_finished
-- durations, with how many rest on client telemetry rather than the call->result gap).
CREATE OR REPLACE VIEW process_efficiency AS
WITH calls AS (
    SELECT capture_id, session_id,
           count(*) AS n_calls,
           count(DISTINCT turn_index) AS n_turns,
           sum(coalesce(input_tokens_reported, input_tokens_estimated)) AS input_tokens,
           sum(output_tokens) AS output_tokens,
           quantile_cont(ttfb_ms, 0.5) AS ttfb_p50_ms,
           quantile_cont(ttfb_ms, 0.95) AS ttfb_p95_ms,
           max(ttfb_ms) AS ttfb_max_ms,
           count(ttfb_ms) FILTER (WHERE ttfb_kind = 'approximate') AS n_ttfb_approximate,
           quantile_cont(duration_ms, 0.5) AS duration_p50_ms,
           quantile_cont(duration_ms, 0.95) AS duration_p95_ms,
           max(duration_ms) AS duration_max_ms
    FROM t_requests
    GROUP BY capture_id, session_id
), tools AS (
    SELECT capture_id, session_id,
           count(*) AS n_tools_timed,
           count(*) FILTER (WHERE evidence = 'client-telemetry') AS n_tools_from_telemetry,
           count(*) FILTER (WHERE evidence_detail = 'call->result gap') AS n_tools_from_gap,
           quantile_cont(duration_ms, 0.5) AS tool_p50_ms,
           quantile_cont(duration_ms, 0.95) AS tool_p95_ms,
           max(duration_ms) AS tool_max_ms
    FROM t_events
    WHERE event = 'tool_finished' AND duration_ms IS NOT NULL
    GROUP BY capture_id, session_id
)
SELECT c.*, coalesce(t.n_tools_timed, 0) AS n_tools_timed,
       coalesce(t.n_tools_from_telemetry, 0) AS n_tools_from_telemetry,
       coalesce(t.n_tools_from_gap, 0) AS n_tools_from_gap,
       t.tool_p50_ms, t.tool_p95_ms, t.tool_max_ms
FROM calls c LEFT JOIN tools t USING (capture_id, session_id);
