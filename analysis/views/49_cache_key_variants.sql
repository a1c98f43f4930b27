-- cache_key_variants: the distinct cache keys a session used (prompt_cache_key, client session id,
-- model, tool order), in order of first use, each with what varied from the first (`varied`).
CREATE OR REPLACE VIEW cache_key_variants AS SELECT * FROM t_cache_key_variants;
