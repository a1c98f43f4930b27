-- exposures: every redacted secret or pseudonymised personal datum that entered model context,
-- one row per placeholder per block placement (placeholders only, never values).
CREATE OR REPLACE VIEW exposures AS SELECT * FROM t_exposures;

-- exposure_summary: one row per session and placeholder: where it first came from, the first
-- request that sent it, the hosts it went to and how many requests carried it.
CREATE OR REPLACE VIEW exposure_summary AS
SELECT
    capture_id, session_id, placeholder,
    any_value(category) AS category,
    any_value(kind) AS kind,
    arg_min(source_detail, first_seq_in_session) AS first_source,
    arg_min(segment_source, first_seq_in_session) AS first_segment_source,
    any_value(session_first_request_id) AS first_request_id,
    min(first_seq_in_session) AS first_seq_in_session,
    string_agg(DISTINCT host, ', ' ORDER BY host) AS hosts,
    any_value(session_requests) AS requests_carrying,
    count(*) AS n_placements
FROM t_exposures
GROUP BY capture_id, session_id, placeholder;
