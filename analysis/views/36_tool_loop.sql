-- tool_loop: one row per session: the tool loop in numbers (calls, parallel groups, repeats,
-- errors, calls stuck repeating an error, retries after an error, cut results, orphans, compound shell
-- commands, call-to-result gaps).
CREATE OR REPLACE VIEW tool_loop AS
SELECT
    capture_id, session_id,
    count(*) FILTER (WHERE request_id IS NOT NULL) AS n_calls,
    count(*) FILTER (WHERE parallel_group_size > 1) AS n_parallel_calls,
    count(DISTINCT request_id) FILTER (WHERE parallel_group_size > 1) AS n_parallel_groups,
    count(*) FILTER (WHERE repeat_of IS NOT NULL) AS n_repeats,
    count(*) FILTER (WHERE result_status = 'error') AS n_errors,
    count(*) FILTER (WHERE stuck_on_error) AS n_stuck,
    count(*) FILTER (WHERE attempt > 1) AS n_retried_after_error,
    count(*) FILTER (WHERE truncated) AS n_truncated,
    count(*) FILTER (WHERE orphan IS NOT NULL) AS n_orphans,
    count(*) FILTER (WHERE is_compound) AS n_compound,
    median(gap_ms) AS median_gap_ms,
    max(gap_ms) AS longest_gap_ms
FROM t_tool_calls
GROUP BY capture_id, session_id;
