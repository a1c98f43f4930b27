-- thread_bin_sources(k): a table macro, per bin of k consecutive requests of a thread (see
-- request_bins) and business source, the mean estimated tokens per request of the bin.
CREATE OR REPLACE MACRO thread_bin_sources(k) AS TABLE
WITH members AS (
    SELECT b.capture_id, b.thread_id, b.bin, b.request_id,
           count(*) OVER (PARTITION BY b.capture_id, b.thread_id, b.bin) AS n_requests
    FROM request_bins(k) b
)
SELECT m.capture_id, m.thread_id, m.bin, s.source,
       sum(s.tokens_estimated) / any_value(m.n_requests) AS mean_tokens_estimated
FROM members m
JOIN tokens_by_source s ON s.capture_id = m.capture_id AND s.request_id = m.request_id
GROUP BY m.capture_id, m.thread_id, m.bin, s.source;
