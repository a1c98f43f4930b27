-- client_tokens_by_source: estimated tokens per client and business source, over all requests.
CREATE OR REPLACE VIEW client_tokens_by_source AS
SELECT r.client, t.source, sum(t.tokens_estimated) AS tokens_estimated
FROM tokens_by_source t
JOIN t_requests r ON r.capture_id = t.capture_id AND r.request_id = t.request_id
GROUP BY ALL;
