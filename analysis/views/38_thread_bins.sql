-- thread_bins(k): a table macro, one row per bin of k consecutive requests of a thread (see
-- request_bins): its requests (the first and last also by request_number), means per request of the
-- estimated and reported input and of the cache fields (over the requests that reported them), the
-- cumulative input and the growth fit at its last request, and how many of its requests changed the
-- prefix, missed the cache or failed.
CREATE OR REPLACE MACRO thread_bins(k) AS TABLE
WITH members AS (
    SELECT b.bin, r.*, p.prefix_changed, p.miss_cause, g.fitted_cumulative_tokens
    FROM request_bins(k) b
    JOIN requests r ON r.capture_id = b.capture_id AND r.request_id = b.request_id
    LEFT JOIN prefix p ON p.capture_id = b.capture_id AND p.request_id = b.request_id
    LEFT JOIN growth_points g ON g.capture_id = b.capture_id AND g.request_id = b.request_id
)
SELECT capture_id, any_value(session_id) AS session_id, thread_id, bin,
       count(*) AS n_requests,
       min(seq_in_thread) AS first_seq_in_thread, max(seq_in_thread) AS last_seq_in_thread,
       min(seq_in_session) AS first_seq_in_session, max(seq_in_session) AS last_seq_in_session,
       min(request_number) AS first_request_number, max(request_number) AS last_request_number,
       avg(input_tokens_estimated) AS mean_input_tokens_estimated,
       max(input_tokens_estimated) AS max_input_tokens_estimated,
       avg(input_tokens_reported) AS mean_input_tokens_reported,
       max(input_tokens_reported) AS max_input_tokens_reported,
       count(input_tokens_reported) AS n_with_usage,
       avg(cache_read_tokens) AS mean_cache_read_tokens,
       avg(cache_write_tokens) AS mean_cache_write_tokens,
       avg(input_uncached_tokens) AS mean_input_uncached_tokens,
       arg_max(cumulative_input_tokens, seq_in_thread) AS cumulative_input_tokens,
       arg_max(fitted_cumulative_tokens, seq_in_thread) AS fitted_cumulative_tokens,
       count(*) FILTER (WHERE prefix_changed) AS n_prefix_changed,
       count(*) FILTER (WHERE miss_cause IS NOT NULL AND miss_cause <> 'cold_start') AS n_misses,
       string_agg(DISTINCT miss_cause, ', ' ORDER BY miss_cause) FILTER (WHERE miss_cause <> 'cold_start')
           AS miss_causes,
       count(*) FILTER (WHERE error_layer IS NOT NULL) AS n_errors
FROM members
GROUP BY capture_id, thread_id, bin;
