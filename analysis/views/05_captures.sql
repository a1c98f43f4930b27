-- captures: one row per capture: where it came from and when it was recorded.
CREATE OR REPLACE VIEW captures AS SELECT * FROM t_captures;
