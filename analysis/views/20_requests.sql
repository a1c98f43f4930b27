-- requests: one row per model call (HTTP request or WebSocket request frame), with two columns
-- every command and page reads rather than working out again: request_number, the request's
-- 1-based number in its session over all its model requests in time order (seq_in_session + 1;
-- the report's, live view's, diff's and replay's #N), and input_tokens, its input including cache
-- reads and writes: as the provider reported it, else ctxtap's estimate (input_basis says which).
CREATE OR REPLACE VIEW requests AS
SELECT *,
       seq_in_session + 1 AS request_number,
       coalesce(input_tokens_reported, input_tokens_estimated) AS input_tokens,
       CASE WHEN input_tokens_reported IS NOT NULL THEN 'reported' ELSE 'estimated' END AS input_basis
FROM t_requests;
