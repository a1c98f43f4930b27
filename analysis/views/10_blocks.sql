-- blocks: every context block of every request, in order, with its six attributes.
-- Expands request_block_runs (positions -> ranges of occurrences) against
-- block_occurrences and block_content; cache breakpoints are per request.
CREATE OR REPLACE VIEW blocks AS
WITH positions AS (
    -- one row per position: a run of n positions maps onto n consecutive occurrence ids
    SELECT capture_id, request_id, position_start, occurrence_start, unnest(range(n)) AS k
    FROM t_request_block_runs
),
expanded AS (
    SELECT
        r.capture_id,
        r.request_id,
        r.position_start + r.k AS position,
        o.*
    FROM positions r
    JOIN t_block_occurrences o
      ON o.capture_id = r.capture_id
     AND o.occurrence_id = r.occurrence_start + r.k
)
SELECT
    e.capture_id, e.request_id, e.position,
    e.path, e.kind, e.wire_type, e.role, e.source, e.authority, e.scope, e.lifetime, e.content_type,
    e.rule_id, e.content_hash, c.bytes, c.tokens_estimated,
    bp.cache_breakpoint IS NOT NULL AS is_cache_breakpoint, bp.cache_breakpoint,
    e.tool_name, e.call_id, e.is_error, e.occurrence_id
FROM expanded e
JOIN t_block_content c
  ON c.capture_id = e.capture_id AND c.content_hash = e.content_hash
LEFT JOIN t_request_breakpoints bp
  ON bp.capture_id = e.capture_id AND bp.request_id = e.request_id AND bp.position = e.position;
