-- effects: every path the run created, modified, deleted or renamed in the working directory or a
-- `record --watch` place (record's effect receipt: sizes and hashes, never contents). Places not
-- snapshotted are not seen: effect_roots lists those that were, and whether in full.
CREATE OR REPLACE VIEW effects AS SELECT * FROM t_effects;

-- effect_roots: one row per place snapshotted before and after the run, with its bounds.
CREATE OR REPLACE VIEW effect_roots AS SELECT * FROM t_effect_roots;

-- run_gates: the conditions `record --check` (or `check --save`) judged the run by.
CREATE OR REPLACE VIEW run_gates AS SELECT * FROM t_run_gates;
