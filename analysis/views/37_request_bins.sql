-- request_bins(k): a table macro (`SELECT * FROM request_bins(20)`) placing each request in a bin of
-- k consecutive requests of its thread (bin 0 holds the thread's first k), for charts of threads too
-- long to draw request by request. Each row has the request's own input (estimated, reported),
-- cumulative input and cache miss cause, and its bin's figures: n_requests, the means per request of
-- the estimated and reported input, bin_cumulative_input_tokens (at the bin's last request) and
-- n_misses (cache misses other than a thread's cold start). thread_bins has one row per bin.
CREATE OR REPLACE MACRO request_bins(k) AS TABLE
WITH binned AS (
    SELECT r.capture_id, r.session_id, r.thread_id, r.request_id, r.seq_in_thread,
           (row_number() OVER (PARTITION BY r.capture_id, r.thread_id ORDER BY r.seq_in_thread, r.ts_start) - 1)
               // k AS bin,
           r.input_tokens_estimated, r.input_tokens_reported, r.cumulative_input_tokens, p.miss_cause
    FROM t_requests r
    LEFT JOIN t_prefix p ON p.capture_id = r.capture_id AND p.request_id = r.request_id
)
SELECT *,
       count(*) OVER bin_rows AS n_requests,
       avg(input_tokens_estimated) OVER bin_rows AS mean_input_tokens_estimated,
       avg(input_tokens_reported) OVER bin_rows AS mean_input_tokens_reported,
       arg_max(cumulative_input_tokens, seq_in_thread) OVER bin_rows AS bin_cumulative_input_tokens,
       count(*) FILTER (WHERE miss_cause IS NOT NULL AND miss_cause <> 'cold_start') OVER bin_rows AS n_misses
FROM binned
WINDOW bin_rows AS (PARTITION BY capture_id, thread_id, bin);
