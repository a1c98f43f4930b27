-- process_efficiency: one row per session: turns, model calls, tokens (n_turns, input_tokens and
-- output_tokens are the sessions view's own figures), latency of model calls
-- (time to first byte and total: p50/p95/max, with how many TTFB figures are approximate, i.e.
-- response-header times of imported captures) and of tools (p50/p95/max of tool_finished
-- durations, with how many rest on client telemetry rather than the call->result gap).
CREATE OR REPLACE VIEW process_efficiency AS
WITH calls AS (
    SELECT capture_id, session_id,
           count(*) AS n_calls,
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
SELECT c.capture_id, c.session_id, c.n_calls, s.n_turns, s.input_tokens, s.output_tokens,
       c.* EXCLUDE (capture_id, session_id, n_calls), coalesce(t.n_tools_timed, 0) AS n_tools_timed,
       coalesce(t.n_tools_from_telemetry, 0) AS n_tools_from_telemetry,
       coalesce(t.n_tools_from_gap, 0) AS n_tools_from_gap,
       t.tool_p50_ms, t.tool_p95_ms, t.tool_max_ms
FROM calls c JOIN sessions s USING (capture_id, session_id)
LEFT JOIN tools t USING (capture_id, session_id);
