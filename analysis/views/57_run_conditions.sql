-- run_conditions: one row per session: what the run was allowed and given (client and version, model,
-- sandbox and approval modes, working directory, git commit and dirty flag, rules and tool-schema digests,
-- MCP servers offered), each with where it was read; `unknown` where nothing states it.
CREATE OR REPLACE VIEW run_conditions AS SELECT * FROM t_run_conditions;
