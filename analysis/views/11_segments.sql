-- segments: every segment of every request's blocks, in order: the sections inside a block
-- (an `# Environment` section, a `<system-reminder>`, a skills list) with their own attributes.
-- A block without sections is one segment with the block's attributes.
CREATE OR REPLACE VIEW segments AS
SELECT
    b.capture_id, b.request_id, b.position, s.segment_index, b.path, b.kind, b.role,
    s.source, s.authority, s.scope, s.lifetime, s.content_type, s.rule_id, s.evidence, s.label,
    s.byte_start, s.byte_end, s.bytes, s.tokens_estimated, b.content_hash, b.occurrence_id
FROM blocks b
JOIN t_block_segments s ON s.capture_id = b.capture_id AND s.occurrence_id = b.occurrence_id;
