-- tool_calls: every call the model proposed, linked to its result.
-- check_status is refined by the client's telemetry where the result alone did not tell: a permission
-- decision that rejected the call makes it `denied`, a tool_finished that reports failure turns `ok` into
-- `error` (check_detail names the telemetry event).
-- `concurrent` is known only where the client's telemetry timed the calls (tool_started and
-- tool_finished from client-telemetry in `events`): true if another call of the session ran
-- during it, false if none did; null where the times are not known.
CREATE OR REPLACE VIEW tool_calls AS
WITH timed AS (
    SELECT s.capture_id, s.session_id, s.tool_call_id AS call_id, s.ts AS t0, f.ts AS t1
    FROM t_events s
    JOIN t_events f
      ON f.capture_id = s.capture_id AND f.session_id = s.session_id AND f.tool_call_id = s.tool_call_id
     AND f.event = 'tool_finished' AND f.evidence = 'client-telemetry' AND f.ts IS NOT NULL
    WHERE s.event = 'tool_started' AND s.evidence = 'client-telemetry' AND s.ts IS NOT NULL
      AND s.tool_call_id IS NOT NULL
),
overlap AS (
    SELECT a.capture_id, a.session_id, a.call_id, bool_or(b.call_id IS NOT NULL) AS concurrent
    FROM timed a
    LEFT JOIN timed b
      ON b.capture_id = a.capture_id AND b.session_id = a.session_id AND b.call_id <> a.call_id
     AND b.t0 < a.t1 AND a.t0 < b.t1
    GROUP BY a.capture_id, a.session_id, a.call_id
),
told AS (
    SELECT capture_id, session_id, tool_call_id AS call_id,
           bool_or(event = 'permission_decided' AND regexp_matches(lower(decision), 'reject|den(y|ied)|abort|block'))
               AS rejected,
           bool_or(event = 'tool_finished' AND success = false) AS failed,
           any_value(evidence_detail) AS detail
    FROM t_events
    WHERE evidence = 'client-telemetry' AND tool_call_id IS NOT NULL
      AND event IN ('permission_decided', 'tool_finished')
    GROUP BY ALL
)
SELECT t.* REPLACE (
    coalesce(o.concurrent, t.concurrent) AS concurrent,
    CASE WHEN c.rejected AND t.check_status IN ('ok', 'error', 'no_result') THEN 'denied'
         WHEN c.failed AND t.check_status = 'ok' THEN 'error'
         ELSE t.check_status END AS check_status,
    CASE WHEN c.rejected AND t.check_status IN ('ok', 'error', 'no_result')
              THEN 'client telemetry: permission rejected (' || coalesce(c.detail, 'decision') || ')'
         WHEN c.failed AND t.check_status = 'ok'
              THEN 'client telemetry: the tool reported failure (' || coalesce(c.detail, 'tool_finished') || ')'
         ELSE t.check_detail END AS check_detail)
FROM t_tool_calls t
LEFT JOIN overlap o
  ON o.capture_id = t.capture_id AND o.session_id = t.session_id AND o.call_id = t.call_id
LEFT JOIN told c
  ON c.capture_id = t.capture_id AND c.session_id = t.session_id AND c.call_id = t.call_id;
