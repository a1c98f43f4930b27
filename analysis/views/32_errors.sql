-- errors: requests that failed, by layer.
CREATE OR REPLACE VIEW errors AS
SELECT capture_id, request_id, session_id, client, ts_start, status, error_layer, error_code, error_message,
       retryable, retry_after_s, purpose
FROM t_requests
WHERE error_layer IS NOT NULL;
