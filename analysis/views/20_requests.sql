-- requests: one row per model call (HTTP request or WebSocket request frame).
CREATE OR REPLACE VIEW requests AS SELECT * FROM t_requests;
