-- request_bins(k): a table macro (`SELECT * FROM request_bins(20)`) placing each request in a bin of
-- k consecutive requests of its thread (bin 0 holds the thread's first k), for charts of threads too
-- long to draw request by request.
CREATE OR REPLACE MACRO request_bins(k) AS TABLE
SELECT capture_id, session_id, thread_id, request_id, seq_in_thread,
       (row_number() OVER (PARTITION BY capture_id, thread_id ORDER BY seq_in_thread, ts_start) - 1) // k AS bin
FROM t_requests;
