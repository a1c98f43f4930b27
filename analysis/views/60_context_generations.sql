-- context_generations: each change of context generation in a thread — a compaction (a new summary stands
-- for the history it replaced), a trimming (history dropped without one), a rewind (only the newest history
-- dropped) or unknown — with the range it replaced (positions in the previous request and the requests that
-- history entered at), tokens before and after and their ratio, and the compaction request behind it.
CREATE OR REPLACE VIEW context_generations AS SELECT * FROM t_context_generations;
