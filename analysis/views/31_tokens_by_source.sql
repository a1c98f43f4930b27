-- tokens_by_source: estimated tokens and bytes per request and business source.
CREATE OR REPLACE VIEW tokens_by_source AS
SELECT capture_id, request_id, source, sum(tokens_estimated) AS tokens_estimated, sum(bytes) AS bytes, count(*) AS n_blocks
FROM blocks
GROUP BY capture_id, request_id, source;
