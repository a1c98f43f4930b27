-- tokens_by_source: estimated tokens and bytes per request and business source, by segment
-- (a block with an environment section and a skills list counts in both sources).
CREATE OR REPLACE VIEW tokens_by_source AS
SELECT capture_id, request_id, source, sum(tokens_estimated) AS tokens_estimated, sum(bytes) AS bytes,
       count(DISTINCT position) AS n_blocks
FROM segments
GROUP BY capture_id, request_id, source;
