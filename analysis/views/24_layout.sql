-- layout: one row per client, the cross-client context-layout comparison.
CREATE OR REPLACE VIEW layout AS SELECT * FROM t_layout;
