-- retries: failed model requests linked to the request that tried again (numbered attempts),
-- with the Retry-After the provider asked for beside the delay observed, and whether it was honoured.
CREATE OR REPLACE VIEW retries AS SELECT * FROM t_retries;
