-- thread_bin_sources(k): a table macro, per bin of k consecutive requests of a thread (see
-- request_bins) and business source, the mean estimated tokens per request of the bin.
-- Equal to averaging tokens_by_source over the bin's requests, but computed from the requests'
-- runs of consecutive occurrences (request_block_runs) against running totals of each source's
-- tokens over occurrence ids: the cost follows the distinct run ends x sources, not every
-- position of every request (a 10,000-request thread resends 1.5 million positions).
CREATE OR REPLACE MACRO thread_bin_sources(k) AS TABLE
WITH members AS (
    SELECT b.capture_id, b.thread_id, b.bin, b.request_id,
           count(*) OVER (PARTITION BY b.capture_id, b.thread_id, b.bin) AS n_requests
    FROM request_bins(k) b
),
keys AS (  -- (capture, source) pairs as small integers: the joins below compare one number
    SELECT capture_id, source, row_number() OVER () AS key
    FROM (SELECT DISTINCT capture_id, source FROM t_block_segments)
),
occ AS (  -- each occurrence's tokens by source (a block with sections counts in several)
    SELECT k.key, s.occurrence_id, sum(s.tokens_estimated) AS tokens
    FROM t_block_segments s JOIN keys k ON k.capture_id = s.capture_id AND k.source = s.source
    GROUP BY k.key, s.occurrence_id
),
running AS (
    SELECT key, occurrence_id,
           sum(tokens) OVER (PARTITION BY key ORDER BY occurrence_id ROWS UNBOUNDED PRECEDING) AS total,
           count(*) OVER (PARTITION BY key ORDER BY occurrence_id ROWS UNBOUNDED PRECEDING) AS n
    FROM occ
),
runs AS (  -- the members' runs: positions map onto occurrence ids before_first+1 .. last
    SELECT m.capture_id, m.thread_id, m.bin, m.n_requests,
           r.occurrence_start - 1 AS before_first, r.occurrence_start + r.n - 1 AS last
    FROM members m
    JOIN t_request_block_runs r ON r.capture_id = m.capture_id AND r.request_id = m.request_id
),
ends AS (  -- a run adds the running total at its last occurrence and takes away the one before its first
    SELECT capture_id, thread_id, bin, any_value(n_requests) AS n_requests, x, sum(w) AS w
    FROM (SELECT capture_id, thread_id, bin, n_requests, last AS x, 1 AS w FROM runs
          UNION ALL
          SELECT capture_id, thread_id, bin, n_requests, before_first AS x, -1 AS w FROM runs)
    GROUP BY capture_id, thread_id, bin, x
),
points AS MATERIALIZED (  -- each source's running total at each distinct run end (requests resend the same runs)
    SELECT p.capture_id, p.x, k.source, coalesce(t.total, 0) AS total, coalesce(t.n, 0) AS n
    FROM (SELECT DISTINCT capture_id, x FROM ends) p
    JOIN keys k ON k.capture_id = p.capture_id
    ASOF LEFT JOIN running t ON t.key = k.key AND p.x >= t.occurrence_id
),
spans AS (
    SELECT e.capture_id, e.thread_id, e.bin, e.n_requests, p.source, e.w * p.total AS tokens, e.w * p.n AS n
    FROM ends e JOIN points p ON p.capture_id = e.capture_id AND p.x = e.x
)
SELECT capture_id, thread_id, bin, source, sum(tokens) / any_value(n_requests) AS mean_tokens_estimated
FROM spans
GROUP BY capture_id, thread_id, bin, source
HAVING sum(n) > 0;  -- a source none of the bin's blocks has: no row, as in tokens_by_source
