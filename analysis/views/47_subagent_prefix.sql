-- subagent_prefix: each subagent's first request against its parent's request at the delegation:
-- the prefix they share (what the child could read from the parent's cache) and where they part
-- (divergent_change: model, tools, system, messages; the paths and the change in words).
CREATE OR REPLACE VIEW subagent_prefix AS SELECT * FROM t_subagent_prefix;
