-- prefix: each request against its predecessor in the thread, and what the cache did.
CREATE OR REPLACE VIEW prefix AS SELECT * FROM t_prefix;
