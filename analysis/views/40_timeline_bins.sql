-- timeline_bins(seconds): a table macro, each session's time line in bins of that many seconds since
-- its first request: the requests that started in the bin (by thread kind, failed), the seconds the
-- model was busy with them, and the tool calls proposed in it (a call starts when its proposing
-- response ends) by result status, with repeats.
CREATE OR REPLACE MACRO timeline_bins(width) AS TABLE
WITH starts AS (
    SELECT capture_id, session_id, min(ts_start) AS t0 FROM t_requests GROUP BY capture_id, session_id
),
req AS (
    SELECT r.capture_id, r.session_id, floor((r.ts_start - s.t0) / width)::BIGINT AS bin,
           count(*) AS n_requests,
           count(*) FILTER (WHERE r.thread_kind = 'main') AS n_main,
           count(*) FILTER (WHERE r.thread_kind = 'subagent') AS n_subagent,
           count(*) FILTER (WHERE r.thread_kind = 'side') AS n_side,
           count(*) FILTER (WHERE r.error_layer IS NOT NULL) AS n_failed,
           min(r.seq_in_session) AS first_seq_in_session, max(r.seq_in_session) AS last_seq_in_session,
           min(r.request_number) AS first_request_number, max(r.request_number) AS last_request_number,
           sum(coalesce(r.ts_end, r.ts_start) - r.ts_start) AS busy_s
    FROM requests r JOIN starts s ON s.capture_id = r.capture_id AND s.session_id = r.session_id
    WHERE r.ts_start IS NOT NULL
    GROUP BY ALL
),
calls AS (
    SELECT c.capture_id, c.session_id,
           floor((coalesce(p.ts_end, p.ts_start) - s.t0) / width)::BIGINT AS bin,
           count(*) AS n_calls,
           count(*) FILTER (WHERE c.result_status = 'ok') AS n_calls_ok,
           count(*) FILTER (WHERE c.result_status = 'error') AS n_calls_error,
           count(*) FILTER (WHERE c.result_status = 'denied') AS n_calls_denied,
           count(*) FILTER (WHERE coalesce(c.result_status, 'missing') = 'missing') AS n_calls_missing,
           count(*) FILTER (WHERE c.repeat_of IS NOT NULL) AS n_repeats
    FROM tool_calls c
    JOIN t_requests p ON p.capture_id = c.capture_id AND p.request_id = c.request_id
    JOIN starts s ON s.capture_id = c.capture_id AND s.session_id = c.session_id
    WHERE p.ts_start IS NOT NULL
    GROUP BY ALL
)
SELECT capture_id, session_id, bin, bin * width::DOUBLE AS start_s, (bin + 1) * width::DOUBLE AS end_s,
       coalesce(req.n_requests, 0) AS n_requests, coalesce(req.n_main, 0) AS n_main,
       coalesce(req.n_subagent, 0) AS n_subagent, coalesce(req.n_side, 0) AS n_side,
       coalesce(req.n_failed, 0) AS n_failed, req.first_seq_in_session, req.last_seq_in_session,
       req.first_request_number, req.last_request_number,
       coalesce(req.busy_s, 0) AS busy_s,
       coalesce(calls.n_calls, 0) AS n_calls, coalesce(calls.n_calls_ok, 0) AS n_calls_ok,
       coalesce(calls.n_calls_error, 0) AS n_calls_error, coalesce(calls.n_calls_denied, 0) AS n_calls_denied,
       coalesce(calls.n_calls_missing, 0) AS n_calls_missing, coalesce(calls.n_repeats, 0) AS n_repeats
FROM req FULL OUTER JOIN calls USING (capture_id, session_id, bin);
