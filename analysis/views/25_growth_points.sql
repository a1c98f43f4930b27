-- growth_points: per request of a thread, its point on the growth fit: n counts the thread's
-- successful requests up to this one (a failed request does not advance n), and
-- fitted_cumulative_tokens = n*fit_p + fit_m*n(n+1)/2 from the growth view.
CREATE OR REPLACE VIEW growth_points AS
WITH numbered AS (
    SELECT r.capture_id, r.thread_id, r.request_id, r.seq_in_thread,
           sum(CASE WHEN r.error_layer IS NULL THEN 1 ELSE 0 END)
             OVER (PARTITION BY r.capture_id, r.thread_id ORDER BY r.seq_in_thread
                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n
    FROM t_requests r
)
SELECT n.capture_id, n.thread_id, n.request_id, n.seq_in_thread, n.n,
       n.n * g.fit_p + g.fit_m * n.n * (n.n + 1) / 2 AS fitted_cumulative_tokens
FROM numbered n
JOIN t_threads g ON g.capture_id = n.capture_id AND g.thread_id = n.thread_id;
