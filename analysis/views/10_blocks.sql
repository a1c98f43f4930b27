-- blocks: every context block of every request, in order, with its six attributes.
-- Expands request_block_runs (positions -> ranges of occurrences) against
-- block_occurrences and block_content.
CREATE OR REPLACE VIEW blocks AS
SELECT
    r.capture_id,
    r.request_id,
    r.position_start + (o.occurrence_id - r.occurrence_start) AS position,
    o.path, o.kind, o.wire_type, o.role, o.source, o.authority, o.scope, o.lifetime, o.content_type,
    o.rule_id, o.content_hash, c.bytes, c.tokens_estimated,
    o.cache_breakpoint IS NOT NULL AS is_cache_breakpoint, o.cache_breakpoint,
    o.tool_name, o.call_id, o.is_error, o.occurrence_id
FROM t_request_block_runs r
JOIN t_block_occurrences o
  ON o.capture_id = r.capture_id
 AND o.occurrence_id >= r.occurrence_start
 AND o.occurrence_id < r.occurrence_start + r.n
JOIN t_block_content c
  ON c.capture_id = o.capture_id AND c.content_hash = o.content_hash;
