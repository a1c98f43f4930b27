-- delegations: each subagent thread with the parent's delegation call and request, the task packet's size
-- (the child's first user message), inherited or fresh context (does the child carry the parent's
-- conversation), the prefix it shares with the parent's request, and its tool set against the parent's.
CREATE OR REPLACE VIEW delegations AS SELECT * FROM t_delegations;
